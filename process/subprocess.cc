// Subprocess. fork() rather than posix_spawn because only a forked child can call setrlimit()
// before exec. Forking a multithreaded process is safe here because everything the child needs
// (argv pointers, the resolved path, descriptors, limit values) is prepared before fork(), and the
// child calls only async-signal-safe system-call wrappers until execve(): no malloc, no locks.
// Exec failures come back over a close-on-exec pipe: end of file there means execve() succeeded.
//
// Every child is forked by one thread that lives as long as the process (the spawner), because
// PR_SET_PDEATHSIG fires when the parent *thread* exits: a child forked by a worker thread that
// ends would be killed with it. The child sets PR_SET_PDEATHSIG(SIGKILL) and then checks that
// its parent is still there (it may have died before the prctl took effect).

#include "process/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/os_error.h"
#include "base/status_macros.h"

namespace benchfarm::process {
namespace {

// The descriptor SubprocessOptions.pass_fd becomes in the child.
constexpr int kPassedFd = 3;
// How long Stop() waits at least for a SIGKILLed child, and the destructor for a killed one.
constexpr absl::Duration kKillWait = absl::Seconds(2);
constexpr absl::Duration kDestructorKillWait = absl::Seconds(10);

// A descriptor closed when it goes out of scope unless released.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { Reset(); }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// The step of the child's set-up that failed, reported over the error pipe.
enum ChildStep : int { kSetpgid = 1, kDup2, kChdir, kSetrlimit, kExec, kSetsid };

struct ChildError {
  int step;
  int err;
  int resource;  // for kSetrlimit
};

struct LimitToSet {
  int resource;
  struct rlimit value;
};

// Everything the child does, decided before fork().
struct ChildPlan {
  const char* path = nullptr;
  char* const* argv = nullptr;
  const char* working_dir = nullptr;  // nullptr: stay
  // Sources for the child's 0, 1, 2; -1 inherits. All are > 2, so no dup2 clobbers another.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool stderr_to_stdout = false;
  int pass_fd = -1;  // becomes the child's 3; > 3, like every descriptor above
  bool new_session = false;
  bool launcher = false;
  LimitToSet limits[4];
  int num_limits = 0;
  int error_fd = -1;
  // This process: the child exits at once if its parent is no longer this one.
  pid_t parent_pid = -1;
  // "<dir>/" of RecordChildrenIn, or nullptr: the child writes <dir>/<its pid>.
  const char* record_prefix = nullptr;
};

// Async-signal-safe: `v` in decimal at `out` (room for 20 digits); returns the length.
size_t FormatDecimal(uint64_t v, char* out) {
  char digits[20];
  size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  for (size_t i = 0; i < n; ++i) out[i] = digits[n - 1 - i];
  return n;
}

// Async-signal-safe: the child records itself as <prefix><pid> holding its start time (field 22
// of /proc/self/stat, clock ticks since boot) and a newline — see RecordChildrenIn. Best effort:
// a child that cannot write its record still runs.
void WriteChildRecord(const char* prefix) {
  char path[4096];
  const size_t prefix_len = strnlen(prefix, sizeof(path) - 24);
  std::memcpy(path, prefix, prefix_len);
  const size_t len = prefix_len + FormatDecimal(static_cast<uint64_t>(getpid()), path + prefix_len);
  path[len] = '\0';

  char stat[1024];
  size_t got = 0;
  const int in = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  for (;;) {
    const ssize_t n = read(in, stat + got, sizeof(stat) - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(in);
  // Fields after the command name "(...)", which may hold spaces and parentheses: the last ')'.
  size_t at = got;
  while (at > 0 && stat[at - 1] != ')') --at;
  if (at == 0) return;
  // The space after ')' comes before field 3; the 20th space from there, before field 22.
  int spaces = 0;
  while (at < got && !(stat[at] == ' ' && ++spaces == 20)) ++at;
  const size_t begin = at + 1;
  size_t end = begin;
  while (end < got && stat[end] >= '0' && stat[end] <= '9') ++end;
  if (end == begin) return;
  stat[end] = '\n';

  const int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out < 0) return;
  ssize_t ignored = write(out, stat + begin, end - begin + 1);
  (void)ignored;
  close(out);
}

// The child after fork(). Async-signal-safe calls only (see the file comment).
[[noreturn]] void RunChild(const ChildPlan& plan) {
  auto fail = [&plan](int step, int resource) {
    ChildError e{step, errno, resource};
    ssize_t ignored = write(plan.error_fd, &e, sizeof(e));
    (void)ignored;
    _exit(127);
  };
  // Dies with this process (the spawner thread lives as long as it): also if it died already.
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != plan.parent_pid) _exit(127);
  if (plan.record_prefix != nullptr) WriteChildRecord(plan.record_prefix);
  if (plan.new_session) {
    if (setsid() < 0) fail(kSetsid, 0);
  } else if (setpgid(0, 0) != 0) {
    fail(kSetpgid, 0);
  }

  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof(dfl));
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) (void)sigaction(sig, &dfl, nullptr);  // EINVAL for some
  if (plan.launcher) {
    // Inherited across exec by the launcher, which passes them on: its command resets them.
    struct sigaction ign;
    std::memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) (void)sigaction(sig, &ign, nullptr);
  }

  if (plan.stdin_fd >= 0 && dup2(plan.stdin_fd, STDIN_FILENO) < 0) fail(kDup2, 0);
  if (plan.stdout_fd >= 0 && dup2(plan.stdout_fd, STDOUT_FILENO) < 0) fail(kDup2, 0);
  if (plan.stderr_to_stdout) {
    if (dup2(STDOUT_FILENO, STDERR_FILENO) < 0) fail(kDup2, 0);
  } else if (plan.stderr_fd >= 0 && dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
    fail(kDup2, 0);
  }
  if (plan.working_dir != nullptr && chdir(plan.working_dir) != 0) fail(kChdir, 0);
  for (int i = 0; i < plan.num_limits; ++i) {
    if (setrlimit(static_cast<__rlimit_resource_t>(plan.limits[i].resource),
                  &plan.limits[i].value) != 0) {
      fail(kSetrlimit, plan.limits[i].resource);
    }
  }
