// Unit tests of farmctl's board command helpers (parsing and formatting); the commands against a
// real board are exercised by farmctl_board_test.sh.
#include "farmctl/board_commands.h"

#include <gtest/gtest.h>

#include "stats/cost_stats.h"

namespace benchfarm::farmctl {
namespace {

TEST(ParseShapes, ParsesAndRejects) {
  auto shapes = ParseShapes("32x16,16x8,32x8");
  ASSERT_TRUE(shapes.ok());
  EXPECT_EQ(*shapes, (std::vector<Shape>{{32, 16}, {16, 8}, {32, 8}}));
  EXPECT_EQ(FormatShapes(*shapes), "32x16,16x8,32x8");
  EXPECT_FALSE(ParseShapes("32xx3").ok());
  EXPECT_FALSE(ParseShapes("a,b").ok());
  EXPECT_FALSE(ParseShapes("-1").ok());
}

TEST(DefaultShapes, MatchKnobsDefaults) {
  EXPECT_EQ(*DefaultShapes("matmul"), (std::vector<Shape>{{32, 32}, {32, 32}, {32, 32}}));
  EXPECT_EQ((*DefaultShapes("conv2d"))[2], (Shape{1, 8, 14, 14}));
  EXPECT_TRUE(absl::IsNotFound(DefaultShapes("softmax").status()));
}

TEST(ParseCallArg, Kinds) {
  EXPECT_EQ(*ParseCallArg("int:3"), device::Arg::Int(3));
  EXPECT_EQ(*ParseCallArg("7"), device::Arg::Int(7));
  EXPECT_EQ(*ParseCallArg("1.5"), device::Arg::Float(1.5));
  EXPECT_EQ(*ParseCallArg("str:a b"), device::Arg::Str("a b"));
  EXPECT_FALSE(ParseCallArg("int:x").ok());
  EXPECT_FALSE(ParseCallArg("what").ok());
}

TEST(FormatTime, TableAndJson) {
  TimeResult r;
  r.op = "matmul";
  r.shapes = {{2, 2}, {2, 2}, {2, 2}};
  r.costs = {1e-6, 2e-6};
  r.stats = stats::CostStatsOf(r.costs, 0);
  r.number = 10;
  r.rounds = 1;
  r.stop = "fixed";
  r.check = "ok";
  r.info.board_kind = "host-process";
  std::string table = FormatTime(r, "hp0", false);
  EXPECT_NE(table.find("matmul"), std::string::npos);
  EXPECT_NE(table.find("1.500"), std::string::npos);  // mean in microseconds
  EXPECT_NE(table.find("check    ok"), std::string::npos);
  EXPECT_NE(table.find("repeats  2 in 1 round, stopped: fixed"), std::string::npos) << table;
  EXPECT_EQ(table.find("wall/cpu"), std::string::npos) << "only when the board says";
  std::string json = FormatTime(r, "hp\"0", true);
  EXPECT_NE(json.find("\"costs\": [1e-06, 2e-06]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"board\": \"hp\\\"0\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"count\": 2"), std::string::npos) << json;
}

// Adaptive mode: every statistic, the interval and its +-, the calibrated number, the repeats
// and why they stopped, wall/CPU; UNSTABLE for a wide interval.
TEST(FormatTime, AdaptiveShowsTheSpreadAndWhyItStopped) {
  TimeResult r;
  r.op = "add";
  r.shapes = {{4}, {4}, {4}};
  r.target_rel_ci = 0.01;
  r.budget = absl::Milliseconds(500);
  r.max_repeat = 40;
  for (int i = 0; i < 12; ++i) r.costs.push_back(1e-5 * (1 + 0.001 * (i % 3)));
  r.stats = stats::CostStatsOf(r.costs, 0);
  r.number = 1234;
  r.rounds = 2;
  r.stop = "target";
  r.wall_over_cpu = 1.25;
  r.info.cpu_hz = 100000000;
  r.units_hz = 100000000;
  std::string table = FormatTime(r, "hp0", false);
  for (const char* want :
       {"measure  adaptive: target +-1 %  budget 500 ms  max_repeat 40", "count", "mean", "median",
        "min", "max", "stddev", "cv", "interval", "at 96.1 %: +-0.1 %",
        "result   10.01 us +-0.1 % = 1,001 cycles", "number   1234 calls per repeat (calibrated)",
        "repeats  12 in 2 rounds, stopped: target", "wall/cpu 1.250"}) {
    EXPECT_NE(table.find(want), std::string::npos) << want << "\n" << table;
  }
  EXPECT_EQ(table.find("UNSTABLE"), std::string::npos) << table;
  std::string json = FormatTime(r, "hp0", true);
  for (const char* want : {"\"target_rel_ci\": 0.01", "\"budget_ms\": 500", "\"max_repeat\": 40",
                           "\"rel_half_width\": ", "\"unstable\": false", "\"ci_level\": ",
                           "\"measured\": {\"number\": 1234, \"repeats\": 12, \"rounds\": 2, "
                           "\"stop\": \"target\"}",
                           "\"wall_over_cpu\": 1.25"}) {
    EXPECT_NE(json.find(want), std::string::npos) << want << "\n" << json;
  }

  r.costs = {1e-5, 1e-5, 2e-5, 3e-5};
  r.stats = stats::CostStatsOf(r.costs, 0);
  r.stop = "budget";
  table = FormatTime(r, "hp0", false);
  EXPECT_NE(table.find("UNSTABLE"), std::string::npos) << table;
  EXPECT_NE(table.find("stopped: budget"), std::string::npos) << table;
  EXPECT_NE(FormatTime(r, "hp0", true).find("\"unstable\": true"), std::string::npos);
}

// Emulated boards: the cycle model's costs read as cycles at the part's clock, with the model's
// instructions and cycles per instruction; -icount's as instructions, never cycles.
TEST(FormatTime, EmulatedCostsSayWhatTheyCount) {
  TimeResult r;
  r.op = "matmul";
  r.shapes = {{4}, {4}, {4}};
  r.costs = {1e-3, 1e-3, 1e-3};
  r.stats = stats::CostStatsOf(r.costs, 0);
  r.emulation = "qemu-cycles";
  r.timer = "cycle-model";
  r.units_hz = 25e6;
  r.cycles = {25000, 25000, 25000};
  r.instructions = {20000, 20000, 20000};
  std::string table = FormatTime(r, "m3", false);
  EXPECT_NE(table.find("= 25,000 cycles at 25 MHz"), std::string::npos) << table;
  EXPECT_NE(table.find("timer    cycle-model (qemu-cycles)"), std::string::npos) << table;
  EXPECT_NE(
      table.find("model    25000.0 cycles, 20000.0 instructions per call (1.25 per instruction)"),
      std::string::npos)
      << table;
  std::string json = FormatTime(r, "m3", true);
  EXPECT_NE(json.find("\"timer\": \"cycle-model\", \"emulation\": \"qemu-cycles\""),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"model_cycles\": [25000, 25000, 25000]"), std::string::npos) << json;

