// Subprocess: starts a program as a child in its own process group, with resource limits applied
// in the child before it runs, its standard streams wired as asked, and ends it — and everything
// it started in its group — without leaking processes.
//
// It is benchfarm's one way to start a child process: ChildProcessTransport (pipe_transport.h),
// the flashers and RunCommand all start theirs through it. It forks (rather than posix_spawn)
// because the flashers need resource limits applied in the child — a runaway host-process board
// must not take the host down — then applies setpgid/dup2/chdir/setrlimit/signal resets, and
// execs.
//
// The child:
//   - runs argv[0]: a path if it contains '/', else the first executable match in $PATH
//     (looked up here, before fork, so a missing program is a clear NotFound);
//   - leads a new process group (pgid == pid), so Signal() reaches whatever it forks (and, with
//     new_session, a new session without a controlling terminal);
//   - has an empty signal mask and default dispositions for every signal (a launcher: SIGTERM,
//     SIGINT and SIGHUP ignored);
//   - inherits no descriptor of this process except its stdin/stdout/stderr (everything else is
//     marked close-on-exec in the child), and pass_fd as its descriptor 3 when set;
//   - gets each non-zero ResourceLimits field as both its soft and hard limit (clamped to this
//     process's hard limit, which an unprivileged process cannot raise).
//
//   - dies with this process: it gets SIGKILL when this process ends, however it ends (kill -9
//     included) — PR_SET_PDEATHSIG, set in the child, which exits at once if this process is
//     already gone by then. Children are forked by one thread that lives as long as the process,
//     so the thread that called Start() may end without taking the child along. (The signal
//     reaches the child only; what the child starts in turn must be tied to it on its own terms —
//     a sandbox's bwrap does that with --die-with-parent and its PID namespace.)
//   - records itself, when RecordChildrenIn() named a directory, as <dir>/<pid> holding its start
//     time (field 22 of /proc/<pid>/stat, clock ticks since boot) and a newline, before it runs
//     its program; the record is removed when the child is reaped (after its group was killed).
//     A record left behind therefore names a child — and its process group and session — that
//     may still run after this process died: process/leftovers.h ends those at the next start.
//
// Reaping: once the child has ended, anything still running in its process group is killed
// (SIGKILL) before the child is reaped — while the child is an unreaped zombie its pid, hence its
// group id, cannot be reused, so that signal cannot reach a stranger. After reaping, Signal() is a
// no-op. The destructor kills and reaps a child that still runs.
//
// Thread-safety: every method may be called from any thread, concurrently (the blocking ones,
// WaitExit and Stop, wait without holding the lock), except that Start and the destructor must not
// race with anything else on the object. The descriptors handed out by TakeStdin/TakeStdout belong
// to the caller.

#ifndef BENCHFARM_PROCESS_SUBPROCESS_H_
#define BENCHFARM_PROCESS_SUBPROCESS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/process_exit.h"

