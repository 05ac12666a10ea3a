// ChildProcessTransport. The child is started with posix_spawnp (glibc's runs the child on a
// CLONE_VFORK stack and reports exec failures as its return value, so there is no fork-in-a-
// multithreaded-process hazard and no error pipe to manage). Waiting for the child with a
// deadline polls a pidfd, so nothing sleeps in a loop except on kernels without pidfd_open.

#include "device/pipe_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "device/status_macros.h"

namespace benchfarm::device {
namespace {

// How long a Read/Write that found the link closed waits for the child's exit to report it.
constexpr absl::Duration kExitReportWait = absl::Milliseconds(200);
// How long Close() waits for a SIGKILLed child before leaving it to ExitStatus()/WaitExit().
constexpr absl::Duration kKillWait = absl::Seconds(30);

absl::Status SpawnErrorToStatus(int err, absl::string_view message) {
  std::string text = absl::StrCat(message, ": ", ErrnoText(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(text);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(text);
    default:
      return absl::InternalError(text);
  }
}

// Moves `fd` to a number >= 3 (close-on-exec) so that the dup2 file actions onto 0, 1 and 2 can
// never overwrite one another's source, even if this process runs with stdin or stdout closed.
int AboveStdio(int fd) {
  if (fd > STDERR_FILENO) return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  int err = errno;
  close(fd);
  errno = err;
  return moved;
}

// Signals the child's process group (it is its leader), or just the child if the group is gone.
void SignalChild(pid_t pid, int sig) {
  if (kill(-pid, sig) != 0) kill(pid, sig);
}

}  // namespace

std::string ProcessExit::ToString() const {
  if (exited()) return absl::StrCat("exit code ", exit_code);
  if (signaled()) {
    const char* what = sigdescr_np(signal);
    return absl::StrCat("killed by signal ", signal, what ? absl::StrCat(" (", what, ")") : "",
                        core_dumped ? ", core dumped" : "");
  }
  return "unknown end";
}

ProcessExit ProcessExit::FromWaitStatus(int wait_status) {
  ProcessExit e;
  if (WIFEXITED(wait_status)) {
    e.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    e.signal = WTERMSIG(wait_status);
    e.core_dumped = WCOREDUMP(wait_status);
  }
  return e;
}

ChildProcessTransport::ChildProcessTransport(std::vector<std::string> argv,
                                             ChildProcessOptions options)
    : argv_(std::move(argv)),
      options_(std::move(options)),
      io_(absl::StrCat("process:", argv_.empty() ? std::string() : argv_[0])) {}

ChildProcessTransport::~ChildProcessTransport() {
  Close();
  absl::MutexLock lock(&mu_);
  if (pidfd_ >= 0) close(pidfd_);
}

absl::Status ChildProcessTransport::Open() {
  if (io_.is_open()) return absl::OkStatus();
  const std::string name = Name();
  if (argv_.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": empty argv"));

  int stderr_fd = -1;
  if (!options_.stderr_path.empty()) {
    stderr_fd = open(options_.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (stderr_fd < 0) {
      return OpenErrorToStatus(errno,
                               absl::StrCat(name, ": open stderr file ", options_.stderr_path));
    }
  }
  int to_child[2] = {-1, -1};
  int from_child[2] = {-1, -1};
  auto close_all = [&] {
    for (int fd : {stderr_fd, to_child[0], to_child[1], from_child[0], from_child[1]}) {
      if (fd >= 0) close(fd);
    }
  };
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) {
    const int err = errno;
    close_all();
    return absl::InternalError(absl::StrCat(name, ": pipe2: ", ErrnoText(err)));
  }
  for (int* fd : {&stderr_fd, &to_child[0], &from_child[1]}) {
    if (*fd >= 0 && (*fd = AboveStdio(*fd)) < 0) {
      const int err = errno;
      close_all();
      return absl::InternalError(absl::StrCat(name, ": fcntl(F_DUPFD_CLOEXEC): ", ErrnoText(err)));
    }
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, to_child[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&actions, from_child[1], STDOUT_FILENO);
  if (stderr_fd >= 0) posix_spawn_file_actions_adddup2(&actions, stderr_fd, STDERR_FILENO);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t signals;
  sigemptyset(&signals);
  posix_spawnattr_setsigmask(&attr, &signals);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&signals, sig);
  posix_spawnattr_setsigdefault(&attr, &signals);

