// CheckOperatorBuilds: a user operator compiled for the host before `op add` sends it — a good
// one passes (its knobs defined, entry and reference found), a syntax error is refused with the
// compiler's error at the user's own path, a misspelt or static entry or reference is named, and
// what cannot be checked (no crt tree, no compiler) is skipped and said.

#include "farmctl/op_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/files.h"
#include "farmctl/tracker_commands.h"

namespace benchfarm::farmctl {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kManifest[] = R"json({
  "op": "scale", "entry": "scale", "reference_entry": "scale_ref", "sources": ["scale.c"],
  "dims": {"N": 16},
  "args": [{"name": "x", "role": "input", "dtype": "float32", "shape": ["N"]},
           {"name": "y", "role": "output", "dtype": "float32", "shape": ["N"]}],
  "knobs": [{"name": "unroll", "values": [1, 2], "default": 2}]
})json";

// Uses the knob (BF_KNOB_unroll is defined only as the agent compiles it) and a helper of its own.
constexpr char kSource[] = R"c(#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
static int run(TVMValue* args) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t i;
  for (i = 0; i < x->shape[0]; i += BF_KNOB_unroll) ((float*)y->data)[i] = ((const float*)x->data)[i];
  return 0;
}
BF_OPS_DECLARE_PACKED(scale);
BF_OPS_DECLARE_PACKED(scale) { return run(args); }
BF_OPS_DECLARE_PACKED(scale_ref);
BF_OPS_DECLARE_PACKED(scale_ref) { return run(args); }
)c";

class OpCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(base::MakeDirs(dir_).ok());
    options_.crt_dir = FindCrtTree(nullptr);
    ASSERT_FALSE(options_.crt_dir.empty()) << "no crt tree in the runfiles";
  }

  // The operator in dir_ with this manifest and source, as `farmctl op add DIR` reads it.
  v1::Operator Load(const std::string& manifest, const std::string& source) {
    EXPECT_TRUE(base::WriteFile(dir_ + "/op.json", manifest).ok());
    EXPECT_TRUE(base::WriteFile(dir_ + "/scale.c", source).ok());
    absl::StatusOr<v1::Operator> op = LoadOperator(dir_);
    EXPECT_TRUE(op.ok()) << op.status();
    return op.ok() ? *op : v1::Operator();
  }

  std::string dir_;
  OpCheckOptions options_;
};

TEST_F(OpCheckTest, AGoodOperatorCompilesWithItsDefaultKnobsAndDefinesItsFunctions) {
  absl::StatusOr<OpCheck> check = CheckOperatorBuilds(Load(kManifest, kSource), dir_, options_);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_TRUE(check->compiled);
  EXPECT_TRUE(check->symbols_checked);
  EXPECT_TRUE(check->skipped.empty()) << check->skipped.front();
}

TEST_F(OpCheckTest, ACompileErrorIsRefusedWithTheCompilersErrorAtTheUsersPath) {
  const std::string broken = absl::StrReplaceAll(kSource, {{"return 0;", "return missing;"}});
  absl::StatusOr<OpCheck> check = CheckOperatorBuilds(Load(kManifest, broken), dir_, options_);
  ASSERT_EQ(check.status().code(), absl::StatusCode::kInvalidArgument) << check.status();
  EXPECT_THAT(
      check.status().message(),
      AllOf(HasSubstr("scale does not compile for the host (cc -std=c99 -O2"),
            HasSubstr(": 1 error:\n  " + dir_ + "/scale.c:8:10: error: 'missing' undeclared"),
            HasSubstr("compiler output:\n"), HasSubstr("nothing was sent to the tracker")));
}

TEST_F(OpCheckTest, AMisspeltOrStaticEntryOrReferenceIsNamed) {
  const std::string misspelt =
      absl::StrReplaceAll(kManifest, {{R"("entry": "scale")", R"("entry": "scael")"}});
  absl::StatusOr<OpCheck> check = CheckOperatorBuilds(Load(misspelt, kSource), dir_, options_);
  ASSERT_EQ(check.status().code(), absl::StatusCode::kInvalidArgument) << check.status();
  EXPECT_THAT(check.status().message(),
              AllOf(HasSubstr("scale: its sources (scale.c) define no function named by op.json's "
                              "entry \"scael\""),
                    HasSubstr("they define scale, scale_ref")));
  const std::string hidden = absl::StrReplaceAll(
      kSource,
      {{"BF_OPS_DECLARE_PACKED(scale_ref);\nBF_OPS_DECLARE_PACKED(scale_ref)",
        "static BF_OPS_DECLARE_PACKED(scale_ref);\nstatic BF_OPS_DECLARE_PACKED(scale_ref)"}});
  check = CheckOperatorBuilds(Load(kManifest, hidden), dir_, options_);
  ASSERT_EQ(check.status().code(), absl::StatusCode::kInvalidArgument) << check.status();
  EXPECT_THAT(check.status().message(), HasSubstr("op.json's reference_entry \"scale_ref\""));
}

TEST_F(OpCheckTest, WhatCannotBeCheckedIsSkippedAndSaid) {
  const v1::Operator op = Load(kManifest, kSource);
  struct Case {
    std::string OpCheckOptions::*field;
    std::string value;
    bool compiled;
    std::string said;
  };
  const Case cases[] = {
      {&OpCheckOptions::crt_dir, dir_ + "/nowhere", false,
       "not compiled for the host: no crt tree"},
      {&OpCheckOptions::cc, "/nonexistent/cc", false, "no host C compiler (/nonexistent/cc"},
      {&OpCheckOptions::nm, "/nonexistent/nm", true, "the entry and reference were not looked up"},
  };
  for (const Case& c : cases) {
    OpCheckOptions options = options_;
    options.*c.field = c.value;
    absl::StatusOr<OpCheck> check = CheckOperatorBuilds(op, dir_, options);
    ASSERT_TRUE(check.ok()) << c.value << ": " << check.status();
    EXPECT_EQ(check->compiled, c.compiled) << c.value;
    EXPECT_FALSE(check->symbols_checked) << c.value;
    ASSERT_EQ(check->skipped.size(), 1u) << c.value;
    EXPECT_THAT(check->skipped[0], HasSubstr(c.said));
  }
}

}  // namespace
}  // namespace benchfarm::farmctl
