// ChildProcessTransport: a Transport whose other end is a child process — the host-process board
// (//crt/host:board) or any program that speaks the link on stdin/stdout.
//
// Open() starts argv as a child with a pipe on its stdin and one on its stdout; those two pipes
// are the link, read and written through FdTransport. The child runs in its own process group
// (so a terminal's Ctrl-C does not reach it, and Close() can signal whatever it started), with an
// empty signal mask and default dispositions for SIGPIPE/SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGCHLD.
// Its stderr is this process's stderr, or a file (ChildProcessOptions::stderr_path). Every
// descriptor this class opens is close-on-exec, so a second child never holds a first child's
// pipes open.
//
// Close() closes both pipes (end of input for the child), sends SIGTERM to the child's process
// group, waits up to ChildProcessOptions::term_grace, then sends SIGKILL, and reaps the child.
// The exit stays available through ExitStatus()/WaitExit() until the next Open().
//
// Errors (names are "process:<argv[0]>"):
//   Open()  InvalidArgument (empty argv); NotFound (argv[0] not found: ENOENT/ENOTDIR, or the
//           stderr file's directory is missing); PermissionDenied (EACCES/EPERM); Internal
//           (pipe2, posix_spawn or other failures, with the OS's text).
//   Read/Write  as FdTransport; an Unavailable status (the child closed its end or died) also
//           says how the child ended when that is known within ~200 ms, e.g. "process:board:
//           closed by the board (end of file); the process was killed by signal 9 (Killed)".
//
// Thread-safety: as Transport (one reader plus one writer); Close() may come from any thread.
// pid(), ExitStatus() and WaitExit() may be called from any thread, concurrently with Read/Write
// and with each other, but not concurrently with Open() or destruction.

#ifndef BENCHFARM_DEVICE_PIPE_TRANSPORT_H_
#define BENCHFARM_DEVICE_PIPE_TRANSPORT_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "device/fd_transport.h"
#include "device/transport.h"

namespace benchfarm::device {

struct ChildProcessOptions {
  // Empty: the child inherits this process's stderr. Otherwise the child's stderr is appended to
  // this file, created (mode 0644) if missing.
  std::string stderr_path;
  // How long Close() waits for the child after SIGTERM before it sends SIGKILL.
  absl::Duration term_grace = absl::Seconds(1);
};

// How a child process ended: exactly one of exited() and signaled() is true.
struct ProcessExit {
  // The exit code (0..255) when the process exited, else -1.
  int exit_code = -1;
  // The signal that killed it, else 0.
  int signal = 0;
  bool core_dumped = false;

  bool exited() const { return exit_code >= 0; }
  bool signaled() const { return signal > 0; }

  // "exit code 3", "killed by signal 9 (Killed)".
  std::string ToString() const;

  // From a waitpid() status of a process that terminated.
  static ProcessExit FromWaitStatus(int wait_status);
};

class ChildProcessTransport final : public Transport {
 public:
  // Nothing starts until Open(). argv[0] is looked up in PATH if it has no '/'.
  explicit ChildProcessTransport(std::vector<std::string> argv, ChildProcessOptions options = {});

  // Close()s: the child never outlives this object.
  ~ChildProcessTransport() override;

  ChildProcessTransport(const ChildProcessTransport&) = delete;
  ChildProcessTransport& operator=(const ChildProcessTransport&) = delete;

  // Starts a new child (after Close(), a fresh one). OK and no-op while the pipes of a child are
  // attached, even if that child has exited — Close() first to restart it. Errors: see above.
  absl::Status Open() override;

  // Closes the pipes, then ends and reaps the child (SIGTERM, term_grace, SIGKILL). Idempotent.
  void Close() override;

  absl::Status Write(absl::string_view data, absl::Time deadline) override;
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override;

  // "process:<argv[0]>".
  std::string Name() const override { return io_.Name(); }

  // The current or last child's process id; -1 before the first successful Open().
  pid_t pid() const;

  // The child's end if it has ended (reaping it if needed); nullopt while it runs or before the
  // first Open(). Never blocks.
  std::optional<ProcessExit> ExitStatus();

  // Waits until the child has ended or `deadline`. Errors: FailedPrecondition before the first
  // Open(); DeadlineExceeded if it still runs at the deadline; Internal if waitpid() fails (e.g.
  // someone else reaped it, as with SIGCHLD ignored).
  absl::StatusOr<ProcessExit> WaitExit(absl::Time deadline);

 private:
  // Reaps the child if it has ended. Returns the exit, nullopt if it still runs, or Internal.
  absl::StatusOr<std::optional<ProcessExit>> PollExitLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Appends how the child ended (waiting briefly for it) to an Unavailable status.
  absl::Status Explain(absl::Status status);

  const std::vector<std::string> argv_;
  const ChildProcessOptions options_;
  FdTransport io_;

  mutable absl::Mutex mu_;
  pid_t pid_ ABSL_GUARDED_BY(mu_) = -1;
  // A pidfd for pid_ (readable once the child ends), or -1 where pidfd_open is unavailable.
  int pidfd_ ABSL_GUARDED_BY(mu_) = -1;
  std::optional<ProcessExit> exit_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_PIPE_TRANSPORT_H_
