// Tests of //crt/ops: the reference kernels, the default operators and a grid
// of tuning candidates against the references on many shapes (including ones
// no tile divides), every bad-argument path, and calls through the sample
// system library with the crt runtime.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "benchfarm/ops/common.h"
#include "benchfarm/ops/reference.h"
#include "benchfarm/ops/sample_ops.h"
#include "crt/ops/ops_candidates_test_c.h"
#include "crt/ops/testing/test_platform.h"
#include "tvm/runtime/c_backend_api.h"
#include "tvm/runtime/c_runtime_api.h"
#include "tvm/runtime/crt/crt.h"
#include "tvm/runtime/crt/func_registry.h"
#include "tvm/runtime/crt/module.h"
#include "tvm/runtime/crt/platform.h"

namespace {

constexpr int kTensor = kTVMDLTensorHandle;

// A float32 tensor whose DLTensor is rebuilt on demand, so it may move freely.
// Storage has room before (byte_offset) and after the elements; the slack is
// filled with a sentinel that the kernels must never touch.
class Tensor {
 public:
  static constexpr float kSentinel = -12345.0f;
  static constexpr size_t kSlack = 8;

  explicit Tensor(std::vector<int64_t> shape, size_t offset_elems = 0)
      : shape_(std::move(shape)), offset_(offset_elems) {
    size_t n = 1;
    for (int64_t d : shape_) n *= static_cast<size_t>(d);
    elements_ = n;
    storage_.assign(offset_ + n + kSlack, kSentinel);
  }

  // Fills the elements with deterministic values in [-1, 1).
  Tensor& Random(uint32_t seed) {
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < elements_; ++i) {
      s = s * 1664525u + 1013904223u;
      data()[i] = static_cast<float>(s >> 8) / static_cast<float>(1u << 23) - 1.0f;
    }
    return *this;
  }

  Tensor& Fill(float v) {
    for (size_t i = 0; i < elements_; ++i) data()[i] = v;
    return *this;
  }

  float* data() { return storage_.data() + offset_; }
  size_t elements() const { return elements_; }
  const std::vector<int64_t>& shape() const { return shape_; }

  DLTensor* dl() {
    dl_.data = storage_.data();
    dl_.device = {kDLCPU, 0};
    dl_.ndim = static_cast<int32_t>(shape_.size());
    dl_.dtype = {kDLFloat, 32, 1};
    dl_.shape = shape_.empty() ? nullptr : shape_.data();
    dl_.strides = nullptr;
    dl_.byte_offset = offset_ * sizeof(float);
    return &dl_;
  }

  // True when nothing outside the elements was written.
  bool SlackIntact() const {
    for (size_t i = 0; i < offset_; ++i)
      if (storage_[i] != kSentinel) return false;
    for (size_t i = offset_ + elements_; i < storage_.size(); ++i)
      if (storage_[i] != kSentinel) return false;
    return true;
  }

 private:
  std::vector<int64_t> shape_;
  size_t offset_;
  size_t elements_ = 0;
  std::vector<float> storage_;
  DLTensor dl_{};
};

// Calls fn with three DLTensor arguments.
int Call3(TVMBackendPackedCFunc fn, DLTensor* a, DLTensor* b, DLTensor* c) {
  TVMValue args[3];
  int codes[3] = {kTensor, kTensor, kTensor};
  args[0].v_handle = a;
  args[1].v_handle = b;
  args[2].v_handle = c;
  TVMValue ret;
  int ret_code = -1;
  int err = fn(args, codes, 3, &ret, &ret_code, nullptr);
  EXPECT_EQ(ret_code, kTVMNullptr);
  return err;
}

