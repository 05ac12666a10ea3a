#include "proto/error_codes.h"

#include <gtest/gtest.h>

namespace benchfarm {
namespace {

TEST(ErrorCodes, AutoTvmNumbersAreKept) {
  for (int i = 0; i <= 8; ++i) {
    EXPECT_EQ(ToAutoTvmErrorNo(static_cast<v1::ErrorCode>(i)), i);
  }
}

TEST(ErrorCodes, NativeCodesMapOntoAutoTvm) {
  EXPECT_EQ(ToAutoTvmErrorNo(v1::FLASH_ERROR), 4);
  EXPECT_EQ(ToAutoTvmErrorNo(v1::SESSION_ERROR), 4);
  EXPECT_EQ(ToAutoTvmErrorNo(v1::DEVICE_RESET), 4);
  EXPECT_EQ(ToAutoTvmErrorNo(v1::FIRMWARE_MISMATCH), 4);
  EXPECT_EQ(ToAutoTvmErrorNo(v1::BOARD_LOST), 7);
  EXPECT_EQ(ToAutoTvmErrorNo(v1::CANCELLED), 8);
  EXPECT_EQ(ToAutoTvmErrorNo(static_cast<v1::ErrorCode>(999)), 8);
  // Every declared native code maps into 0..8.
  const google::protobuf::EnumDescriptor* d = v1::ErrorCode_descriptor();
  for (int i = 0; i < d->value_count(); ++i) {
    int n = ToAutoTvmErrorNo(static_cast<v1::ErrorCode>(d->value(i)->number()));
    EXPECT_GE(n, 0);
    EXPECT_LE(n, 8);
  }
}

TEST(ErrorCodes, InfrastructureErrorsAreTheBoardsFault) {
  EXPECT_TRUE(IsInfrastructureError(v1::BOARD_LOST));
  EXPECT_TRUE(IsInfrastructureError(v1::FLASH_ERROR));
  EXPECT_FALSE(IsInfrastructureError(v1::NO_ERROR));
  EXPECT_FALSE(IsInfrastructureError(v1::COMPILE_DEVICE));
  EXPECT_FALSE(IsInfrastructureError(v1::WRONG_ANSWER));
  EXPECT_FALSE(IsInfrastructureError(v1::RUN_TIMEOUT));  // the trial's result, as in AutoTVM
  // The board reset itself while the trial ran (a fault handler): the trial's doing, not retried;
  // a board that resets on its own fails its handshakes instead (SESSION_ERROR).
  EXPECT_FALSE(IsInfrastructureError(v1::DEVICE_RESET));
  EXPECT_FALSE(IsInfrastructureError(v1::RUNTIME_DEVICE));
}

}  // namespace
}  // namespace benchfarm
