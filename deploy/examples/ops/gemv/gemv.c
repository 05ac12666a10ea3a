/* A user operator for benchfarm: y = A x (A is M x K, row-major), float32.
 *
 * Knobs (op.json): unroll — how many products the inner loop does per step; acc — how many
 * partial sums it keeps (1 or 2). The agent compiles this file once per candidate with
 * BF_KNOB_unroll and BF_KNOB_acc defined; compiled alone it uses the defaults below.
 * gemv_reference is the plain loop the tuner checks every candidate against. */
#include <benchfarm/ops/common.h>
#include <benchfarm/ops/knob.h>
#include <dlpack/dlpack.h>

#ifndef BF_KNOB_unroll
#define BF_KNOB_unroll 1
#endif
#ifndef BF_KNOB_acc
#define BF_KNOB_acc 1
#endif

/* A (M x K), x (K), y (M), all float32 on the board; -1 otherwise. */
static int unpack(const TVMValue* args, const int* type_codes, int num_args, const float** a,
                  const float** x, float** y, int64_t* m, int64_t* k) {
  const DLTensor* ta;
  const DLTensor* tx;
  const DLTensor* ty;
  if (num_args != 3 || type_codes[0] != kTVMDLTensorHandle || type_codes[1] != kTVMDLTensorHandle ||
      type_codes[2] != kTVMDLTensorHandle) {
    return -1;
  }
  ta = (const DLTensor*)args[0].v_handle;
  tx = (const DLTensor*)args[1].v_handle;
  ty = (const DLTensor*)args[2].v_handle;
  if (ta->ndim != 2 || tx->ndim != 1 || ty->ndim != 1 || ta->shape[1] != tx->shape[0] ||
      ta->shape[0] != ty->shape[0]) {
    return -1;
  }
  *a = (const float*)ta->data;
  *x = (const float*)tx->data;
  *y = (float*)ty->data;
  *m = ta->shape[0];
  *k = ta->shape[1];
  return 0;
}

BF_OPS_DECLARE_PACKED(gemv);
BF_OPS_DECLARE_PACKED(gemv) {
  const float* a;
  const float* x;
  float* y;
  int64_t m, k, i, j;
  if (unpack(args, type_codes, num_args, &a, &x, &y, &m, &k) != 0) return -1;
  for (i = 0; i < m; ++i) {
    const float* row = a + i * k;
    float s0 = 0.0f, s1 = 0.0f;
    j = 0;
    for (; j + BF_KNOB(unroll) <= k; j += BF_KNOB(unroll)) {
      int u;
      for (u = 0; u < BF_KNOB(unroll); ++u) {
#if BF_KNOB_acc == 2
        if (u & 1) {
          s1 += row[j + u] * x[j + u];
        } else {
          s0 += row[j + u] * x[j + u];
        }
#else
        s0 += row[j + u] * x[j + u];
#endif
      }
    }
    for (; j < k; ++j) s0 += row[j] * x[j];
    y[i] = s0 + s1;
  }
  return 0;
}

BF_OPS_DECLARE_PACKED(gemv_reference);
BF_OPS_DECLARE_PACKED(gemv_reference) {
  const float* a;
  const float* x;
  float* y;
  int64_t m, k, i, j;
  if (unpack(args, type_codes, num_args, &a, &x, &y, &m, &k) != 0) return -1;
  for (i = 0; i < m; ++i) {
    float s = 0.0f;
    for (j = 0; j < k; ++j) s += a[i * k + j] * x[j];
    y[i] = s;
  }
  return 0;
}
