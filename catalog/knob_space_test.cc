// Knob spaces: values as text and JSON, a trial's knobs checked and resolved (one message for
// both), config indices numbered exactly as AutoTVM's ConfigSpace.get does, spaces from catalog
// entries and from knobs.json.
#include "catalog/knob_space.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "catalog/operator.h"

namespace benchfarm::catalog {
namespace {

using ::testing::HasSubstr;

const v1::OpTemplate& Spec(const std::string& op) { return BuiltinKnobSpace().Find(op)->spec(); }

TEST(KnobValues, ValueIsComparesAsValueTextWould) {
  std::vector<google::protobuf::Value> values(7);
  values[0].set_number_value(8);
  values[1].set_number_value(-3);
  values[2].set_number_value(0.25);
  values[3].set_string_value("ikj");
  values[4].set_bool_value(true);
  values[5].set_bool_value(false);  // values[6]: no kind
  const std::vector<std::string> texts = {"8", "-3", "0.25", "ikj", "1", "0", "", "8.0", "IKJ"};
  for (const google::protobuf::Value& v : values) {
    for (const std::string& text : texts) {
      EXPECT_EQ(ValueIs(v, text), ValueText(v) == text) << v.DebugString() << " vs " << text;
    }
  }
  EXPECT_TRUE(ValueIs(values[0], "8"));
  EXPECT_FALSE(ValueIs(values[0], "8.0"));
  EXPECT_TRUE(ValueIs(values[2], "0.25"));
}

TEST(KnobValues, AllowedAndWrittenAsJson) {
  const v1::Knob& tile_m = *FindKnob(Spec("matmul"), "tile_m");
  const v1::Knob& order = *FindKnob(Spec("matmul"), "order");
  EXPECT_EQ(FindKnob(Spec("matmul"), "tile_q"), nullptr);
  EXPECT_TRUE(Allows(tile_m, "8"));
  EXPECT_FALSE(Allows(tile_m, "3"));
  EXPECT_TRUE(Allows(order, "ikj"));
  EXPECT_FALSE(Allows(order, "kji"));
  EXPECT_FALSE(Allows(order, "1"));
  EXPECT_EQ(ValuesText(tile_m), "1, 2, 4, 8, 16, 32");
  EXPECT_TRUE(IsNumeric(tile_m));
  EXPECT_FALSE(IsNumeric(order));
  EXPECT_EQ(KnobValueJson("8"), "8");
  EXPECT_EQ(KnobValueJson("-2"), "-2");
  EXPECT_EQ(KnobValueJson("ikj"), "\"ikj\"");
  EXPECT_EQ(KnobValueJson("08"), "\"08\"");
  EXPECT_EQ(KnobValueJson("a\"b"), "\"a\\\"b\"");
}

TEST(KnobSpace, BuiltinsInKnobsJsonOrder) {
  const KnobSpace& space = BuiltinKnobSpace();
  ASSERT_EQ(space.ops().size(), 3u);
  const std::vector<std::string> names = {space.ops()[0].name(), space.ops()[1].name(),
                                          space.ops()[2].name()};
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()),
            (std::set<std::string>{"add", "matmul", "conv2d"}));
  for (const v1::Operator& op : space.ops()) {
    EXPECT_EQ(op.version().size(), 16u);
    EXPECT_EQ(op.spec().op(), op.name());
  }
  const v1::OpTemplate& matmul = Spec("matmul");
  ASSERT_EQ(matmul.knobs_size(), 5);
  EXPECT_EQ(matmul.knobs(0).name(), "tile_m");
  EXPECT_EQ(matmul.knobs(4).name(), "order");
  EXPECT_EQ(ValueText(matmul.knobs(0).default_()), "8");
  EXPECT_EQ(ValueText(matmul.knobs(4).default_()), "ikj");
  EXPECT_EQ(ValuesText(matmul.knobs(4)), "ijk, ikj");
  EXPECT_EQ(SpaceSize(matmul), 6 * 6 * 6 * 4 * 2);
  EXPECT_EQ(space.Find("softmax"), nullptr);
}

TEST(KnobSpace, FromEntriesAndKnobsJson) {
  v1::Operator older;
  older.set_name("gemv");
  older.set_version("1");
  v1::Operator newer = older;
  newer.set_version("2");
  v1::Operator unnamed;
  unnamed.mutable_spec()->set_op("scale");
  const KnobSpace space({older, unnamed, newer});
  ASSERT_EQ(space.ops().size(), 2u);
  EXPECT_EQ(space.Find("gemv")->version(), "2");  // the later entry
  EXPECT_EQ(space.ops()[1].name(), "scale");      // named after its spec

  absl::StatusOr<KnobSpace> parsed =
      KnobSpace::Parse(R"({"ops": [{"op": "b", "knobs": [{"name": "k", "values": [1, 2]}]},
                                   {"op": "a"}]})");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  ASSERT_EQ(parsed->ops().size(), 2u);
  EXPECT_EQ(parsed->ops()[0].name(), "b");  // in the file's order
  EXPECT_EQ(SpaceSize(parsed->Find("b")->spec()), 2);
  EXPECT_TRUE(absl::IsInvalidArgument(KnobSpace::Parse("{\"ops\": []}").status()));
  EXPECT_TRUE(absl::IsInvalidArgument(KnobSpace::Parse("not json").status()));

  const std::string path = ::testing::TempDir() + "/knobs.json";
  std::ofstream(path) << "{\"ops\": [{\"op\": \"a\"}]}";
  ASSERT_TRUE(KnobSpace::Load(path).ok());
  std::ofstream(path) << "[";
  EXPECT_THAT(KnobSpace::Load(path).status().message(), HasSubstr("knob space " + path + ": "));
  std::remove(path.c_str());
  absl::Status missing = KnobSpace::Load(path).status();
  EXPECT_TRUE(absl::IsNotFound(missing));
  EXPECT_EQ(missing.message(), "knob space " + path + ": cannot open");
}