// Expects got == want element by element; sums run in the same order, so only
// compiler contraction (FMA) can make them differ.
void ExpectClose(const float* got, const float* want, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i) {
    const float tol = 1e-5f * std::max(1.0f, std::fabs(want[i]));
    if (!(std::fabs(got[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", reference " << want[i];
      return;
    }
  }
}

std::string ShapeString(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

// ---- shapes ------------------------------------------------------------------------------------

const std::vector<std::vector<int64_t>>& AddShapes() {
  static const auto* shapes = new std::vector<std::vector<int64_t>>{
      {}, {1}, {7}, {17}, {1024}, {3, 5, 7}, {2, 3, 1, 4, 5, 3}, {0}, {4, 0, 2}};
  return *shapes;
}

struct MatmulShape {
  int32_t m, n, k;
};
const std::vector<MatmulShape>& MatmulShapes() {
  static const auto* shapes = new std::vector<MatmulShape>{
      {1, 1, 1},  {2, 2, 2},  {3, 5, 7}, {17, 13, 19}, {32, 32, 32}, {33, 31, 35},
      {1, 40, 3}, {40, 1, 9}, {0, 4, 4}, {4, 0, 3},    {4, 3, 0}};
  return *shapes;
}

const std::vector<bf_ops_conv2d_dims_t>& Conv2dShapes() {
  // n, c, h, w, o, kh, kw (oh, ow filled in by Conv2dCase).
  static const auto* shapes = new std::vector<bf_ops_conv2d_dims_t>{
      {1, 1, 3, 3, 1, 3, 3, 0, 0},   {1, 3, 8, 8, 4, 3, 3, 0, 0},    {2, 3, 9, 11, 5, 2, 3, 0, 0},
      {1, 2, 7, 19, 9, 1, 1, 0, 0},  {1, 4, 10, 10, 17, 5, 4, 0, 0}, {1, 1, 5, 12, 3, 1, 9, 0, 0},
      {1, 2, 6, 21, 18, 3, 2, 0, 0}, {1, 0, 4, 4, 2, 2, 2, 0, 0},    {1, 2, 4, 4, 0, 2, 2, 0, 0}};
  return *shapes;
}

// ---- one check per operator --------------------------------------------------------------------

void CheckAdd(TVMBackendPackedCFunc fn, const std::string& name) {
  for (const auto& shape : AddShapes()) {
    Tensor a(shape), b(shape, 1), c(shape, 3), want(shape);
    a.Random(1);
    b.Random(2);
    bf_ops_reference_add(a.data(), b.data(), want.data(), static_cast<int32_t>(a.elements()));
    const std::string what = name + " " + ShapeString(shape);
    ASSERT_EQ(Call3(fn, a.dl(), b.dl(), c.dl()), 0) << what << ": " << TVMGetLastError();
    ExpectClose(c.data(), want.data(), c.elements(), what);
    EXPECT_TRUE(c.SlackIntact()) << what;
  }
}

void CheckMatmul(TVMBackendPackedCFunc fn, const std::string& name) {
  for (const auto& s : MatmulShapes()) {
    Tensor a({s.m, s.k}), b({s.k, s.n}, 2), c({s.m, s.n}, 1), want({s.m, s.n});
    a.Random(3);
    b.Random(4);
    c.Fill(99.0f);  // the kernel must overwrite, not accumulate into, C
    bf_ops_reference_matmul(a.data(), b.data(), want.data(), s.m, s.n, s.k);
    const std::string what = name + " M,N,K=" + std::to_string(s.m) + "," + std::to_string(s.n) +
                             "," + std::to_string(s.k);
    ASSERT_EQ(Call3(fn, a.dl(), b.dl(), c.dl()), 0) << what << ": " << TVMGetLastError();
    ExpectClose(c.data(), want.data(), c.elements(), what);
    EXPECT_TRUE(c.SlackIntact()) << what;
  }
}

void CheckConv2d(TVMBackendPackedCFunc fn, const std::string& name) {
  for (auto d : Conv2dShapes()) {
    d.oh = d.h - d.kh + 1;
    d.ow = d.w - d.kw + 1;
    Tensor in({d.n, d.c, d.h, d.w}, 1), wt({d.o, d.c, d.kh, d.kw}), out({d.n, d.o, d.oh, d.ow}, 2),
        want({d.n, d.o, d.oh, d.ow});
    in.Random(5);
    wt.Random(6);
    out.Fill(99.0f);
    bf_ops_reference_conv2d(in.data(), wt.data(), want.data(), &d);
    const std::string what =
        name + " in" + ShapeString(in.shape()) + " w" + ShapeString(wt.shape());
    ASSERT_EQ(Call3(fn, in.dl(), wt.dl(), out.dl()), 0) << what << ": " << TVMGetLastError();
    ExpectClose(out.data(), want.data(), out.elements(), what);
    EXPECT_TRUE(out.SlackIntact()) << what;
  }
}

// ---- reference kernels -------------------------------------------------------------------------

TEST(OpsReference, AddIsElementwise) {
  const float a[3] = {1.0f, -2.0f, 0.5f};
  const float b[3] = {10.0f, 20.0f, 0.25f};
  float c[3] = {};
  bf_ops_reference_add(a, b, c, 3);
  EXPECT_EQ(c[0], 11.0f);
  EXPECT_EQ(c[1], 18.0f);
  EXPECT_EQ(c[2], 0.75f);
}

TEST(OpsReference, MatmulMatchesHandComputed) {
  // [2x3] x [3x2]
  const float a[6] = {1, 2, 3, 4, 5, 6};
  const float b[6] = {7, 8, 9, 10, 11, 12};
  float c[4] = {};
  bf_ops_reference_matmul(a, b, c, 2, 2, 3);
  EXPECT_EQ(c[0], 58.0f);
  EXPECT_EQ(c[1], 64.0f);
  EXPECT_EQ(c[2], 139.0f);
  EXPECT_EQ(c[3], 154.0f);
}

TEST(OpsReference, Conv2dMatchesHandComputed) {
  // One 3x3 input, one 2x2 kernel; output 2x2.
  const float in[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const float w[4] = {1, 0, 0, -1};
  float out[4] = {};
  bf_ops_conv2d_dims_t d = {1, 1, 3, 3, 1, 2, 2, 0, 0};
  bf_ops_reference_conv2d(in, w, out, &d);
  EXPECT_EQ(out[0], -4.0f);  // 1 - 5
  EXPECT_EQ(out[1], -4.0f);
  EXPECT_EQ(out[2], -4.0f);
  EXPECT_EQ(out[3], -4.0f);

  // Two channels, two output channels: sums over channels.
  const float in2[8] = {1, 2, 3, 4, 10, 20, 30, 40};  // [1,2,2,2]
  const float w2[4] = {1, 1, 2, -1};                  // [2,2,1,1]
  float out2[8] = {};
  bf_ops_conv2d_dims_t d2 = {1, 2, 2, 2, 2, 1, 1, 0, 0};
  bf_ops_reference_conv2d(in2, w2, out2, &d2);
  EXPECT_EQ(out2[0], 11.0f);
  EXPECT_EQ(out2[3], 44.0f);
  EXPECT_EQ(out2[4], 2.0f - 10.0f);
  EXPECT_EQ(out2[7], 8.0f - 40.0f);
}

// ---- default operators and packed references ---------------------------------------------------

TEST(Ops, DefaultAddMatchesReference) { CheckAdd(bf_ops_add, "add"); }
TEST(Ops, DefaultMatmulMatchesReference) { CheckMatmul(bf_ops_matmul, "matmul"); }
TEST(Ops, DefaultConv2dMatchesReference) { CheckConv2d(bf_ops_conv2d, "conv2d"); }
TEST(Ops, PackedReferencesMatchReference) {
  CheckAdd(bf_ops_add_reference, "add_reference");
  CheckMatmul(bf_ops_matmul_reference, "matmul_reference");
  CheckConv2d(bf_ops_conv2d_reference, "conv2d_reference");
}

TEST(Ops, AddInPlace) {
  Tensor a({19}), b({19}), want({19});
  a.Random(7);
  b.Random(8);
  bf_ops_reference_add(a.data(), b.data(), want.data(), 19);
  ASSERT_EQ(Call3(bf_ops_add, a.dl(), b.dl(), a.dl()), 0) << TVMGetLastError();
  ExpectClose(a.data(), want.data(), 19, "C == A");
  Tensor x({5});
  x.Fill(1.5f);
  ASSERT_EQ(Call3(bf_ops_add, x.dl(), x.dl(), x.dl()), 0) << TVMGetLastError();
  EXPECT_EQ(x.data()[4], 3.0f);
}

TEST(Ops, CompactStridesAreAccepted) {
  Tensor a({3, 4}), b({4, 5}), c({3, 5}), want({3, 5});
  a.Random(9);
  b.Random(10);
  bf_ops_reference_matmul(a.data(), b.data(), want.data(), 3, 5, 4);
  int64_t strides_a[2] = {4, 1};
  int64_t strides_c[2] = {5, 1};
  DLTensor* ta = a.dl();
  ta->strides = strides_a;
  DLTensor* tc = c.dl();
  tc->strides = strides_c;
  ASSERT_EQ(Call3(bf_ops_matmul, ta, b.dl(), tc), 0) << TVMGetLastError();
  ExpectClose(c.data(), want.data(), 15, "strided");
  // An extent-1 dimension may have any stride.
  Tensor row({1, 4}), bb({4, 2}), out({1, 2});
  int64_t strides_row[2] = {1000, 1};
  DLTensor* tr = row.Random(11).dl();
  tr->strides = strides_row;
  EXPECT_EQ(Call3(bf_ops_matmul, tr, bb.Random(12).dl(), out.dl()), 0) << TVMGetLastError();
}

TEST(Ops, RetTcodeMayBeNull) {
  Tensor a({4}), b({4}), c({4});
  TVMValue args[3];
  int codes[3] = {kTensor, kTensor, kTensor};
  args[0].v_handle = a.Fill(1).dl();
  args[1].v_handle = b.Fill(2).dl();
  args[2].v_handle = c.dl();
  EXPECT_EQ(bf_ops_add(args, codes, 3, nullptr, nullptr, nullptr), 0);
  EXPECT_EQ(c.data()[3], 3.0f);
}

// ---- candidates --------------------------------------------------------------------------------

TEST(OpsCandidates, HeadersCompileAsC) { EXPECT_EQ(bf_ops_headers_compile_as_c(), 0); }

TEST(OpsCandidates, AllAddCandidatesMatchReference) {
  int n = 0;
  const bf_ops_test_candidate_t* c = bf_ops_test_add_candidates(&n);
  ASSERT_EQ(n, 5);
  for (int i = 0; i < n; ++i) CheckAdd(c[i].fn, c[i].name);
}

TEST(OpsCandidates, AllMatmulCandidatesMatchReference) {
  int n = 0;
  const bf_ops_test_candidate_t* c = bf_ops_test_matmul_candidates(&n);
  ASSERT_EQ(n, 7 * 4 * 2);
  for (int i = 0; i < n; ++i) CheckMatmul(c[i].fn, c[i].name);
}

TEST(OpsCandidates, AllConv2dCandidatesMatchReference) {
  int n = 0;
  const bf_ops_test_candidate_t* c = bf_ops_test_conv2d_candidates(&n);
  ASSERT_EQ(n, 6 * 4 * 2);
  for (int i = 0; i < n; ++i) CheckConv2d(c[i].fn, c[i].name);
}

TEST(OpsCandidates, NamesAreDistinctAndEncodeKnobs) {
  int n = 0;
  const bf_ops_test_candidate_t* c = bf_ops_test_matmul_candidates(&n);
  EXPECT_STREQ(c[0].name, "cand_mm_ijk_1x1x1_u1");
  EXPECT_STREQ(c[0].order, "ijk");
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    for (const auto& seen : names) EXPECT_NE(seen, c[i].name);
    names.push_back(c[i].name);
  }
}

// ---- bad arguments -----------------------------------------------------------------------------

// One operator under test, with valid arguments that tests then spoil.
struct OpCase {
  const char* label;
  TVMBackendPackedCFunc fn;
  const char* message_prefix;  // how its error messages begin
  std::vector<int64_t> shapes[3];
};

std::vector<OpCase> AllOps() {
  const std::vector<int64_t> add_shape = {2, 3};
  const std::vector<int64_t> mm[3] = {{3, 4}, {4, 5}, {3, 5}};
  const std::vector<int64_t> cv[3] = {{1, 2, 5, 6}, {3, 2, 3, 2}, {1, 3, 3, 5}};
  int n = 0;
  const bf_ops_test_candidate_t* mmc = bf_ops_test_matmul_candidates(&n);
  return {
      {"add", bf_ops_add, "bf_ops_add: ", {add_shape, add_shape, add_shape}},
      {"matmul", bf_ops_matmul, "bf_ops_matmul: ", {mm[0], mm[1], mm[2]}},
      {"conv2d", bf_ops_conv2d, "bf_ops_conv2d: ", {cv[0], cv[1], cv[2]}},
      {"add_reference", bf_ops_add_reference, "add_reference: ", {add_shape, add_shape, add_shape}},
      {"matmul_reference", bf_ops_matmul_reference, "matmul_reference: ", {mm[0], mm[1], mm[2]}},
      {"conv2d_reference", bf_ops_conv2d_reference, "conv2d_reference: ", {cv[0], cv[1], cv[2]}},
      {"candidate", mmc[n - 1].fn, "cand_mm_ikj_3x5x7_u8: ", {mm[0], mm[1], mm[2]}},
  };
}

class BadArgs : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override {
    op_ = AllOps()[GetParam()];
    for (int i = 0; i < 3; ++i) {
      tensors_.emplace_back(op_.shapes[i]);
      tensors_.back().Random(static_cast<uint32_t>(i + 20));
    }
    tensors_[2].Fill(Tensor::kSentinel);
    for (int i = 0; i < 3; ++i) {
      dl_[i] = *tensors_[i].dl();
      args_[i].v_handle = &dl_[i];
      codes_[i] = kTensor;
    }
    TVMAPISetLastError("");
  }

  // Calls the op and expects `code`, a message naming the op and `fragment`,
  // and an untouched output.
  void ExpectError(int code, const std::string& fragment, int num_args = 3) {
    TVMValue ret;
    int ret_code = -1;
    EXPECT_EQ(op_.fn(args_, codes_, num_args, &ret, &ret_code, nullptr), code)
        << op_.label << ": " << fragment;
    const std::string msg = TVMGetLastError();
    EXPECT_EQ(msg.rfind(op_.message_prefix, 0), 0u) << msg;
    EXPECT_NE(msg.find(fragment), std::string::npos) << "message: " << msg;
    for (size_t i = 0; i < tensors_[2].elements(); ++i) {
      ASSERT_EQ(tensors_[2].data()[i], Tensor::kSentinel) << op_.label << " wrote its output";
    }
  }

  bool IsAdd() const { return std::string(op_.label).find("add") == 0; }

  OpCase op_;
  std::vector<Tensor> tensors_;
  DLTensor dl_[3];
  TVMValue args_[3];
  int codes_[3];
};

TEST_P(BadArgs, ValidArgumentsSucceed) {
  TVMValue ret;
  int ret_code = -1;
  EXPECT_EQ(op_.fn(args_, codes_, 3, &ret, &ret_code, nullptr), 0) << TVMGetLastError();
}

TEST_P(BadArgs, WrongArgumentCount) {
  ExpectError(kTvmErrorFunctionCallNumArguments, "arguments: expected 3", 2);
  ExpectError(kTvmErrorFunctionCallNumArguments, "arguments: expected 3", 0);
  ExpectError(kTvmErrorFunctionCallNumArguments, "arguments: expected 3", -1);
  TVMValue more[4] = {args_[0], args_[1], args_[2], args_[2]};
  int more_codes[4] = {kTensor, kTensor, kTensor, kTensor};
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(op_.fn(more, more_codes, 4, &ret, &ret_code, nullptr),
            kTvmErrorFunctionCallNumArguments);
}

TEST_P(BadArgs, NullArgsOrTypeCodes) {
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(op_.fn(nullptr, codes_, 3, &ret, &ret_code, nullptr), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(op_.fn(args_, nullptr, 3, &ret, &ret_code, nullptr), kTvmErrorFunctionCallInvalidArg);
  EXPECT_NE(std::string(TVMGetLastError()).find("NULL args or type_codes"), std::string::npos);
}

TEST_P(BadArgs, WrongTypeCode) {
  for (int i = 0; i < 3; ++i) {
    for (int bad : {static_cast<int>(kTVMArgInt), static_cast<int>(kTVMOpaqueHandle),
                    static_cast<int>(kTVMNDArrayHandle), static_cast<int>(kTVMNullptr)}) {
      codes_[i] = bad;
      ExpectError(kTvmErrorFunctionCallWrongArgType, "expected a DLTensor handle (type code 7)");
    }
    codes_[i] = kTensor;
  }
}

TEST_P(BadArgs, NullTensor) {
  for (int i = 0; i < 3; ++i) {
    args_[i].v_handle = nullptr;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "NULL DLTensor");
    args_[i].v_handle = &dl_[i];
  }
}

TEST_P(BadArgs, BadNdim) {
  for (int i = 0; i < 3; ++i) {
    const int32_t saved = dl_[i].ndim;
    for (int32_t bad : {-1, TVM_CRT_MAX_NDIM + 1, 1000}) {
      dl_[i].ndim = bad;
      ExpectError(kTvmErrorFunctionCallInvalidArg, "ndim must be");
    }
    if (!IsAdd()) {
      dl_[i].ndim = saved - 1;
      ExpectError(kTvmErrorFunctionCallInvalidArg, "ndim must be");
    }
    dl_[i].ndim = saved;
  }
}

TEST_P(BadArgs, BadDtype) {
  const DLDataType bad[] = {{kDLInt, 32, 1},   {kDLFloat, 64, 1}, {kDLFloat, 16, 1},
                            {kDLFloat, 32, 4}, {kDLFloat, 32, 0}, {kDLBfloat, 32, 1}};
  for (int i = 0; i < 3; ++i) {
    for (const auto& dt : bad) {
      dl_[i].dtype = dt;
      ExpectError(kTvmErrorFunctionCallInvalidArg, "dtype must be float32");
    }
    dl_[i].dtype = {kDLFloat, 32, 1};
  }
}

TEST_P(BadArgs, NullShape) {
  for (int i = 0; i < 3; ++i) {
    int64_t* saved = dl_[i].shape;
    dl_[i].shape = nullptr;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "NULL shape");
    dl_[i].shape = saved;
  }
}

TEST_P(BadArgs, NegativeOrHugeDimension) {
  for (int i = 0; i < 3; ++i) {
    std::vector<int64_t> shape(op_.shapes[i]);
    dl_[i].shape = shape.data();
    shape[0] = -1;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "negative dimension");
    shape[0] = int64_t{1} << 40;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "too many elements");
    shape[0] = BF_OPS_MAX_TENSOR_ELEMENTS;  // fine alone, too many with the others
    ExpectError(kTvmErrorFunctionCallInvalidArg, "too many elements");
    dl_[i].shape = tensors_[i].dl()->shape;
  }
}

