// Board: one board of the farm as the host sees it — the one place in benchfarm that turns a
// board's description (benchfarm.v1.BoardConfig, data) into a working board. It owns the
// flasher, the transport, the host session and the RPC client, and offers:
//   EnsureImage  the board runs this image and the link is up: skipped when the board already
//                reports the image's hash (asked first on a serial board, e.g. after an agent
//                restart), else flashed, connected and the hash checked;
//   Connect      open the transport, handshake, read DeviceInfo (optional: a board without
//                benchfarm.DeviceInfo — TVM's own CRT — is a board whose details are unknown,
//                DeviceInfo::benchfarm false; it runs the image this Board flashed last);
//   MeasureRound one round of a trial's measurement, and the board's own diagnosis of a round
//                that failed: one BoardFailure (crashed, killed from outside, hung, link lost,
//                rebooted, ...), the board already reset as that failure needs, and what the
//                trial's code left running ended;
//   Reset        after a hang or a crash: the next EnsureImage restarts (re-flashes) the board;
//                after the board rebooted by itself, it only reconnects;
//   rpc/info     the RPC client and what the board said about itself;
//   Interrupt    (from another thread) abandons the call in flight at once: a cancelled trial
//                frees its board without waiting for the trial's own timeout.
//
// How a board is reached is decided by its config alone:
//   host_process { use_pty }         HostProcessFlasher; its pipes or its pty.
//   serial { port baud } [flasher]   a USB-serial port (libserialport) or a pty path (termios),
//                                    re-resolved at each open; an optional CommandFlasher.
//   serial {} + qemu { machine }     QemuFlasher; the UART on QEMU's pty, reached through the
//                                    symlink <scratch_dir>/<id>.tty (or serial.port if set) —
//                                    the same serial code path as a real board. qemu.timing says
//                                    what its costs are (QemuTimingOf); timer() reads them.
// Chaos testing: link_fault_file (see proto/config.proto) puts a FaultInjectingTransport, set by
// that file, between the board's transport and its session while the file exists. EnsureImage
// compares the file (present or not, and its contents) with what the current link was opened
// with and, when it changed, reconnects (a new handshake) so the new setting applies. With the
// field empty nothing of this happens.
//
// Adding a board kind is a config entry (plus a board-support package in crt/boards for a new
// MCU), never a code branch elsewhere.
//
// Thread-safety: none; one thread (the agent's board worker, or farmctl) drives a Board. Only
// Interrupt and ClearInterrupt may be called from any thread.

#ifndef BENCHFARM_DEVICE_BOARD_H_
#define BENCHFARM_DEVICE_BOARD_H_

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "device/board_timer.h"
#include "device/fault_injecting_transport.h"
#include "device/flasher.h"
#include "device/host_session.h"
#include "device/measure.h"
#include "device/rpc_client.h"
#include "device/transport.h"
#include "proto/config.pb.h"