  std::vector<char*> args;
  args.reserve(argv_.size() + 1);
  for (const std::string& a : argv_) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  pid_t pid = -1;
  const int err = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  const int read_fd = from_child[0];
  const int write_fd = to_child[1];
  from_child[0] = to_child[1] = -1;  // kept; close_all() now closes only the child's ends
  close_all();
  if (err != 0) {
    close(read_fd);
    close(write_fd);
    return SpawnErrorToStatus(err, absl::StrCat(name, ": cannot start ", argv_[0]));
  }

  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  {
    absl::MutexLock lock(&mu_);
    if (pidfd_ >= 0) close(pidfd_);
    pid_ = pid;
    pidfd_ = pidfd;  // -1 (ENOSYS on old kernels) makes WaitExit poll waitpid instead
    exit_.reset();
  }
  absl::Status attached = io_.Attach(read_fd, write_fd, FdTransport::Ownership::kOwned);
  if (!attached.ok()) Close();
  return attached;
}

void ChildProcessTransport::Close() {
  io_.Close();
  pid_t pid;
  {
    absl::MutexLock lock(&mu_);
    if (pid_ < 0) return;
    absl::StatusOr<std::optional<ProcessExit>> ended = PollExitLocked();
    if (!ended.ok() || ended->has_value()) return;
    pid = pid_;
  }
  // The child is not reaped yet, so its pid (and process group id) cannot have been reused.
  SignalChild(pid, SIGTERM);
  if (absl::IsDeadlineExceeded(WaitExit(absl::Now() + options_.term_grace).status())) {
    SignalChild(pid, SIGKILL);
    (void)WaitExit(absl::Now() + kKillWait);
  }
}

absl::StatusOr<std::optional<ProcessExit>> ChildProcessTransport::PollExitLocked() {
  if (exit_) return exit_;
  int wait_status = 0;
  pid_t r;
  do {
    r = waitpid(pid_, &wait_status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    return absl::InternalError(absl::StrCat(Name(), ": waitpid(", pid_, "): ", ErrnoText(errno)));
  }
  if (r == 0) return std::optional<ProcessExit>();
  exit_ = ProcessExit::FromWaitStatus(wait_status);
  return exit_;
}

pid_t ChildProcessTransport::pid() const {
  absl::MutexLock lock(&mu_);
  return pid_;
}

std::optional<ProcessExit> ChildProcessTransport::ExitStatus() {
  absl::MutexLock lock(&mu_);
  if (pid_ < 0) return std::nullopt;
  absl::StatusOr<std::optional<ProcessExit>> ended = PollExitLocked();
  return ended.ok() ? *ended : std::nullopt;
}

absl::StatusOr<ProcessExit> ChildProcessTransport::WaitExit(absl::Time deadline) {
  for (;;) {
    int pidfd;
    {
      absl::MutexLock lock(&mu_);
      if (pid_ < 0) {
        return absl::FailedPreconditionError(absl::StrCat(Name(), ": no process started yet"));
      }
      ASSIGN_OR_RETURN(std::optional<ProcessExit> ended, PollExitLocked());
      if (ended) return *ended;
      pidfd = pidfd_;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(Name(), ": process ", pid(), " still running at the deadline"));
    }
    if (pidfd >= 0) {
      struct pollfd p = {pidfd, POLLIN, 0};
      struct timespec ts;
      struct timespec* timeout = nullptr;
      if (deadline != absl::InfiniteFuture()) {
        ts = absl::ToTimespec(deadline - now);
        timeout = &ts;
      }
      // EINTR or readiness: either way, loop and ask waitpid.
      (void)ppoll(&p, 1, timeout, nullptr);
    } else {
      absl::SleepFor(std::min(absl::Milliseconds(5), deadline - now));
    }
  }
}

absl::Status ChildProcessTransport::Explain(absl::Status status) {
  if (!absl::IsUnavailable(status)) return status;
  absl::StatusOr<ProcessExit> ended = WaitExit(absl::Now() + kExitReportWait);
  std::string how = ended.ok() ? absl::StrCat("the process ended: ", ended->ToString())
                               : std::string("the process is still running");
  return absl::Status(status.code(), absl::StrCat(status.message(), "; ", how));
}

absl::Status ChildProcessTransport::Write(absl::string_view data, absl::Time deadline) {
  return Explain(io_.Write(data, deadline));
}

absl::StatusOr<size_t> ChildProcessTransport::Read(absl::Span<uint8_t> out, absl::Time deadline) {
  absl::StatusOr<size_t> n = io_.Read(out, deadline);
  if (n.ok()) return n;
  return Explain(n.status());
}

}  // namespace benchfarm::device
