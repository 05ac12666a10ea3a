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
      {replace(kManifest, "\"default\": \"b\"", "\"default\": \"c\""), Files(),
       "op.spec.knobs[1].default"},
      {replace(kManifest, "[1, 2, 4]", "[1, 1]"), Files(), "op.spec.knobs[0].values[1]"},
      {replace(kManifest, "[1, 2, 4]", "[\"a b\"]"), Files(), "op.spec.knobs[0].values[0]"},
      {replace(kManifest, "\"float32\", \"shape\": [\"K\"]", "\"int64\", \"shape\": [\"K\"]"),
       Files(), "op.spec.args[1].dtype: \"int64\" is not a dtype benchfarm takes"},
      {replace(kManifest, "\"float32\", \"shape\": [\"K\"]",
               "\"int8\", \"range\": [-128, 128], \"shape\": [\"K\"]"),
       Files(), "op.spec.args[1].range: [-128, 128] is not a range of int8"},
      {replace(kManifest, "\"float32\", \"shape\": [\"M\"]",
               "\"float32\", \"range\": [0, 1], \"shape\": [\"M\"]"),
       Files(), "op.spec.args[2].range: the output is not filled"},
      {replace(kManifest, "\"sources\"", "\"atol\": -0.5, \"sources\""), Files(),
       "op.spec.atol: -0.5: must be finite and >= 0"},
      {replace(
           replace(kManifest, "\"float32\", \"shape\": [\"M\"]", "\"int32\", \"shape\": [\"M\"]"),
           "\"sources\"", "\"rtol\": 0.1, \"sources\""),
       Files(), "op.spec.rtol: the output is int32: integer outputs must equal the reference's"},
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

TEST(Catalog, ManifestsTakeEveryDtypeWithRangesAndTolerances) {
  std::string manifest = kManifest;
  auto replace = [&manifest](const std::string& from, const std::string& to) {
    manifest.replace(manifest.find(from), from.size(), to);
  };
  replace("\"dtype\": \"float32\", \"shape\": [\"M\", \"K\"]",
          "\"dtype\": \"int8\", \"range\": [-128, 127], \"shape\": [\"M\", \"K\"]");
  replace("\"dtype\": \"float32\", \"shape\": [\"K\"]",
          "\"dtype\": \"uint16\", \"shape\": [\"K\"]");
  replace("\"sources\"", "\"atol\": 0.001, \"sources\"");
  absl::StatusOr<v1::Operator> op = OperatorFromManifest(manifest, Files());
  ASSERT_TRUE(op.ok()) << op.status();
  EXPECT_EQ(op->spec().args(0).dtype(), "int8");
  ASSERT_EQ(op->spec().args(0).range_size(), 2);
  EXPECT_EQ(op->spec().args(0).range(1), 127);
  EXPECT_EQ(op->spec().atol(), 0.001);
  EXPECT_FALSE(op->spec().has_rtol());
}

TEST(Catalog, BuiltinKnobSpaceIsTheBuiltins) {
  const KnobSpace& space = BuiltinKnobSpace();
  ASSERT_EQ(space.ops().size(), BuiltinOperators().size());
  for (const v1::Operator& op : BuiltinOperators()) {
    ASSERT_NE(space.Find(op.name()), nullptr) << op.name();
    EXPECT_EQ(space.Find(op.name())->version(), op.version());
  }
}

}  // namespace
}  // namespace benchfarm::catalog
