#include "tests/tracker_process.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

namespace benchfarm::testing {
namespace {

constexpr char kListening[] = "tracker: listening on ";
constexpr char kRunfilesPath[] = "/benchfarm/tracker/tracker";
// How long Start() waits for a tracker that closed its stdout to report its exit.
constexpr absl::Duration kExitReportWait = absl::Seconds(5);

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

}  // namespace

std::string FindTrackerBinary(const std::string& path, const char* argv0) {
  if (!path.empty()) return path;
  for (const char* env : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    const char* dir = std::getenv(env);
    if (dir != nullptr && Executable(absl::StrCat(dir, kRunfilesPath))) {
      return absl::StrCat(dir, kRunfilesPath);
    }
  }
  if (argv0 != nullptr && Executable(absl::StrCat(argv0, ".runfiles", kRunfilesPath))) {
    return absl::StrCat(argv0, ".runfiles", kRunfilesPath);
  }
  return "";
}

TrackerProcess::TrackerProcess(std::string binary) : binary_(std::move(binary)) {}

TrackerProcess::~TrackerProcess() { Kill(); }

pid_t TrackerProcess::pid() const { return process_ == nullptr ? -1 : process_->pid(); }

absl::StatusOr<std::string> TrackerProcess::Start(const std::vector<std::string>& flags,
                                                  absl::Duration timeout) {
  if (absl::Status launched = Launch(flags); !launched.ok()) return launched;
  return WaitListening(timeout);
}

absl::Status TrackerProcess::Launch(const std::vector<std::string>& flags) {
  if (binary_.empty()) return absl::FailedPreconditionError("tracker binary not found");
  if (process_ != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("tracker ", process_->pid(), " runs"));
  }
  process::SubprocessOptions options;
  options.argv.push_back(binary_);
  options.argv.insert(options.argv.end(), flags.begin(), flags.end());
  options.stdin_mode = process::StdioMode::kNull;
  options.stdout_mode = process::StdioMode::kPipe;
  absl::StatusOr<std::unique_ptr<process::Subprocess>> started =
      process::Subprocess::Start(options);
  if (!started.ok()) return started.status();
  process_ = *std::move(started);
  stdout_fd_ = process_->TakeStdout();
  argv_ = absl::StrJoin(options.argv, " ");
  return absl::OkStatus();
}

absl::StatusOr<std::string> TrackerProcess::WaitListening(absl::Duration timeout) {
  if (process_ == nullptr) return absl::FailedPreconditionError("no tracker started");
  const absl::Time deadline = absl::Now() + timeout;
  std::string line;
  for (;;) {
    const absl::Duration left = deadline - absl::Now();
    struct pollfd p = {stdout_fd_, POLLIN, 0};
    const int ready = left <= absl::ZeroDuration()
                          ? 0
                          : poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {
      Kill();
      return absl::DeadlineExceededError(absl::StrCat(
          "tracker ", argv_, ": no \"listening on\" line within ", absl::FormatDuration(timeout)));
    }
    char buf[512];
    const ssize_t n = ready < 0 ? -1 : read(stdout_fd_, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      absl::StatusOr<base::ProcessExit> ended = process_->WaitExit(absl::Now() + kExitReportWait);
      const std::string how =
          ended.ok() ? ended->ToString() : std::string(ended.status().message());
      Kill();
      return absl::UnavailableError(
          absl::StrCat("tracker ", argv_, ": ended before listening (", how, ")"));
    }
    line.append(buf, static_cast<size_t>(n));
    for (size_t end; (end = line.find('\n')) != std::string::npos; line.erase(0, end + 1)) {
      if (absl::StartsWith(line, kListening)) {
        const std::string rest =
            line.substr(sizeof(kListening) - 1, end - (sizeof(kListening) - 1));
        return rest.substr(0, rest.find(' '));
      }
    }
  }
}

absl::StatusOr<base::ProcessExit> TrackerProcess::Stop(absl::Duration grace) {
  if (process_ == nullptr) return absl::FailedPreconditionError("no tracker started");
  absl::StatusOr<base::ProcessExit> ended =
      process_->Stop(grace, absl::Now() + grace + absl::Seconds(10));
  process_.reset();
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
  return ended;
}

absl::StatusOr<base::ProcessExit> TrackerProcess::WaitExit(absl::Duration timeout) {
  if (process_ == nullptr) return absl::FailedPreconditionError("no tracker started");
  absl::StatusOr<base::ProcessExit> ended = process_->WaitExit(absl::Now() + timeout);
  if (ended.ok()) {
    process_.reset();
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdout_fd_ = -1;
  }
  return ended;
}

void TrackerProcess::Kill() {
  if (process_ != nullptr) {
    process_->Signal(SIGKILL);
    (void)process_->WaitExit(absl::Now() + absl::Seconds(10));
    process_.reset();
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  stdout_fd_ = -1;
}

}  // namespace benchfarm::testing