namespace benchfarm::device {

// How a board died (Board::CrashReport).
struct BoardCrash {
  std::string description;  // "killed by signal 11 (Segmentation fault)", "QEMU exited: ..."
  int signal = 0;           // the signal that killed a host-process board; 0 otherwise
  // Killed by a signal the code it ran does not raise by itself — SIGKILL, SIGTERM, SIGHUP,
  // SIGINT: the OOM killer or an operator. Not the trial's fault (the agent retries it);
  // SIGSEGV, SIGFPE, SIGABRT, SIGBUS and the rest are.
  bool KilledFromOutside() const;
};

// Parses a link fault file's contents (BoardConfig.link_fault_file): whitespace-separated
// key=value words, keys drop_rate, flip_rate, duplicate_rate, delay_rate (numbers in [0, 1]),
// max_delay_ms (a number >= 0) and seed (an unsigned integer); each at most once. Empty text: no
// faults (all rates 0). InvalidArgument naming the word for an unknown key, a word without '=',
// a repeated key or a bad value.
absl::StatusOr<FaultOptions> ParseLinkFaultSpec(absl::string_view text);

class CommandFlasher;
class HostProcessFlasher;
class QemuFlasher;
enum class QemuTiming;

// An emulated board's timing mode: qemu.timing, with the older `deterministic: true` meaning
// INSTRUCTIONS, and CYCLES when neither is set.
QemuTiming QemuTimingOf(const v1::QemuMachine& qemu);

struct BoardOptions {
  v1::BoardConfig config;
  // Board logs (host-process stderr, QEMU output) and the QEMU serial link go here; empty: none
  // kept (QEMU's link then goes to a temporary directory).
  std::string scratch_dir;
  absl::Duration connect_timeout = absl::Seconds(10);
  absl::Duration flash_timeout = absl::Seconds(600);
  // The cycle model plugin for qemu boards in CYCLES timing when qemu.cycle_model_plugin is not
  // set (the agent and farmctl pass the one they ship with).
  std::string cycle_model_plugin;
  // Board Log messages; default: HostSession's (stderr).
  std::function<void(absl::string_view board_id, absl::string_view text)> log_sink;
};

// What went wrong on a board: why it could not be brought to an image (EnsureImage, Connect: the
// first three kinds), or how a round of a trial's measurement failed (Board::MeasureRound: the
// others). The agent turns each kind into one ErrorCode (agent/board_errors.h).
struct BoardFailure {
  enum Kind {
    kFlash,             // the flasher failed
    kSession,           // no port, no handshake, no answer to DeviceInfo
    kFirmwareMismatch,  // the board reports another image than the one needed
    // The trial's code crashed the board: a host process killed by a signal the code raises
    // itself (SIGSEGV, SIGFPE, SIGABRT, ...), QEMU that exited. message: how it died, and the
    // board's fault line when it sent one ("; its last log: fault: SIGSEGV ... pc=0x...").
    kCrashed,
    // A host process killed from outside while it ran the call (BoardCrash::KilledFromOutside:
    // the OOM killer, an operator). message: how it died.
    kKilledFromOutside,
    // The call went unanswered but the board is alive: the link damaged packets during the call
    // (damaged_packets > 0), or the board answered a new handshake at once. message: the call's
    // error.
    kLinkLost,
    // No answer within the call's deadline on a clean link, and none to a new handshake: the
    // trial's code hangs. message: the call's error.
    kHung,
    // The board reset itself during the call (a fault handler, a watchdog). message: the call's
    // error, which names the fault.
    kRebooted,
    // The link went away, or a reply or the board's timing was malformed (Unavailable,
    // FailedPrecondition, DataLoss). message: the call's error.
    kLinkFailed,
    // The function failed on the board (an error it returned, a missing function) and the board
    // is fine. message: the call's error.
    kCallFailed,
    // Interrupt() abandoned the call (the trial was cancelled): the board, maybe still busy with
    // it, was stopped (host process, QEMU) or is restarted (re-flashed) before its next use.
    // message: the call's error.
    kCancelled,
  };
  Kind kind;
  std::string message;
  uint64_t damaged_packets = 0;  // kLinkLost: bad CRCs and broken packets during the call
};

// What EnsureImage did.
struct EnsureOutcome {
  bool flashed = false;
  bool skipped = false;  // the board already ran the image
  absl::Duration flash_time;
  absl::Duration handshake_time;
  std::optional<BoardFailure> failure;
  // When a flash command ran (a board with `flasher`), failed or not: its command line and the
  // output it kept (CommandFlasherOptions::max_output_bytes, the tail); when QEMU was started
  // (an emulated board), its command line and what it printed as it started
  // (QemuFlasher::last_start()). For the attempt's log. Empty for host-process boards.
  std::string flash_output;
};

class Board {
 public:
  // Checks a board's config: InvalidArgument whose message starts with the field ("id: required",
  // "serial.port: required", "qemu.machine: required", ...).
  static absl::Status Validate(const v1::BoardConfig& config);
  // A board for a valid config (errors as Validate). Starts nothing.
  static absl::StatusOr<std::unique_ptr<Board>> Create(BoardOptions options);
  ~Board();  // Stop()

  Board(const Board&) = delete;
  Board& operator=(const Board&) = delete;

  const std::string& id() const { return options_.config.id(); }
  const v1::BoardConfig& config() const { return options_.config; }
  // "host-process (pty)", "serial /dev/ttyACM0", "qemu mps2-an385 (icount) on /dev/pts/3".
  std::string Description() const;
  // Whether it can put an image on the board at all (host process, QEMU, a flash command).
  bool can_flash() const { return flasher_ != nullptr; }
  // "" for silicon and host-process boards; "qemu" (host time), "qemu-icount" (instructions) or
  // "qemu-cycles" (the cycle model).
  std::string emulation() const;
  // "cycles", "instructions" or "host" for an emulated board; "" for the others.
  std::string timing() const;
  // How this board's timed calls become costs (board_timer.h): the board's own timer, or the
  // cycle model's for a qemu board in CYCLES timing.
  BoardTimer& timer() { return *timer_; }
  // The cycle model's summary of the last QEMU that ran it and exited (QemuFlasher::last_summary:
  // cycles=, instructions=, unmodeled=, intervals=, ...); empty for other boards.
  std::map<std::string, uint64_t> CycleModelSummary() const;

