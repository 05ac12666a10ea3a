// benchfarm's Cortex-M firmware (crt/boards) under qemu-system-arm, reached exactly as the agent
// reaches a board: device::Board built from a BoardConfig (serial {} + qemu { machine }), QEMU as
// the flasher, the UART on QEMU's pty opened through the serial code path, the session handshake,
// MinRPC, and the board's own timer measuring the sample operators.
//
// For every package: the image boots and handshakes, and the flash's output (the attempt's log) is
// QEMU's command line and what it printed as it started (a QEMU that refuses an option: its
// words); DeviceInfo reports the kind, the firmware id the build wrote, cpu_hz and the timer and
// its resolution; tvm.contrib.random.random_fill fills a tensor on the chip; every sample operator
// passes its output check against the reference kernel on the chip and the time evaluator returns
// costs; garbage and a packet of a wrong session on the UART do not wedge the firmware.
// Deterministic mode (-icount) gives identical costs run to run. The calibration kernel
// (benchfarm.Calibrate) is described in DeviceInfo, refuses bad counts, and under -icount measures
// exactly 2 instructions per iteration.

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchfarm/data.h"
#include "device/board.h"
#include "device/flasher.h"
#include "device/measure.h"
#include "device/minrpc_codec.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"
#include "tvm/runtime/crt/link/framing.h"

namespace benchfarm {
namespace {

struct Package {
  const char* kind;           // the board kind and the firmware's name in tests/firmware/
  const char* machine;        // qemu-system-arm -M
  double calibration_cycles;  // its board.conf CALIBRATION_CYCLES_PER_ITERATION (0: unknown)
};

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", workspace ? workspace : "benchfarm", "/", path);
}

std::string ScratchDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

std::unique_ptr<device::Board> StartBoard(const Package& p, bool deterministic,
                                          device::FirmwareImage* image, int icount_shift = 0) {
  v1::BoardConfig c;
  c.set_id(absl::StrCat(p.kind, deterministic ? "-icount" : ""));
  c.set_kind(p.kind);
  c.mutable_serial();
  c.mutable_qemu()->set_machine(p.machine);
  c.mutable_qemu()->set_timing(deterministic ? v1::QemuMachine::INSTRUCTIONS
                                             : v1::QemuMachine::HOST);
  c.mutable_qemu()->set_icount_shift(icount_shift);
  device::BoardOptions o;
  o.config = c;
  o.scratch_dir = ScratchDir();
  absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
  EXPECT_TRUE(board.ok()) << board.status();
  if (!board.ok()) return nullptr;
  absl::StatusOr<device::FirmwareImage> fw =
      device::FirmwareImageFromFile(Runfile(absl::StrCat("tests/firmware/", p.kind, ".elf")));
  EXPECT_TRUE(fw.ok()) << fw.status();
  if (!fw.ok()) return nullptr;
  *image = *fw;
  device::EnsureOutcome out = (*board)->EnsureImage(*fw, absl::Now() + absl::Seconds(20));
  EXPECT_FALSE(out.failure.has_value()) << (out.failure ? out.failure->message : "");
  if (out.failure) return nullptr;
  EXPECT_TRUE(out.flashed);
  // QEMU's start, for the attempt's log: its command line and what it printed up to its pty.
  EXPECT_TRUE(absl::StartsWith(out.flash_output, absl::StrCat("$ qemu-system-arm -M ", p.machine)))
      << out.flash_output;
  EXPECT_TRUE(absl::StrContains(out.flash_output, "char device redirected to /dev/pts/"))
      << out.flash_output;
  return *std::move(board);
}

device::MeasureRequest SampleOp(const std::string& op, int number, int repeat) {
  device::MeasureRequest r;
  r.function = op;
  r.reference = op + "_reference";
  r.seed = 7;
  r.check = true;
  r.options.number = number;
  r.options.repeat = repeat;
  if (op == "add") r.args = device::Float32Args({{256}, {256}, {256}});
  if (op == "matmul") r.args = device::Float32Args({{16, 24}, {24, 8}, {16, 8}});
  if (op == "conv2d") r.args = device::Float32Args({{1, 2, 8, 8}, {4, 2, 3, 3}, {1, 4, 6, 6}});
  return r;
}

class QemuBoardTest : public testing::TestWithParam<Package> {};

TEST_P(QemuBoardTest, BootsHandshakesAndDescribesItself) {
  device::FirmwareImage image;
  std::unique_ptr<device::Board> board = StartBoard(GetParam(), false, &image);
  ASSERT_NE(board, nullptr);
  const device::DeviceInfo& info = *board->info();
  EXPECT_EQ(info.board_kind, GetParam().kind);
  EXPECT_EQ(info.firmware_hash, image.content_hash);
  EXPECT_EQ(image.content_hash.size(), 16u);
  EXPECT_GT(info.cpu_hz, 1000000u);
  EXPECT_GT(info.timer_resolution_s, 0);
  EXPECT_LE(info.timer_resolution_s, 1e-6);
  ASSERT_TRUE(info.fields.count("timer")) << "DeviceInfo names its timer";
  // QEMU's DWT cycle counter does not count: the firmware must have noticed and used SysTick.
  EXPECT_EQ(info.fields.at("timer"), "systick");
  EXPECT_EQ(board->emulation(), "qemu");
  EXPECT_NE(board->Description().find(GetParam().machine), std::string::npos);
  // The calibration kernel: 2 Thumb instructions per iteration, and the package's declared cycles.
  EXPECT_EQ(info.calibration_instructions_per_iteration, 2);
  EXPECT_EQ(info.calibration_cycles_per_iteration, GetParam().calibration_cycles);

  // tvm.contrib.random.random_fill, as AutoTVM's RPCRunner calls it before measuring: uniform
  // floats in [1, 2) from the chip's random source, different on each call; no arguments is an
  // error and the firmware keeps serving.
  device::RpcClient* rpc = board->rpc();
  absl::Time deadline = absl::Now() + absl::Seconds(10);
  absl::StatusOr<uint64_t> fill = rpc->GetGlobalFunc("tvm.contrib.random.random_fill", deadline);
  ASSERT_TRUE(fill.ok()) << fill.status();
  EXPECT_EQ(*fill, 0x80028004u);
  absl::StatusOr<device::RemoteTensor> t = rpc->AllocTensor({64}, device::DlDataType{}, deadline);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(rpc->CopyToRemote(*t, std::string(256, '\0'), deadline).ok());
  std::vector<std::string> fills;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(rpc->CallFunc(*fill, {device::Arg::Tensor(*t)}, deadline).ok());
    absl::StatusOr<std::string> bytes = rpc->CopyFromRemote(*t, 256, deadline);
    ASSERT_TRUE(bytes.ok()) << bytes.status();
    fills.push_back(*bytes);
  }
  EXPECT_NE(fills[0], fills[1]);
  std::vector<float> values(64);
  std::memcpy(values.data(), fills[0].data(), 256);
  for (float v : values) EXPECT_TRUE(v >= 1.0f && v < 2.0f) << v;
  EXPECT_NE(values.front(), values.back());
  absl::StatusOr<device::Arg> bad = rpc->CallFunc(*fill, {}, deadline);
  EXPECT_TRUE(absl::IsUnknown(bad.status())) << bad.status();
  EXPECT_TRUE(rpc->GetDeviceInfo(deadline).ok());

