// Tests of tvm.contrib.random.random_fill (random_fill.c), called directly over the fake
// platform (a deterministic 8-bit random source): floats of every width land in [1, 2), other
// dtypes keep the random bytes, byte_offset and vector lanes are honoured, and every bad
// argument is an error code with a message that leaves the tensor alone. The wire path (the
// global's handle, the RPC server's checks) is tested in crt/rpc and device/.

#include "tvm/runtime/crt/random_fill.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "crt/runtime/testing/fake_platform.h"
#include "crt_config.h"
#include "tvm/runtime/c_runtime_api.h"
#include "tvm/runtime/crt/error_codes.h"

extern "C" int crt_contrib_headers_compile_as_c(void);

namespace {

// A tensor over `storage`, float32 by default.
struct Tensor {
  explicit Tensor(std::vector<int64_t> s, DLDataType dtype = {kDLFloat, 32, 1})
      : shape(std::move(s)) {
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    storage.assign(n * ((dtype.bits * dtype.lanes + 7) / 8) + 64, 0xEE);
    t.data = storage.data();
    t.device = {kDLCPU, 0};
    t.ndim = static_cast<int32_t>(shape.size());
    t.dtype = dtype;
    t.shape = shape.data();
    t.strides = nullptr;
    t.byte_offset = 0;
  }

  std::vector<int64_t> shape;
  std::vector<uint8_t> storage;
  DLTensor t;
};

// Calls random_fill with the given arguments; checks it never writes a result.
int Fill(std::vector<TVMValue> args, std::vector<int> tcodes) {
  TVMValue ret;
  ret.v_int64 = 1234;
  int ret_tcode = kTVMNullptr;
  int err = TVMCrtRandomFill(args.data(), tcodes.data(), static_cast<int>(args.size()), &ret,
                             &ret_tcode, nullptr);
  EXPECT_EQ(ret.v_int64, 1234);
  EXPECT_EQ(ret_tcode, kTVMNullptr);
  return err;
}

int Fill(DLTensor* t, int tcode = kTVMDLTensorHandle) {
  TVMValue v;
  v.v_handle = t;
  return Fill({v}, {tcode});
}

template <typename T>
std::vector<T> Values(const Tensor& x, size_t n) {
  std::vector<T> out(n);
  std::memcpy(out.data(), x.storage.data() + x.t.byte_offset, n * sizeof(T));
  return out;
}

class RandomFillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    crt_fake_platform_reset();
    TVMAPISetLastError("");
  }
};

TEST_F(RandomFillTest, HeaderCompilesAsC) { EXPECT_EQ(crt_contrib_headers_compile_as_c(), 0); }

TEST_F(RandomFillTest, Float32IsUniformInOneToTwoAndChangesEveryCall) {
  Tensor x({10, 10});  // 400 bytes: not a multiple of the fake source's 256-byte period
  ASSERT_EQ(Fill(&x.t), 0);
  std::vector<float> first = Values<float>(x, 100);
  for (float v : first) {
    ASSERT_TRUE(std::isfinite(v));
    EXPECT_GE(v, 1.0f);
    EXPECT_LT(v, 2.0f);
  }
  EXPECT_GT(std::set<float>(first.begin(), first.end()).size(), 50u);
  ASSERT_EQ(Fill(&x.t), 0);
  EXPECT_NE(Values<float>(x, 100), first);
  // Nothing past the tensor is touched.
  for (size_t i = 400; i < x.storage.size(); ++i) ASSERT_EQ(x.storage[i], 0xEE) << i;
}

TEST_F(RandomFillTest, EveryFloatWidthAndBfloat16) {
  Tensor f64({33}, {kDLFloat, 64, 1});
  ASSERT_EQ(Fill(&f64.t), 0);
  for (double v : Values<double>(f64, 33)) {
    EXPECT_GE(v, 1.0);
    EXPECT_LT(v, 2.0);
  }
  Tensor f16({33}, {kDLFloat, 16, 1});
  ASSERT_EQ(Fill(&f16.t), 0);
  std::set<uint16_t> mantissas;
  for (uint16_t v : Values<uint16_t>(f16, 33)) {
    EXPECT_EQ(v & 0xFC00u, 0x3C00u) << std::hex << v;  // sign 0, exponent of 1.0
    mantissas.insert(v & 0x03FFu);
  }
  EXPECT_GT(mantissas.size(), 10u);
  Tensor bf16({33}, {kDLBfloat, 16, 1});
  ASSERT_EQ(Fill(&bf16.t), 0);
  for (uint16_t v : Values<uint16_t>(bf16, 33)) {
    uint32_t bits = static_cast<uint32_t>(v) << 16;
    float f;
    std::memcpy(&f, &bits, sizeof(f));
    EXPECT_GE(f, 1.0f);
    EXPECT_LT(f, 2.0f);
  }
}

TEST_F(RandomFillTest, VectorLanesAreEachFilled) {
  Tensor x({7}, {kDLFloat, 32, 4});
  ASSERT_EQ(Fill(&x.t), 0);
  for (float v : Values<float>(x, 28)) {
    EXPECT_GE(v, 1.0f);
    EXPECT_LT(v, 2.0f);
  }
  EXPECT_EQ(x.storage[28 * 4], 0xEE);
}

