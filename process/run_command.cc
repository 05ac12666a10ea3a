// RunCommand; see run_command.h.

#include "process/run_command.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/os_error.h"
#include "base/process_exit.h"
#include "process/subprocess.h"

namespace benchfarm::process {
namespace {

// How much output an error message carries.
constexpr size_t kErrorOutputTail = 2048;
// How long output is still collected after the command exited while something outside its
// process group holds the pipe open.
constexpr absl::Duration kDrainAfterExit = absl::Milliseconds(200);
// Without a pidfd, how often the process's exit is polled.
constexpr absl::Duration kExitPollInterval = absl::Milliseconds(10);
// How long a command killed at the time limit may take to go, beyond term_grace.
constexpr absl::Duration kKillWait = absl::Seconds(2);

// The last `max` bytes of a stream, and how long it was.
class OutputTail {
 public:
  explicit OutputTail(size_t max) : max_(max) {}

  void Append(const char* data, size_t n) {
    total_ += n;
    buf_.append(data, n);
    // Trim in batches so that appending stays amortised O(n).
    if (buf_.size() > 2 * max_ + 4096) buf_.erase(0, buf_.size() - max_);
  }
  std::string Take() {
    if (buf_.size() > max_) buf_.erase(0, buf_.size() - max_);
    return std::move(buf_);
  }
  size_t total() const { return total_; }

 private:
  const size_t max_;
  std::string buf_;
  size_t total_ = 0;
};

// Reads what is available on the non-blocking `fd` into `tail`. Returns true at end of file.
absl::StatusOr<bool> Drain(int fd, OutputTail& tail, absl::string_view name) {
  char buf[16384];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      tail.Append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return true;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
    return absl::InternalError(
        absl::StrCat(name, ": reading the command's output: ", base::ErrnoText(errno)));
  }
}

}  // namespace

std::string CommandLine(const std::vector<std::string>& argv) {
  std::vector<std::string> shown;
  for (const std::string& a : argv) {
    const bool plain = !a.empty() && std::none_of(a.begin(), a.end(), [](char c) {
      return absl::ascii_isspace(static_cast<unsigned char>(c)) || c == '\'' || c == '"' ||
             c == '\\';
    });
    shown.push_back(plain ? a : absl::StrCat("'", absl::StrReplaceAll(a, {{"'", "'\\''"}}), "'"));
  }
  return absl::StrJoin(shown, " ");
}

std::string OutputForError(const std::string& output, size_t total) {
  if (total == 0) return "; no output";
  if (output.size() <= kErrorOutputTail && output.size() == total) {
    return absl::StrCat("; output:\n", output);
  }
  const size_t n = std::min(output.size(), kErrorOutputTail);
  return absl::StrCat("; output (last ", n, " of ", total, " bytes):\n",
                      absl::string_view(output).substr(output.size() - n));
}

absl::StatusOr<CommandRun> RunCommand(const RunCommandOptions& options, absl::Time deadline,
                                      const std::string& name) {
  if (options.argv.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": empty command line"));
  }
  CommandRun run;
  run.argv = options.argv;
  const std::string command = CommandLine(run.argv);
  const absl::Time start = absl::Now();
  if (start >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat(name, ": deadline passed before running `", command, "`"));
  }

  SubprocessOptions sub;
  sub.argv = run.argv;
  sub.working_dir = options.working_dir;
  sub.stdin_mode = StdioMode::kNull;
  sub.stdout_mode = StdioMode::kPipe;
  sub.stderr_to_stdout = true;
  absl::StatusOr<std::unique_ptr<Subprocess>> started = Subprocess::Start(sub);
  if (!started.ok()) {
    return absl::Status(started.status().code(), absl::StrCat(name, ": cannot run `", command,
                                                              "`: ", started.status().message()));
  }
  std::unique_ptr<Subprocess> child = std::move(*started);
  run.pid = child->pid();

  struct ClosedOnReturn {
    int fd;
    ~ClosedOnReturn() { close(fd); }
  } const out_owner{child->TakeStdout()};
  const int out = out_owner.fd;
  const int flags = fcntl(out, F_GETFL);
  if (flags < 0 || fcntl(out, F_SETFL, flags | O_NONBLOCK) != 0) {
    return absl::InternalError(absl::StrCat(name, ": fcntl: ", base::ErrnoText(errno)));
  }

  const absl::Time time_limit_at = start + options.time_limit;
  const absl::Time stop_at = std::min(deadline, time_limit_at);
  OutputTail tail(options.max_output_bytes);
  bool eof = false;
  absl::Time drain_until = absl::InfiniteFuture();
  absl::Status read_error;
  for (;;) {
    if (!run.exit) {
      run.exit = child->ExitStatus();
      if (run.exit) drain_until = absl::Now() + kDrainAfterExit;
    }
    if (eof && run.exit) break;
    const absl::Time now = absl::Now();
    if (run.exit && now >= drain_until) break;  // a process outside its group holds the pipe
    if (!run.exit && now >= stop_at) {
      run.timed_out = true;
      break;
    }
    struct pollfd fds[2];
    nfds_t nfds = 0;
    if (!eof) fds[nfds++] = {out, POLLIN, 0};
    if (!run.exit && child->exit_fd() >= 0) fds[nfds++] = {child->exit_fd(), POLLIN, 0};
    absl::Duration wait = (run.exit ? drain_until : stop_at) - now;
    if (!run.exit && child->exit_fd() < 0) wait = std::min(wait, kExitPollInterval);
    const struct timespec ts = absl::ToTimespec(wait);
    (void)ppoll(fds, nfds, &ts, nullptr);  // EINTR, timeout or readiness: loop and look
    if (!eof) {
      absl::StatusOr<bool> ended = Drain(out, tail, name);
      if (!ended.ok()) {
        read_error = ended.status();
        break;
      }
      eof = *ended;
    }
  }
  if (run.timed_out || !read_error.ok()) {
    absl::StatusOr<base::ProcessExit> stopped =
        child->Stop(options.term_grace, absl::Now() + options.term_grace + kKillWait);
    if (stopped.ok()) run.exit = *stopped;
    // The group is gone now: what it wrote before is still in the pipe.
    if (read_error.ok()) (void)Drain(out, tail, name);
  }
  if (!read_error.ok()) return read_error;
  run.elapsed = absl::Now() - start;
  run.output_bytes = tail.total();
  run.output = tail.Take();
  return run;
}

}  // namespace benchfarm::process
