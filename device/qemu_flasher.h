// QemuFlasher: the Flasher for an emulated microcontroller. "Flashing" starts
//     qemu-system-arm -M <machine> -display none -monitor none -serial pty -kernel /bf/image
//                     [-icount shift=<n>,align=off,sleep=on]
//                     [-plugin /bf/cyclemodel.so,core=...,region=...,fd=3] <extra_args...>
// (stopping the QEMU that ran before) in a sandbox (process/sandbox.h: the image bound read-only at
// /bf/image, no network, a read-only system, a private /tmp, its own PID namespace, an
// unprivileged uid, limits), reads QEMU's "char device redirected to /dev/pts/N" line and points
// `serial_link` (a symlink) at that pty — on the sandbox's own /dev/pts, reached from outside as
// /proc/<sandbox init>/root/dev/pts/N. The board's UART is then an ordinary serial port to the
// rest of the farm: the agent opens `serial_link` like /dev/serial/by-id/..., with the same code
// as for a USB-serial adapter. Restarting QEMU is the board's reset. QEMU ending on its own (it
// crashed, or the machine powered off) is reported by Exited().
//
// Timing modes (QemuTiming):
//   kHost          plain QEMU: the guest's clocks follow host time; costs are noisy host time.
//   kInstructions  -icount: the guest's clocks advance by 2^icount_shift ns per executed
//                  instruction, so an on-chip timer counts instructions: the same candidate
//                  measured twice gives identical costs.
//   kCycles        -icount as above, plus benchfarm's cycle-model plugin (cyclemodel/), which
//                  charges every executed instruction its cycles on the modeled core and memory and
//                  reports the cycles of each interval the firmware's timer times on a pipe
//                  (cycle_stream()). The core and memory come from IMAGE.timing beside the image
//                  (crt/boards/build.sh writes it from the package's board.conf).
// With -icount, sleep=on: an idle guest (WFI) lets QEMU sleep instead of spinning a host core; what
// runs is still charged by the instruction, so timed code measures the same every time.
//
// Errors of Flash() (every message starts "qemu:<machine>: "):
//   InvalidArgument     no machine configured, or icount_shift outside 0..10.
//   NotFound            the image does not exist.
//   FailedPrecondition  qemu-system-arm is not installed (apt install qemu-system-arm), nor
//                       bubblewrap (apt install bubblewrap), or QEMU refused the machine, image or
//                       plugin and exited (a QEMU built without plugin support, a plugin that does
//                       not load); the message has QEMU's own text. kCycles: the plugin is missing,
//                       IMAGE.timing is missing or not valid, or the plugin did not greet.
//   DeadlineExceeded    QEMU did not report its pty by the deadline; it has been killed.
//   Internal            an OS failure (fork, pipes, the symlink).
// After a failed Flash() no QEMU runs.
//
// Thread-safety: all methods may be called from any thread; Flash() and Stop() serialize.

#ifndef BENCHFARM_DEVICE_QEMU_FLASHER_H_
#define BENCHFARM_DEVICE_QEMU_FLASHER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device/cycle_stream.h"
#include "device/flasher.h"
#include "process/run_command.h"
#include "process/subprocess.h"

namespace benchfarm::device {

enum class QemuTiming { kHost, kInstructions, kCycles };

// "host", "instructions", "cycles".
const char* QemuTimingName(QemuTiming timing);

struct QemuFlasherOptions {
  std::string machine;  // -M, e.g. "mps2-an385"
  std::string binary = "qemu-system-arm";
  QemuTiming timing = QemuTiming::kHost;
  int icount_shift = 0;  // kInstructions, kCycles: -icount shift=icount_shift
  // kCycles: the plugin (libbenchfarm_cyclemodel.so); empty: Flash fails saying so.
  std::string cycle_model_plugin;
  std::vector<std::string> extra_args;
  // The board's id, for the cycle model's messages ("board m3-0 (qemu:mps2-an385): ...").
  std::string board_id;
  // A symlink made to point at QEMU's pty after each start; empty: none (use port()).
  std::string serial_link;
  // QEMU's own output after its start (warnings, errors) is appended here; empty: discarded.
  // What it printed as it started is last_start()'s.
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
  // The QEMU command line for `image` (for logs, docs and tests); kCycles: with `plugin_args`
  // (IMAGE.timing's words) for the plugin at `plugin`. Flash() runs it in the sandbox with the
  // image at /bf/image and the plugin at /bf/cyclemodel.so.
  std::vector<std::string> CommandLine(const std::string& image,
                                       const std::vector<std::string>& plugin_args = {},
                                       const std::string& plugin = "") const;
  // The last Flash()'s QEMU: its command line (CommandLine(), the image's own path) and what it
  // printed as it started — up to its pty line when it started, everything when it exited at
  // start (then its exit too), the last 16 KiB of it — for the attempt's log (EnsureOutcome's
  // flash_output). nullopt before a Flash() that started QEMU.
  std::optional<process::CommandRun> last_start() const;
  // kCycles: the running QEMU's cycle model records; null when none runs or in other modes. Valid
  // until the next Flash or Stop.
  CycleStream* cycle_stream();
  // kCycles: the summary the plugin wrote when the last QEMU that ran it exited (cycles=,
  // instructions=, unmodeled=, intervals=, ...; CycleStream::Summary); empty before.
  std::map<std::string, uint64_t> last_summary() const;

 private:
  absl::Status StopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const QemuFlasherOptions options_;
  mutable absl::Mutex mu_;
  std::unique_ptr<process::Subprocess> qemu_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<CycleStream> cycle_stream_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, uint64_t> last_summary_ ABSL_GUARDED_BY(mu_);
  std::string port_ ABSL_GUARDED_BY(mu_);
  std::optional<process::CommandRun> last_start_ ABSL_GUARDED_BY(mu_);
  int keeper_fd_ ABSL_GUARDED_BY(mu_) = -1;  // the pty's slave, held open while QEMU runs
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_QEMU_FLASHER_H_