  r.emulation = "qemu-icount";
  r.timer = "";
  r.info.fields["timer"] = "systick";
  r.units_hz = 1e9;
  r.cycles.clear();
  r.instructions.clear();
  table = FormatTime(r, "m3", false);
  EXPECT_NE(table.find("= 1,000,000 instructions at 1000 M instructions/s"), std::string::npos)
      << table;
  EXPECT_EQ(table.find("cycles"), std::string::npos) << table;
  EXPECT_NE(table.find("timer    systick (qemu-icount)"), std::string::npos) << table;
}

TEST(UnitsText, InstructionsUnderIcountCyclesOtherwise) {
  EXPECT_EQ(UnitsText(1e-3, 168e6, "qemu-cycles"), "168,000 cycles");
  EXPECT_EQ(UnitsText(1e-3, 168e6, ""), "168,000 cycles");
  EXPECT_EQ(UnitsText(1e-6, 1e9, "qemu-icount"), "1,000 instructions");
}

TEST(CyclesText, GroupsThousands) {
  EXPECT_EQ(CyclesText(1e-3, 168e6), "168,000 cycles");
  EXPECT_EQ(CyclesText(12.3456e-6, 1e9), "12,346 cycles");
}

}  // namespace
}  // namespace benchfarm::farmctl
