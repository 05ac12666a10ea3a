/* A user operator for the Python client's test: C[0] = sum A[i] * B[i], float32.
 * Knob unroll: products per step of the inner loop (the sum keeps the reference's order, so the
 * output check is exact). The agent compiles this once per candidate with BF_KNOB_unroll set. */
#include <benchfarm/ops/common.h>
#include <benchfarm/ops/knob.h>

#include "dot_args.h"

#ifndef BF_KNOB_unroll
#define BF_KNOB_unroll 1
#endif

BF_OPS_DECLARE_PACKED(my_dot);
BF_OPS_DECLARE_PACKED(my_dot) {
  const float* a;
  const float* b;
  float* c;
  int64_t n, i;
  float s = 0.0f;
  if (dot_unpack(args, type_codes, num_args, &a, &b, &c, &n) != 0) return -1;
  for (i = 0; i + BF_KNOB(unroll) <= n; i += BF_KNOB(unroll)) {
    int u;
    for (u = 0; u < BF_KNOB(unroll); ++u) s += a[i + u] * b[i + u];
  }
  for (; i < n; ++i) s += a[i] * b[i];
  c[0] = s;
  return 0;
}

BF_OPS_DECLARE_PACKED(my_dot_ref);
BF_OPS_DECLARE_PACKED(my_dot_ref) {
  const float* a;
  const float* b;
  float* c;
  int64_t n, i;
  float s = 0.0f;
  if (dot_unpack(args, type_codes, num_args, &a, &b, &c, &n) != 0) return -1;
  for (i = 0; i < n; ++i) s += a[i] * b[i];
  c[0] = s;
  return 0;
}
