// HostProcessFlasher: the Flasher for host-process boards, whose "firmware image" is a Linux
// executable (//crt/host:board or a build of it) and whose "board" is that executable running as a
// child of this process.
//
// Flash(image) stops the running board, if any (see Stop()), and starts
//     /bf/image <extra_args...> [--cpu N] [--pty]
// in a sandbox (process/sandbox.h), the image bound read-only at /bf/image: no network, a
// read-only system and no other host file, a private /tmp (tmp_bytes) as the only writable
// place, its own PID namespace (everything the board starts, setsid() daemons included, dies with
// it: at the next Flash(), Stop(), or when this process goes), an unprivileged uid, and resource
// limits (processes, CPU, address space — 1 GiB by default —, open files, no core dumps). The
// sandbox's bwrap is the child (process/subprocess.h): its own session and process group, stderr
// to a file or inherited, and the limits also set on it; a SIGTERM to its group reaches the board,
// and its exit is the board's. The link to it is then transport():
//   - pipes (default): the child's stdin and stdout. Closing the transport is end of input for
//     the board, which then exits (its stdout keeps a reader until the next Flash(), so it never
//     fails on EPIPE); it cannot be reopened — flash again.
//   - use_pty: the child gets --pty and /dev/null as stdin; Flash() reads its first stdout line,
//     "pty: <path>", and opens that path — on the sandbox's own /dev/pts, reached from here as
//     /proc/<sandbox init>/root/dev/pts/N — as a PtyTransport (raw). The board keeps its slave
//     open, so the transport may be closed and reopened, and the boot signature is never lost.
//     Further output on the child's stdout is not read.
// --cpu N (cpu_affinity) makes the board pin itself to CPU N before it serves (sched_setaffinity
// works inside the sandbox too); a CPU it may not use makes it exit 1 at once, with the reason on
// its stderr, so the link then fails with "the board process ended: exit code 1".
// Flash() returns once the process runs (and, with use_pty, once the pty is open); the board's
// boot signature is then waiting on the link. Reads and writes on a link that fails because the
// board died say how it died ("...; the board process ended: killed by signal 11 (...)").
//
// Errors of Flash() (every message starts "host-process: " and names the image):
//   InvalidArgument     image.path is empty; cpu_affinity is not "", "auto" or a CPU number, or
//                       names a CPU this host does not have.
//   NotFound            the image does not exist.
//   PermissionDenied    the image is not executable.
//   FailedPrecondition  the image is not a regular file; bubblewrap is not installed (the message
//                       says `apt install bubblewrap`); or, with use_pty, it did not print
//                       "pty: <path>" as its first line. (An image the kernel cannot execute
//                       starts a sandbox that ends at once with exit code 126.)
//   DeadlineExceeded    the deadline passed before the old board was stopped or (use_pty) before
//                       the new one printed its pty path; the new process has been killed.
//   Unknown             (use_pty) the new process ended before it printed its pty path; the
//                       message says how (e.g. "exit code 2").
//   Internal            any other OS failure (fork, pipes, setrlimit, waitpid), with its text.
//   Any error of Stop() (the old board could not be stopped), or of PtyTransport::Open().
// A Flash() that fails its checks before stopping anything (InvalidArgument, NotFound, not a
// regular file, a deadline already passed) changes nothing; after any later failure no board runs:
// transport() is null and pid() is -1.
//
// Thread-safety: all methods may be called from any thread. Flash(), Stop() and the destructor
// serialize with one another. pid(), image(), ExitStatus(), Crashed() and WaitExit() do not wait
// for a Flash() or Stop() in progress beyond a short lock; WaitExit() may run concurrently with
// anything and waits for the board that ran when it was called. The Transport* from transport() is
// valid until the next Flash() or the destructor begins: do not use it across a Flash(). Use it as
// Transport allows (one reader plus one writer); Stop() may close it from another thread.

#ifndef BENCHFARM_DEVICE_HOST_PROCESS_FLASHER_H_
#define BENCHFARM_DEVICE_HOST_PROCESS_FLASHER_H_

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
#include "absl/types/span.h"
#include "base/process_exit.h"
#include "device/flasher.h"
#include "device/transport.h"
#include "process/sandbox.h"
#include "process/subprocess.h"