TEST_P(BadArgs, NonCompactStrides) {
  for (int i = 0; i < 3; ++i) {
    std::vector<int64_t> strides(op_.shapes[i].size(), 1);  // [.., 1, 1]: not compact
    dl_[i].strides = strides.data();
    ExpectError(kTvmErrorFunctionCallInvalidArg, "not compact");
    // Column-major of a 2-D or larger tensor.
    int64_t s = 1;
    for (size_t d = 0; d < strides.size(); ++d) {
      strides[d] = s;
      s *= op_.shapes[i][d];
    }
    ExpectError(kTvmErrorFunctionCallInvalidArg, "not compact");
    dl_[i].strides = nullptr;
  }
}

TEST_P(BadArgs, NullData) {
  for (int i = 0; i < 3; ++i) {
    void* saved = dl_[i].data;
    dl_[i].data = nullptr;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "NULL data");
    dl_[i].data = saved;
  }
}

TEST_P(BadArgs, MisalignedDataOrByteOffset) {
  for (int i = 0; i < 3; ++i) {
    void* saved = dl_[i].data;
    dl_[i].data = static_cast<char*>(saved) + 1;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "not aligned");
    dl_[i].data = saved;
    dl_[i].byte_offset = 2;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "not aligned");
    dl_[i].byte_offset = 0;
  }
}

