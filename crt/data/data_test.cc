#include "benchfarm/data.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace {

DLDataType Dt(uint8_t code, uint8_t bits) { return DLDataType{code, bits, 1}; }
const DLDataType kI8 = Dt(kDLInt, 8), kU8 = Dt(kDLUInt, 8), kI16 = Dt(kDLInt, 16),
                 kU16 = Dt(kDLUInt, 16), kI32 = Dt(kDLInt, 32), kU32 = Dt(kDLUInt, 32),
                 kF16 = Dt(kDLFloat, 16), kF32 = Dt(kDLFloat, 32), kF64 = Dt(kDLFloat, 64);
const DLDataType kAll[] = {kI8, kU8, kI16, kU16, kI32, kU32, kF16, kF32, kF64};

std::vector<uint8_t> Fill(DLDataType t, size_t n, uint64_t seed, uint64_t stream, double lo,
                          double hi) {
  std::vector<uint8_t> out(n * bf_data_element_bytes(t));
  EXPECT_EQ(bf_data_fill(out.data(), n, t, seed, stream, lo, hi), 0);
  return out;
}

std::vector<uint8_t> FillDefault(DLDataType t, size_t n, uint64_t seed, uint64_t stream = 0) {
  double lo, hi;
  bf_data_default_range(t, &lo, &hi);
  return Fill(t, n, seed, stream, lo, hi);
}

TEST(Data, ElementBytesOfEveryDtypeAndNoneOfOthers) {
  EXPECT_EQ(bf_data_element_bytes(kI8), 1u);
  EXPECT_EQ(bf_data_element_bytes(kU16), 2u);
  EXPECT_EQ(bf_data_element_bytes(kF16), 2u);
  EXPECT_EQ(bf_data_element_bytes(kU32), 4u);
  EXPECT_EQ(bf_data_element_bytes(kF64), 8u);
  EXPECT_EQ(bf_data_element_bytes(Dt(kDLInt, 64)), 0u);
  EXPECT_EQ(bf_data_element_bytes(Dt(kDLBfloat, 16)), 0u);
  EXPECT_EQ(bf_data_element_bytes(DLDataType{kDLFloat, 32, 4}), 0u);
}

TEST(Data, DtypesByName) {
  for (DLDataType t : kAll) {
    const char* name = bf_data_dtype_name(t);
    ASSERT_NE(name, nullptr);
    DLDataType back{};
    ASSERT_EQ(bf_data_parse_dtype(name, &back), 0) << name;
    EXPECT_EQ(back.code, t.code);
    EXPECT_EQ(back.bits, t.bits);
    EXPECT_EQ(back.lanes, 1);
  }
  EXPECT_STREQ(bf_data_dtype_name(kI8), "int8");
  EXPECT_STREQ(bf_data_dtype_name(kF16), "float16");
  EXPECT_EQ(bf_data_dtype_name(Dt(kDLInt, 64)), nullptr);
  DLDataType t{};
  EXPECT_EQ(bf_data_parse_dtype("int64", &t), -1);
  EXPECT_EQ(bf_data_parse_dtype("bfloat16", &t), -1);
  EXPECT_EQ(bf_data_parse_dtype("", &t), -1);
}

TEST(Data, TheSameSeedAndStreamGiveTheSameBytesOthersDiffer) {
  for (DLDataType t : kAll) {
    EXPECT_EQ(FillDefault(t, 257, 7, 1), FillDefault(t, 257, 7, 1));
    EXPECT_NE(FillDefault(t, 257, 7, 1), FillDefault(t, 257, 8, 1));
    EXPECT_NE(FillDefault(t, 257, 7, 1), FillDefault(t, 257, 7, 2));
  }
}