  // See the file comment. `deadline` bounds connecting; flashing has flash_timeout.
  EnsureOutcome EnsureImage(const FirmwareImage& image, absl::Time deadline);

  // Opens the transport and handshakes with whatever the board runs now. For boards that must be
  // started (host process, QEMU) nothing runs before a flash: kSession "not running".
  std::optional<BoardFailure> Connect(absl::Time deadline);

  enum class ResetReason {
    kHung,      // no answer, or a crash: restart (re-flash) it before the next use
    kRebooted,  // it reset itself (its boot signature): reconnect; its image is still there
  };
  void Reset(ResetReason reason);

  // What a trial's call left running, ended after the call (MeasureRound): on a host-process
  // board every process of its sandbox but the board is killed (setsid() daemons included); a
  // thread the trial started in the board process (threads > 0) cannot be killed alone: the
  // board is reset (kHung). Other boards run trial code on their own CPU: nothing is ever left.
  struct Leftovers {
    int killed = 0;                // processes
    int threads = 0;               // of the board process, when more than its one
    std::string ToString() const;  // "" when nothing was left
  };

  // What one MeasureRound came to.
  struct CallOutcome {
    // None: the round went through (its results are in the MeasureOutcome). Else one of the call
    // kinds (kCrashed ... kCallFailed).
    std::optional<BoardFailure> failure;
    // The board was reset after the call (Reset: kHung for a crash, a kill from outside, a hang,
    // a failed link or a thread the trial left; kRebooted for a reboot or a link that damaged
    // packets). A kLinkLost without damaged packets is not a reset: the board answered a new
    // handshake and the new link is up.
    bool reset = false;
    LinkCounters link;    // the link's counters right after the call
    Leftovers leftovers;  // what the trial's code left running, ended
  };

  // One round of `request` (device::MeasureRound: up to `chunk` costs into *outcome; the first
  // round checks outputs) on the board's shared arguments and timer(), with `deadline` for the
  // round. Requires connected() (a successful EnsureImage). A round that fails is diagnosed here,
  // first match wins:
  //   a crash report (unless the call timed out; waited for briefly)  kKilledFromOutside or
  //                                                                   kCrashed; Reset kHung
  //   timed out, and the link damaged packets meanwhile               kLinkLost; Reset kRebooted
  //   timed out, and the board answers a new handshake at once        kLinkLost; that link stays
  //                                                                   up (no reset)
  //   timed out otherwise                                             kHung; Reset kHung
  //   Aborted (the board reset itself)                                kRebooted; Reset kRebooted
  //   Cancelled (Interrupt(): the call abandoned)                     kCancelled; the board
  //                                                                   stopped now (host
  //                                                                   process, QEMU), Reset kHung
  //   Unavailable, FailedPrecondition or DataLoss                     kLinkFailed; Reset kHung
  //   any other error                                                 kCallFailed; no reset
  // After every round, failed or not, what the trial's code left running is ended (Leftovers).
  CallOutcome MeasureRound(const MeasureRequest& request, int chunk, MeasureOutcome* outcome,
                           absl::Time deadline);
  // Frees the shared arguments on the board (after a batch; nothing when not connected). A new
  // link forgets them anyway: the board lost them.
  void ReleaseArgs(absl::Time deadline);

  // The link's RPC client and session; null unless connected.
  RpcClient* rpc() { return rpc_.get(); }
  HostSession* session() { return session_.get(); }
  // What the board reported at the last Connect (RpcClient::DescribeBoard: benchfarm false and
  // little known for a board without benchfarm.DeviceInfo).
  const std::optional<DeviceInfo>& info() const { return info_; }
  bool connected() const { return rpc_ != nullptr; }
  bool port_missing() const { return port_missing_; }