TEST_P(BadArgs, ByteOffsetOutOfRange) {
  for (int i = 0; i < 3; ++i) {
    dl_[i].byte_offset = UINT64_MAX - 3;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "byte_offset out of range");
    dl_[i].byte_offset =
        static_cast<uint64_t>(UINTPTR_MAX - reinterpret_cast<uintptr_t>(dl_[i].data)) &
        ~uint64_t{3};
    ExpectError(kTvmErrorFunctionCallInvalidArg, "byte_offset out of range");
    dl_[i].byte_offset = 0;
  }
}

TEST_P(BadArgs, OutputOverlapsInput) {
  // Output starts one element into input 0 (same bytes, different start).
  dl_[2].data = dl_[0].data;
  dl_[2].byte_offset = sizeof(float);
  ExpectError(kTvmErrorFunctionCallInvalidArg, "overlaps");
  if (!IsAdd()) {
    // matmul and conv2d must not write in place at all (if the shapes allow it).
    dl_[2] = dl_[1];
    dl_[2].shape = tensors_[2].dl()->shape;
    ExpectError(kTvmErrorFunctionCallInvalidArg, "overlaps");
  }
}

INSTANTIATE_TEST_SUITE_P(AllOps, BadArgs, ::testing::Range(0, static_cast<int>(AllOps().size())),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return std::string(AllOps()[info.param].label);
                         });

