// CycleStream: see cycle_stream.h. Record syntax: cyclemodel/plugin.c.

#include "device/cycle_stream.h"

#include <errno.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace benchfarm::device {
namespace {

constexpr char kGreeting[] = "benchfarm-cycle-model 1 ";
constexpr size_t kMaxLine = 512;

}  // namespace

CycleStream::CycleStream(int fd, std::string board) : fd_(fd), board_(std::move(board)) {
  reader_ = std::thread([this] { Run(); });
}

CycleStream::~CycleStream() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  reader_.join();
  close(fd_);
}

void CycleStream::Run() {
  std::string pending;
  char buf[4096];
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    pollfd p = {fd_, POLLIN, 0};
    const int ready = poll(&p, 1, 200);
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    {
      absl::MutexLock lock(&mu_);
      reading_ = true;
    }
    const ssize_t n = read(fd_, buf, sizeof(buf));
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;
    pending.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      Parse(pending.substr(start, nl - start));
    }
    pending.erase(0, start);
    if (pending.size() > kMaxLine) {
      if (malformed_.empty()) malformed_ = absl::StrCat("a line of over ", kMaxLine, " bytes");
      pending.clear();
    }
  }
  absl::MutexLock lock(&mu_);
  ended_ = true;
}

void CycleStream::Parse(const std::string& line) {
  if (!ready_) {
    if (line.rfind(kGreeting, 0) == 0) {
      ready_ = true;
      for (absl::string_view word : absl::StrSplit(line, ' ')) {
        if (absl::ConsumePrefix(&word, "core=")) core_ = std::string(word);
      }
    } else if (first_line_.empty()) {
      first_line_ = line.empty() ? "(an empty line)" : line;
    }
    return;
  }
  std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (words.size() == 3 && words[0] == "interval") {
    ModeledInterval iv;
    if (absl::SimpleAtoi(words[1], &iv.cycles) && absl::SimpleAtoi(words[2], &iv.instructions)) {
      if (intervals_.size() >= kMaxPending) {
        intervals_.pop_front();
        dropped_++;
      }
      intervals_.push_back(iv);
      return;
    }
  } else if (!words.empty() && words[0] == "end") {
    for (size_t i = 1; i < words.size(); ++i) {
      std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(words[i], '=');
      uint64_t v = 0;
      if (absl::SimpleAtoi(kv.second, &v)) summary_[std::string(kv.first)] = v;
    }
    return;
  }
  if (malformed_.empty()) malformed_ = absl::StrCat("\"", line.substr(0, 80), "\"");
}

absl::Status CycleStream::WaitReady(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return ready_ || ended_ || !first_line_.empty();
  };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  if (ready_) return absl::OkStatus();
  if (!first_line_.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        board_, ": the cycle model's first record is not its greeting: \"", first_line_, "\""));
  }
  if (ended_) {
    return absl::UnavailableError(
        absl::StrCat(board_, ": the cycle model's stream ended before it started (QEMU exited)"));
  }
  return absl::DeadlineExceededError(
      absl::StrCat(board_, ": the cycle model did not start (no greeting on its pipe)"));
}

std::string CycleStream::core() const {
  absl::MutexLock lock(&mu_);
  return core_;
}

void CycleStream::Discard() {
  absl::MutexLock lock(&mu_);
  intervals_.clear();
  dropped_ = 0;
  malformed_.clear();
}

absl::StatusOr<std::vector<ModeledInterval>> CycleStream::Take(size_t n, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  auto done = [this, n]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return intervals_.size() >= n || ended_ || !malformed_.empty();
  };
  mu_.AwaitWithDeadline(absl::Condition(&done), deadline);
  // Everything the plugin wrote before the call returned is in the pipe: let the reader parse all
  // of it, so an extra interval is seen, not left for the next call.
  for (;;) {
    int unread = 0;
    if (!reading_ && (ended_ || ioctl(fd_, FIONREAD, &unread) != 0 || unread == 0)) break;
    if (absl::Now() >= deadline) break;
    mu_.AwaitWithTimeout(absl::Condition(
                             +[](bool* r) { return !*r; }, &reading_),
                         absl::Milliseconds(5));
  }
  if (!malformed_.empty()) {
    return absl::DataLossError(
        absl::StrCat(board_, ": the cycle model wrote a malformed record: ", malformed_));
  }
  if (dropped_ > 0) {
    return absl::DataLossError(absl::StrCat(board_, ": ", dropped_,
                                            " timed intervals of the cycle model were dropped "
                                            "(nobody took them)"));
  }
  if (intervals_.size() < n) {
    if (ended_) {
      return absl::UnavailableError(absl::StrCat(
          board_, ": the cycle model's stream ended (the plugin closed it, or QEMU exited) after ",
          intervals_.size(), " of ", n, " timed intervals"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        board_, ": the cycle model reported ", intervals_.size(), " timed intervals for ", n,
        " repeats (does the firmware mark its timer? images built before the cycle model do "
        "not: rebuild it)"));
  }
  if (intervals_.size() > n) {
    const size_t extra = intervals_.size();
    intervals_.clear();
    return absl::DataLossError(absl::StrCat(board_, ": the cycle model reported ", extra,
                                            " timed intervals for ", n, " repeats"));
  }
  std::vector<ModeledInterval> out(intervals_.begin(), intervals_.end());
  intervals_.clear();
  return out;
}

std::map<std::string, uint64_t> CycleStream::Summary() const {
  absl::MutexLock lock(&mu_);
  return summary_;
}

bool CycleStream::Ended() const {
  absl::MutexLock lock(&mu_);
  return ended_;
}

}  // namespace benchfarm::device
