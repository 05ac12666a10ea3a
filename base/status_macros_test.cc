// Tests of status_macros.h: both macros propagate errors, pass values through, and evaluate
// their expression exactly once.

#include "base/status_macros.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace benchfarm {
namespace {

absl::Status FailIf(bool fail, int* calls) {
  ++*calls;
  return fail ? absl::NotFoundError("no such thing") : absl::OkStatus();
}

absl::StatusOr<int> Twice(absl::StatusOr<int> v, int* calls) {
  ++*calls;
  return v.ok() ? absl::StatusOr<int>(*v * 2) : v;
}

absl::Status UsesReturnIfError(bool fail, int* calls, bool* reached_end) {
  RETURN_IF_ERROR(FailIf(fail, calls));
  *reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<int> UsesAssignOrReturn(absl::StatusOr<int> input, int* calls) {
  ASSIGN_OR_RETURN(int doubled, Twice(input, calls));
  ASSIGN_OR_RETURN(auto quadrupled, Twice(doubled, calls));
  return quadrupled + 1;
}

absl::StatusOr<std::unique_ptr<int>> MakeBox(int v) { return std::make_unique<int>(v); }

absl::Status AssignsMoveOnlyToExistingVariable(int* out) {
  std::unique_ptr<int> box;
  ASSIGN_OR_RETURN(box, MakeBox(7));
  *out = *box;
  return absl::OkStatus();
}

absl::Status ReturnIfErrorOnStatusOr(absl::StatusOr<int> v) {
  RETURN_IF_ERROR(v);
  return absl::OkStatus();
}

TEST(StatusMacros, ReturnIfErrorPropagatesError) {
  int calls = 0;
  bool reached_end = false;
  absl::Status s = UsesReturnIfError(true, &calls, &reached_end);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "no such thing");
  EXPECT_FALSE(reached_end);
  EXPECT_EQ(calls, 1);
}

TEST(StatusMacros, ReturnIfErrorContinuesOnOk) {
  int calls = 0;
  bool reached_end = false;
  EXPECT_TRUE(UsesReturnIfError(false, &calls, &reached_end).ok());
  EXPECT_TRUE(reached_end);
  EXPECT_EQ(calls, 1);
}

TEST(StatusMacros, ReturnIfErrorAcceptsStatusOr) {
  EXPECT_TRUE(ReturnIfErrorOnStatusOr(3).ok());
  EXPECT_EQ(ReturnIfErrorOnStatusOr(absl::DataLossError("x")).code(), absl::StatusCode::kDataLoss);
}

TEST(StatusMacros, AssignOrReturnPassesValues) {
  int calls = 0;
  absl::StatusOr<int> r = UsesAssignOrReturn(5, &calls);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 21);
  EXPECT_EQ(calls, 2);
}

TEST(StatusMacros, AssignOrReturnPropagatesError) {
  int calls = 0;
  absl::StatusOr<int> r = UsesAssignOrReturn(absl::InvalidArgumentError("bad"), &calls);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "bad");
  EXPECT_EQ(calls, 1);
}

TEST(StatusMacros, AssignOrReturnMovesIntoExistingVariable) {
  int out = 0;
  ASSERT_TRUE(AssignsMoveOnlyToExistingVariable(&out).ok());
  EXPECT_EQ(out, 7);
}

}  // namespace
}  // namespace benchfarm
