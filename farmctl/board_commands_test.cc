// Unit tests of farmctl's board command helpers (parsing and formatting); the commands against a
// real board are exercised by farmctl_board_test.sh.
#include "farmctl/board_commands.h"

#include <gtest/gtest.h>

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
  r.mean = 1.5e-6;
  r.check = "ok";
  r.info.board_kind = "host-process";
  std::string table = FormatTime(r, "hp0", false);
  EXPECT_NE(table.find("matmul"), std::string::npos);
  EXPECT_NE(table.find("1.500"), std::string::npos);  // mean in microseconds
  EXPECT_NE(table.find("check    ok"), std::string::npos);
  std::string json = FormatTime(r, "hp\"0", true);
  EXPECT_NE(json.find("\"costs\": [1e-06, 2e-06]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"board\": \"hp\\\"0\""), std::string::npos) << json;
}

}  // namespace
}  // namespace benchfarm::farmctl