// Shape mismatches are specific to each operator.
void ExpectShapeError(TVMBackendPackedCFunc fn, std::vector<int64_t> a, std::vector<int64_t> b,
                      std::vector<int64_t> c, const std::string& fragment) {
  Tensor ta(a), tb(b), tc(c);
  tc.Fill(Tensor::kSentinel);
  TVMAPISetLastError("");
  EXPECT_EQ(Call3(fn, ta.dl(), tb.dl(), tc.dl()), kTvmErrorFunctionCallInvalidArg) << fragment;
  EXPECT_NE(std::string(TVMGetLastError()).find(fragment), std::string::npos) << TVMGetLastError();
  EXPECT_TRUE(tc.SlackIntact());
  for (size_t i = 0; i < tc.elements(); ++i) ASSERT_EQ(tc.data()[i], Tensor::kSentinel);
}

TEST(OpsShapes, AddShapeMismatch) {
  for (auto fn : {bf_ops_add, bf_ops_add_reference}) {
    ExpectShapeError(fn, {2, 3}, {3, 2}, {2, 3}, "B: shape differs from A");
    ExpectShapeError(fn, {2, 3}, {2, 3}, {6}, "C: shape differs from A");
    ExpectShapeError(fn, {2, 3}, {2, 3, 1}, {2, 3}, "B: shape differs from A");
  }
}