TEST(Knobs, ResolveFillsDefaultsAndRefusesOthers) {
  const v1::OpTemplate& mm = Spec("matmul");
  google::protobuf::Map<std::string, std::string> knobs;
  knobs["tile_m"] = "16";
  auto resolved = ResolveKnobs(mm, knobs);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_EQ(resolved->size(), 5u);
  EXPECT_EQ((*resolved)[0], (std::pair<std::string, std::string>{"tile_m", "16"}));
  EXPECT_EQ((*resolved)[4], (std::pair<std::string, std::string>{"order", "ikj"}));
  knobs["tile_m"] = "3";
  EXPECT_THAT(ResolveKnobs(mm, knobs).status().message(),
              HasSubstr("matmul knob tile_m = \"3\" is not one of 1, 2, 4"));
  knobs.clear();
  knobs["tile_q"] = "1";
  EXPECT_THAT(ResolveKnobs(mm, knobs).status().message(), HasSubstr("no knob \"tile_q\""));
}

// CheckKnobs (the tracker's check at submission) refuses what ResolveKnobs refuses, with the same
// message, and accepts what it accepts: it relies on every default being one of its knob's
// values, which holds for every built-in.
TEST(Knobs, CheckAgreesWithResolve) {
  for (const v1::Operator& op : BuiltinOperators()) {
    google::protobuf::Map<std::string, std::string> none;
    EXPECT_TRUE(ResolveKnobs(op.spec(), none).ok()) << op.name();
    EXPECT_TRUE(CheckKnobs(op.spec(), none).ok()) << op.name();
  }
  const v1::OpTemplate& mm = Spec("matmul");
  const std::vector<std::map<std::string, std::string>> cases = {
      {{"tile_m", "16"}}, {{"tile_m", " 32 "}, {"order", "ikj"}}, {{"tile_m", "3"}},
      {{"tile_q", "1"}},  {{"order", "kji"}, {"tile_n", "7"}},    {{"tile_k", ""}},
  };
  for (const auto& c : cases) {
    google::protobuf::Map<std::string, std::string> knobs(c.begin(), c.end());
    const absl::Status resolved = ResolveKnobs(mm, knobs).status();
    const absl::Status checked = CheckKnobs(mm, knobs);
    EXPECT_EQ(checked, resolved) << knobs.begin()->first;
  }
  google::protobuf::Map<std::string, std::string> bad;
  bad["tile_m"] = "3";
  EXPECT_FALSE(CheckKnobs(mm, bad).ok());
}

TEST(ConfigIndex, FirstKnobVariesFastest) {
  const v1::OpTemplate& matmul = Spec("matmul");
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
  EXPECT_EQ(ConfigIndex(matmul, knobs), SpaceSize(matmul) - 1);
}

TEST(ConfigIndex, KnobsOfIndexIsMixedRadixFirstKnobFastest) {
  const v1::OpTemplate& mm = Spec("matmul");
  std::map<std::string, std::string> k0 = KnobsOfIndex(mm, 0), k1 = KnobsOfIndex(mm, 1);
  EXPECT_EQ(k0.at("tile_m"), "1");
  EXPECT_EQ(k1.at("tile_m"), "2");
  EXPECT_EQ(k1.at("tile_n"), "1");
  std::map<std::string, std::string> k6 = KnobsOfIndex(mm, 6);
  EXPECT_EQ(k6.at("tile_m"), "1");
  EXPECT_EQ(k6.at("tile_n"), "2");
  std::map<std::string, std::string> last = KnobsOfIndex(mm, SpaceSize(mm) - 1);
  EXPECT_EQ(last.at("order"), "ikj");
  EXPECT_EQ(last.at("unroll"), "8");
}

// AutoTVM's ConfigSpace.get(index): knob k takes values[index % n_k], then index //= n_k.
google::protobuf::Map<std::string, std::string> Decode(const v1::OpTemplate& spec, int64_t index) {
  google::protobuf::Map<std::string, std::string> knobs;
  for (const v1::Knob& knob : spec.knobs()) {
    knobs[knob.name()] = ValueText(knob.values(static_cast<int>(index % knob.values_size())));
    index /= knob.values_size();
  }
  return knobs;
}

TEST(ConfigIndex, InvertsConfigSpaceGetOverEverySampleSpace) {
  for (const v1::Operator& op : BuiltinKnobSpace().ops()) {
    SCOPED_TRACE(op.name());
    for (int64_t i = 0; i < SpaceSize(op.spec()); ++i) {
      const google::protobuf::Map<std::string, std::string> knobs = Decode(op.spec(), i);
      ASSERT_EQ(ConfigIndex(op.spec(), knobs), i);
      const std::map<std::string, std::string> of_index = KnobsOfIndex(op.spec(), i);
      ASSERT_EQ(of_index, (std::map<std::string, std::string>(knobs.begin(), knobs.end())));
    }
  }
}

TEST(ConfigIndex, OutsideTheSpaceIsMinusOne) {
  const v1::OpTemplate& matmul = Spec("matmul");
  google::protobuf::Map<std::string, std::string> knobs;
  knobs["tile_m"] = "3";
  EXPECT_EQ(ConfigIndex(matmul, knobs), -1);
  knobs.clear();
  knobs["no_such_knob"] = "1";
  EXPECT_EQ(ConfigIndex(matmul, knobs), -1);
}

}  // namespace
}  // namespace benchfarm::catalog