  // link_fault_file (chaos testing): whether the current link goes through a
  // FaultInjectingTransport; what every link of this Board injected so far (monotonic; zeros with
  // the field empty); and why the file's setting was refused at the last open ("" when it was
  // applied, absent or the field is empty).
  bool link_faults_on() const { return link_fault_ != nullptr; }
  FaultCounters link_fault_counters() const;
  const std::string& link_fault_error() const { return link_fault_error_; }

  // Abandons the call in flight, if any, at once: every wait for the board ends (within
  // kInterruptPoll) with Cancelled until ClearInterrupt(), so MeasureRound returns kCancelled.
  // May be called from any thread (the only calls that may): the agent calls it when the tracker
  // cancels the trial being measured.
  void Interrupt() { interrupt_.store(true); }
  void ClearInterrupt() { interrupt_.store(false); }

  // Drops the link (the board keeps running).
  void Close();
  // Drops the link and stops a board this object started (host process, QEMU).
  void Stop();

 private:
  explicit Board(BoardOptions options);
  // The serial port to open: serial.port, or the QEMU flasher's link.
  std::string SerialPort() const;
  // The firmware the board reports, for messages ("?" with no link; "unknown (...)" without
  // DeviceInfo).
  std::string RunningFirmware() const;
  absl::StatusOr<Transport*> OpenTransport();

  // What link_fault_file looked like when read: absent, or present with contents (or the error
  // reading it).
  struct LinkFaultFile {
    bool present = false;
    std::string contents;
    std::string read_error;
    bool operator==(const LinkFaultFile& o) const {
      return present == o.present && contents == o.contents && read_error == o.read_error;
    }
  };
  LinkFaultFile ReadLinkFaultFile() const;
  // `inner`, or a FaultInjectingTransport borrowing it when link_fault_file says so; records
  // what the file looked like (link_fault_opened_). `inner` unchanged with the field empty.
  Transport* WrapForLinkFaults(Transport* inner);
  // The link is up and link_fault_file no longer looks as when it was opened. False with the
  // field empty.
  bool LinkFaultFileChanged() const;
  // MeasureRound's diagnosis of a round that failed with `status` (see there): sets
  // out->failure and, when it resets the board, out->reset. out->link: the counters after the
  // call; `link_before`: before it.
  void Diagnose(const absl::Status& status, const LinkCounters& link_before, CallOutcome* out);
  // After a call that ran a trial's code: ends what that code left running (see Leftovers).
  Leftovers EndTrialLeftovers();
  // How the board died, if it did and the board can tell (a host process killed by a signal:
  // "killed by signal 11 (...)"; QEMU that exited: "QEMU exited: exit code 1"). Waits up to
  // `wait` for it.
  std::optional<BoardCrash> CrashReport(absl::Duration wait);

  const BoardOptions options_;
  std::string qemu_link_;  // the symlink QEMU's pty is reached through
  std::unique_ptr<Flasher> flasher_;
  std::unique_ptr<BoardTimer> timer_;
  HostProcessFlasher* host_process_ = nullptr;  // flasher_, for host-process boards
  QemuFlasher* qemu_ = nullptr;                 // flasher_, for QEMU boards
  CommandFlasher* command_ = nullptr;           // flasher_, for boards with a flash command
  std::unique_ptr<Transport> serial_;           // serial boards, once opened
  bool serial_is_pty_ = false;
  // Wraps serial_ or the host process's transport while link faults are on; declared after
  // what it borrows, so it goes first.
  std::unique_ptr<FaultInjectingTransport> link_fault_;
  LinkFaultFile link_fault_opened_;  // link_fault_file at the last open
  FaultCounters link_fault_totals_;  // of links closed so far
  std::string link_fault_error_;
  std::string link_fault_logged_;  // the refused contents last logged (log once each)
  std::unique_ptr<HostSession> session_;
  std::unique_ptr<RpcClient> rpc_;
  std::optional<DeviceInfo> info_;
  // The arguments of measurements (MeasureRound), shared by the trials of a batch; forgotten
  // whenever the link closes.
  BoardArgs args_;
  bool needs_restart_ = false;
  bool port_missing_ = false;
  // The image flashed last (empty: none, or a flash that failed): what a board without
  // DeviceInfo runs.
  std::string flashed_hash_;
  // Interrupt(): every session of this board waits on it (SessionOptions::interrupt).
  std::atomic<bool> interrupt_{false};
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_BOARD_H_