TEST_F(RandomFillTest, OtherDtypesKeepTheRandomBytes) {
  // 256 bytes: the fake source's full period, so every byte value appears exactly once.
  for (DLDataType dtype : {DLDataType{kDLInt, 8, 1}, DLDataType{kDLUInt, 32, 1},
                           DLDataType{kDLInt, 64, 1}, DLDataType{kDLFloat, 8, 1}}) {
    Tensor x({256 * 8 / dtype.bits}, dtype);
    ASSERT_EQ(Fill(&x.t), 0);
    std::vector<uint8_t> bytes(x.storage.begin(), x.storage.begin() + 256);
    std::sort(bytes.begin(), bytes.end());
    for (int i = 0; i < 256; ++i) ASSERT_EQ(bytes[i], i) << "dtype bits " << int{dtype.bits};
  }
}

TEST_F(RandomFillTest, ByteOffsetIsHonoured) {
  Tensor x({4});
  x.t.byte_offset = 16;
  ASSERT_EQ(Fill(&x.t), 0);
  for (size_t i = 0; i < 16; ++i) EXPECT_EQ(x.storage[i], 0xEE) << i;
  for (float v : Values<float>(x, 4)) EXPECT_GE(v, 1.0f);
  EXPECT_EQ(x.storage[32], 0xEE);
}

TEST_F(RandomFillTest, CompactStridesAndEmptyTensorsAreFine) {
  Tensor x({3, 1, 5});
  int64_t strides[] = {5, 99, 1};  // extent 1 may carry any stride
  x.t.strides = strides;
  ASSERT_EQ(Fill(&x.t), 0);
  for (float v : Values<float>(x, 15)) EXPECT_GE(v, 1.0f);
  Tensor empty({0, 4});
  EXPECT_EQ(Fill(&empty.t), 0);
  EXPECT_EQ(empty.storage[0], 0xEE);
  Tensor scalar(std::vector<int64_t>{});
  EXPECT_EQ(Fill(&scalar.t), 0);
  EXPECT_GE(Values<float>(scalar, 1)[0], 1.0f);
}

TEST_F(RandomFillTest, AnNDArrayHandleIsItsTensor) {
  Tensor x({8});
  ASSERT_EQ(Fill(&x.t, kTVMNDArrayHandle), 0);
  EXPECT_GE(Values<float>(x, 8)[7], 1.0f);
}

TEST_F(RandomFillTest, BadArgumentsAreErrorsAndLeaveTheTensorAlone) {
  Tensor x({4});
  TVMValue v;
  v.v_handle = &x.t;
  auto expect_error = [&](int got, int want, const char* what) {
    EXPECT_EQ(got, want) << what;
    EXPECT_NE(std::string(TVMGetLastError()).find("random_fill"), std::string::npos) << what;
    TVMAPISetLastError("");
    for (size_t i = 0; i < x.storage.size(); ++i) ASSERT_EQ(x.storage[i], 0xEE) << what;
  };
  expect_error(Fill(std::vector<TVMValue>{}, std::vector<int>{}), kTvmErrorFunctionCallNumArguments,
               "no arguments");
  expect_error(Fill({v, v}, {kTVMDLTensorHandle, kTVMDLTensorHandle}),
               kTvmErrorFunctionCallNumArguments, "two arguments");
  int tcode = kTVMDLTensorHandle;
  expect_error(TVMCrtRandomFill(nullptr, &tcode, 1, nullptr, nullptr, nullptr),
               kTvmErrorFunctionCallNumArguments, "NULL args");
  TVMValue i;
  i.v_int64 = 7;
  expect_error(Fill({i}, {kDLInt}), kTvmErrorFunctionCallWrongArgType, "an int");
  expect_error(Fill({v}, {kTVMOpaqueHandle}), kTvmErrorFunctionCallWrongArgType, "a pointer");
  expect_error(Fill(nullptr), kTvmErrorFunctionCallWrongArgType, "a NULL tensor");

  struct Case {
    const char* what;
    void (*spoil)(DLTensor*);
  };
  static int64_t bad_strides[] = {2};
  static int64_t negative[] = {-4};
  for (const Case& c : std::vector<Case>{
           {"NULL data", [](DLTensor* t) { t->data = nullptr; }},
           {"not a CPU tensor", [](DLTensor* t) { t->device.device_type = kDLCUDA; }},
           {"0 bits", [](DLTensor* t) { t->dtype.bits = 0; }},
           {"0 lanes", [](DLTensor* t) { t->dtype.lanes = 0; }},
           {"negative ndim", [](DLTensor* t) { t->ndim = -1; }},
           {"ndim too large", [](DLTensor* t) { t->ndim = TVM_CRT_MAX_NDIM + 1; }},
           {"NULL shape", [](DLTensor* t) { t->shape = nullptr; }},
           {"negative extent", [](DLTensor* t) { t->shape = negative; }},
           {"strided", [](DLTensor* t) { t->strides = bad_strides; }},
       }) {
    Tensor y({4});
    c.spoil(&y.t);
    EXPECT_EQ(Fill(&y.t), kTvmErrorFunctionCallInvalidArg) << c.what;
    EXPECT_NE(std::string(TVMGetLastError()).find("random_fill"), std::string::npos) << c.what;
    for (size_t k = 0; k < y.storage.size(); ++k) ASSERT_EQ(y.storage[k], 0xEE) << c.what;
  }
  // Still works afterwards.
  EXPECT_EQ(Fill(&x.t), 0);
}

}  // namespace