  // benchfarm.Calibrate in host time (QEMU without -icount): some positive time. Bad counts are
  // the board's InvalidArg, and it keeps serving. No TimerTotals on a microcontroller.
  absl::StatusOr<uint64_t> calibrate = rpc->GetGlobalFunc("benchfarm.Calibrate", deadline);
  ASSERT_TRUE(calibrate.ok()) << calibrate.status();
  EXPECT_EQ(*calibrate, 0x8002800au);
  absl::StatusOr<double> s = rpc->Calibrate(100000, deadline);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(*s, 0);
  EXPECT_LT(*s, 5);
  for (int64_t n : {int64_t{0}, int64_t{-3}, (int64_t{1} << 40) + 1}) {
    absl::StatusOr<device::Arg> r = rpc->CallFunc(*calibrate, {device::Arg::Int(n)}, deadline);
    EXPECT_TRUE(absl::IsUnknown(r.status())) << r.status();
    EXPECT_NE(r.status().message().find("iterations must be 1 to 2^40"), std::string::npos)
        << r.status();
  }
  absl::StatusOr<device::Arg> no_args = rpc->CallFunc(*calibrate, {}, deadline);
  EXPECT_NE(no_args.status().message().find("expects one int64"), std::string::npos)
      << no_args.status();
  EXPECT_TRUE(absl::IsNotFound(rpc->GetTimerTotals(deadline).status()));
  EXPECT_TRUE(rpc->Calibrate(1, deadline).ok());
}

