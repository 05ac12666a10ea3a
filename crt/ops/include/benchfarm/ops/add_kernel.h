/*
 * add_kernel.h: the tunable float32 elementwise add, C = A + B.
 *
 *   BF_DEFINE_ADD(fn, UNROLL);
 *
 * defines `int fn(...)`, an external TVMBackendPackedCFunc taking (A, B, C) as
 * DLTensor handles of one shape (any ndim 0..TVM_CRT_MAX_NDIM). Use it at file
 * scope, followed by `;`; one C file may define any number of candidates under
 * different names. Arguments are checked by bf_ops_add_unpack (common.h lists
 * every error; messages begin with "fn: "). C may be A or B itself (in place).
 * The function ignores resource_handle, stores kTVMNullptr in *out_ret_tcode
 * (if not NULL) and returns 0 or that error.
 *
 * Knob (a literal or a macro that expands to one; checked at compile time):
 *   UNROLL  1, 2, 4, 8 or 16: elements per loop iteration (the vector width of
 *           a scalar core), with a remainder loop.
 * Every value gives results bit-identical to bf_ops_reference_add.
 *
 * BF_OPS_ADD_DEFAULT_UNROLL is the knob of the default instance `add`
 * (sample_ops.h); override it with -D. knobs.json mirrors this header.
 */
#ifndef BENCHFARM_OPS_ADD_KERNEL_H_
#define BENCHFARM_OPS_ADD_KERNEL_H_

#include <benchfarm/ops/common.h>
#include <stdint.h>

#ifndef BF_OPS_ADD_DEFAULT_UNROLL
#define BF_OPS_ADD_DEFAULT_UNROLL 4
#endif

/* The extra level expands macro arguments before they are pasted. */
#define BF_DEFINE_ADD(fn, UNROLL) BF_OPS_DEFINE_ADD_(fn, UNROLL)

#define BF_OPS_DEFINE_ADD_(fn, UNROLL)                                                      \
  BF_OPS_DECLARE_PACKED(fn);                                                                \
  static void fn##_bf_ops_kernel(const float* a, const float* b, float* c, int32_t count) { \
    int32_t i;                                                                              \
    BF_OPS_UNROLLED_LOOP(i, 0, count, UNROLL, BF_OPS_ADD_STEP)                              \
  }                                                                                         \
  BF_OPS_DECLARE_PACKED(fn) {                                                               \
    bf_ops_add_args_t p;                                                                    \
    const int err = bf_ops_add_unpack(#fn, args, type_codes, num_args, &p);                 \
    (void)out_ret_value;                                                                    \
    (void)resource_handle;                                                                  \
    if (out_ret_tcode != NULL) {                                                            \
      *out_ret_tcode = kTVMNullptr;                                                         \
    }                                                                                       \
    if (err != 0) {                                                                         \
      return err;                                                                           \
    }                                                                                       \
    fn##_bf_ops_kernel(p.a, p.b, p.c, p.count);                                             \
    return 0;                                                                               \
  }                                                                                         \
  typedef char fn##_bf_ops_check_unroll[(UNROLL) >= 1 ? 1 : -1]

/* Reads both inputs of an element before writing it, so C == A is safe. */
#define BF_OPS_ADD_STEP(u) c[i + (u)] = a[i + (u)] + b[i + (u)];

#endif /* BENCHFARM_OPS_ADD_KERNEL_H_ */
