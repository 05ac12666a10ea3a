// The cycle model end to end: benchfarm's Cortex-M firmware under qemu-system-arm with the
// cycle-model plugin (QemuMachine timing CYCLES), reached as the agent reaches a board
// (device::Board, the UART on QEMU's pty, the session, MinRPC), timed through device::BoardTimer.
//
//   - One assembly microbenchmark per timing rule (crt/boards/cortex-m/microbench.c): the cycles
//     per iteration the model charges equal what the Cortex-M3 and Cortex-M4 Technical Reference
//     Manuals give, derived here from the tables' entries; on the STM32F4 with its flash (5 wait
//     states behind the ART accelerator) a loop of branches with a warm and a cold instruction
//     cache, and sequential code waiting for the prefetch, cost what RM0090 describes.
//   - The same image and candidate give the same cycles boot to boot; every instruction the
//     sample operators executed was in the timing tables.
//   - An idle board does not spin a host core in any timing mode.
//   - What cannot be trusted is refused with a clear error: no plugin, no or a hostile
//   IMAGE.timing,
//     a plugin that does not load, a QEMU without plugin support, a stream that says nothing, too
//     much, garbage, or stops.

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/process_stat.h"
#include "device/board.h"
#include "device/flasher.h"
#include "device/measure.h"
#include "gtest/gtest.h"
#include "proto/config.pb.h"

namespace benchfarm {
namespace {

std::string Runfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return absl::StrCat(srcdir ? srcdir : ".", "/", workspace ? workspace : "benchfarm", "/", path);
}

std::string TmpDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return tmp != nullptr ? tmp : "/tmp";
}

std::string Plugin() { return Runfile("cyclemodel/libbenchfarm_cyclemodel.so"); }
std::string FaultyPlugin(const std::string& mode) {
  return Runfile(absl::StrCat("cyclemodel/testing/libfaulty_", mode, ".so"));
}

// A copy of a test firmware image (and its .hash) in its own directory, with `timing` as its
// IMAGE.timing (nullptr: the build's own; "": none).
std::string CopyImage(const std::string& kind, const std::string& name, const char* timing) {
  const std::string dir = absl::StrCat(TmpDir(), "/", name);
  EXPECT_EQ(system(absl::StrCat("mkdir -p ", dir).c_str()), 0);
  const std::string src = Runfile(absl::StrCat("tests/firmware/", kind, ".elf"));
  const std::string dst = dir + "/firmware.elf";
  EXPECT_EQ(
      system(absl::StrCat("cp ", src, " ", dst, " && cp ", src, ".hash ", dst, ".hash").c_str()),
      0);
  if (timing == nullptr) {
    EXPECT_EQ(system(absl::StrCat("cp ", src, ".timing ", dst, ".timing").c_str()), 0);
  } else if (timing[0] != '\0') {
    std::ofstream(dst + ".timing") << timing << "\n";
  }
  return dst;
}

struct Started {
  std::unique_ptr<device::Board> board;
  std::string failure;  // why it did not start ("" when it did)
};

Started Start(const std::string& machine, const std::string& image,
              v1::QemuMachine::Timing timing = v1::QemuMachine::CYCLES,
              const std::string& plugin = Plugin(), const std::string& binary = "") {
  v1::BoardConfig c;
  c.set_id(absl::StrCat("cm-", machine));
  c.set_kind(absl::StrCat("qemu-", machine));
  c.mutable_serial();
  c.mutable_qemu()->set_machine(machine);
  c.mutable_qemu()->set_timing(timing);
  if (!binary.empty()) c.mutable_qemu()->set_binary(binary);
  device::BoardOptions o;
  o.config = c;
  o.scratch_dir = TmpDir();
  o.cycle_model_plugin = plugin;
  absl::StatusOr<std::unique_ptr<device::Board>> board = device::Board::Create(o);
  EXPECT_TRUE(board.ok()) << board.status();
  if (!board.ok()) return {};
  absl::StatusOr<device::FirmwareImage> fw = device::FirmwareImageFromFile(image);
  EXPECT_TRUE(fw.ok()) << fw.status();
  if (!fw.ok()) return {};
  device::EnsureOutcome out = (*board)->EnsureImage(*fw, absl::Now() + absl::Seconds(20));
  Started s;
  if (out.failure) s.failure = out.failure->message;
  s.board = *std::move(board);
  return s;
}

