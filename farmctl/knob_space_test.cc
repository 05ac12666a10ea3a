// KnobSpace: the compiled-in table is the catalog's built-ins, knob values convert both ways, and
// config indices number the space exactly as AutoTVM's ConfigSpace.get does.
#include "farmctl/knob_space.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace benchfarm::farmctl {
namespace {

// AutoTVM's ConfigSpace.get(index): knob k takes values[index % n_k], then index //= n_k.
google::protobuf::Map<std::string, std::string> Decode(const OpKnobs& op, int64_t index) {
  google::protobuf::Map<std::string, std::string> knobs;
  for (const Knob& knob : op.knobs) {
    int64_t n = static_cast<int64_t>(knob.values.size());
    knobs[knob.name] = knob.values[index % n];
    index /= n;
  }
  return knobs;
}

TEST(SampleKnobs, AreTheCatalogsBuiltins) {
  const KnobTable& compiled = SampleKnobs();
  ASSERT_EQ(compiled.size(), 3u);
  for (const char* op : {"add", "matmul", "conv2d"}) {
    ASSERT_EQ(compiled.count(op), 1u) << op;
    EXPECT_EQ(compiled.at(op).version.size(), 16u);
    EXPECT_EQ(compiled.at(op).spec.op(), op);
  }
  EXPECT_EQ(compiled.at("matmul").knobs[4].values, (std::vector<std::string>{"ijk", "ikj"}));
  EXPECT_FALSE(compiled.at("matmul").knobs[4].numeric);
  EXPECT_EQ(compiled.at("matmul").knobs[0].default_value, "8");
}

TEST(SampleKnobs, MatmulSpace) {
  const OpKnobs& matmul = SampleKnobs().at("matmul");
  ASSERT_EQ(matmul.knobs.size(), 5u);
  EXPECT_EQ(matmul.knobs[0].name, "tile_m");
  EXPECT_EQ(matmul.knobs[4].name, "order");
  EXPECT_TRUE(matmul.knobs[0].numeric);
  EXPECT_FALSE(matmul.knobs[4].numeric);
  EXPECT_EQ(matmul.knobs[0].default_value, "8");
  EXPECT_EQ(matmul.knobs[4].default_value, "ikj");
  EXPECT_EQ(matmul.knobs[4].values, (std::vector<std::string>{"ijk", "ikj"}));
  EXPECT_EQ(matmul.SpaceSize(), 6 * 6 * 6 * 4 * 2);
}

TEST(KnobValues, CheckedAndWrittenAsJson) {
  const OpKnobs& matmul = SampleKnobs().at("matmul");
  const Knob& tile_m = *matmul.Find("tile_m");
  const Knob& order = *matmul.Find("order");
  EXPECT_TRUE(CheckKnobValue(tile_m, "8").ok());
  EXPECT_TRUE(CheckKnobValue(order, "ikj").ok());
  absl::Status bad = CheckKnobValue(tile_m, "3");
  EXPECT_TRUE(absl::IsInvalidArgument(bad));
  EXPECT_NE(bad.message().find("knob tile_m=3: not one of 1, 2, 4, 8, 16, 32"), std::string::npos)
      << bad;
  EXPECT_FALSE(CheckKnobValue(order, "kji").ok());
  EXPECT_FALSE(CheckKnobValue(order, "1").ok());
  EXPECT_EQ(KnobValueJson("8"), "8");
  EXPECT_EQ(KnobValueJson("-2"), "-2");
  EXPECT_EQ(KnobValueJson("ikj"), "\"ikj\"");
  EXPECT_EQ(KnobValueJson("08"), "\"08\"");
  EXPECT_EQ(KnobValueJson("a\"b"), "\"a\\\"b\"");
}

TEST(ConfigIndex, FirstKnobVariesFastest) {
  const OpKnobs& matmul = SampleKnobs().at("matmul");
  google::protobuf::Map<std::string, std::string> knobs;
  // Every knob at its default: tile_m=8 (3), tile_n=8 (3), tile_k=16 (4), unroll=4 (2), ikj (1).
  EXPECT_EQ(ConfigIndex(matmul, knobs), 3 + 3 * 6 + 4 * 36 + 2 * 216 + 1 * 864);
  knobs["tile_m"] = "1";
  knobs["tile_n"] = "1";
  knobs["tile_k"] = "1";
  knobs["unroll"] = "1";
  knobs["order"] = "ijk";
  EXPECT_EQ(ConfigIndex(matmul, knobs), 0);
  knobs["tile_m"] = "2";
  EXPECT_EQ(ConfigIndex(matmul, knobs), 1);
  knobs["tile_m"] = "1";
  knobs["tile_n"] = "2";
  EXPECT_EQ(ConfigIndex(matmul, knobs), 6);
  knobs["tile_m"] = "32";
  knobs["tile_n"] = "32";
  knobs["tile_k"] = "32";
  knobs["unroll"] = "8";
  knobs["order"] = "ikj";
  EXPECT_EQ(ConfigIndex(matmul, knobs), matmul.SpaceSize() - 1);
}

TEST(ConfigIndex, InvertsConfigSpaceGetOverEverySampleSpace) {
  for (const auto& [name, op] : SampleKnobs()) {
    SCOPED_TRACE(name);
    std::set<int64_t> seen;
    for (int64_t i = 0; i < op.SpaceSize(); ++i) {
      int64_t index = ConfigIndex(op, Decode(op, i));
      ASSERT_EQ(index, i);
      seen.insert(index);
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), op.SpaceSize());
  }
}

TEST(ConfigIndex, OutsideTheSpaceIsMinusOne) {
  const OpKnobs& matmul = SampleKnobs().at("matmul");
  google::protobuf::Map<std::string, std::string> knobs;
  knobs["tile_m"] = "3";
  EXPECT_EQ(ConfigIndex(matmul, knobs), -1);
  knobs.clear();
  knobs["no_such_knob"] = "1";
  EXPECT_EQ(ConfigIndex(matmul, knobs), -1);
}

}  // namespace
}  // namespace benchfarm::farmctl