namespace benchfarm::process {

// Limits applied in the child (setrlimit, soft = hard). 0 leaves a limit as inherited.
struct ResourceLimits {
  uint64_t max_address_space_bytes = 0;  // RLIMIT_AS
  uint64_t max_cpu_seconds = 0;          // RLIMIT_CPU (the child gets SIGXCPU, then SIGKILL 1 s on)
  uint64_t max_open_files = 0;           // RLIMIT_NOFILE
  bool core_dumps = true;                // false: RLIMIT_CORE = 0
};

// Where one of the child's standard streams goes.
enum class StdioMode {
  kInherit,  // this process's
  kNull,     // /dev/null
  kPipe,     // a pipe whose other end TakeStdin()/TakeStdout() hands out (stdin/stdout only)
};

struct SubprocessOptions {
  std::vector<std::string> argv;
  // Empty: this process's working directory.
  std::string working_dir;
  ResourceLimits limits;
  StdioMode stdin_mode = StdioMode::kNull;
  StdioMode stdout_mode = StdioMode::kPipe;
  // stderr: into stdout (2>&1) if stderr_to_stdout; else appended to stderr_path (created 0644)
  // if that is set; else inherited. Setting both is InvalidArgument.
  bool stderr_to_stdout = false;
  std::string stderr_path;
  // The child calls setsid() instead of setpgid(): it leads a new session as well as a new process
  // group (its group id is still its pid), so it and everything it starts have no controlling
  // terminal — nothing in it can open /dev/tty to read from or type into the terminal this
  // process runs in.
  bool new_session = false;
  // argv[0] is a launcher that runs the real command as its descendant in the same process group
  // and exits as that command did — a sandbox (process/sandbox.h). Then the child starts with
  // SIGTERM, SIGINT and SIGHUP ignored (the launcher does not die of a Signal() to the group; the
  // command, which resets them, ends on its own terms and the launcher follows), and an exit code
  // 128+N (N = 1..64), which is how such launchers report a command killed by signal N, is
  // reported as that signal.
  bool launcher = false;
  // >= 0: also given to the child as its descriptor 3 (e.g. the write end of a pipe the parent
  // reads from; a sandbox passes it on to its command). Borrowed: the caller closes its own copy
  // once Start returned.
  int pass_fd = -1;
};

// From now on every child Subprocess starts (from any thread) records itself in `dir` (see the
// file comment); "" stops recording. `dir` must exist; a child that cannot write its record runs
// anyway. For a daemon that must find what a killed predecessor left running (the agent).
void RecordChildrenIn(absl::string_view dir);

class Subprocess {
 public:
  // Starts the child. Errors (messages name argv[0] and the step that failed):
  //   InvalidArgument     empty argv, kPipe for stderr's options, or both stderr options set.
  //   NotFound            argv[0] not found (ENOENT/ENOTDIR, or nowhere in $PATH), or the
  //                       working directory or stderr file's directory does not exist.
  //   PermissionDenied    EACCES/EPERM: not executable, or a directory/file not accessible.
  //   FailedPrecondition  argv[0] is not something the kernel can execute (ENOEXEC, e.g. a
  //                       script without "#!"), or is a directory.
  //   Internal            pipe, fork, setrlimit or any other OS failure, with the OS's text.
  static absl::StatusOr<std::unique_ptr<Subprocess>> Start(const SubprocessOptions& options);

  // Kills (SIGKILL to the group) and reaps the child if it is still there; closes descriptors
  // not taken. May block up to a few seconds for a process stuck in the kernel.
  ~Subprocess();

  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  // argv[0] as given, for messages.
  const std::string& name() const { return name_; }

  // The write end of the child's stdin pipe / the read end of its stdout pipe (close-on-exec,
  // blocking mode), now owned by the caller; -1 if that stream is not kPipe or was taken already.
  int TakeStdin();
  int TakeStdout();

  // The child's end if it has ended (then reaped, its group killed first); nullopt while it runs.
  // Never blocks.
  std::optional<base::ProcessExit> ExitStatus();

  // Waits until the child has ended (see ExitStatus) or the deadline. Errors: DeadlineExceeded if
  // it still runs then; Internal if waitpid fails (e.g. SIGCHLD is ignored, so the kernel reaped
  // it already).
  absl::StatusOr<base::ProcessExit> WaitExit(absl::Time deadline);

  // A descriptor that polls readable (POLLIN) once the child has ended (a pidfd), for waiting on
  // it together with other descriptors; -1 on kernels without pidfd_open (poll ExitStatus()
  // then). Owned by this object; valid until its destruction.
  int exit_fd() const { return pidfd_; }

  // Sends `sig` to the child's process group (to the child alone if the group is gone). No-op once
  // the child has been reaped.
  void Signal(int sig);

  // Ends the child: SIGTERM to the group, waits up to `grace` (never past `deadline`), then
  // SIGKILL to the group and waits until `deadline` — but at least 2 s, because a SIGKILLed
  // process normally goes within milliseconds and leaking it is worse than a late return. Returns
  // how it ended (its own exit if it had already ended). Errors: as WaitExit.
  absl::StatusOr<base::ProcessExit> Stop(absl::Duration grace, absl::Time deadline);

 private:
  Subprocess(pid_t pid, int pidfd, std::string name, int stdin_fd, int stdout_fd, bool launcher,
             std::string record);

  // Reaps the child if it has ended (killing its group first). Returns the exit, nullopt if it
  // still runs, or Internal.
  absl::StatusOr<std::optional<base::ProcessExit>> PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const pid_t pid_;
  // Readable once the child has ended; -1 where pidfd_open is unavailable (then waits poll).
  const int pidfd_;
  const std::string name_;
  const bool launcher_;
  // The child's record (RecordChildrenIn), removed when it is reaped; empty: none.
  const std::string record_;

  mutable absl::Mutex mu_;
  int stdin_fd_ ABSL_GUARDED_BY(mu_);
  int stdout_fd_ ABSL_GUARDED_BY(mu_);
  std::optional<base::ProcessExit> exit_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::process

#endif  // BENCHFARM_PROCESS_SUBPROCESS_H_