TEST(OpsShapes, MatmulShapeMismatch) {
  for (auto fn : {bf_ops_matmul, bf_ops_matmul_reference}) {
    ExpectShapeError(fn, {3, 4}, {5, 2}, {3, 2}, "B: shape[0] must equal A's shape[1] (K)");
    ExpectShapeError(fn, {3, 4}, {4, 2}, {2, 3}, "C: shape must be [M, N]");
    ExpectShapeError(fn, {3, 4}, {4, 2}, {3, 3}, "C: shape must be [M, N]");
  }
}

TEST(OpsShapes, Conv2dShapeMismatch) {
  for (auto fn : {bf_ops_conv2d, bf_ops_conv2d_reference}) {
    ExpectShapeError(fn, {1, 2, 5, 5}, {3, 1, 3, 3}, {1, 3, 3, 3}, "weight: shape[1] must equal");
    ExpectShapeError(fn, {1, 2, 5, 5}, {3, 2, 0, 3}, {1, 3, 6, 3}, "KH and KW must be >= 1");
    ExpectShapeError(fn, {1, 2, 5, 5}, {3, 2, 3, 6}, {1, 3, 3, 1}, "kernel larger than input");
    ExpectShapeError(fn, {1, 2, 5, 5}, {3, 2, 3, 3}, {1, 3, 5, 5}, "output: shape must be");
    ExpectShapeError(fn, {1, 2, 5, 5}, {3, 2, 3, 3}, {2, 3, 3, 3}, "output: shape must be");
    ExpectShapeError(fn, {1, 2, 5, 5}, {3, 2, 3, 3}, {1, 4, 3, 3}, "output: shape must be");
  }
}