#ifdef CLOSE_RANGE_CLOEXEC
  // Descriptors someone opened without O_CLOEXEC must not leak into the board (they could hold
  // another board's pipe open). Kernels before 5.11 lack the flag; then only ours are cloexec.
  (void)close_range(STDERR_FILENO + 1, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
  if (plan.pass_fd >= 0 && dup2(plan.pass_fd, kPassedFd) < 0) fail(kDup2, 0);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(plan.path, plan.argv, environ);
  fail(kExec, 0);
  _exit(127);  // not reached
}

const char* ResourceName(int resource) {
  switch (resource) {
    case RLIMIT_AS:
      return "RLIMIT_AS";
    case RLIMIT_CPU:
      return "RLIMIT_CPU";
    case RLIMIT_NOFILE:
      return "RLIMIT_NOFILE";
    case RLIMIT_CORE:
      return "RLIMIT_CORE";
    default:
      return "rlimit";
  }
}

// Moves `fd` above 3 (close-on-exec), so the child's dup2s onto 0..3 never clobber a source.
absl::Status MoveAboveStdio(UniqueFd& fd, absl::string_view name) {
  if (fd.get() < 0 || fd.get() > kPassedFd) return absl::OkStatus();
  const int moved = fcntl(fd.get(), F_DUPFD_CLOEXEC, kPassedFd + 1);
  if (moved < 0) {
    return absl::InternalError(
        absl::StrCat(name, ": fcntl(F_DUPFD_CLOEXEC): ", base::ErrnoText(errno)));
  }
  fd.Reset(moved);
  return absl::OkStatus();
}