// Under -icount the guest clock advances 2^shift ns per executed instruction, so Calibrate(N) —
// N iterations of SUBS + BNE — must take N * 2 * 2^shift ns: exactly, up to the fixed cost of
// the timer calls around the loop (tens of instructions) and SysTick's resolution (1 / CPU_HZ).
// It does (README "Calibration"): QEMU charges the loop exactly 2 instructions per iteration.
TEST_P(QemuBoardTest, CalibrationUnderIcountIsExact) {
  for (int shift : {0, 1}) {
    SCOPED_TRACE(absl::StrCat("icount shift ", shift));
    device::FirmwareImage image;
    std::unique_ptr<device::Board> board = StartBoard(GetParam(), true, &image, shift);
    ASSERT_NE(board, nullptr);
    const device::DeviceInfo& info = *board->info();
    ASSERT_EQ(info.calibration_instructions_per_iteration, 2);
    const double ns = 1e-9 * (1 << shift);  // seconds per instruction
    const double tick = info.timer_resolution_s;
    absl::Time deadline = absl::Now() + absl::Seconds(60);
    std::vector<double> measured;
    for (int64_t n : {int64_t{1000}, int64_t{1000000}, int64_t{2000000}}) {
      absl::StatusOr<double> s = board->rpc()->Calibrate(n, deadline);
      ASSERT_TRUE(s.ok()) << s.status();
      const double expected = static_cast<double>(n) * 2 * ns;
      std::printf(
          "%s shift %d: Calibrate(%lld) = %.12g s, N * 2 instructions = %.12g s (+%.4g "
          "s, %.3g ticks)\n",
          GetParam().kind, shift, static_cast<long long>(n), *s, expected, *s - expected,
          (*s - expected) / tick);
      EXPECT_GE(*s, expected - tick) << n;
      EXPECT_LE(*s, expected + 100 * ns + tick) << n;  // the timer calls: under 100 instructions
      measured.push_back(*s);
      // Deterministic: the same count measures the same again.
      absl::StatusOr<double> again = board->rpc()->Calibrate(n, deadline);
      ASSERT_TRUE(again.ok()) << again.status();
      EXPECT_EQ(*again, *s) << n;
    }
    // The fixed cost cancels: one million more iterations are two million instructions.
    EXPECT_NEAR(measured[2] - measured[1], 2e6 * ns, 1.001 * tick);
  }
}

TEST_P(QemuBoardTest, EverySampleOpMatchesItsReferenceAndIsTimedOnTheChip) {
  device::FirmwareImage image;
  std::unique_ptr<device::Board> board = StartBoard(GetParam(), false, &image);
  ASSERT_NE(board, nullptr);
  for (const char* op : {"add", "matmul", "conv2d"}) {
    absl::StatusOr<device::MeasureOutcome> m =
        device::Measure(*board->rpc(), SampleOp(op, 3, 2), absl::Now() + absl::Seconds(30));
    ASSERT_TRUE(m.ok()) << op << ": " << m.status();
    EXPECT_TRUE(m->matches) << op << ": " << m->mismatch;
    ASSERT_EQ(m->costs.size(), 2u) << op;
    for (double cost : m->costs) {
      EXPECT_GT(cost, 0) << op;
      EXPECT_LT(cost, 1.0) << op;
    }
  }
}