// The generator is part of the wire contract (every board kind gives these bytes for seed 1):
// a change here changes what every board measures.
TEST(Data, TheGeneratorsFirstValuesAreFixed) {
  std::vector<uint8_t> i8 = FillDefault(kI8, 8, 1);
  std::vector<uint8_t> again = FillDefault(kI8, 8, 1);
  EXPECT_EQ(i8, again);
  std::vector<uint8_t> f32 = Fill(kF32, 4, 1, 0, -1, 1);
  float f[4];
  std::memcpy(f, f32.data(), sizeof(f));
  // SplitMix64 from state 1: the reference sequence's first draw is 0x910a2dec89025cc1.
  const uint64_t first = 0x910a2dec89025cc1ull;
  EXPECT_EQ(static_cast<int8_t>(i8[0]), static_cast<int8_t>(-128 + static_cast<int>(first % 256)));
  EXPECT_EQ(f[0], static_cast<float>(-1.0 + 2.0 * static_cast<double>(first >> 40) / 16777216.0));
}

TEST(Data, IntegersCoverTheirWholeRangeAndStayInside) {
  for (DLDataType t : {kI8, kU8}) {
    const size_t n = 20000;
    std::vector<uint8_t> v = FillDefault(t, n, 3);
    double lo, hi, min = 1e9, max = -1e9;
    bf_data_default_range(t, &lo, &hi);
    for (size_t i = 0; i < n; ++i) {
      const double x = bf_data_get(v.data(), i, t);
      min = std::min(min, x);
      max = std::max(max, x);
    }
    EXPECT_EQ(min, lo);
    EXPECT_EQ(max, hi);
  }
  std::vector<uint8_t> v = Fill(kI16, 5000, 9, 0, -3, 3);
  for (size_t i = 0; i < 5000; ++i) {
    const double x = bf_data_get(v.data(), i, kI16);
    ASSERT_GE(x, -3);
    ASSERT_LE(x, 3);
  }
  v = FillDefault(kU32, 5000, 9);
  double max = 0;
  for (size_t i = 0; i < 5000; ++i) max = std::max(max, bf_data_get(v.data(), i, kU32));
  EXPECT_GT(max, 4e9);  // the upper half of uint32 is reached
}

TEST(Data, FloatsAreUniformInTheirRange) {
  for (DLDataType t : {kF16, kF32, kF64}) {
    const size_t n = 10000;
    std::vector<uint8_t> v = Fill(t, n, 5, 0, -2, 6);
    double sum = 0, min = 1e9, max = -1e9;
    for (size_t i = 0; i < n; ++i) {
      const double x = bf_data_get(v.data(), i, t);
      sum += x;
      min = std::min(min, x);
      max = std::max(max, x);
    }
    EXPECT_GE(min, -2);
    EXPECT_LE(max, 6);
    EXPECT_LT(min, -1.9);
    EXPECT_GT(max, 5.9);
    EXPECT_NEAR(sum / n, 2.0, 0.1);
  }
}

TEST(Data, RangesOutsideTheDtypeAreRefused) {
  EXPECT_EQ(bf_data_check_range(kI8, -128, 127), 0);
  EXPECT_EQ(bf_data_check_range(kI8, -129, 0), -1);
  EXPECT_EQ(bf_data_check_range(kU8, -1, 3), -1);
  EXPECT_EQ(bf_data_check_range(kI8, 0.5, 3), -1);  // not whole
  EXPECT_EQ(bf_data_check_range(kI32, 3, 2), -1);   // lo > hi
  EXPECT_EQ(bf_data_check_range(kF32, -NAN, 1), -1);
  EXPECT_EQ(bf_data_check_range(kF32, 0, INFINITY), -1);
  EXPECT_EQ(bf_data_check_range(kF16, 0, 1e5), -1);  // float16 stops at 65504
  EXPECT_EQ(bf_data_check_range(kF16, -65504, 65504), 0);
  EXPECT_EQ(bf_data_check_range(Dt(kDLInt, 64), 0, 1), -1);
  std::vector<uint8_t> buf(16);
  EXPECT_EQ(bf_data_fill(buf.data(), 16, kI8, 1, 0, -200, 0), -1);
}

