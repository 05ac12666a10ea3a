/*
 * conv2d_kernel.h: the tunable float32 2-D convolution.
 *
 *   output[n][o][y][x] = sum over c, r, s of
 *                        input[n][c][y + r][x + s] * weight[o][c][r][s]
 *
 * input NCHW [N,C,H,W], weight OIHW [O,C,KH,KW], output [N,O,OH,OW] with
 * OH = H - KH + 1, OW = W - KW + 1: stride 1, no padding, dilation 1, no bias.
 * (Stride and padding are part of the operator, not schedule knobs; a strided
 * or padded variant would be a new operator with its own reference.)
 *
 *   BF_DEFINE_CONV2D(fn, TILE_OC, TILE_OW, UNROLL_KW, ORDER);
 *
 * defines `int fn(...)`, an external TVMBackendPackedCFunc taking
 * (input, weight, output) as DLTensor handles. Use it at file scope, followed
 * by `;`; one C file may define any number of candidates under different
 * names. Arguments are checked by bf_ops_conv2d_unpack (common.h lists every
 * error; messages begin with "fn: "). The function ignores resource_handle,
 * stores kTVMNullptr in *out_ret_tcode (if not NULL) and returns 0 or that error.
 *
 * Knobs (each a literal or a macro that expands to one; checked at compile time):
 *   TILE_OC    1..BF_OPS_MAX_TILE: output channels per block (edge blocks smaller).
 *   TILE_OW    1..BF_OPS_MAX_TILE: output columns per block (edge blocks smaller).
 *   UNROLL_KW  1, 2, 4 or 8: unroll of the kernel-width (s) loop, with a remainder.
 *   ORDER      output_stationary: per output element of the block, the whole
 *                reduction (c, r, s) in a register;
 *              reduction_outer: c and r outside the block, each pass adding one
 *                kernel row into the block's outputs in memory.
 * Every combination sums each output over (c, r, s) in ascending order, as
 * bf_ops_reference_conv2d does, so results agree with the reference up to
 * floating-point contraction by the compiler.
 *
 * BF_OPS_CONV2D_DEFAULT_* are the knobs of the default instance `conv2d`
 * (sample_ops.h); override them with -D. knobs.json mirrors this header.
 */
#ifndef BENCHFARM_OPS_CONV2D_KERNEL_H_
#define BENCHFARM_OPS_CONV2D_KERNEL_H_

#include <benchfarm/ops/common.h>
#include <stdint.h>

#ifndef BF_OPS_CONV2D_DEFAULT_TILE_OC
#define BF_OPS_CONV2D_DEFAULT_TILE_OC 4
#endif
#ifndef BF_OPS_CONV2D_DEFAULT_TILE_OW
#define BF_OPS_CONV2D_DEFAULT_TILE_OW 8
#endif
#ifndef BF_OPS_CONV2D_DEFAULT_UNROLL_KW
#define BF_OPS_CONV2D_DEFAULT_UNROLL_KW 1
#endif
#ifndef BF_OPS_CONV2D_DEFAULT_ORDER
#define BF_OPS_CONV2D_DEFAULT_ORDER output_stationary
#endif

/* The extra level expands macro arguments before they are pasted. */
#define BF_DEFINE_CONV2D(fn, TILE_OC, TILE_OW, UNROLL_KW, ORDER) \
  BF_OPS_DEFINE_CONV2D_(fn, TILE_OC, TILE_OW, UNROLL_KW, ORDER)

