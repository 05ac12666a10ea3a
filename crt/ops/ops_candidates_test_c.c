/*
 * ops_candidates_test_c.c: instantiates a grid of candidates of every operator
 * (see ops_candidates_test_c.h). Tile triples and pairs are chosen so every
 * allowed tile value appears in every position, plus odd tiles (3, 5, 7) that
 * never divide the test shapes.
 */
#include "crt/ops/ops_candidates_test_c.h"

#include <benchfarm/ops/add_kernel.h>
#include <benchfarm/ops/common.h>
#include <benchfarm/ops/conv2d_kernel.h>
#include <benchfarm/ops/matmul_kernel.h>
#include <benchfarm/ops/reference.h>
#include <benchfarm/ops/sample_ops.h>
#include <stddef.h>

#define COUNT_OF(array) ((int)(sizeof(array) / sizeof((array)[0])))

/* ---- add: every unroll ---- */
#define ADD_GRID(X) X(1) X(2) X(4) X(8) X(16)
#define ADD_NAME(U) cand_add_u##U
#define ADD_DEFINE(U) BF_DEFINE_ADD(ADD_NAME(U), U);
#define ADD_ENTRY(U) {BF_OPS_STR(ADD_NAME(U)), ADD_NAME(U), {U, 0, 0, 0}, NULL},
ADD_GRID(ADD_DEFINE)
static const bf_ops_test_candidate_t kAddCandidates[] = {ADD_GRID(ADD_ENTRY)};

/* ---- matmul: tile triples x unroll x order ---- */
/* clang-format off */
#define MM_TILES(X, U, O)                                                         \
  X(1, 1, 1, U, O) X(2, 4, 8, U, O) X(4, 8, 16, U, O) X(8, 16, 32, U, O)          \
  X(16, 32, 2, U, O) X(32, 2, 4, U, O) X(3, 5, 7, U, O)
/* clang-format on */
#define MM_UNROLLS(X, O) MM_TILES(X, 1, O) MM_TILES(X, 2, O) MM_TILES(X, 4, O) MM_TILES(X, 8, O)
#define MM_GRID(X) MM_UNROLLS(X, ijk) MM_UNROLLS(X, ikj)
#define MM_NAME(TM, TN, TK, U, O) cand_mm_##O##_##TM##x##TN##x##TK##_u##U
#define MM_DEFINE(TM, TN, TK, U, O) BF_DEFINE_MATMUL(MM_NAME(TM, TN, TK, U, O), TM, TN, TK, U, O);
#define MM_ENTRY(TM, TN, TK, U, O) \
  {BF_OPS_STR(MM_NAME(TM, TN, TK, U, O)), MM_NAME(TM, TN, TK, U, O), {TM, TN, TK, U}, #O},
MM_GRID(MM_DEFINE)
static const bf_ops_test_candidate_t kMatmulCandidates[] = {MM_GRID(MM_ENTRY)};

/* ---- conv2d: tile pairs x unroll x order ---- */
#define CV_TILES(X, U, O) \
  X(1, 1, U, O) X(2, 4, U, O) X(4, 8, U, O) X(8, 16, U, O) X(16, 2, U, O) X(3, 5, U, O)
#define CV_UNROLLS(X, O) CV_TILES(X, 1, O) CV_TILES(X, 2, O) CV_TILES(X, 4, O) CV_TILES(X, 8, O)
#define CV_GRID(X) CV_UNROLLS(X, output_stationary) CV_UNROLLS(X, reduction_outer)
#define CV_NAME(TOC, TOW, U, O) cand_cv_##O##_##TOC##x##TOW##_u##U
#define CV_DEFINE(TOC, TOW, U, O) BF_DEFINE_CONV2D(CV_NAME(TOC, TOW, U, O), TOC, TOW, U, O);
#define CV_ENTRY(TOC, TOW, U, O) \
  {BF_OPS_STR(CV_NAME(TOC, TOW, U, O)), CV_NAME(TOC, TOW, U, O), {TOC, TOW, U, 0}, #O},
CV_GRID(CV_DEFINE)
static const bf_ops_test_candidate_t kConv2dCandidates[] = {CV_GRID(CV_ENTRY)};

/* Knobs given through macros must expand before they are pasted. */
#define MY_UNROLL 2
#define MY_ORDER ijk
BF_DEFINE_MATMUL(cand_mm_through_macros, BF_OPS_MATMUL_DEFAULT_TILE_M, 3, 5, MY_UNROLL, MY_ORDER);

const bf_ops_test_candidate_t* bf_ops_test_add_candidates(int* count) {
  *count = COUNT_OF(kAddCandidates);
  return kAddCandidates;
}

const bf_ops_test_candidate_t* bf_ops_test_matmul_candidates(int* count) {
  *count = COUNT_OF(kMatmulCandidates);
  return kMatmulCandidates;
}

const bf_ops_test_candidate_t* bf_ops_test_conv2d_candidates(int* count) {
  *count = COUNT_OF(kConv2dCandidates);
  return kConv2dCandidates;
}

int bf_ops_headers_compile_as_c(void) {
  float a[4] = {1.0f, 2.0f, 3.0f, 4.0f};
  float b[4] = {5.0f, 6.0f, 7.0f, 8.0f};
  float c[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  float c2[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  int64_t shape[2] = {2, 2};
  DLTensor ta, tb, tc, tc2;
  TVMValue args[3];
  int codes[3] = {kTVMDLTensorHandle, kTVMDLTensorHandle, kTVMDLTensorHandle};
  TVMValue ret;
  int ret_code = -1;
  int err;
  ta.data = a;
  ta.device.device_type = kDLCPU;
  ta.device.device_id = 0;
  ta.ndim = 2;
  ta.dtype.code = kDLFloat;
  ta.dtype.bits = 32;
  ta.dtype.lanes = 1;
  ta.shape = shape;
  ta.strides = NULL;
  ta.byte_offset = 0;
  tb = ta;
  tb.data = b;
  tc = ta;
  tc.data = c;
  tc2 = ta;
  tc2.data = c2;
  args[0].v_handle = &ta;
  args[1].v_handle = &tb;
  args[2].v_handle = &tc;
  err = bf_ops_matmul(args, codes, 3, &ret, &ret_code, NULL);
  if (err != 0 || ret_code != kTVMNullptr) {
    return 1;
  }
  args[2].v_handle = &tc2;
  err = cand_mm_through_macros(args, codes, 3, &ret, &ret_code, NULL);
  if (err != 0) {
    return 2;
  }
  if (c[0] != 19.0f || c[1] != 22.0f || c[2] != 43.0f || c[3] != 50.0f) {
    return 3;
  }
  if (c2[0] != c[0] || c2[1] != c[1] || c2[2] != c[2] || c2[3] != c[3]) {
    return 4;
  }
  return 0;
}