TEST(Data, Float16ConvertsToNearestEvenAndBackExactly) {
  EXPECT_EQ(bf_data_f16_from_f32(1.0f), 0x3c00);
  EXPECT_EQ(bf_data_f16_from_f32(-2.0f), 0xc000);
  EXPECT_EQ(bf_data_f16_from_f32(65504.0f), 0x7bff);
  EXPECT_EQ(bf_data_f16_from_f32(65520.0f), 0x7c00);                      // rounds up to infinity
  EXPECT_EQ(bf_data_f16_from_f32(std::ldexp(1.0f, -24)), 0x0001);         // the least subnormal
  EXPECT_EQ(bf_data_f16_from_f32(std::ldexp(1.0f, -25)), 0x0000);         // a tie: to even (zero)
  EXPECT_EQ(bf_data_f16_from_f32(std::ldexp(3.0f, -25)), 0x0002);         // a tie: to even (2)
  EXPECT_EQ(bf_data_f16_from_f32(1.0f + std::ldexp(1.0f, -11)), 0x3c00);  // tie to even
  EXPECT_EQ(bf_data_f16_from_f32(1.0f + std::ldexp(3.0f, -11)), 0x3c02);
  EXPECT_EQ(bf_data_f16_from_f32(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(bf_data_f16_to_f32(bf_data_f16_from_f32(NAN))));
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0) continue;  // NaNs
    const float f = bf_data_f16_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(bf_data_f16_from_f32(f), h) << std::hex << h;
  }
  EXPECT_EQ(bf_data_f16_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(bf_data_f16_to_f32(0x3555), 0.333251953125f);
}

TEST(Data, IntegerOutputsMustBeEqualAndTheFirstMismatchIsNamed) {
  std::vector<int16_t> want = {1, -2, 300, 4}, got = want;
  bf_data_report_t r;
  ASSERT_EQ(bf_data_compare(got.data(), want.data(), 4, kI16, 0.5, 0.5, &r), 0);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_EQ(r.first_index, -1);
  got[2] = 301;  // off by one: exact for integers, whatever the tolerance
  got[3] = 9;
  ASSERT_EQ(bf_data_compare(got.data(), want.data(), 4, kI16, 10, 10, &r), 0);
  EXPECT_EQ(r.mismatches, 2u);
  EXPECT_EQ(r.first_index, 2);
  EXPECT_EQ(r.got, 301);
  EXPECT_EQ(r.want, 300);
  EXPECT_EQ(r.max_abs_error, 5);
}

TEST(Data, FloatOutputsMatchWithinAtolPlusRtolTimesTheReference) {
  std::vector<float> want = {1.0f, 100.0f, -3.0f}, got = {1.0005f, 100.05f, -3.0f};
  bf_data_report_t r;
  ASSERT_EQ(bf_data_compare(got.data(), want.data(), 3, kF32, 1e-3, 1e-3, &r), 0);
  EXPECT_EQ(r.mismatches, 0u);
  EXPECT_NEAR(r.max_abs_error, 0.05, 1e-4);
  ASSERT_EQ(bf_data_compare(got.data(), want.data(), 3, kF32, 1e-3, 0, &r), 0);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.first_index, 1);
  got[0] = NAN;
  want[2] = INFINITY;
  got[2] = INFINITY;  // equal infinities match
  ASSERT_EQ(bf_data_compare(got.data(), want.data(), 3, kF32, 1, 1, &r), 0);
  EXPECT_EQ(r.mismatches, 1u);
  EXPECT_EQ(r.first_index, 0);
  EXPECT_TRUE(std::isinf(r.max_abs_error));
  EXPECT_EQ(bf_data_compare(got.data(), want.data(), 3, kF32, -1, 0, &r), -1);
  EXPECT_EQ(bf_data_compare(got.data(), want.data(), 3, kF32, 0, NAN, &r), -1);
  EXPECT_EQ(bf_data_compare(got.data(), want.data(), 3, Dt(kDLInt, 64), 0, 0, &r), -1);
}

TEST(Data, PoisonIsCaughtForEveryDtype) {
  for (DLDataType t : kAll) {
    std::vector<uint8_t> want = FillDefault(t, 64, 11), got(want.size());
    ASSERT_EQ(bf_data_poison(got.data(), 64, t, 1), 0);
    bf_data_report_t r;
    ASSERT_EQ(bf_data_compare(got.data(), want.data(), 64, t, 1e-3, 1e-3, &r), 0);
    EXPECT_GT(r.mismatches, 32u) << static_cast<int>(t.code) << "/" << static_cast<int>(t.bits);
  }
}

}  // namespace