// benchfarm.PrepareArgs on the chip fills inputs with the bytes crt/data gives on the host (and so
// on the host-process board) for every dtype: results are comparable across board kinds. (The M4F
// and the M55 convert with their FPUs, the M3 in software.)
TEST_P(QemuBoardTest, TheChipFillsEveryDtypeWithTheHostsBytes) {
  device::FirmwareImage image;
  std::unique_ptr<device::Board> board = StartBoard(GetParam(), false, &image);
  ASSERT_NE(board, nullptr);
  device::RpcClient* rpc = board->rpc();
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  for (const char* name :
       {"int8", "uint8", "int16", "uint16", "int32", "uint32", "float16", "float32", "float64"}) {
    DLDataType dt;
    ASSERT_EQ(bf_data_parse_dtype(name, &dt), 0);
    device::TensorArg in;
    in.shape = {333};
    in.dtype = device::DlDataType{dt.code, dt.bits, dt.lanes};
    bf_data_default_range(dt, &in.lo, &in.hi);
    if (dt.code == kDLFloat) in.lo = -3.5, in.hi = 1000.25;  // not a power-of-two span: rounding
    device::ArgsSpec spec;
    spec.args = {in, in, in, device::TensorArg::Float32({1})};
    spec.seed = 11;
    device::BoardArgs args;
    ASSERT_TRUE(args.Prepare(*rpc, spec, deadline).ok()) << name;
    ASSERT_TRUE(args.on_board());
    const device::RemoteTensor t = args.CallArgs().args[2].tensor();  // stream 2
    absl::StatusOr<std::string> got = rpc->CopyFromRemote(t, t.NumBytes(), deadline);
    ASSERT_TRUE(got.ok()) << got.status();
    std::string want(t.NumBytes(), '\0');
    ASSERT_EQ(bf_data_fill(want.data(), 333, dt, 11, 2, in.lo, in.hi), 0);
    EXPECT_EQ(*got, want) << name;
    args.Release(*rpc, deadline);
  }
}

// What a candidate's output check costs on the link: on the board (benchfarm.CheckCall) a few dozen
// bytes; on the host path every check uploads a poisoned output and downloads two.
TEST_P(QemuBoardTest, ACandidatesCheckMovesAFewBytesOnTheLink) {
  device::FirmwareImage image;
  std::unique_ptr<device::Board> board = StartBoard(GetParam(), false, &image);
  ASSERT_NE(board, nullptr);
  device::RpcClient* rpc = board->rpc();
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  absl::StatusOr<uint64_t> fn = rpc->GetFunction("matmul", deadline);
  ASSERT_TRUE(fn.ok()) << fn.status();
  for (bool on_host : {false, true}) {
    device::ArgsSpec spec;
    spec.args = device::Float32Args({{32, 32}, {32, 32}, {32, 32}});
    spec.seed = 3;
    spec.check = true;
    spec.reference = "matmul_reference";
    spec.atol = spec.rtol = 1e-4;
    spec.data_on_host = on_host;
    device::BoardArgs args;
    ASSERT_TRUE(args.Prepare(*rpc, spec, deadline).ok());
    EXPECT_EQ(args.on_board(), !on_host);
    auto link_bytes = [&] {
      const device::LinkCounters c = board->session()->counters();
      return c.bytes_sent + c.bytes_received;
    };
    // Globals are looked up once a session (RpcClient::CachedGlobal): not a candidate's cost.
    for (const char* global : {"benchfarm.CheckCall", "benchfarm.TimeArgs"}) {
      (void)rpc->CachedGlobal(global, deadline);
    }
    for (int candidate = 0; candidate < 2; ++candidate) {
      uint64_t before = link_bytes();
      ASSERT_TRUE(rpc->CallFunc(*fn, args.CallArgs().args, deadline).ok());
      const uint64_t call = link_bytes() - before;  // the candidate's call itself
      before = link_bytes();
      absl::StatusOr<device::CheckReport> report = args.Check(*rpc, *fn, deadline);
      const uint64_t check = link_bytes() - before;
      ASSERT_TRUE(report.ok()) << report.status();
      EXPECT_EQ(report->mismatches, 0u);
      device::TimeEvaluatorOptions once;
      once.number = 1;
      before = link_bytes();
      absl::StatusOr<std::vector<double>> timed =
          rpc->TimeFunction("matmul", args.CallArgs(), once, deadline);
      const uint64_t timing = link_bytes() - before;
      ASSERT_TRUE(timed.ok()) << timed.status();
      std::printf(
          "%s: matmul 32x32x32, data %s: a candidate's check %llu bytes on the link, "
          "a plain call of it %llu, its timing %llu\n",
          GetParam().kind, on_host ? "on the host" : "on the board",
          static_cast<unsigned long long>(check), static_cast<unsigned long long>(call),
          static_cast<unsigned long long>(timing));
      // On the board benchfarm.TimeArgs names the function and options, no tensor; TVM's
      // evaluator is created, called with the tensors and freed.
      EXPECT_LT(timing, on_host ? 1000u : 200u);
      if (on_host) {
        EXPECT_GT(timing, 400u);
      }
      if (on_host) {
        EXPECT_GT(check, 3u * 32 * 32 * 4) << "a poisoned output up, two outputs down";
      } else {
        // The check is one call (the candidate's handle out, a 40-byte report back).
        EXPECT_LE(check, call + 128) << "at most 128 bytes beyond the call itself";
        EXPECT_LE(check, 160u);
      }
    }
    args.Release(*rpc, deadline);
  }
}

