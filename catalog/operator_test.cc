#include "catalog/operator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "catalog/cflags.h"

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
      // Derived features for the learned model: products of integer knobs.
      {replace(kManifest, "\"sources\"", "\"features\": {\"x\": \"unroll * mode\"}, \"sources\""),
       Files(),
       "op.spec: features.x: \"unroll * mode\": knob mode has values that are not integers"},
      // Compile options: the manifest's and a cflag knob's, refused at the door with the cause.
      {replace(kManifest, "\"sources\"",
               "\"cflags\": [\"-O3\", \"-fplugin=evil.so\"], \"sources\""),
       Files(),
       "op.spec.cflags[1]: \"-fplugin=evil.so\" is refused: it loads a compiler plugin (code run "
       "at build time)"},
      {replace(kManifest, "\"sources\"", "\"cflags\": [\"@/etc/passwd\"], \"sources\""), Files(),
       "op.spec.cflags[0]: \"@/etc/passwd\" is refused: it reads options from a file"},
      {replace(kManifest, "\"sources\"", "\"cflags\": [\"-O3 -funroll-loops\"], \"sources\""),
       Files(), "op.spec.cflags[0]: \"-O3 -funroll-loops\" is refused: one option"},
      {replace(kManifest, "[\"a\", \"b\"], \"default\": \"b\"",
               "[\"-O2\", \"-specs=x.specs\"], \"cflag\": true"),
       Files(),
       "op.spec.knobs[1].values[1]: \"-specs=x.specs\" is refused: it reads a specs file, which "
       "can run programs"},
      {replace(kManifest, "[\"a\", \"b\"], \"default\": \"b\"",
               "[\"-O2\", \"-O3  -funroll-loops\"], \"cflag\": true"),
       Files(), "op.spec.knobs[1].values[1]: \"-O3  -funroll-loops\": compile options separated"},
      {replace(kManifest, "[1, 2, 4]}", "[1, 2, 4], \"cflag\": true}"), Files(),
       "op.spec.knobs[0].values[0]: a cflag knob's values are compile options (strings)"},
      {replace(kManifest, "[\"a\", \"b\"], \"default\": \"b\"",
               "[\"-O2\", \"-fprofile-use=/tmp/p\"], \"cflag\": true"),
       Files(), "op.spec.knobs[1].values[1]: \"-fprofile-use=/tmp/p\" is refused"},
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

TEST(Catalog, CompileOptionsInTheManifestAndAKnobArePartOfTheOperator) {
  std::string manifest = kManifest;
  manifest.replace(manifest.find("\"sources\""), 9,
                   "\"cflags\": [\"-fno-strict-aliasing\"], \"sources\"");
  const std::string mode = "[\"a\", \"b\"], \"default\": \"b\"";
  manifest.replace(
      manifest.find(mode), mode.size(),
      "[\"-O2\", \"-O3 -funroll-loops\", \"-Os\"], \"default\": \"-Os\", \"cflag\": true");
  absl::StatusOr<v1::Operator> op = OperatorFromManifest(manifest, Files());
  ASSERT_TRUE(op.ok()) << op.status();
  ASSERT_EQ(op->spec().cflags_size(), 1);
  EXPECT_TRUE(op->spec().knobs(1).cflag());
  EXPECT_EQ(ValueText(op->spec().knobs(1).default_()), "-Os");
  // The options are part of its identity.
  EXPECT_NE(op->version(), OperatorFromManifest(kManifest, Files())->version());
  // A candidate's options: the manifest's, then each cflag knob's value's.
  google::protobuf::Map<std::string, std::string> knobs;
  knobs["mode"] = "-O3 -funroll-loops";
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> resolved =
      ResolveKnobs(op->spec(), knobs);
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  EXPECT_EQ(CandidateCflags(op->spec(), *resolved),
            (std::vector<std::string>{"-fno-strict-aliasing", "-O3", "-funroll-loops"}));
  // Each value stands for itself in a candidate's function name: short options by their letters,
  // others by their index.
  EXPECT_EQ(FunctionPiece(op->spec().knobs(1), "-O2"), "O2");
  EXPECT_EQ(FunctionPiece(op->spec().knobs(1), "-Os"), "Os");
  EXPECT_EQ(FunctionPiece(op->spec().knobs(1), "-O3 -funroll-loops"), "o1");
  EXPECT_EQ(FunctionPiece(op->spec().knobs(0), "4"), "4");
  knobs["mode"] = "-O1";
  EXPECT_THAT(CheckKnobs(op->spec(), knobs).message(), HasSubstr("is not one of -O2"));
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
