/*
 * sample_ops.h: the default instances of benchfarm's sample operators, built
 * with the BF_OPS_*_DEFAULT_* knobs of add_kernel.h, matmul_kernel.h and
 * conv2d_kernel.h. The sample system library (sample_system_lib.c) registers
 * them as "add", "matmul" and "conv2d"; their C names carry the bf_ops_ prefix,
 * so error messages begin with e.g. "bf_ops_matmul: ".
 *
 * Contracts: BF_DEFINE_ADD / BF_DEFINE_MATMUL / BF_DEFINE_CONV2D.
 */
#ifndef BENCHFARM_OPS_SAMPLE_OPS_H_
#define BENCHFARM_OPS_SAMPLE_OPS_H_

#include <benchfarm/ops/common.h>

#ifdef __cplusplus
extern "C" {
#endif

BF_OPS_DECLARE_PACKED(bf_ops_add);
BF_OPS_DECLARE_PACKED(bf_ops_matmul);
BF_OPS_DECLARE_PACKED(bf_ops_conv2d);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_OPS_SAMPLE_OPS_H_ */
