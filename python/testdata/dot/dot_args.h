/* dot_args.h: checks dot's arguments (A[N], B[N] -> C[1], float32 DLTensors). Included by dot.c,
 * sent with it by add_op (every *.h beside op.json goes along). */
#ifndef DOT_ARGS_H_
#define DOT_ARGS_H_

#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>

static int dot_unpack(const TVMValue* args, const int* type_codes, int num_args, const float** a,
                      const float** b, float** c, int64_t* n) {
  const DLTensor* ta;
  const DLTensor* tb;
  const DLTensor* tc;
  if (num_args != 3 || type_codes[0] != kTVMDLTensorHandle || type_codes[1] != kTVMDLTensorHandle ||
      type_codes[2] != kTVMDLTensorHandle) {
    return -1;
  }
  ta = (const DLTensor*)args[0].v_handle;
  tb = (const DLTensor*)args[1].v_handle;
  tc = (const DLTensor*)args[2].v_handle;
  if (ta->ndim != 1 || tb->ndim != 1 || tc->ndim != 1 || ta->shape[0] != tb->shape[0] ||
      tc->shape[0] != 1) {
    return -1;
  }
  *a = (const float*)ta->data;
  *b = (const float*)tb->data;
  *c = (float*)tc->data;
  *n = ta->shape[0];
  return 0;
}

#endif /* DOT_ARGS_H_ */