namespace benchfarm::device {

struct HostProcessFlasherOptions {
  // Serve the link on a pseudo-terminal (the board's --pty) instead of stdin/stdout.
  bool use_pty = false;
  // Arguments after the image path (before --cpu and --pty), e.g. {"--kind", "host-fast"}.
  std::vector<std::string> extra_args;
  // The CPU the board process pins itself to (BoardConfig.cpu_affinity): "" not pinned; "N" CPU
  // N; "auto" one of the CPUs this process may run on (sched_getaffinity), chosen by a stable hash
  // of board_id, so the boards of one agent spread over its CPUs and each keeps its CPU across
  // restarts.
  std::string cpu_affinity;
  std::string board_id;
  // Resource limits of each process of the board's sandbox, each set as soft and hard limit;
  // 0 = none of that kind.
  uint64_t max_address_space_bytes = uint64_t{1} << 30;  // RLIMIT_AS, default 1 GiB
  uint64_t max_cpu_seconds = 3600;                       // RLIMIT_CPU (SIGXCPU when reached)
  uint64_t max_open_files = 256;                         // RLIMIT_NOFILE
  uint64_t max_processes = 64;                           // RLIMIT_NPROC: processes and threads
  // The board's private /tmp (a tmpfs of at most this size), its only writable directory.
  uint64_t tmp_bytes = uint64_t{64} << 20;
  // Core dumps: never from the sandbox (RLIMIT_CORE 0); this only concerns bwrap itself.
  bool core_dumps = false;
  // Empty: the board's stderr is this process's. Otherwise appended to this file (created 0644).
  std::string stderr_path;
  // How long Stop() waits for the board to exit after end of input (pipes), and then after
  // SIGTERM, before SIGKILL.
  absl::Duration term_grace = absl::Seconds(1);
};

// The CPUs this process may run on (sched_getaffinity), ascending. Internal if the call fails.
absl::StatusOr<std::vector<int>> AllowedCpus();

// The CPU a cpu_affinity setting names for board `board_id`: nullopt for "" (no pinning), N for
// "N" (decimal, below CPU_SETSIZE), for "auto" allowed_cpus[FNV-1a 64(board_id) % size] (the
// same id always gets the same CPU of the same set; ids that differ only in their last character,
// such as "hp-0" and "hp-1", get different CPUs of an even-sized set). InvalidArgument for
// anything else, or "auto" with no CPUs.
absl::StatusOr<std::optional<int>> ResolveCpuAffinity(absl::string_view cpu_affinity,
                                                      absl::string_view board_id,
                                                      absl::Span<const int> allowed_cpus);

class HostProcessFlasher final : public Flasher {
 public:
  explicit HostProcessFlasher(HostProcessFlasherOptions options = {});

  // Stops the board (as Stop() with a deadline of 2 * term_grace + a few seconds).
  ~HostProcessFlasher() override;

  HostProcessFlasher(const HostProcessFlasher&) = delete;
  HostProcessFlasher& operator=(const HostProcessFlasher&) = delete;

  // Stops the running board and starts `image`. Always restarts, even for the same image. Errors:
  // see the file comment.
  absl::Status Flash(const FirmwareImage& image, absl::Time deadline) override;

  // "host-process".
  std::string Name() const override { return "host-process"; }

  // The link to the board started by the last successful Flash(); null before that or after a
  // failed Flash(). Owned by this flasher; lifetime: see the file comment.
  Transport* transport();

  // The board's process id (also its process group and session id) — its sandbox's bwrap, whose
  // exit is the board's; -1 when there is none.
  pid_t pid() const;

  // Ends what a trial left running in the current board's sandbox: every process but the board
  // (KillSandboxStrays: children, setsid() daemons, theirs) is killed. Returns how many, and how
  // many threads the board process runs now (the board is single-threaded: more is a thread the
  // trial started, which only a restart ends). FailedPrecondition when no board was started;
  // NotFound when its sandbox has ended.
  absl::StatusOr<process::KilledStrays> EndStrays();

  // The image the current board was started from; nullopt when there is none.
  std::optional<FirmwareImage> image() const;

  // How the current board ended (reaping it); nullopt while it runs or when there is none.
  // Never blocks.
  std::optional<base::ProcessExit> ExitStatus();

  // How the current board ended if it crashed: it was killed by a signal this flasher did not send
  // (SIGSEGV, SIGABRT, SIGXCPU from max_cpu_seconds, a SIGKILL from the OOM killer or a user...).
  // nullopt while it runs, when it exited with an exit code, when Stop() ended it, or when there
  // is none. A crash racing with a Stop() may count as stopped. Never blocks.
  std::optional<base::ProcessExit> Crashed();

  // Waits until the current board has ended, or the deadline. Errors: FailedPrecondition when
  // there is no board; DeadlineExceeded if it still runs then; Internal if waitpid fails.
  absl::StatusOr<base::ProcessExit> WaitExit(absl::Time deadline);

  // Ends the current board cleanly: closes the link — on pipes that is end of input, and the board
  // gets up to term_grace to exit by itself — then SIGTERM to its process group and up to
  // term_grace to exit (the host-process board exits 0 on either), then SIGKILL, and reaps it.
  // No wait goes past `deadline`, except that a SIGKILLed board is waited for at least 2 s. Returns
  // how it ended, also when it had already ended by itself (then Crashed() still reports a crash).
  // The transport stays valid but closed. Errors: FailedPrecondition when no board was started;
  // DeadlineExceeded / Internal as WaitExit.
  absl::StatusOr<base::ProcessExit> Stop(absl::Time deadline);

 private:
  struct Board;

  // The CPU the board is to pin itself to (options_.cpu_affinity), or nullopt; InvalidArgument.
  absl::StatusOr<std::optional<int>> PinnedCpu() const;
  // Flash() after the checks, with op_mu_ held.
  absl::Status Start(const FirmwareImage& image, std::optional<int> cpu, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);
  // Stop() with op_mu_ held; `board` is board_ (or null).
  absl::StatusOr<base::ProcessExit> StopBoard(Board* board, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(op_mu_);

  const HostProcessFlasherOptions options_;

  // Serializes Flash(), Stop() and the destructor; taken before mu_.
  absl::Mutex op_mu_;
  mutable absl::Mutex mu_;
  // Replaced only with op_mu_ held too, so op_mu_ holders may use it without mu_.
  std::unique_ptr<Board> board_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_HOST_PROCESS_FLASHER_H_
