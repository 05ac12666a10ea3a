// Board: see board.h.

#include "device/board.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "device/command_flasher.h"
#include "device/host_process_flasher.h"
#include "device/pty_transport.h"
#include "device/qemu_flasher.h"
#include "device/serial_transport.h"
#include "process/run_command.h"
#include "spdlog/spdlog.h"

namespace benchfarm::device {
namespace {

// After a call failed: how long a board has to report how it died.
constexpr absl::Duration kCrashWait = absl::Milliseconds(500);
// After a call timed out: how long a board has to answer a new handshake to count as alive.
constexpr absl::Duration kAliveProbe = absl::Seconds(2);

}  // namespace

absl::StatusOr<FaultOptions> ParseLinkFaultSpec(absl::string_view text) {
  FaultOptions o;
  std::set<std::string> seen;
  for (absl::string_view word :
       absl::StrSplit(text, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty())) {
    if (word.find('=') == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("\"", word, "\" is not key=value"));
    }
    std::pair<std::string, std::string> kv = absl::StrSplit(word, absl::MaxSplits('=', 1));
    const std::string& key = kv.first;
    const std::string& value = kv.second;
    if (!seen.insert(key).second) {
      return absl::InvalidArgumentError(absl::StrCat("\"", word, "\": ", key, " given twice"));
    }
    double number = 0;
    const bool is_number = absl::SimpleAtod(value, &number) && std::isfinite(number);
    auto rate = [&](double* out) -> absl::Status {
      if (!is_number || number < 0 || number > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", word, "\": ", key, " must be a number from 0 to 1"));
      }
      *out = number;
      return absl::OkStatus();
    };
    absl::Status s;
    if (key == "drop_rate") {
      s = rate(&o.drop_rate);
    } else if (key == "flip_rate") {
      s = rate(&o.flip_rate);
    } else if (key == "duplicate_rate") {
      s = rate(&o.duplicate_rate);
    } else if (key == "delay_rate") {
      s = rate(&o.delay_rate);
    } else if (key == "max_delay_ms") {
      if (!is_number || number < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", word, "\": max_delay_ms must be a number >= 0"));
      }
      o.max_delay = absl::Milliseconds(number);
    } else if (key == "seed") {
      if (!absl::SimpleAtoi(value, &o.seed)) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", word, "\": seed must be an unsigned integer"));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", word,
                       "\": unknown key (drop_rate, flip_rate, duplicate_rate, delay_rate, "
                       "max_delay_ms, seed)"));
    }
    if (!s.ok()) return s;
  }
  return o;
}

QemuTiming QemuTimingOf(const v1::QemuMachine& q) {
  switch (q.timing()) {
    case v1::QemuMachine::HOST:
      return QemuTiming::kHost;
    case v1::QemuMachine::INSTRUCTIONS:
      return QemuTiming::kInstructions;
    case v1::QemuMachine::CYCLES:
      return QemuTiming::kCycles;
    default:
      return q.deterministic() ? QemuTiming::kInstructions : QemuTiming::kCycles;
  }
}