#define BF_OPS_DEFINE_CONV2D_(fn, TOC, TOW, UKW, ORDER)                                \
  BF_OPS_DECLARE_PACKED(fn);                                                           \
  static void fn##_bf_ops_kernel(const float* restrict in, const float* restrict wt,   \
                                 float* restrict out, const bf_ops_conv2d_dims_t* d) { \
    const int32_t C = d->c, H = d->h, W = d->w, O = d->o;                              \
    const int32_t KH = d->kh, KW = d->kw, OH = d->oh, OW = d->ow;                      \
    int32_t b, o0, oc, oh, ow0, ow, c, r, s;                                           \
    for (b = 0; b < d->n; ++b) {                                                       \
      for (o0 = 0; o0 < O; o0 += (TOC)) {                                              \
        const int32_t o1 = BF_OPS_TILE_END(o0, (TOC), O);                              \
        for (oh = 0; oh < OH; ++oh) {                                                  \
          for (ow0 = 0; ow0 < OW; ow0 += (TOW)) {                                      \
            const int32_t ow1 = BF_OPS_TILE_END(ow0, (TOW), OW);                       \
            BF_OPS_CONV2D_BLOCK_##ORDER(UKW)                                           \
          }                                                                            \
        }                                                                              \
      }                                                                                \
    }                                                                                  \
  }                                                                                    \
  BF_OPS_DECLARE_PACKED(fn) {                                                          \
    bf_ops_conv2d_args_t p;                                                            \
    const int err = bf_ops_conv2d_unpack(#fn, args, type_codes, num_args, &p);         \
    (void)out_ret_value;                                                               \
    (void)resource_handle;                                                             \
    if (out_ret_tcode != NULL) {                                                       \
      *out_ret_tcode = kTVMNullptr;                                                    \
    }                                                                                  \
    if (err != 0) {                                                                    \
      return err;                                                                      \
    }                                                                                  \
    fn##_bf_ops_kernel(p.input, p.weight, p.output, &p.dims);                          \
    return 0;                                                                          \
  }                                                                                    \
  BF_OPS_CHECK_TILE(fn##_bf_ops_check_tile_oc, TOC);                                   \
  BF_OPS_CHECK_TILE(fn##_bf_ops_check_tile_ow, TOW)

/* One block (o0..o1, row oh, columns ow0..ow1): reduction innermost, in a register. */
#define BF_OPS_CONV2D_BLOCK_output_stationary(UKW)                        \
  for (oc = o0; oc < o1; ++oc) {                                          \
    float* out_row = out + ((b * O + oc) * OH + oh) * OW;                 \
    for (ow = ow0; ow < ow1; ++ow) {                                      \
      float acc = 0.0f;                                                   \
      for (c = 0; c < C; ++c) {                                           \
        for (r = 0; r < KH; ++r) {                                        \
          const float* in_row = in + ((b * C + c) * H + oh + r) * W + ow; \
          const float* w_row = wt + ((oc * C + c) * KH + r) * KW;         \
          BF_OPS_UNROLLED_LOOP(s, 0, KW, UKW, BF_OPS_CONV2D_STEP)         \
        }                                                                 \
      }                                                                   \
      out_row[ow] = acc;                                                  \
    }                                                                     \
  }

/* One block with c and r outermost: the block's outputs accumulate in memory. */
#define BF_OPS_CONV2D_BLOCK_reduction_outer(UKW)                  \
  for (oc = o0; oc < o1; ++oc) {                                  \
    float* out_row = out + ((b * O + oc) * OH + oh) * OW;         \
    for (ow = ow0; ow < ow1; ++ow) {                              \
      out_row[ow] = 0.0f;                                         \
    }                                                             \
  }                                                               \
  for (c = 0; c < C; ++c) {                                       \
    for (r = 0; r < KH; ++r) {                                    \
      const float* in_base = in + ((b * C + c) * H + oh + r) * W; \
      for (oc = o0; oc < o1; ++oc) {                              \
        const float* w_row = wt + ((oc * C + c) * KH + r) * KW;   \
        float* out_row = out + ((b * O + oc) * OH + oh) * OW;     \
        for (ow = ow0; ow < ow1; ++ow) {                          \
          const float* in_row = in_base + ow;                     \
          float acc = out_row[ow];                                \
          BF_OPS_UNROLLED_LOOP(s, 0, KW, UKW, BF_OPS_CONV2D_STEP) \
          out_row[ow] = acc;                                      \
        }                                                         \
      }                                                           \
    }                                                             \
  }

#define BF_OPS_CONV2D_STEP(u) acc += in_row[s + (u)] * w_row[s + (u)];

#endif /* BENCHFARM_OPS_CONV2D_KERNEL_H_ */
