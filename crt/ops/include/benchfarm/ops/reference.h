/*
 * reference.h: obviously-correct reference kernels for benchfarm's sample
 * operators, against which every tuning candidate is checked.
 *
 * The plain C functions take raw row-major float arrays. Callers must pass
 * arrays of the stated sizes; sizes must be >= 0 and every array size must fit
 * in int32_t. They do no checking (they are the trusted baseline) and never
 * fail. Inputs and output must not overlap, except that add allows c == a or
 * c == b. Sums run in ascending index order, starting from 0.0f.
 *
 * The packed forms (registered in the sample system library as add_reference,
 * matmul_reference and conv2d_reference) check their DLTensor arguments like
 * the tuned operators do (bf_ops_*_unpack, common.h) and then call the plain
 * functions. Same packed contract as BF_DEFINE_ADD and friends.
 *
 * Thread-safety: the plain functions are reentrant; the packed ones share
 * TVMAPISetLastError's buffer on error.
 */
#ifndef BENCHFARM_OPS_REFERENCE_H_
#define BENCHFARM_OPS_REFERENCE_H_

#include <benchfarm/ops/common.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* c[i] = a[i] + b[i] for i in 0..count-1. */
void bf_ops_reference_add(const float* a, const float* b, float* c, int32_t count);

/* c[m][n] = a[m][k] x b[k][n]: c[i][j] = sum over kk of a[i][kk] * b[kk][j]. */
void bf_ops_reference_matmul(const float* a, const float* b, float* c, int32_t m, int32_t n,
                             int32_t k);

/*
 * output[n][o][oh][ow] = sum over c, r, s of input[n][c][y + r][x + s] * weight[o][c][r][s]
 * (stride 1, no padding). Reads dims->n, c, h, w, o, kh, kw (h >= kh >= 1,
 * w >= kw >= 1); derives oh = h - kh + 1 and ow = w - kw + 1 itself, ignoring
 * dims->oh and dims->ow. dims must not be NULL.
 */
void bf_ops_reference_conv2d(const float* input, const float* weight, float* output,
                             const bf_ops_conv2d_dims_t* dims);

/* Packed forms: (A, B, C), (A, B, C), (input, weight, output). */
BF_OPS_DECLARE_PACKED(bf_ops_add_reference);
BF_OPS_DECLARE_PACKED(bf_ops_matmul_reference);
BF_OPS_DECLARE_PACKED(bf_ops_conv2d_reference);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_OPS_REFERENCE_H_ */