// ---- through the sample system library ---------------------------------------------------------

class SystemLibTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
    ASSERT_EQ(TVMInitializeRuntime(), kTvmErrorNoError);
    TVMFunctionHandle get_lib = nullptr;
    ASSERT_EQ(TVMFuncGetGlobal("runtime.SystemLib", &get_lib), 0);
    ASSERT_NE(get_lib, nullptr);
    TVMValue ret;
    int tcode = -1;
    ASSERT_EQ(TVMFuncCall(get_lib, nullptr, nullptr, 0, &ret, &tcode), 0) << TVMGetLastError();
    ASSERT_EQ(tcode, kTVMModuleHandle);
    lib_ = ret.v_handle;
  }

  void TearDown() override { EXPECT_EQ(bf_ops_test_platform_live_allocations(), 0); }

  TVMFunctionHandle Get(const char* name) {
    TVMFunctionHandle f = nullptr;
    EXPECT_EQ(TVMModGetFunction(lib_, name, 0, &f), 0) << name;
    EXPECT_NE(f, nullptr) << name;
    return f;
  }

  // Allocates a tensor through the runtime and fills it from src (or zeros).
  DLTensor* Alloc(const std::vector<int64_t>& shape, const float* src) {
    DLTensor* t = nullptr;
    EXPECT_EQ(
        TVMArrayAlloc(shape.data(), static_cast<int>(shape.size()), kDLFloat, 32, 1, kDLCPU, 0, &t),
        0);
    size_t n = 1;
    for (int64_t d : shape) n *= static_cast<size_t>(d);
    float* data = static_cast<float*>(t->data);
    for (size_t i = 0; i < n; ++i) data[i] = src != nullptr ? src[i] : 0.0f;
    return t;
  }

  int Call(TVMFunctionHandle f, DLTensor* a, DLTensor* b, DLTensor* c) {
    TVMValue args[3];
    int codes[3] = {kTensor, kTensor, kTensor};
    args[0].v_handle = a;
    args[1].v_handle = b;
    args[2].v_handle = c;
    TVMValue ret;
    int ret_code = -1;
    int err = TVMFuncCall(f, args, codes, 3, &ret, &ret_code);
    EXPECT_EQ(ret_code, kTVMNullptr);
    return err;
  }

  TVMModuleHandle lib_ = nullptr;
};

TEST_F(SystemLibTest, RegistryListsOpsAndReferencesInOrder) {
  const TVMModule* mod = TVMSystemLibEntryPoint();
  ASSERT_NE(mod, nullptr);
  ASSERT_EQ(TVMFuncRegistry_GetNumFuncs(mod->registry), 6);
  const char* names[6] = {"add",           "matmul",           "conv2d",
                          "add_reference", "matmul_reference", "conv2d_reference"};
  const TVMBackendPackedCFunc funcs[6] = {
      bf_ops_add,           bf_ops_matmul,           bf_ops_conv2d,
      bf_ops_add_reference, bf_ops_matmul_reference, bf_ops_conv2d_reference};
  for (int i = 0; i < 6; ++i) {
    tvm_function_index_t index = 99;
    ASSERT_EQ(TVMFuncRegistry_Lookup(mod->registry, names[i], &index), kTvmErrorNoError)
        << names[i];
    EXPECT_EQ(index, i);
    TVMBackendPackedCFunc f = nullptr;
    ASSERT_EQ(TVMFuncRegistry_GetByIndex(mod->registry, index, &f), kTvmErrorNoError);
    EXPECT_EQ(f, funcs[i]) << names[i];
  }
  // The blob ends right after the last name: count, names, extra NUL.
  const char* blob = mod->registry->names;
  EXPECT_EQ(blob[0], 6);
  EXPECT_EQ(blob[1], 0);
  size_t len = 2;
  for (const char* n : names) len += std::strlen(n) + 1;
  EXPECT_EQ(blob[len], '\0');
}