bool IsExecutableFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// argv[0] as execve() needs it: itself if it has a '/', else its first executable match in $PATH.
absl::StatusOr<std::string> ResolveProgram(const std::string& program) {
  if (program.find('/') != std::string::npos) return program;
  const char* env_path = std::getenv("PATH");
  const std::string path = env_path ? env_path : "/usr/local/bin:/usr/bin:/bin";
  bool exists_not_executable = false;
  for (absl::string_view dir : absl::StrSplit(path, ':')) {
    const std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", program);
    if (IsExecutableFile(candidate)) return candidate;
    if (access(candidate.c_str(), F_OK) == 0) exists_not_executable = true;
  }
  if (exists_not_executable) {
    return absl::PermissionDeniedError(
        absl::StrCat(program, ": cannot start: found in PATH but not an executable file"));
  }
  return absl::NotFoundError(
      absl::StrCat(program, ": cannot start: not found in PATH (", path, ")"));
}

absl::Status ChildErrorToStatus(const ChildError& e, const std::string& name,
                                const std::string& path, const SubprocessOptions& options) {
  const std::string text = base::ErrnoText(e.err);
  switch (e.step) {
    case kExec: {
      const std::string message = absl::StrCat(name, ": cannot start ", path, ": ", text);
      switch (e.err) {
        case ENOENT:
        case ENOTDIR:
          return absl::NotFoundError(message);
        case EACCES:
        case EPERM:
          return absl::PermissionDeniedError(message);
        case ENOEXEC:
        case EISDIR:
          return absl::FailedPreconditionError(message);
        default:
          return absl::InternalError(message);
      }
    }
    case kChdir: {
      const std::string message =
          absl::StrCat(name, ": cannot start: working directory ", options.working_dir, ": ", text);
      if (e.err == ENOENT || e.err == ENOTDIR) return absl::NotFoundError(message);
      if (e.err == EACCES || e.err == EPERM) return absl::PermissionDeniedError(message);
      return absl::InternalError(message);
    }
    case kSetrlimit:
      return absl::InternalError(
          absl::StrCat(name, ": cannot start: setrlimit(", ResourceName(e.resource), "): ", text));
    case kSetpgid:
      return absl::InternalError(absl::StrCat(name, ": cannot start: setpgid: ", text));
    case kSetsid:
      return absl::InternalError(absl::StrCat(name, ": cannot start: setsid: ", text));
    default:
      return absl::InternalError(absl::StrCat(name, ": cannot start: dup2: ", text));
  }
}

// Where children record themselves (RecordChildrenIn); empty: nowhere.
absl::Mutex g_record_mu;
std::string& RecordDir() ABSL_EXCLUSIVE_LOCKS_REQUIRED(g_record_mu) {
  static std::string* dir = new std::string;
  return *dir;
}

// Forks every child from one thread that lives as long as the process (see the file comment),
// with every signal blocked (the child must not run this process's handlers before it has reset
// them). In a process forked from the one that made it (where that thread does not exist), the
// calling thread forks instead.
class Spawner {
 public:
  static Spawner& Get() {
    static Spawner* spawner = new Spawner;  // never destroyed: its thread outlives main()
    return *spawner;
  }

  // Forks; the child runs RunChild(plan). Returns the child's pid, or -1 with the errno in *err.
  pid_t Fork(ChildPlan& plan, int* err) {
    plan.parent_pid = getpid();
    if (plan.parent_pid != owner_) return ForkHere(plan, err);
    absl::MutexLock call(&call_mu_);
    absl::MutexLock lock(&mu_);
    request_ = &plan;
    done_ = false;
    mu_.Await(absl::Condition(&done_));
    *err = err_;
    return pid_;
  }

 private:
  Spawner() : owner_(getpid()) {
    std::thread([this] { Loop(); }).detach();
  }

  static pid_t ForkHere(const ChildPlan& plan, int* err) {
    sigset_t all, saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    const pid_t pid = fork();
    if (pid == 0) RunChild(plan);
    *err = errno;
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    return pid;
  }