// Data that must cross the link (the host path: firmware without benchfarm.PrepareArgs) and cannot
// within the trial's timeout is refused as soon as the link's speed shows it, saying so — not a
// lost call.
TEST_P(QemuBoardTest, DataThatCannotCrossTheLinkInTimeIsRefusedSayingSo) {
  device::FirmwareImage image;
  std::unique_ptr<device::Board> board = StartBoard(GetParam(), false, &image);
  ASSERT_NE(board, nullptr);
  device::MeasureRequest r = SampleOp("add", 1, 1);
  r.args = device::Float32Args({{3072}, {3072}, {3072}});  // 12 KiB each
  r.data_on_host = true;
  // The link's speed now (this VM's load moves it): 12 KiB up, the fastest of five copies (one
  // slowed by a busy moment would leave the trial time to finish; with three, a CI run once had
  // all three slowed).
  device::RpcClient* rpc = board->rpc();
  auto link_time = [rpc]() -> absl::StatusOr<absl::Duration> {
    absl::StatusOr<device::RemoteTensor> probe =
        rpc->AllocTensor({3072}, device::DlDataType{}, absl::Now() + absl::Seconds(10));
    if (!probe.ok()) return probe.status();
    absl::Duration fastest = absl::InfiniteDuration();
    for (int i = 0; i < 5; ++i) {
      const absl::Time t0 = absl::Now();
      absl::Status copied =
          rpc->CopyToRemote(*probe, std::string(12288, '\0'), absl::Now() + absl::Seconds(10));
      if (!copied.ok()) return copied;
      fastest = std::min(fastest, absl::Now() - t0);
    }
    absl::Status freed = rpc->FreeTensor(*probe, absl::Now() + absl::Seconds(10));
    if (!freed.ok()) return freed;
    return fastest;
  };
  // The trial's data is 5 inputs' worth (two inputs, an output up and two down); give it time for
  // two and a half: the first 8 KiB show it cannot make it. A trial whose data crossed anyway had
  // its time from probes all slowed by a busy moment that then ended (a CI run saw it once): the
  // link is probed again and the trial tried again, up to three times.
  absl::Duration per_input;
  absl::Time start;
  absl::StatusOr<device::MeasureOutcome> m;
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<absl::Duration> probed = link_time();
    ASSERT_TRUE(probed.ok()) << probed.status();
    per_input = *probed;
    start = absl::Now();
    m = device::Measure(*rpc, r, start + per_input * 2.5);
    if (!m.ok()) break;
  }
  ASSERT_FALSE(m.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(m.status())) << m.status();
  EXPECT_NE(m.status().message().find("does not cross this board's link in its timeout: 61440 "
                                      "bytes"),
            std::string::npos)
      << m.status();
  EXPECT_LT(absl::Now() - start, per_input * 2.5);
  // The board is fine: the same trial with its data on the board runs.
  r.data_on_host = false;
  m = device::Measure(*rpc, r, absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->matches) << m->mismatch;
}

TEST_P(QemuBoardTest, GarbageAndAWrongSessionOnTheUartDoNotWedgeIt) {
  device::FirmwareImage image;
  std::unique_ptr<device::Board> board = StartBoard(GetParam(), false, &image);
  ASSERT_NE(board, nullptr);
  device::Transport* uart = board->session()->transport();
  std::mt19937 rng(11);
  std::string junk(2048, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  junk.back() = 0;
  ASSERT_TRUE(uart->Write(junk, absl::Now() + absl::Seconds(5)).ok());
  // A well-framed Normal packet of a session that does not exist (id 0x1234).
  std::string wrong;
  crt_framer_t framer;
  crt_framer_init(
      &framer,
      [](void* ctx, const uint8_t* data, size_t n) -> tvm_crt_error_t {
        static_cast<std::string*>(ctx)->append(reinterpret_cast<const char*>(data), n);
        return kTvmErrorNoError;
      },
      &wrong);
  std::string payload = "\x34\x12\x10";
  payload += device::EncodeGetGlobalFunc("runtime.SystemLib");
  ASSERT_EQ(crt_framer_write_packet(&framer, reinterpret_cast<const uint8_t*>(payload.data()),
                                    payload.size()),
            kTvmErrorNoError);
  ASSERT_TRUE(uart->Write(wrong, absl::Now() + absl::Seconds(5)).ok());
  // The link may need a new session after the junk (the host's view of it is unknown); the
  // firmware itself must answer: a fresh handshake and a real call.
  absl::StatusOr<device::DeviceInfo> info =
      board->rpc()->GetDeviceInfo(absl::Now() + absl::Seconds(5));
  if (!info.ok()) {
    ASSERT_FALSE(board->Connect(absl::Now() + absl::Seconds(15)).has_value());
    info = board->rpc()->GetDeviceInfo(absl::Now() + absl::Seconds(5));
  }
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->firmware_hash, image.content_hash);
  absl::StatusOr<device::MeasureOutcome> m =
      device::Measure(*board->rpc(), SampleOp("add", 2, 1), absl::Now() + absl::Seconds(30));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(m->matches);
}