TEST_F(SystemLibTest, UnknownFunctionIsNotFound) {
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMModGetFunction(lib_, "softmax", 0, &f), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(f, nullptr);
}

TEST_F(SystemLibTest, MatmulAndReferenceAgree) {
  Tensor a({5, 7}), b({7, 3});
  a.Random(30);
  b.Random(31);
  DLTensor* ta = Alloc({5, 7}, a.data());
  DLTensor* tb = Alloc({7, 3}, b.data());
  DLTensor* tc = Alloc({5, 3}, nullptr);
  DLTensor* tr = Alloc({5, 3}, nullptr);
  EXPECT_EQ(Call(Get("matmul"), ta, tb, tc), 0) << TVMGetLastError();
  EXPECT_EQ(Call(Get("matmul_reference"), ta, tb, tr), 0) << TVMGetLastError();
  ExpectClose(static_cast<float*>(tc->data), static_cast<float*>(tr->data), 15, "matmul");
  float want[15];
  bf_ops_reference_matmul(a.data(), b.data(), want, 5, 3, 7);
  ExpectClose(static_cast<float*>(tr->data), want, 15, "matmul_reference");
  for (DLTensor* t : {ta, tb, tc, tr}) EXPECT_EQ(TVMArrayFree(t), 0);
}

TEST_F(SystemLibTest, AddAndConv2dAgreeWithReferences) {
  Tensor x({2, 9}), y({2, 9});
  x.Random(32);
  y.Random(33);
  DLTensor* tx = Alloc({2, 9}, x.data());
  DLTensor* ty = Alloc({2, 9}, y.data());
  DLTensor* s1 = Alloc({2, 9}, nullptr);
  DLTensor* s2 = Alloc({2, 9}, nullptr);
  EXPECT_EQ(Call(Get("add"), tx, ty, s1), 0) << TVMGetLastError();
  EXPECT_EQ(Call(Get("add_reference"), tx, ty, s2), 0) << TVMGetLastError();
  ExpectClose(static_cast<float*>(s1->data), static_cast<float*>(s2->data), 18, "add");

  Tensor in({1, 3, 8, 9}), wt({5, 3, 3, 2});
  in.Random(34);
  wt.Random(35);
  DLTensor* ti = Alloc({1, 3, 8, 9}, in.data());
  DLTensor* tw = Alloc({5, 3, 3, 2}, wt.data());
  DLTensor* o1 = Alloc({1, 5, 6, 8}, nullptr);
  DLTensor* o2 = Alloc({1, 5, 6, 8}, nullptr);
  EXPECT_EQ(Call(Get("conv2d"), ti, tw, o1), 0) << TVMGetLastError();
  EXPECT_EQ(Call(Get("conv2d_reference"), ti, tw, o2), 0) << TVMGetLastError();
  ExpectClose(static_cast<float*>(o1->data), static_cast<float*>(o2->data), 5 * 6 * 8, "conv2d");
  for (DLTensor* t : {tx, ty, s1, s2, ti, tw, o1, o2}) EXPECT_EQ(TVMArrayFree(t), 0);
}

TEST_F(SystemLibTest, ErrorsPropagateThroughFuncCall) {
  DLTensor* ta = Alloc({2, 3}, nullptr);
  DLTensor* tb = Alloc({2, 3}, nullptr);
  DLTensor* tc = Alloc({2, 3}, nullptr);
  EXPECT_EQ(Call(Get("matmul"), ta, tb, tc), kTvmErrorFunctionCallInvalidArg);
  EXPECT_NE(std::string(TVMGetLastError()).find("bf_ops_matmul: B: shape[0]"), std::string::npos)
      << TVMGetLastError();
  TVMValue args[1];
  int codes[1] = {kTVMArgInt};
  args[0].v_int64 = 1;
  TVMValue ret;
  int ret_code;
  EXPECT_EQ(TVMFuncCall(Get("conv2d_reference"), args, codes, 1, &ret, &ret_code),
            kTvmErrorFunctionCallNumArguments);
  for (DLTensor* t : {ta, tb, tc}) EXPECT_EQ(TVMArrayFree(t), 0);
}

}  // namespace
