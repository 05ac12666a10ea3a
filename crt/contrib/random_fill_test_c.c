/*
 * random_fill_test_c.c: proves random_fill.h is valid C99.
 *
 * Fills a small float32 tensor from C; random_fill_test.cc calls
 * crt_contrib_headers_compile_as_c() and expects 0.
 */
#include <tvm/runtime/crt/random_fill.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_contrib_headers_compile_as_c(void);

/* Returns 0 when every value is in [1, 2), or the number of the failed step. */
int crt_contrib_headers_compile_as_c(void) {
  float data[4] = {0, 0, 0, 0};
  int64_t shape[1] = {4};
  DLTensor tensor;
  TVMValue arg;
  int tcode = kTVMDLTensorHandle;
  TVMValue ret;
  int ret_tcode = kTVMNullptr;
  int i;

  tensor.data = data;
  tensor.device.device_type = kDLCPU;
  tensor.device.device_id = 0;
  tensor.ndim = 1;
  tensor.dtype.code = kDLFloat;
  tensor.dtype.bits = 32;
  tensor.dtype.lanes = 1;
  tensor.shape = shape;
  tensor.strides = NULL;
  tensor.byte_offset = 0;
  arg.v_handle = &tensor;
  if (TVMCrtRandomFill(&arg, &tcode, 1, &ret, &ret_tcode, NULL) != 0) return 1;
  for (i = 0; i < 4; i++) {
    if (!(data[i] >= 1.0f && data[i] < 2.0f)) return 2 + i;
  }
  if (TVMCrtRandomFill(&arg, &tcode, 0, &ret, &ret_tcode, NULL) == 0) return 10;
  return 0;
}
