// KnobSpace: the compiled-in table matches crt/ops/knobs.json, knob values convert both ways, and
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

std::string ReadRunfile(const std::string& path) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  std::ifstream in(std::string(srcdir ? srcdir : ".") + "/" +
                   (workspace ? workspace : "benchfarm") + "/" + path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

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

TEST(SampleKnobs, IsTheKnobsJsonOfTheTree) {
  std::string text = ReadRunfile("crt/ops/knobs.json");
  ASSERT_FALSE(text.empty()) << "crt/ops/knobs.json not in runfiles";
  absl::StatusOr<KnobTable> file = ParseKnobsJson(text);
  ASSERT_TRUE(file.ok()) << file.status();
  const KnobTable& compiled = SampleKnobs();
  ASSERT_EQ(compiled.size(), file->size());
  for (const auto& [name, op] : *file) {
    SCOPED_TRACE(name);
    auto it = compiled.find(name);
    ASSERT_NE(it, compiled.end());
    ASSERT_EQ(it->second.knobs.size(), op.knobs.size());
    for (size_t i = 0; i < op.knobs.size(); ++i) {
      EXPECT_EQ(it->second.knobs[i].name, op.knobs[i].name);
      EXPECT_EQ(it->second.knobs[i].values, op.knobs[i].values);
      EXPECT_EQ(it->second.knobs[i].default_value, op.knobs[i].default_value);
    }
  }
  for (const char* op : {"add", "matmul", "conv2d"}) EXPECT_EQ(compiled.count(op), 1u) << op;
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

TEST(ParseKnobsJson, RejectsMalformedDocuments) {
  EXPECT_FALSE(ParseKnobsJson("{").ok());
  EXPECT_FALSE(ParseKnobsJson(R"({"ops": 3})").ok());
  absl::StatusOr<KnobTable> bad_default = ParseKnobsJson(
      R"({"ops": [{"op": "x", "knobs": [{"name": "k", "values": [1, 2], "default": 3}]}]})");
  ASSERT_FALSE(bad_default.ok());
  EXPECT_NE(bad_default.status().message().find("ops[0].knobs[0] (k): default"), std::string::npos)
      << bad_default.status();
  EXPECT_FALSE(
      ParseKnobsJson(
          R"({"ops": [{"op": "x", "knobs": [{"name": "k", "values": [1, "a"], "default": 1}]}]})")
          .ok());
  absl::StatusOr<KnobTable> no_knobs = ParseKnobsJson(R"({"ops": [{"op": "x"}]})");
  ASSERT_TRUE(no_knobs.ok());
  EXPECT_EQ(no_knobs->at("x").SpaceSize(), 1);
}

}  // namespace
}  // namespace benchfarm::farmctl
