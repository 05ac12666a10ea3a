// ChildProcessTransport: a Transport whose other end is a child process — the host-process board
// (//crt/host:board) or any program that speaks the link on stdin/stdout.
//
// Open() starts argv as a Subprocess (process/subprocess.h, benchfarm's one way to start a child)
// with a pipe on its stdin and one on its stdout; those two pipes are the link, read and written
// through FdTransport. As every Subprocess, the child runs in its own process group (so a
// terminal's Ctrl-C does not reach it, and Close() can signal whatever it started), with an empty
// signal mask, default dispositions for every signal, and no descriptor of this process but its
// standard streams. Its stderr is this process's stderr, or a file
// (ChildProcessOptions::stderr_path).
//
// Close() closes both pipes (end of input for the child), sends SIGTERM to the child's process
// group, waits up to ChildProcessOptions::term_grace, then sends SIGKILL, and reaps the child
// (killing whatever it left in its group). The exit stays available through
// ExitStatus()/WaitExit() until the next Open().
//
// Errors (names are "process:<argv[0]>"):
//   Open()  InvalidArgument (empty argv); NotFound (argv[0] not found: ENOENT/ENOTDIR, nowhere in
//           $PATH, or the stderr file's directory is missing); PermissionDenied (EACCES/EPERM);
//           FailedPrecondition (argv[0] is not executable by the kernel, e.g. a directory);
//           Internal (pipe2, fork or other failures, with the OS's text).
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
#include "absl/types/span.h"
#include "base/process_exit.h"
#include "device/fd_transport.h"
#include "device/transport.h"
#include "process/subprocess.h"

namespace benchfarm::device {

struct ChildProcessOptions {
  // Empty: the child inherits this process's stderr. Otherwise the child's stderr is appended to
  // this file, created (mode 0644) if missing.
  std::string stderr_path;
  // How long Close() waits for the child after SIGTERM before it sends SIGKILL.
  absl::Duration term_grace = absl::Seconds(1);
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
  std::optional<base::ProcessExit> ExitStatus();

  // Waits until the child has ended or `deadline`. Errors: FailedPrecondition before the first
  // Open(); DeadlineExceeded if it still runs at the deadline; Internal if waitpid() fails (e.g.
  // someone else reaped it, as with SIGCHLD ignored).
  absl::StatusOr<base::ProcessExit> WaitExit(absl::Time deadline);

 private:
  // The current or last child; null before the first successful Open().
  std::shared_ptr<process::Subprocess> process() const;
  // Appends how the child ended (waiting briefly for it) to an Unavailable status.
  absl::Status Explain(absl::Status status);

  const std::vector<std::string> argv_;
  const ChildProcessOptions options_;
  FdTransport io_;

  mutable absl::Mutex mu_;
  // Shared so that a waiter keeps the child it waits on even if Open() replaces it.
  std::shared_ptr<process::Subprocess> process_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_PIPE_TRANSPORT_H_
