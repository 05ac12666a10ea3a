/* sample_ops.c: the default instances (sample_ops.h), built from the default knobs. */
#include <benchfarm/ops/add_kernel.h>
#include <benchfarm/ops/conv2d_kernel.h>
#include <benchfarm/ops/matmul_kernel.h>
#include <benchfarm/ops/sample_ops.h>

BF_DEFINE_ADD(bf_ops_add, BF_OPS_ADD_DEFAULT_UNROLL);

BF_DEFINE_MATMUL(bf_ops_matmul, BF_OPS_MATMUL_DEFAULT_TILE_M, BF_OPS_MATMUL_DEFAULT_TILE_N,
                 BF_OPS_MATMUL_DEFAULT_TILE_K, BF_OPS_MATMUL_DEFAULT_UNROLL,
                 BF_OPS_MATMUL_DEFAULT_ORDER);

BF_DEFINE_CONV2D(bf_ops_conv2d, BF_OPS_CONV2D_DEFAULT_TILE_OC, BF_OPS_CONV2D_DEFAULT_TILE_OW,
                 BF_OPS_CONV2D_DEFAULT_UNROLL_KW, BF_OPS_CONV2D_DEFAULT_ORDER);