  void Loop() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, nullptr);
    for (;;) {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](Spawner* s) ABSL_NO_THREAD_SAFETY_ANALYSIS { return s->request_ != nullptr; }, this));
      const pid_t pid = fork();
      if (pid == 0) RunChild(*request_);
      err_ = errno;
      pid_ = pid;
      request_ = nullptr;
      done_ = true;
    }
  }

  const pid_t owner_;
  absl::Mutex call_mu_;  // one request at a time
  absl::Mutex mu_;
  const ChildPlan* request_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = -1;
  int err_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Start(const SubprocessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("subprocess: empty argv");
  const std::string& name = options.argv[0];
  if (options.stderr_to_stdout && !options.stderr_path.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": stderr_to_stdout and stderr_path are both set"));
  }
  ASSIGN_OR_RETURN(const std::string path, ResolveProgram(name));

  ChildPlan plan;
  plan.path = path.c_str();
  if (!options.working_dir.empty()) plan.working_dir = options.working_dir.c_str();
  plan.stderr_to_stdout = options.stderr_to_stdout;
  plan.new_session = options.new_session;
  plan.launcher = options.launcher;

  // Limits: soft = hard = the request, never above what this process may grant.
  auto add_limit = [&](int resource, rlim_t soft, rlim_t hard) -> absl::Status {
    struct rlimit current;
    if (getrlimit(static_cast<__rlimit_resource_t>(resource), &current) != 0) {
      return absl::InternalError(absl::StrCat(name, ": getrlimit(", ResourceName(resource),
                                              "): ", base::ErrnoText(errno)));
    }
    LimitToSet& l = plan.limits[plan.num_limits++];
    l.resource = resource;
    l.value.rlim_max = std::min(hard, current.rlim_max);
    l.value.rlim_cur = std::min(soft, l.value.rlim_max);
    return absl::OkStatus();
  };
  const ResourceLimits& limits = options.limits;
  if (limits.max_address_space_bytes > 0) {
    RETURN_IF_ERROR(
        add_limit(RLIMIT_AS, limits.max_address_space_bytes, limits.max_address_space_bytes));
  }
  if (limits.max_cpu_seconds > 0) {
    // The soft limit sends SIGXCPU (a recognisable crash); the hard one, a second later, SIGKILL.
    RETURN_IF_ERROR(add_limit(RLIMIT_CPU, limits.max_cpu_seconds, limits.max_cpu_seconds + 1));
  }
  if (limits.max_open_files > 0) {
    RETURN_IF_ERROR(add_limit(RLIMIT_NOFILE, limits.max_open_files, limits.max_open_files));
  }
  if (!limits.core_dumps) RETURN_IF_ERROR(add_limit(RLIMIT_CORE, 0, 0));

  // Descriptors: the child's ends (closed here after fork) and ours (kept on success).
  UniqueFd child_in, child_out, child_err, our_in, our_out, error_read, error_write;
  auto open_null = [&](UniqueFd& fd) -> absl::Status {
    fd.Reset(open("/dev/null", O_RDWR | O_CLOEXEC));
    if (fd.get() < 0) return base::OpenErrorToStatus(errno, absl::StrCat(name, ": open /dev/null"));
    return absl::OkStatus();
  };
  auto make_pipe = [&](UniqueFd& read_end, UniqueFd& write_end) -> absl::Status {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat(name, ": pipe2: ", base::ErrnoText(errno)));
    }
    read_end.Reset(fds[0]);
    write_end.Reset(fds[1]);
    return absl::OkStatus();
  };
  switch (options.stdin_mode) {
    case StdioMode::kInherit:
      break;
    case StdioMode::kNull:
      RETURN_IF_ERROR(open_null(child_in));
      break;
    case StdioMode::kPipe:
      RETURN_IF_ERROR(make_pipe(child_in, our_in));
      break;
  }
  switch (options.stdout_mode) {
    case StdioMode::kInherit:
      break;
    case StdioMode::kNull:
      RETURN_IF_ERROR(open_null(child_out));
      break;
    case StdioMode::kPipe:
      RETURN_IF_ERROR(make_pipe(our_out, child_out));
      break;
  }
  if (!options.stderr_path.empty()) {
    child_err.Reset(
        open(options.stderr_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (child_err.get() < 0) {
      return base::OpenErrorToStatus(
          errno, absl::StrCat(name, ": open stderr file ", options.stderr_path));
    }
  }
  RETURN_IF_ERROR(make_pipe(error_read, error_write));
  UniqueFd child_pass;
  if (options.pass_fd >= 0) {
    child_pass.Reset(fcntl(options.pass_fd, F_DUPFD_CLOEXEC, kPassedFd + 1));
    if (child_pass.get() < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": pass_fd ", options.pass_fd, ": ", base::ErrnoText(errno)));
    }
  }
  for (UniqueFd* fd : {&child_in, &child_out, &child_err, &error_write}) {
    RETURN_IF_ERROR(MoveAboveStdio(*fd, name));
  }
  plan.pass_fd = child_pass.get();
  plan.stdin_fd = child_in.get();
  plan.stdout_fd = child_out.get();
  plan.stderr_fd = child_err.get();
  plan.error_fd = error_write.get();

  std::vector<char*> argv;
  argv.reserve(options.argv.size() + 1);
  for (const std::string& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  plan.argv = argv.data();

  std::string record_prefix;
  {
    absl::MutexLock lock(&g_record_mu);
    if (!RecordDir().empty()) record_prefix = absl::StrCat(RecordDir(), "/");
  }
  if (!record_prefix.empty()) plan.record_prefix = record_prefix.c_str();

  int fork_errno = 0;
  const pid_t pid = Spawner::Get().Fork(plan, &fork_errno);
  if (pid < 0)
    return absl::InternalError(absl::StrCat(name, ": fork: ", base::ErrnoText(fork_errno)));
  const std::string record =
      record_prefix.empty() ? std::string() : absl::StrCat(record_prefix, pid);

  // Also set the group from this side, so a Signal() right after Start() cannot miss it. EACCES
  // (the child has exec'd: it set its group itself) and ESRCH are fine. Not for a new session:
  // setsid() fails in a process that already leads a group (and Start() returns only after the
  // child's exec, so after its setsid(), anyway).
  if (!options.new_session) (void)setpgid(pid, pid);
  child_in.Reset();
  child_out.Reset();
  child_err.Reset();
  error_write.Reset();

  ChildError child_error;
  size_t got = 0;
  while (got < sizeof(child_error)) {
    const ssize_t n = read(error_read.get(), reinterpret_cast<char*>(&child_error) + got,
                           sizeof(child_error) - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  if (got > 0) {
    if (!record.empty()) unlink(record.c_str());  // before the pid can be reused
    int wait_status;
    while (waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    if (got < sizeof(child_error)) {
      return absl::InternalError(absl::StrCat(name, ": cannot start: short error report"));
    }
    return ChildErrorToStatus(child_error, name, path, options);
  }

  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  return std::unique_ptr<Subprocess>(new Subprocess(pid, pidfd, name, our_in.Release(),
                                                    our_out.Release(), options.launcher, record));
}

Subprocess::Subprocess(pid_t pid, int pidfd, std::string name, int stdin_fd, int stdout_fd,
                       bool launcher, std::string record)
    : pid_(pid),
      pidfd_(pidfd),
      name_(std::move(name)),
      launcher_(launcher),
      record_(std::move(record)),
      stdin_fd_(stdin_fd),
      stdout_fd_(stdout_fd) {}

Subprocess::~Subprocess() {
  bool running;
  {
    absl::MutexLock lock(&mu_);
    absl::StatusOr<std::optional<base::ProcessExit>> ended = PollLocked();
    running = ended.ok() && !ended->has_value();
    if (stdin_fd_ >= 0) close(stdin_fd_);
    if (stdout_fd_ >= 0) close(stdout_fd_);
    stdin_fd_ = stdout_fd_ = -1;
  }
  if (running) {
    Signal(SIGKILL);
    (void)WaitExit(absl::Now() + kDestructorKillWait);
  }
  if (pidfd_ >= 0) close(pidfd_);
}

int Subprocess::TakeStdin() {
  absl::MutexLock lock(&mu_);
  return std::exchange(stdin_fd_, -1);
}

int Subprocess::TakeStdout() {
  absl::MutexLock lock(&mu_);
  return std::exchange(stdout_fd_, -1);
}

absl::StatusOr<std::optional<base::ProcessExit>> Subprocess::PollLocked() {
  if (exit_) return exit_;
  siginfo_t info;
  std::memset(&info, 0, sizeof(info));
  int r;
  do {
    r = waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    return absl::InternalError(
        absl::StrCat(name_, ": waitid(", pid_, "): ", base::ErrnoText(errno)));
  }
  if (info.si_pid == 0) return std::optional<base::ProcessExit>();
  // Ended but not reaped: its pid is still its group's id and cannot be reused yet, so whatever it
  // left running in the group can be killed safely now — and only now.
  (void)kill(-pid_, SIGKILL);
  if (!record_.empty()) unlink(record_.c_str());
  int wait_status = 0;
  do {
    r = waitpid(pid_, &wait_status, 0);
  } while (r < 0 && errno == EINTR);
  if (r < 0) {
    return absl::InternalError(
        absl::StrCat(name_, ": waitpid(", pid_, "): ", base::ErrnoText(errno)));
  }
  exit_ = base::ProcessExit::FromWaitStatus(wait_status);
  if (launcher_ && exit_->exit_code > 128 && exit_->exit_code <= 128 + 64) {
    // The launcher's command was killed by this signal.
    exit_->signal = exit_->exit_code - 128;
    exit_->exit_code = -1;
  }
  return exit_;
}

std::optional<base::ProcessExit> Subprocess::ExitStatus() {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::optional<base::ProcessExit>> ended = PollLocked();
  return ended.ok() ? *ended : std::nullopt;
}

absl::StatusOr<base::ProcessExit> Subprocess::WaitExit(absl::Time deadline) {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      ASSIGN_OR_RETURN(std::optional<base::ProcessExit> ended, PollLocked());
      if (ended) return *ended;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(name_, ": process ", pid_, " still running at the deadline"));
    }
    if (pidfd_ >= 0) {
      struct pollfd p = {pidfd_, POLLIN, 0};
      struct timespec ts;
      struct timespec* timeout = nullptr;
      if (deadline != absl::InfiniteFuture()) {
        ts = absl::ToTimespec(deadline - now);
        timeout = &ts;
      }
      // EINTR or readiness: either way, loop and ask waitid.
      (void)ppoll(&p, 1, timeout, nullptr);
    } else {
      absl::SleepFor(std::min(absl::Milliseconds(5), deadline - now));
    }
  }
}

void Subprocess::Signal(int sig) {
  absl::MutexLock lock(&mu_);
  if (exit_) return;
  if (kill(-pid_, sig) != 0) (void)kill(pid_, sig);
}

absl::StatusOr<base::ProcessExit> Subprocess::Stop(absl::Duration grace, absl::Time deadline) {
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(std::optional<base::ProcessExit> ended, PollLocked());
    if (ended) return *ended;
  }
  Signal(SIGTERM);
  absl::StatusOr<base::ProcessExit> ended = WaitExit(std::min(absl::Now() + grace, deadline));
  if (!absl::IsDeadlineExceeded(ended.status())) return ended;
  Signal(SIGKILL);
  return WaitExit(std::max(deadline, absl::Now() + kKillWait));
}

void RecordChildrenIn(absl::string_view dir) {
  absl::MutexLock lock(&g_record_mu);
  RecordDir() = std::string(dir);
}

}  // namespace benchfarm::process