// Cycles per iteration of every microbenchmark: (cycles(2N) - cycles(N)) / N.
std::map<std::string, double> Microbenchmarks(device::Board& board) {
  constexpr int64_t kN = 64;
  std::map<std::string, double> out;
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  device::RpcClient& rpc = *board.rpc();
  absl::StatusOr<std::string> names = rpc.StringGlobal("benchfarm.Microbenchmarks", deadline);
  EXPECT_TRUE(names.ok()) << names.status();
  if (!names.ok()) return out;
  int64_t index = 0;
  for (absl::string_view name : absl::StrSplit(*names, ',')) {
    absl::StatusOr<device::TimedInterval> once =
        board.timer().TimedCall(rpc, "benchfarm.Microbench", {index, kN}, deadline);
    absl::StatusOr<device::TimedInterval> twice =
        board.timer().TimedCall(rpc, "benchfarm.Microbench", {index, 2 * kN}, deadline);
    EXPECT_TRUE(once.ok() && twice.ok()) << name << ": " << once.status() << twice.status();
    if (once.ok() && twice.ok()) out[std::string(name)] = (twice->cycles - once->cycles) / kN;
    ++index;
  }
  return out;
}

// The Technical Reference Manuals' entries (Cortex-M3 TRM Table 3-1 and section 3.3.2; Cortex-M4
// TRM Tables 3-1, 3-2, 7-1 and section 3.3.2), the model's documented estimates where the TRMs give
// a range the emulator cannot resolve (SDIV/UDIV 2-12: 7; the M3's long multiplies for
// full-width operands: the top of their ranges), and each loop's cost built from them.
std::map<std::string, double> TrmExpectations(bool cortex_m4) {
  const int alu = 1, mul = 1, mla = cortex_m4 ? 1 : 2;
  const int umull = cortex_m4 ? 1 : 4, smull = cortex_m4 ? 1 : 5;  // M3: 3-5, signed +1
  const int umlal = cortex_m4 ? 1 : 6, smlal = cortex_m4 ? 1 : 7;  // M3: 4-7, signed +1
  const int div = 7;                                               // 2-12: the model's estimate
  const int ldr = 2, ldr_pipelined = 1, address_wait = 1;  // LDR 2; after an LDR 1; AGU stall +1
  const int str_imm = 1, str_reg = 2, load_after_store = 1;
  const int ldrd = 1 + 2, ldm = 1, push = 1, pop = 1;  // 1 + N
  const int branch = 1, p = 1, p_unaligned_wide = 2;   // 1 + P when taken
  const int loop = alu + branch + p;                   // SUBS; BNE taken
  std::map<std::string, double> e = {
      {"alu", 8 * alu + loop},
      {"mul", 8 * mul + loop},
      {"mla", 8 * mla + loop},
      {"umull", 4 * umull + loop},
      {"smull", 4 * smull + loop},
      {"umlal", 4 * umlal + loop},
      {"smlal", 4 * smlal + loop},
      {"udiv", 4 * div + loop},
      {"sdiv", 4 * div + loop},
      {"load_independent", ldr + 7 * ldr_pipelined + loop},
      {"load_dependent", ldr + 7 * (ldr + address_wait) + loop},
      {"load_after_alu", 4 * (alu + ldr + address_wait) + loop},
      {"store", 8 * str_imm + loop},
      {"store_register_offset", 8 * str_reg + loop},
      {"store_then_load", 4 * (str_imm + ldr + load_after_store) + loop},
      {"load_dual", 4 * ldrd + loop},
      {"ldm2", 4 * (ldm + 2) + loop},
      {"ldm4", 4 * (ldm + 4) + loop},
      {"push_pop", 2 * ((push + 4) + (pop + 4)) + loop},
      {"branch_taken", alu + 4 * (branch + p) + loop},
      {"branch_not_taken", alu + 8 * branch + loop},
      {"branch_to_unaligned_wide", 4 * (branch + p_unaligned_wide + alu + alu) + loop},
      {"call_return", 4 * ((branch + p) + (branch + p)) + loop},
      {"art_branch_chain_warm", 48 * (branch + p) + loop},
      {"art_branch_chain_cold", 80 * (branch + p) + loop},
      {"art_sequential", 62 * alu + loop},
  };
  if (cortex_m4) {
    const int vadd = 1, vmla = 3, vdiv = 14, vsqrt = 14, vldr = 2, vmov_core = 2;
    const int fp_result_wait = 1;  // the next instruction uses the result (not as an addend)
    e["smlad"] = 8 * 1 + loop;
    e["vadd"] = 8 * vadd + loop;
    e["vadd_dependent"] = vadd + 7 * (vadd + fp_result_wait) + loop;
    e["vmla"] = 8 * vmla + loop;
    e["vmla_accumulate"] = 8 * vmla + loop;
    e["vfma"] = 8 * vmla + loop;
    e["vdiv"] = 4 * vdiv + loop;
    e["vsqrt"] = 4 * vsqrt + loop;
    e["vldr"] = vldr + 7 * ldr_pipelined + loop;  // taken to pipeline as LDRs do
    e["vldm4"] = 4 * (1 + 4) + loop;
    e["vmov_to_core"] = 8 * vmov_core + loop;
  }
  return e;
}