absl::Status Board::Validate(const v1::BoardConfig& c) {
  if (c.id().empty()) return absl::InvalidArgumentError("id: required");
  if (c.transport_case() == v1::BoardConfig::TRANSPORT_NOT_SET) {
    return absl::InvalidArgumentError("transport: serial or host_process is required");
  }
  if (c.has_qemu() && !c.has_serial()) {
    return absl::InvalidArgumentError(
        "qemu: an emulated board is reached over its UART: give it a serial {} transport");
  }
  if (c.has_qemu() && c.qemu().machine().empty()) {
    return absl::InvalidArgumentError("qemu.machine: required (e.g. \"mps2-an385\")");
  }
  if (c.has_qemu() && (c.qemu().icount_shift() < 0 || c.qemu().icount_shift() > 10)) {
    return absl::InvalidArgumentError("qemu.icount_shift: must be 0..10");
  }
  if (c.has_qemu() && c.qemu().deterministic() &&
      c.qemu().timing() != v1::QemuMachine::TIMING_UNSPECIFIED &&
      c.qemu().timing() != v1::QemuMachine::INSTRUCTIONS) {
    return absl::InvalidArgumentError(absl::StrCat(
        "qemu.deterministic: conflicts with qemu.timing: ",
        v1::QemuMachine::Timing_Name(c.qemu().timing()),
        " (deterministic: true is the older spelling of timing: INSTRUCTIONS; keep one)"));
  }
  if (c.has_qemu() && c.flasher().argv_size() > 0) {
    return absl::InvalidArgumentError("flasher: a qemu board is flashed by QEMU; remove flasher");
  }
  if (c.has_serial() && c.serial().port().empty() && !c.has_qemu()) {
    return absl::InvalidArgumentError("serial.port: required");
  }
  if (!c.cpu_affinity().empty()) {
    if (!c.has_host_process()) {
      return absl::InvalidArgumentError(
          "cpu_affinity: only host-process boards are pinned to a CPU; remove it");
    }
    if (absl::StatusOr<std::optional<int>> cpu =
            ResolveCpuAffinity(c.cpu_affinity(), c.id(), std::vector<int>{0});
        !cpu.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("cpu_affinity: \"", c.cpu_affinity(),
                                                     "\" is not \"\", \"auto\" or a CPU number"));
    }
  }
  if (!c.link_fault_file().empty() && c.link_fault_file()[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("link_fault_file: \"", c.link_fault_file(), "\" is not an absolute path"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Board>> Board::Create(BoardOptions options) {
  if (absl::Status valid = Validate(options.config); !valid.ok()) return valid;
  return std::unique_ptr<Board>(new Board(std::move(options)));
}

Board::Board(BoardOptions options) : options_(std::move(options)) {
  const v1::BoardConfig& c = options_.config;
  const std::string& scratch = options_.scratch_dir;
  if (c.has_host_process()) {
    HostProcessFlasherOptions o;
    o.use_pty = c.host_process().use_pty();
    o.extra_args = {"--kind", c.kind()};
    o.cpu_affinity = c.cpu_affinity();
    o.board_id = c.id();
    if (!scratch.empty()) o.stderr_path = absl::StrCat(scratch, "/", c.id(), ".board.log");
    auto flasher = std::make_unique<HostProcessFlasher>(o);
    host_process_ = flasher.get();
    flasher_ = std::move(flasher);
  } else if (c.has_qemu()) {
    QemuFlasherOptions o;
    o.machine = c.qemu().machine();
    o.timing = QemuTimingOf(c.qemu());
    o.board_id = c.id();
    o.icount_shift = c.qemu().icount_shift();
    o.cycle_model_plugin = !c.qemu().cycle_model_plugin().empty() ? c.qemu().cycle_model_plugin()
                                                                  : options_.cycle_model_plugin;
    if (!c.qemu().binary().empty()) o.binary = c.qemu().binary();
    o.extra_args.assign(c.qemu().extra_args().begin(), c.qemu().extra_args().end());
    qemu_link_ = !c.serial().port().empty() ? c.serial().port()
                 : !scratch.empty()
                     ? absl::StrCat(scratch, "/", c.id(), ".tty")
                     : absl::StrCat("/tmp/benchfarm-", getpid(), "-", c.id(), ".tty");
    o.serial_link = qemu_link_;
    if (!scratch.empty()) o.log_path = absl::StrCat(scratch, "/", c.id(), ".qemu.log");
    auto flasher = std::make_unique<QemuFlasher>(o);
    qemu_ = flasher.get();
    flasher_ = std::move(flasher);
    if (o.timing == QemuTiming::kCycles) {
      timer_ = std::make_unique<CycleModelTimer>(
          [this] { return qemu_->cycle_stream(); },
          [this] { return info_ ? static_cast<double>(info_->cpu_hz) : 0.0; }, o.icount_shift,
          absl::StrCat("board ", c.id()));
    }
  } else if (c.flasher().argv_size() > 0) {
    CommandFlasherOptions o;
    o.argv_template.assign(c.flasher().argv().begin(), c.flasher().argv().end());
    if (c.flasher().time_limit_seconds() > 0)
      o.time_limit = absl::Seconds(c.flasher().time_limit_seconds());
    auto flasher = std::make_unique<CommandFlasher>(o);
    command_ = flasher.get();
    flasher_ = std::move(flasher);
  }
  if (timer_ == nullptr) timer_ = std::make_unique<BoardTimer>();
}

Board::~Board() { Stop(); }

std::string Board::SerialPort() const {
  if (qemu_ != nullptr) return qemu_->port().empty() ? std::string() : qemu_link_;
  return options_.config.serial().port();
}

std::string Board::emulation() const {
  if (qemu_ == nullptr) return "";
  switch (QemuTimingOf(options_.config.qemu())) {
    case QemuTiming::kCycles:
      return "qemu-cycles";
    case QemuTiming::kInstructions:
      return "qemu-icount";
    default:
      return "qemu";
  }
}

std::map<std::string, uint64_t> Board::CycleModelSummary() const {
  return qemu_ != nullptr ? qemu_->last_summary() : std::map<std::string, uint64_t>();
}

std::string Board::timing() const {
  return qemu_ == nullptr ? "" : QemuTimingName(QemuTimingOf(options_.config.qemu()));
}

std::string Board::Description() const {
  const v1::BoardConfig& c = options_.config;
  if (host_process_ != nullptr) {
    return c.host_process().use_pty() ? "host-process (pty)" : "host-process (pipes)";
  }
  if (qemu_ != nullptr) {
    std::string port = qemu_->port();
    return absl::StrCat("qemu ", c.qemu().machine(), " (", timing(), ")",
                        port.empty() ? std::string(" (not running)") : absl::StrCat(" on ", port));
  }
  return absl::StrCat("serial ", c.serial().port());
}

absl::StatusOr<Transport*> Board::OpenTransport() {
  if (host_process_ != nullptr) {
    Transport* t = host_process_->transport();
    if (t == nullptr) return absl::UnavailableError("the board process is not running");
    return WrapForLinkFaults(t);
  }
  const std::string port = SerialPort();
  if (port.empty()) return absl::UnavailableError(absl::StrCat(id(), ": QEMU is not running"));
  // The port may be a pseudo-terminal (QEMU, an emulated board) or a real serial port, and a
  // by-id link may point at either once the board is back: decided at each open.
  const bool pty = IsPseudoTerminal(port);
  if (serial_ == nullptr || pty != serial_is_pty_) {
    if (pty) {
      serial_ = std::make_unique<PtyTransport>(port);
    } else {
      SerialConfig sc;
      sc.port = port;
      if (options_.config.serial().baud() > 0) sc.baud = options_.config.serial().baud();
      serial_ = std::make_unique<SerialTransport>(sc);
    }
    serial_is_pty_ = pty;
  }
  absl::Status opened = serial_->Open();
  port_missing_ = !opened.ok();
  if (!opened.ok()) return opened;
  return WrapForLinkFaults(serial_.get());
}

Board::LinkFaultFile Board::ReadLinkFaultFile() const {
  LinkFaultFile f;
  const std::string& path = options_.config.link_fault_file();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (access(path.c_str(), F_OK) != 0 && errno == ENOENT) return f;  // absent
    f.present = true;
    f.read_error = absl::StrCat("cannot read ", path, ": ", strerror(err));
    return f;
  }
  f.present = true;
  std::ostringstream contents;
  contents << in.rdbuf();
  f.contents = contents.str();
  return f;
}

Transport* Board::WrapForLinkFaults(Transport* inner) {
  if (options_.config.link_fault_file().empty()) return inner;
  if (link_fault_ != nullptr) {  // Close() normally did this
    link_fault_totals_ = link_fault_counters();
    link_fault_.reset();
  }
  link_fault_opened_ = ReadLinkFaultFile();
  link_fault_error_.clear();
  if (!link_fault_opened_.present) return inner;
  absl::StatusOr<FaultOptions> o =
      link_fault_opened_.read_error.empty()
          ? ParseLinkFaultSpec(link_fault_opened_.contents)
          : absl::StatusOr<FaultOptions>(absl::InvalidArgumentError(link_fault_opened_.read_error));
  if (!o.ok()) {
    link_fault_error_ = absl::StrCat("link_fault_file ", options_.config.link_fault_file(), ": ",
                                     o.status().message(), "; the link runs clean");
    const std::string key =
        absl::StrCat(link_fault_opened_.read_error, "\n", link_fault_opened_.contents);
    if (key != link_fault_logged_) {
      spdlog::error("board {}: {}", id(), link_fault_error_);
      link_fault_logged_ = key;
    }
    return inner;
  }
  link_fault_ = std::make_unique<FaultInjectingTransport>(inner, *o);
  spdlog::warn("board {}: link faults on (link_fault_file {}: {})", id(),
               options_.config.link_fault_file(),
               std::string(absl::StripAsciiWhitespace(link_fault_opened_.contents)));
  return link_fault_.get();
}

bool Board::LinkFaultFileChanged() const {
  if (options_.config.link_fault_file().empty() || rpc_ == nullptr) return false;
  return !(ReadLinkFaultFile() == link_fault_opened_);
}

FaultCounters Board::link_fault_counters() const {
  FaultCounters total = link_fault_totals_;
  if (link_fault_ != nullptr) {
    FaultCounters now = link_fault_->counters();
    total.dropped += now.dropped;
    total.flipped += now.flipped;
    total.duplicated += now.duplicated;
    total.delayed += now.delayed;
  }
  return total;
}

std::optional<BoardFailure> Board::Connect(absl::Time deadline) {
  Close();
  absl::StatusOr<Transport*> transport = OpenTransport();
  if (!transport.ok())
    return BoardFailure{BoardFailure::kSession, std::string(transport.status().message())};
  SessionOptions so;
  so.board_id = id();
  so.start_timeout = options_.connect_timeout;
  if (options_.log_sink) so.log_sink = options_.log_sink;
  so.interrupt = &interrupt_;
  session_ = std::make_unique<HostSession>(*transport, so);
  absl::Status s = session_->Connect(deadline);
  if (!s.ok()) {
    Close();
    return BoardFailure{BoardFailure::kSession, absl::StrCat("handshake: ", s.message())};
  }
  rpc_ = std::make_unique<RpcClient>(session_.get());
  // DeviceInfo is optional: a board without benchfarm's extras (TVM's CRT) is a board too.
  absl::StatusOr<DeviceInfo> info = rpc_->DescribeBoard(deadline);
  if (!info.ok()) {
    Close();
    return BoardFailure{BoardFailure::kSession,
                        absl::StrCat("DeviceInfo: ", info.status().message())};
  }
  info_ = *std::move(info);
  return std::nullopt;
}

EnsureOutcome Board::EnsureImage(const FirmwareImage& image, absl::Time deadline) {
  EnsureOutcome out;
  // A board without DeviceInfo states no firmware hash: it runs what this Board flashed last.
  auto runs_image = [&] {
    return info_.has_value() &&
           (info_->benchfarm ? info_->firmware_hash : flashed_hash_) == image.content_hash;
  };
  // link_fault_file changed since the link was opened: reconnect so the new setting applies (the
  // board keeps running its image). If that fails, the link is handled as lost, below.
  if (!needs_restart_ && LinkFaultFileChanged()) {
    const absl::Time t0 = absl::Now();
    std::optional<BoardFailure> f = Connect(deadline);
    out.handshake_time = absl::Now() - t0;
    if (!f && runs_image()) {
      out.skipped = true;
      return out;
    }
  }
  if (!needs_restart_ && rpc_ != nullptr && runs_image()) {
    out.skipped = true;
    return out;
  }
  // A board that keeps running between links (a serial board, e.g. after an agent restart, or a
  // QEMU board that rebooted) may already run the image: ask it first.
  const bool keeps_running =
      host_process_ == nullptr && (qemu_ == nullptr || !qemu_->port().empty());
  if (!needs_restart_ && rpc_ == nullptr && keeps_running) {
    const absl::Time t0 = absl::Now();
    std::optional<BoardFailure> f = Connect(deadline);
    out.handshake_time = absl::Now() - t0;
    if (f && flasher_ == nullptr) {
      out.failure = f;
      return out;
    }
    if (!f && runs_image()) {
      out.skipped = true;
      return out;
    }
  }
  if (flasher_ == nullptr) {
    if (rpc_ == nullptr) {
      if (std::optional<BoardFailure> f = Connect(deadline)) {
        out.failure = f;
        return out;
      }
    }
    out.failure = BoardFailure{
        BoardFailure::kFirmwareMismatch,
        absl::StrCat("board ", id(), " runs firmware ", RunningFirmware(), ", the trial needs ",
                     image.content_hash, ", and the board has no flasher configured")};
    return out;
  }
  Close();
  const absl::Time t0 = absl::Now();
  flashed_hash_.clear();
  absl::Status flashed = flasher_->Flash(image, absl::Now() + options_.flash_timeout);
  out.flash_time = absl::Now() - t0;
  // The flash command's run, or QEMU's start: its command line and output, for the attempt's log.
  std::optional<process::CommandRun> run = command_ != nullptr ? command_->last_run()
                                           : qemu_ != nullptr  ? qemu_->last_start()
                                                               : std::nullopt;
  if (run) {
    out.flash_output = absl::StrCat("$ ", process::CommandLine(run->argv), "\n", run->output);
  }
  if (!flashed.ok()) {
    needs_restart_ = true;
    out.failure = BoardFailure{BoardFailure::kFlash, std::string(flashed.message())};
    return out;
  }
  out.flashed = true;
  needs_restart_ = false;
  flashed_hash_ = image.content_hash;
  const absl::Time t1 = absl::Now();
  std::optional<BoardFailure> f = Connect(absl::Now() + options_.connect_timeout);
  out.handshake_time = absl::Now() - t1;
  if (f) {
    needs_restart_ = true;
    if (std::optional<BoardCrash> crash = CrashReport(absl::ZeroDuration())) {
      f->message = absl::StrCat(f->message, "; ", crash->description);
    }
    out.failure = f;
    return out;
  }
  if (!runs_image()) {
    const std::string reported = RunningFirmware();
    Close();
    needs_restart_ = true;
    out.failure = BoardFailure{BoardFailure::kFirmwareMismatch,
                               absl::StrCat("board ", id(), " reports firmware ", reported,
                                            " after flashing image ", image.content_hash)};
  }
  return out;
}

std::string Board::RunningFirmware() const {
  if (!info_) return "?";
  if (!info_->benchfarm) return "unknown (the board has no benchfarm.DeviceInfo)";
  return info_->firmware_hash;
}

void Board::Reset(ResetReason reason) {
  Close();
  if (reason == ResetReason::kHung) needs_restart_ = true;
}

Board::CallOutcome Board::MeasureRound(const MeasureRequest& request, int chunk,
                                       MeasureOutcome* outcome, absl::Time deadline) {
  CallOutcome out;
  const LinkCounters link_before = session_->counters();
  const absl::Status s =
      device::MeasureRound(*rpc_, request, chunk, outcome, deadline, &args_, timer_.get());
  out.link = session_->counters();
  if (!s.ok()) Diagnose(s, link_before, &out);
  out.leftovers = EndTrialLeftovers();
  if (out.leftovers.threads > 0 && !out.reset) {
    Reset(ResetReason::kHung);
    out.reset = true;
  }
  return out;
}

void Board::Diagnose(const absl::Status& s, const LinkCounters& link_before, CallOutcome* out) {
  const std::string message(s.message());
  auto reset = [&](ResetReason reason) {
    Reset(reason);
    out->reset = true;
  };
  if (absl::IsCancelled(s)) {
    // Abandoned (the trial was cancelled): whatever the board still runs is stopped now rather
    // than left busy until the next trial restarts it.
    out->failure = BoardFailure{BoardFailure::kCancelled, message};
    reset(ResetReason::kHung);
    if (host_process_ != nullptr && host_process_->pid() > 0) {
      (void)host_process_->Stop(absl::Now() + absl::Seconds(5));
    }
    if (qemu_ != nullptr) qemu_->Stop();
    return;
  }
  const bool timed_out = absl::IsDeadlineExceeded(s);
  if (std::optional<BoardCrash> crash = timed_out ? std::nullopt : CrashReport(kCrashWait)) {
    // The OOM killer or an operator is not the code under test. A host-process board names a
    // fault of its own in a Log line before it dies of it (crt/host/board.c).
    std::string description = crash->description;
    if (session_ != nullptr && absl::StartsWith(session_->last_log(), "fault: ")) {
      absl::StrAppend(&description, "; its last log: ", session_->last_log());
    }
    out->failure = BoardFailure{
        crash->KilledFromOutside() ? BoardFailure::kKilledFromOutside : BoardFailure::kCrashed,
        description};
    reset(ResetReason::kHung);
    return;
  }
  if (timed_out) {
    // Bytes lost on the link (a bad CRC, a broken packet) while the call went unanswered: the
    // link's failure, not a hung kernel.
    const uint64_t damaged = (out->link.crc_failures - link_before.crc_failures) +
                             (out->link.packets_dropped - link_before.packets_dropped);
    if (damaged > 0) {
      out->failure = BoardFailure{BoardFailure::kLinkLost, message, damaged};
      reset(ResetReason::kRebooted);
      return;
    }
    // A hung board (busy in the kernel) cannot answer a new handshake; one that does is alive,
    // and the call or its reply was lost on the link.
    if (!Connect(absl::Now() + std::min(kAliveProbe, options_.connect_timeout))) {
      out->failure = BoardFailure{BoardFailure::kLinkLost, message};
      return;
    }
    out->failure = BoardFailure{BoardFailure::kHung, message};
    reset(ResetReason::kHung);
    return;
  }
  if (absl::IsAborted(s)) {
    // The board reset itself (a fault handler, a watchdog): its image is still there.
    out->failure = BoardFailure{BoardFailure::kRebooted, message};
    reset(ResetReason::kRebooted);
    return;
  }
  if (absl::IsUnavailable(s) || absl::IsFailedPrecondition(s) || absl::IsDataLoss(s)) {
    out->failure = BoardFailure{BoardFailure::kLinkFailed, message};
    reset(ResetReason::kHung);
    return;
  }
  out->failure = BoardFailure{BoardFailure::kCallFailed, message};
}

void Board::ReleaseArgs(absl::Time deadline) {
  if (rpc_ != nullptr) args_.Release(*rpc_, deadline);
}

Board::Leftovers Board::EndTrialLeftovers() {
  Leftovers left;
  if (host_process_ == nullptr || host_process_->pid() <= 0) return left;
  absl::StatusOr<process::KilledStrays> ended = host_process_->EndStrays();
  if (!ended.ok()) return left;  // the board has ended: its sandbox with it
  left.killed = ended->killed;
  if (ended->left.command_threads > 1) left.threads = ended->left.command_threads;
  return left;
}

std::string Board::Leftovers::ToString() const {
  std::string s;
  if (killed > 0) {
    s = absl::StrCat("killed ", killed, " process", killed == 1 ? "" : "es", " the trial started");
  }
  if (threads > 0) {
    absl::StrAppend(&s, s.empty() ? "" : "; ", "the board process runs ", threads, " threads");
  }
  return s;
}

bool BoardCrash::KilledFromOutside() const {
  return signal == SIGKILL || signal == SIGTERM || signal == SIGHUP || signal == SIGINT;
}

std::optional<BoardCrash> Board::CrashReport(absl::Duration wait) {
  if (host_process_ != nullptr) {
    if (host_process_->pid() <= 0) return std::nullopt;
    if (wait > absl::ZeroDuration()) (void)host_process_->WaitExit(absl::Now() + wait);
    std::optional<base::ProcessExit> crash = host_process_->Crashed();
    if (!crash) return std::nullopt;
    return BoardCrash{crash->ToString(), crash->signal};
  }
  if (qemu_ != nullptr) {
    if (std::optional<base::ProcessExit> ended = qemu_->WaitExited(absl::Now() + wait)) {
      return BoardCrash{absl::StrCat("QEMU exited: ", ended->ToString()), 0};
    }
  }
  return std::nullopt;
}

void Board::Close() {
  args_.Forget();  // they belong to the link's session
  rpc_.reset();
  session_.reset();
  if (link_fault_ != nullptr) {
    link_fault_totals_ = link_fault_counters();
    link_fault_.reset();  // borrows; closes nothing
  }
  if (serial_ != nullptr) serial_->Close();
  info_.reset();
}

void Board::Stop() {
  Close();
  if (host_process_ != nullptr && host_process_->pid() > 0) {
    (void)host_process_->Stop(absl::Now() + absl::Seconds(5));
  }
  if (qemu_ != nullptr) qemu_->Stop();
}

}  // namespace benchfarm::device
