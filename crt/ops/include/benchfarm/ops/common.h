/*
 * common.h: what benchfarm's sample operators share — argument checking for
 * packed calls, and the small macros the kernel headers build loops from.
 *
 * An operator is a TVMBackendPackedCFunc whose arguments are DLTensor* with
 * type code kTVMDLTensorHandle (7): inputs first, then the output. Every
 * tensor must be float32 (code kDLFloat, 32 bits, 1 lane), have non-NULL,
 * 4-byte-aligned data (data + byte_offset is the first element; both parts
 * must be aligned) and be compact row-major (strides NULL, or equal to the
 * compact strides). Data must be addressable by the CPU running the kernel;
 * the device field is not checked. At most BF_OPS_MAX_TENSOR_ELEMENTS
 * elements per tensor, and no dimension above that either.
 *
 * The bf_ops_*_unpack functions check one call's arguments. On success they
 * return 0 and fill *out; otherwise they return
 *   kTvmErrorFunctionCallNumArguments  wrong argument count,
 *   kTvmErrorFunctionCallWrongArgType  an argument is not a DLTensor handle,
 *   kTvmErrorFunctionCallInvalidArg    anything else (NULL args, type_codes,
 *                                      tensor, shape or data; bad ndim,
 *                                      dtype, strides, alignment, size;
 *                                      inconsistent shapes; bad overlap),
 * after storing "<fn_name>: <argument>: <problem>" with TVMAPISetLastError;
 * *out is then unspecified. They never read through a pointer they have not
 * checked. fn_name is only used in messages (NULL reads as "op").
 *
 * Thread-safety: none (TVMAPISetLastError has one global buffer).
 */
#ifndef BENCHFARM_OPS_COMMON_H_
#define BENCHFARM_OPS_COMMON_H_

#include <crt_config.h>
#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most elements (and largest dimension) of one operator tensor. Bounds every
 * index so int32_t arithmetic in the kernels cannot overflow. */
#ifndef BF_OPS_MAX_TENSOR_ELEMENTS
#define BF_OPS_MAX_TENSOR_ELEMENTS (1L << 28)
#endif
TVM_CRT_STATIC_CHECK(BF_OPS_MAX_TENSOR_ELEMENTS >= 1 && BF_OPS_MAX_TENSOR_ELEMENTS <= (1L << 28),
                     bf_ops_max_tensor_elements);

/* Largest tile size a kernel macro accepts (checked at compile time). */
#define BF_OPS_MAX_TILE 4096

/* ---- argument checking ---- */

/* add: C = A + B, all three the same shape (ndim 0..TVM_CRT_MAX_NDIM). */
typedef struct {
  const float* a;
  const float* b;
  float* c;
  int32_t count; /* elements in each tensor */
} bf_ops_add_args_t;

/* matmul: C[M,N] = A[M,K] x B[K,N]. */
typedef struct {
  const float* a;
  const float* b;
  float* c;
  int32_t m;
  int32_t n;
  int32_t k;
} bf_ops_matmul_args_t;

/* conv2d sizes: input [n,c,h,w], weight [o,c,kh,kw], output [n,o,oh,ow]
 * with stride 1, no padding, dilation 1: oh = h - kh + 1, ow = w - kw + 1. */
typedef struct {
  int32_t n;
  int32_t c;
  int32_t h;
  int32_t w;
  int32_t o;
  int32_t kh;
  int32_t kw;
  int32_t oh;
  int32_t ow;
} bf_ops_conv2d_dims_t;

typedef struct {
  const float* input;
  const float* weight;
  float* output;
  bf_ops_conv2d_dims_t dims;
} bf_ops_conv2d_args_t;

/*
 * Checks add(A, B, C). The output may be exactly one of the inputs (in
 * place); any other overlap of C with A or B is InvalidArg.
 */
int bf_ops_add_unpack(const char* fn_name, const TVMValue* args, const int* type_codes,
                      int num_args, bf_ops_add_args_t* out);

/* Checks matmul(A, B, C): 2-D tensors; C must not overlap A or B. Any size may be 0. */
int bf_ops_matmul_unpack(const char* fn_name, const TVMValue* args, const int* type_codes,
                         int num_args, bf_ops_matmul_args_t* out);

/* Checks conv2d(input, weight, output): 4-D tensors, h >= kh >= 1, w >= kw >= 1,
 * equal channels; output must not overlap input or weight. */
int bf_ops_conv2d_unpack(const char* fn_name, const TVMValue* args, const int* type_codes,
                         int num_args, bf_ops_conv2d_args_t* out);

/* ---- building blocks of the kernel macros ---- */

/* Declares a packed operator function `fn` (TVMBackendPackedCFunc). */
#define BF_OPS_DECLARE_PACKED(fn)                                                \
  int fn(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value, \
         int* out_ret_tcode, void* resource_handle)

/* End of the tile that starts at `start` with `size` elements, clipped to
 * `limit` (edge tiles are smaller). Never computes start + size past limit. */
#define BF_OPS_TILE_END(start, size, limit) \
  ((limit) - (start) > (size) ? (start) + (size) : (limit))

/* Stringifies a macro's expanded value: BF_OPS_STR(BF_OPS_MATMUL_DEFAULT_ORDER) is "ikj". */
#define BF_OPS_STR(x) BF_OPS_STR_(x)
#define BF_OPS_STR_(x) #x

/* Fails the build unless 1 <= value <= BF_OPS_MAX_TILE; `tag` names the typedef. Needs a `;`. */
#define BF_OPS_CHECK_TILE(tag, value) \
  typedef char tag[((value) >= 1 && (value) <= BF_OPS_MAX_TILE) ? 1 : -1]

/*
 * BF_OPS_REPEAT_<n>(STEP) expands to STEP(0) STEP(1) ... STEP(n-1): a real
 * unroll that does not depend on the compiler's optimisation level. Only the
 * factors below exist; any other unroll value fails to compile.
 */
#define BF_OPS_REPEAT_1(S) S(0)
#define BF_OPS_REPEAT_2(S) S(0) S(1)
#define BF_OPS_REPEAT_4(S) S(0) S(1) S(2) S(3)
#define BF_OPS_REPEAT_8(S) BF_OPS_REPEAT_4(S) S(4) S(5) S(6) S(7)
#define BF_OPS_REPEAT_16(S) BF_OPS_REPEAT_8(S) S(8) S(9) S(10) S(11) S(12) S(13) S(14) S(15)

/*
 * Runs STEP(u) for index = start .. end-1 (STEP reads the variable `index`
 * plus u), UNROLL steps per iteration, then the remainder one by one. The
 * steps run in ascending order, so sums accumulate in the same order as a
 * plain loop. `index` must be a declared int32_t lvalue.
 */
#define BF_OPS_UNROLLED_LOOP(index, start, end, UNROLL, STEP) \
  BF_OPS_UNROLLED_LOOP_(index, start, end, UNROLL, STEP)
#define BF_OPS_UNROLLED_LOOP_(index, start, end, UNROLL, STEP)                \
  for ((index) = (start); (end) - (index) >= (UNROLL); (index) += (UNROLL)) { \
    BF_OPS_REPEAT_##UNROLL(STEP)                                              \
  }                                                                           \
  for (; (index) < (end); ++(index)) {                                        \
    STEP(0)                                                                   \
  }

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_OPS_COMMON_H_ */