void ExpectTrmRules(device::Board& board, bool cortex_m4) {
  std::map<std::string, double> got = Microbenchmarks(board);
  std::map<std::string, double> want = TrmExpectations(cortex_m4);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [name, cycles] : want) {
    ASSERT_TRUE(got.count(name)) << name << " is not in the firmware's suite";
    EXPECT_EQ(got[name], cycles) << name;
  }
}

TEST(CycleModel, EveryCortexM3TimingRuleCostsWhatTheTrmSays) {
  Started s = Start("mps2-an385", CopyImage("qemu-mps2-an385", "m3", nullptr));
  ASSERT_NE(s.board, nullptr);
  ASSERT_EQ(s.failure, "");
  EXPECT_EQ(s.board->emulation(), "qemu-cycles");
  EXPECT_EQ(s.board->timer().name(), "cycle-model");
  ExpectTrmRules(*s.board, /*cortex_m4=*/false);
}

TEST(CycleModel, EveryCortexM4TimingRuleCostsWhatTheTrmSays) {
  // The core alone: the same image with no flash wait states in its timing description.
  Started s = Start("netduinoplus2", CopyImage("qemu-netduinoplus2", "m4-core", "core=cortex-m4f"));
  ASSERT_NE(s.board, nullptr);
  ASSERT_EQ(s.failure, "");
  ExpectTrmRules(*s.board, /*cortex_m4=*/true);
}

