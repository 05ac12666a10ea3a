#include "catalog/operator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace benchfarm::catalog {
namespace {

using ::testing::HasSubstr;

constexpr char kManifest[] = R"json({
  "op": "gemv", "entry": "gemv", "reference_entry": "gemv_reference", "sources": ["gemv.c"],
  "dims": {"M": 4, "K": 8},
  "args": [
    {"name": "A", "role": "input", "dtype": "float32", "shape": ["M", "K"]},
    {"name": "x", "role": "input", "dtype": "float32", "shape": ["K"]},
    {"name": "y", "role": "output", "dtype": "float32", "shape": ["M"]}
  ],
  "knobs": [{"name": "unroll", "values": [1, 2, 4]}, {"name": "mode", "values": ["a", "b"], "default": "b"}]
})json";

std::map<std::string, std::string> Files(const std::string& source = "int gemv;") {
  return {{"gemv.c", source}, {"gemv.h", "/* helper */"}};
}

const v1::Operator& Builtin(const std::string& name) {
  for (const v1::Operator& op : BuiltinOperators()) {
    if (op.name() == name) return op;
  }
  ADD_FAILURE() << "no built-in " << name;
  return BuiltinOperators().front();
}

TEST(Catalog, BuiltinsAreVersionedEntries) {
  ASSERT_EQ(BuiltinOperators().size(), 3u);
  const v1::Operator& mm = Builtin("matmul");
  EXPECT_TRUE(mm.builtin());
  EXPECT_EQ(mm.version().size(), 16u);
  EXPECT_EQ(mm.version(), OperatorVersion(mm));
  EXPECT_NE(mm.version(), Builtin("add").version());
  EXPECT_EQ(mm.spec().knobs_size(), 5);
}

TEST(Catalog, ManifestMakesAVersionedOperatorWithDefaults) {
  absl::StatusOr<v1::Operator> op = OperatorFromManifest(kManifest, Files());
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->name(), "gemv");
  EXPECT_FALSE(op->builtin());
  EXPECT_EQ(ValueText(op->spec().knobs(0).default_()), "1");  // first value
  EXPECT_EQ(ValueText(op->spec().knobs(1).default_()), "b");
  // Same content, same version; a changed source, a new one.
  EXPECT_EQ(OperatorFromManifest(kManifest, Files())->version(), op->version());
  EXPECT_NE(OperatorFromManifest(kManifest, Files("int gemv2;"))->version(), op->version());
}

