/*
 * matmul_kernel.h: the tunable float32 matmul, C[M,N] = A[M,K] x B[K,N].
 *
 *   BF_DEFINE_MATMUL(fn, TILE_M, TILE_N, TILE_K, UNROLL, ORDER);
 *
 * defines `int fn(...)`, an external TVMBackendPackedCFunc taking
 * (A, B, C) as DLTensor handles. Use it at file scope, followed by `;`; one C
 * file may define any number of candidates under different names. Arguments
 * are checked by bf_ops_matmul_unpack (common.h lists every error; messages
 * begin with "fn: "). The function ignores resource_handle, stores kTVMNullptr
 * in *out_ret_tcode (if not NULL) and returns 0 or that error.
 *
 * Knobs (each a literal or a macro that expands to one; checked at compile time):
 *   TILE_M, TILE_N, TILE_K  1..BF_OPS_MAX_TILE: C is computed in TILE_M x TILE_N
 *                           blocks, K in chunks of TILE_K; sizes that are not a
 *                           multiple of a tile get smaller edge tiles.
 *   UNROLL                  1, 2, 4 or 8: unroll of the innermost loop (k for
 *                           ijk, j for ikj), with a remainder loop.
 *   ORDER                   ijk: per C element, accumulate over k in a register;
 *                           ikj: per A element, update a row of C (streams B rows).
 * Every combination computes each C[i][j] as the sum over k in ascending order,
 * as bf_ops_reference_matmul does, so results agree with the reference up to
 * floating-point contraction by the compiler.
 *
 * BF_OPS_MATMUL_DEFAULT_* are the knobs of the default instance `matmul`
 * (sample_ops.h); override them with -D. knobs.json mirrors this header.
 */
#ifndef BENCHFARM_OPS_MATMUL_KERNEL_H_
#define BENCHFARM_OPS_MATMUL_KERNEL_H_

#include <benchfarm/ops/common.h>
#include <stdint.h>

#ifndef BF_OPS_MATMUL_DEFAULT_TILE_M
#define BF_OPS_MATMUL_DEFAULT_TILE_M 8
#endif
#ifndef BF_OPS_MATMUL_DEFAULT_TILE_N
#define BF_OPS_MATMUL_DEFAULT_TILE_N 8
#endif
#ifndef BF_OPS_MATMUL_DEFAULT_TILE_K
#define BF_OPS_MATMUL_DEFAULT_TILE_K 16
#endif
#ifndef BF_OPS_MATMUL_DEFAULT_UNROLL
#define BF_OPS_MATMUL_DEFAULT_UNROLL 4
#endif
#ifndef BF_OPS_MATMUL_DEFAULT_ORDER
#define BF_OPS_MATMUL_DEFAULT_ORDER ikj
#endif

/* The extra level expands macro arguments before they are pasted. */
#define BF_DEFINE_MATMUL(fn, TILE_M, TILE_N, TILE_K, UNROLL, ORDER) \
  BF_OPS_DEFINE_MATMUL_(fn, TILE_M, TILE_N, TILE_K, UNROLL, ORDER)

#define BF_OPS_DEFINE_MATMUL_(fn, TM, TN, TK, UNROLL, ORDER)                           \
  BF_OPS_DECLARE_PACKED(fn);                                                           \
  static void fn##_bf_ops_kernel(const float* restrict a, const float* restrict b,     \
                                 float* restrict c, int32_t m, int32_t n, int32_t k) { \
    int32_t i0, j0, k0, i, j, kk;                                                      \
    for (i0 = 0; i0 < m; i0 += (TM)) {                                                 \
      const int32_t i1 = BF_OPS_TILE_END(i0, (TM), m);                                 \
      for (j0 = 0; j0 < n; j0 += (TN)) {                                               \
        const int32_t j1 = BF_OPS_TILE_END(j0, (TN), n);                               \
        for (i = i0; i < i1; ++i) {                                                    \
          for (j = j0; j < j1; ++j) {                                                  \
            c[i * n + j] = 0.0f;                                                       \
          }                                                                            \
        }                                                                              \
        for (k0 = 0; k0 < k; k0 += (TK)) {                                             \
          const int32_t k1 = BF_OPS_TILE_END(k0, (TK), k);                             \
          BF_OPS_MATMUL_TILE_##ORDER(UNROLL)                                           \
        }                                                                              \
      }                                                                                \
    }                                                                                  \
  }                                                                                    \
  BF_OPS_DECLARE_PACKED(fn) {                                                          \
    bf_ops_matmul_args_t p;                                                            \
    const int err = bf_ops_matmul_unpack(#fn, args, type_codes, num_args, &p);         \
    (void)out_ret_value;                                                               \
    (void)resource_handle;                                                             \
    if (out_ret_tcode != NULL) {                                                       \
      *out_ret_tcode = kTVMNullptr;                                                    \
    }                                                                                  \
    if (err != 0) {                                                                    \
      return err;                                                                      \
    }                                                                                  \
    fn##_bf_ops_kernel(p.a, p.b, p.c, p.m, p.n, p.k);                                  \
    return 0;                                                                          \
  }                                                                                    \
  BF_OPS_CHECK_TILE(fn##_bf_ops_check_tile_m, TM);                                     \
  BF_OPS_CHECK_TILE(fn##_bf_ops_check_tile_n, TN);                                     \
  BF_OPS_CHECK_TILE(fn##_bf_ops_check_tile_k, TK)

/* One (i0, j0, k0) tile, loop order i, j, k: the k loop is unrolled. */
#define BF_OPS_MATMUL_TILE_ijk(UNROLL)                                 \
  for (i = i0; i < i1; ++i) {                                          \
    const float* a_row = a + i * k;                                    \
    for (j = j0; j < j1; ++j) {                                        \
      float acc = c[i * n + j];                                        \
      BF_OPS_UNROLLED_LOOP(kk, k0, k1, UNROLL, BF_OPS_MATMUL_STEP_ijk) \
      c[i * n + j] = acc;                                              \
    }                                                                  \
  }
#define BF_OPS_MATMUL_STEP_ijk(u) acc += a_row[kk + (u)] * b[(kk + (u)) * n + j];

/* One (i0, j0, k0) tile, loop order i, k, j: the j loop is unrolled. */
#define BF_OPS_MATMUL_TILE_ikj(UNROLL)                                \
  for (i = i0; i < i1; ++i) {                                         \
    float* c_row = c + i * n;                                         \
    for (kk = k0; kk < k1; ++kk) {                                    \
      const float a_ik = a[i * k + kk];                               \
      const float* b_row = b + kk * n;                                \
      BF_OPS_UNROLLED_LOOP(j, j0, j1, UNROLL, BF_OPS_MATMUL_STEP_ikj) \
    }                                                                 \
  }
#define BF_OPS_MATMUL_STEP_ikj(u) c_row[j + (u)] += a_ik * b_row[j + (u)];

#endif /* BENCHFARM_OPS_MATMUL_KERNEL_H_ */