TEST(CycleModel, Stm32f4FlashGoesThroughTheArtAccelerator) {
  // The package's own description: flash at 0x08000000 with 5 wait states behind the ART.
  const std::string image = CopyImage("qemu-netduinoplus2", "f4", nullptr);
  std::ifstream timing(image + ".timing");
  std::string text((std::istreambuf_iterator<char>(timing)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "core=cortex-m4f region=0x08000000:0x00080000:5:art\n");
  Started s = Start("netduinoplus2", image);
  ASSERT_NE(s.board, nullptr);
  ASSERT_EQ(s.failure, "");
  std::map<std::string, double> got = Microbenchmarks(*s.board);
  const int ws = 5, loop = 3;
  // 49 branch-target lines fit the 64-line instruction cache: warm, nothing waits.
  EXPECT_EQ(got["art_branch_chain_warm"], 48 * 2 + loop);
  // 81 do not: least recently used out, every target misses and waits its wait states.
  EXPECT_EQ(got["art_branch_chain_cold"], 80 * 2 + loop + 81 * ws);
  // Sequential lines come from the prefetch, read while the line before runs: 4 cycles of
  // ADD.W per 128-bit line leave (ws + 1) - 4 to wait, on each of the 15 lines after the first.
  EXPECT_EQ(got["art_sequential"], 62 + loop + 15 * ((ws + 1) - 4));
  // Compared with the core alone, flash only ever adds.
  std::map<std::string, double> core = TrmExpectations(true);
  for (const auto& [name, cycles] : got) EXPECT_GE(cycles, core[name]) << name;
}

// Measures one candidate the way the agent does (device::Measure through the board's timer).
device::MeasureOutcome MeasureMatmul(device::Board& board) {
  device::MeasureRequest r;
  r.function = "matmul";
  r.reference = "matmul_reference";
  r.args = device::Float32Args({{16, 24}, {24, 8}, {16, 8}});
  r.seed = 7;
  r.check = true;
  r.options.number = 3;
  r.options.repeat = 4;
  r.options.min_repeat_ms = 1;
  absl::StatusOr<device::MeasureOutcome> o =
      device::Measure(*board.rpc(), r, absl::Now() + absl::Seconds(60), &board.timer());
  EXPECT_TRUE(o.ok()) << o.status();
  return o.ok() ? *o : device::MeasureOutcome();
}

TEST(CycleModel, TheSameImageGivesTheSameCyclesBootToBoot) {
  for (const auto& [machine, kind] :
       {std::pair<const char*, const char*>{"mps2-an385", "qemu-mps2-an385"},
        {"netduinoplus2", "qemu-netduinoplus2"}}) {
    const std::string image = CopyImage(kind, absl::StrCat("boots-", kind), nullptr);
    std::vector<device::MeasureOutcome> runs;
    std::vector<std::map<std::string, uint64_t>> summaries;
    for (int boot = 0; boot < 2; ++boot) {
      Started s = Start(machine, image);
      ASSERT_NE(s.board, nullptr);
      ASSERT_EQ(s.failure, "");
      runs.push_back(MeasureMatmul(*s.board));
      s.board->Stop();
      summaries.push_back(s.board->CycleModelSummary());
    }
    ASSERT_EQ(runs[0].costs.size(), 4u) << kind;
    EXPECT_TRUE(runs[0].matches) << kind;
    EXPECT_EQ(runs[0].costs, runs[1].costs) << kind;
    EXPECT_EQ(runs[0].cycles, runs[1].cycles) << kind;
    EXPECT_EQ(runs[0].instructions, runs[1].instructions) << kind;
    EXPECT_EQ(runs[0].number, runs[1].number) << kind;
    // Every repeat after the first is the same; the first may differ where the code before it
    // left the STM32F4's flash caches in another state (as on silicon).
    for (size_t i = 2; i < runs[0].costs.size(); ++i) {
      EXPECT_EQ(runs[0].costs[i], runs[0].costs[1]) << kind;
    }
    if (kind == std::string("qemu-mps2-an385")) {
      EXPECT_EQ(runs[0].costs[0], runs[0].costs[1]) << "no caches on the MPS2's SSRAM";
    }
    // number sized from the model: one repeat lasts at least min_repeat_ms of modeled time.
    EXPECT_GE(runs[0].costs[0] * runs[0].number, 1e-3) << kind;
    // A cost is the modeled cycles at the package's clock.
    const double hz = machine == std::string("mps2-an385") ? 25e6 : 168e6;
    EXPECT_DOUBLE_EQ(runs[0].costs[0], runs[0].cycles[0] / hz) << kind;
    EXPECT_GT(runs[0].cycles[0], runs[0].instructions[0])
        << kind << ": some instructions take more";
    // The plugin's summary when QEMU exited: every executed instruction was in the tables.
    for (const auto& summary : summaries) {
      ASSERT_TRUE(summary.count("unmodeled")) << kind;
      EXPECT_EQ(summary.at("unmodeled"), 0u) << kind;
      EXPECT_GT(summary.at("instructions"), 0u) << kind;
      EXPECT_GT(summary.at("intervals"), 4u) << kind;
    }
  }
}

// CPU seconds of this process's qemu-system-arm descendants.
double QemuCpuSeconds() {
  double total = 0;
  for (const base::ProcessStat& p : base::Descendants(getpid())) {
    if (absl::StartsWith(p.name, "qemu-system")) total += p.cpu_seconds;
  }
  return total;
}

// An idle board (the firmware waiting in WFI for the UART) lets QEMU sleep in every mode: with
// -icount's sleep=on the guest's idle time follows the host's clock instead of being spun through.
// (The exact share per mode is ./farm bench cycles's; here: sleeping, not spinning.)
TEST(CycleModel, AnIdleBoardDoesNotSpinAHostCoreInAnyTimingMode) {
  const std::string image = CopyImage("qemu-mps2-an385", "idle", nullptr);
  for (v1::QemuMachine::Timing timing :
       {v1::QemuMachine::HOST, v1::QemuMachine::INSTRUCTIONS, v1::QemuMachine::CYCLES}) {
    Started s = Start("mps2-an385", image, timing);
    ASSERT_NE(s.board, nullptr);
    ASSERT_EQ(s.failure, "");
    const double before = QemuCpuSeconds();
    absl::SleepFor(absl::Seconds(2));
    const double busy = (QemuCpuSeconds() - before) / 2;
    EXPECT_LT(busy, 0.25) << v1::QemuMachine::Timing_Name(timing)
                          << ": an idle QEMU used this share of a core";
  }
}

TEST(CycleModel, WhatCannotBeTrustedIsRefusedNamingTheCause) {
  const std::string good = CopyImage("qemu-mps2-an385", "bad-good", nullptr);
  struct Refusal {
    std::string image, plugin, binary, cause;
  };
  const std::string fake_qemu = TmpDir() + "/qemu-without-plugins";
  std::ofstream(fake_qemu) << "#!/bin/sh\necho 'qemu-system-arm: -plugin: plugin interface not "
                              "enabled in this build' >&2\nexit 1\n";
  ASSERT_EQ(chmod(fake_qemu.c_str(), 0755), 0);
  const std::vector<Refusal> refusals = {
      {good, "/nonexistent/libbenchfarm_cyclemodel.so", "", "cycle model plugin"},
      {CopyImage("qemu-mps2-an385", "bad-none", ""), Plugin(), "", "no cycle-model description"},
      {CopyImage("qemu-mps2-an385", "bad-comma", "core=cortex-m3,machine=virt"), Plugin(), "",
       "not a cycle-model argument"},
      {CopyImage("qemu-mps2-an385", "bad-core", "core=cortex-m9"), Plugin(), "",
       "unknown core \"cortex-m9\""},
      {good, Plugin(), fake_qemu, "plugin interface not enabled"},
  };
  for (const Refusal& r : refusals) {
    Started s = Start("mps2-an385", r.image, v1::QemuMachine::CYCLES, r.plugin, r.binary);
    ASSERT_NE(s.board, nullptr);
    EXPECT_TRUE(absl::StrContains(s.failure, r.cause)) << r.cause << " not in: " << s.failure;
  }
  Started stranger = Start("mps2-an385", good, v1::QemuMachine::CYCLES, FaultyPlugin("stranger"));
  ASSERT_NE(stranger.board, nullptr);
  EXPECT_TRUE(absl::StrContains(stranger.failure, "not its greeting")) << stranger.failure;
}

TEST(CycleModel, AStreamOutOfStepWithTheBoardsRepeatsIsAnErrorNeverACost) {
  const std::string image = CopyImage("qemu-mps2-an385", "faulty", nullptr);
  for (const auto& [mode, cause] : std::vector<std::pair<std::string, std::string>>{
           {"mute", "reported 0 timed intervals for 4 repeats"},
           // Each interval twice: more than the repeats (how many of the extra records are in
           // the pipe when the call's reply arrives varies: 5 to 8).
           {"double", "timed intervals for 4 repeats"},
           {"garbage", "malformed record"},
           {"close", "stream ended"}}) {
    Started s = Start("mps2-an385", image, v1::QemuMachine::CYCLES, FaultyPlugin(mode));
    ASSERT_NE(s.board, nullptr);
    ASSERT_EQ(s.failure, "") << mode;
    device::MeasureRequest r;
    r.function = "add";
    r.args = device::Float32Args({{64}, {64}, {64}});
    r.options.number = 1;
    r.options.repeat = 4;
    absl::StatusOr<device::MeasureOutcome> o =
        device::Measure(*s.board->rpc(), r, absl::Now() + absl::Seconds(30), &s.board->timer());
    ASSERT_FALSE(o.ok()) << mode;
    EXPECT_TRUE(absl::StrContains(o.status().message(), cause)) << mode << ": " << o.status();
    if (mode == "double") {
      int reported = 0;
      const std::string text(o.status().message());
      const size_t at = text.find("reported ");
      ASSERT_NE(at, std::string::npos) << text;
      ASSERT_TRUE(absl::SimpleAtoi(text.substr(at + 9, text.find(' ', at + 9) - at - 9), &reported))
          << text;
      EXPECT_GT(reported, 4) << text;
      EXPECT_LE(reported, 8) << text;
    }
    EXPECT_TRUE(absl::StrContains(o.status().message(), "board cm-mps2-an385")) << o.status();
  }
}

}  // namespace
}  // namespace benchfarm