TEST(Catalog, ValueIsComparesAsValueTextWould) {
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

TEST(Catalog, BadManifestsNameTheField) {
  struct Case {
    std::string manifest;
    std::map<std::string, std::string> files;
    std::string field;
  };
  auto replace = [](std::string s, const std::string& from, const std::string& to) {
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::vector<Case> cases = {
      {replace(kManifest, "\"gemv.c\"]", "\"missing.c\"]"), Files(), "op.spec.sources[0]"},
      {replace(kManifest, "\"entry\": \"gemv\"", "\"entry\": \"1x\""), Files(), "op.spec.entry"},
      {replace(kManifest, "\"default\": \"b\"", "\"default\": \"c\""), Files(), "op.spec.knobs[1].default"},
      {replace(kManifest, "[1, 2, 4]", "[1, 1]"), Files(), "op.spec.knobs[0].values[1]"},
      {replace(kManifest, "[1, 2, 4]", "[\"a b\"]"), Files(), "op.spec.knobs[0].values[0]"},
      {replace(kManifest, "\"float32\", \"shape\": [\"K\"]", "\"int8\", \"shape\": [\"K\"]"), Files(),
       "op.spec.args[1].dtype"},
      {replace(kManifest, "[\"M\", \"K\"]", "[\"M\", \"Q\"]"), Files(), "op.spec: args.A"},
      {replace(kManifest, "\"op\": \"gemv\"", "\"op\": \"matmul\""), Files(), "op.name"},
      {replace(kManifest, "\"dims\"", "\"dimz\""), Files(), "op.json"},
      {kManifest, {{"gemv.c", "x"}, {"../etc", "y"}}, "op.files"},
      {replace(kManifest, "\"K\": 8", "\"K\": 0"), Files(), "op.spec.dims.K"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<v1::Operator> op = OperatorFromManifest(c.manifest, c.files);
    ASSERT_FALSE(op.ok()) << c.field;
    EXPECT_EQ(op.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(op.status().message(), HasSubstr(c.field)) << op.status();
  }
}

TEST(Catalog, ResolveKnobsFillsDefaultsAndRefusesOthers) {
  const v1::OpTemplate& mm = Builtin("matmul").spec();
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
TEST(Catalog, CheckKnobsAgreesWithResolveKnobs) {
  for (const v1::Operator& op : BuiltinOperators()) {
    google::protobuf::Map<std::string, std::string> none;
    EXPECT_TRUE(ResolveKnobs(op.spec(), none).ok()) << op.name();
    EXPECT_TRUE(CheckKnobs(op.spec(), none).ok()) << op.name();
  }
  const v1::OpTemplate& mm = Builtin("matmul").spec();
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

v1::Trial WithShapes(std::vector<std::vector<int64_t>> shapes, const std::string& dtype = "") {
  v1::Trial t;
  for (const auto& s : shapes) {
    v1::ArgSpec* a = t.add_args();
    for (int64_t d : s) a->add_shape(d);
    a->set_dtype(dtype);
  }
  return t;
}

TEST(Catalog, TrialShapesAreCheckedAgainstTheOp) {
  const v1::OpTemplate& mm = Builtin("matmul").spec();
  EXPECT_EQ(*TrialShapes(mm, v1::Trial()),
            (std::vector<std::vector<int64_t>>{{32, 32}, {32, 32}, {32, 32}}));
  EXPECT_TRUE(TrialShapes(mm, WithShapes({{8, 4}, {4, 2}, {8, 2}})).ok());
  EXPECT_THAT(TrialShapes(mm, WithShapes({{8, 4}, {5, 2}, {8, 2}})).status().message(),
              HasSubstr("args[1].shape[0]: K is 4 in args[0], 5 here"));
  EXPECT_THAT(TrialShapes(mm, WithShapes({{8, 4}, {4, 2}, {8, 3}})).status().message(),
              HasSubstr("args[2].shape[1]: N is 2 in args[1], 3 here"));
  EXPECT_THAT(TrialShapes(mm, WithShapes({{8, 4}, {4, 2}})).status().message(),
              HasSubstr("args: matmul takes 3 arguments, the trial gives 2"));
  EXPECT_THAT(TrialShapes(mm, WithShapes({{8, 4}, {4}, {8, 2}})).status().message(),
              HasSubstr("args[1].shape"));
  EXPECT_THAT(TrialShapes(mm, WithShapes({{8, 4}, {4, 2}, {8, 2}}, "int8")).status().message(),
              HasSubstr("args[0].dtype"));
  const v1::OpTemplate& conv = Builtin("conv2d").spec();
  EXPECT_TRUE(TrialShapes(conv, WithShapes({{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 14, 14}})).ok());
  EXPECT_THAT(TrialShapes(conv, WithShapes({{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 16, 16}}))
                  .status()
                  .message(),
              HasSubstr("args[2].shape[2]: OH = H - KH + 1 is 14, the trial gives 16"));
  const v1::OpTemplate& add = Builtin("add").spec();
  EXPECT_TRUE(TrialShapes(add, WithShapes({{4, 4}, {4, 4}, {4, 4}})).ok());
  EXPECT_THAT(TrialShapes(add, WithShapes({{4, 4}, {4, 4}, {16}})).status().message(),
              HasSubstr("args[2].shape: add takes arguments of one shape"));
  EXPECT_EQ(ArgumentBytes({{32, 32}, {32, 32}, {32, 32}}), 3 * 32 * 32 * 4);
  EXPECT_EQ(ShapesText({{8, 4}, {4}}), "8x4,4");
}

}  // namespace
}  // namespace benchfarm::catalog