TEST_P(QemuBoardTest, DeterministicModeGivesIdenticalCostsRunToRun) {
  device::FirmwareImage image;
  std::vector<double> first;
  for (int run = 0; run < 2; ++run) {
    std::unique_ptr<device::Board> board = StartBoard(GetParam(), true, &image);
    ASSERT_NE(board, nullptr);
    EXPECT_EQ(board->emulation(), "qemu-icount");
    // Twice on the same boot and once more on a fresh one: all the same.
    for (int again = 0; again < 2; ++again) {
      absl::StatusOr<device::MeasureOutcome> m =
          device::Measure(*board->rpc(), SampleOp("matmul", 5, 3), absl::Now() + absl::Seconds(60));
      ASSERT_TRUE(m.ok()) << m.status();
      EXPECT_TRUE(m->matches);
      ASSERT_EQ(m->costs.size(), 3u);
      EXPECT_GT(m->costs[0], 0);
      if (first.empty()) {
        first = m->costs;
      } else {
        EXPECT_EQ(m->costs, first) << "run " << run << " repeat " << again;
      }
    }
  }
}

// A QEMU that refuses its command line: the flash fails, and its output (for the attempt's log)
// has the command line and QEMU's own words.
TEST(QemuBoardStart, AQemuThatRefusesAnOptionSaysSoInTheFlashOutput) {
  v1::BoardConfig c;
  c.set_id("bad-option");
  c.set_kind("qemu-mps2-an385");
  c.mutable_serial();
  c.mutable_qemu()->set_machine("mps2-an385");
  c.mutable_qemu()->set_timing(v1::QemuMachine::HOST);
  c.mutable_qemu()->add_extra_args("-no-such-option");
  device::BoardOptions o;
  o.config = c;
  o.scratch_dir = ScratchDir();
  absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
  ASSERT_TRUE(board.ok()) << board.status();
  absl::StatusOr<device::FirmwareImage> fw =
      device::FirmwareImageFromFile(Runfile("tests/firmware/qemu-mps2-an385.elf"));
  ASSERT_TRUE(fw.ok()) << fw.status();
  device::EnsureOutcome out = (*board)->EnsureImage(*fw, absl::Now() + absl::Seconds(20));
  ASSERT_TRUE(out.failure.has_value());
  EXPECT_EQ(out.failure->kind, device::BoardFailure::kFlash) << out.failure->message;
  EXPECT_TRUE(absl::StrContains(out.failure->message, "invalid option")) << out.failure->message;
  EXPECT_FALSE(out.flashed);
  EXPECT_TRUE(absl::StartsWith(out.flash_output, "$ qemu-system-arm -M mps2-an385 "))
      << out.flash_output;
  EXPECT_TRUE(absl::StrContains(out.flash_output, " -no-such-option\n")) << out.flash_output;
  EXPECT_TRUE(
      absl::StrContains(out.flash_output, "qemu-system-arm: -no-such-option: invalid option"))
      << out.flash_output;
}

INSTANTIATE_TEST_SUITE_P(Packages, QemuBoardTest,
                         testing::Values(Package{"qemu-mps2-an385", "mps2-an385", 3},
                                         Package{"qemu-netduinoplus2", "netduinoplus2", 3},
                                         Package{"qemu-mps3-an547", "mps3-an547", 0}),
                         [](const testing::TestParamInfo<Package>& info) {
                           std::string name = info.param.machine;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace benchfarm
