// QemuFlasher: the Flasher for an emulated microcontroller. "Flashing" starts
//     qemu-system-arm -M <machine> -display none -monitor none -serial pty -kernel /bf/image
//                     [-icount shift=<n>,align=off,sleep=off] <extra_args...>
// (stopping the QEMU that ran before) in a sandbox (device/sandbox.h: the image bound read-only at
// /bf/image, no network, a read-only system, a private /tmp, its own PID namespace, an
// unprivileged uid, limits), reads QEMU's "char device redirected to /dev/pts/N" line and points
// `serial_link` (a symlink) at that pty — on the sandbox's own /dev/pts, reached from outside as
// /proc/<sandbox init>/root/dev/pts/N. The board's UART is then an ordinary serial port to the
// rest of the farm: the agent opens `serial_link` like /dev/serial/by-id/..., with the same code
// as for a USB-serial adapter. Restarting QEMU is the board's reset. QEMU ending on its own (it
// crashed, or the machine powered off) is reported by Exited().
//
// Deterministic mode (-icount): the guest's clocks advance by 2^icount_shift ns per executed
// instruction instead of with host time, so an on-chip timer measures instructions: the same
// candidate measured twice gives identical costs. Such costs are emulated, not silicon time.
//
// Errors of Flash() (every message starts "qemu:<machine>: "):
//   InvalidArgument     no machine configured, or icount_shift outside 0..10.
//   NotFound            the image does not exist.
//   FailedPrecondition  qemu-system-arm is not installed (apt install qemu-system-arm), nor
//                       bubblewrap (apt install bubblewrap), or QEMU refused the machine or image
//                       and exited; the message has QEMU's own text.
//   DeadlineExceeded    QEMU did not report its pty by the deadline; it has been killed.
//   Internal            an OS failure (fork, pipes, the symlink).
// After a failed Flash() no QEMU runs.
//
// Thread-safety: all methods may be called from any thread; Flash() and Stop() serialize.

#ifndef BENCHFARM_DEVICE_QEMU_FLASHER_H_
#define BENCHFARM_DEVICE_QEMU_FLASHER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device/flasher.h"
#include "device/subprocess.h"

namespace benchfarm::device {

struct QemuFlasherOptions {
  std::string machine;                  // -M, e.g. "mps2-an385"
  std::string binary = "qemu-system-arm";
  bool deterministic = false;           // -icount shift=icount_shift
  int icount_shift = 0;
  std::vector<std::string> extra_args;
  // A symlink made to point at QEMU's pty after each start; empty: none (use port()).
  std::string serial_link;
  // QEMU's own output (warnings, errors) is appended here; empty: discarded after start.
  std::string log_path;
};

class QemuFlasher final : public Flasher {
 public:
  explicit QemuFlasher(QemuFlasherOptions options);
  ~QemuFlasher() override;  // Stop()s QEMU

  QemuFlasher(const QemuFlasher&) = delete;
  QemuFlasher& operator=(const QemuFlasher&) = delete;

  // Stops the running QEMU, if any, and starts one with `image`. Errors: see the file comment.
  absl::Status Flash(const FirmwareImage& image, absl::Time deadline) override;
  // "qemu:<machine>".
  std::string Name() const override;

  // The pty of the running QEMU as this process reaches it ("/proc/<pid>/root/dev/pts/N");
  // empty when none runs.
  std::string port() const;
  // How QEMU ended if it ended by itself (not through Stop or a new Flash); nullopt while it runs
  // or when none was started. Never blocks.
  std::optional<base::ProcessExit> Exited();
  // Exited(), waiting up to `deadline` for QEMU to end (Flash and Stop wait meanwhile).
  std::optional<base::ProcessExit> WaitExited(absl::Time deadline);
  // Ends QEMU (SIGTERM, then SIGKILL) and removes serial_link. No-op when none runs.
  void Stop();
  // The QEMU command line for `image` (for logs, docs and tests). Flash() runs it in the sandbox
  // with the image at /bf/image.
  std::vector<std::string> CommandLine(const std::string& image) const;

 private:
  absl::Status StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const QemuFlasherOptions options_;
  mutable absl::Mutex mu_;
  std::unique_ptr<Subprocess> qemu_ ABSL_GUARDED_BY(mu_);
  std::string port_ ABSL_GUARDED_BY(mu_);
  int keeper_fd_ ABSL_GUARDED_BY(mu_) = -1;  // the pty's slave, held open while QEMU runs
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_QEMU_FLASHER_H_
