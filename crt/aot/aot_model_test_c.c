/*
 * aot_model_test_c.c: proves tvm_micro_runtime.h, tvm_micro_backend.h and
 * sample_model.h are valid C99.
 *
 * Runs the sample model from C the way an application would;
 * aot_model_test.cc calls crt_aot_headers_compile_as_c() and expects 0.
 */
#include <benchfarm/sample_model.h>
#include <tvm/runtime/crt/platform/host_device.h>
#include <tvm/runtime/tvm_micro_backend.h>
#include <tvm/runtime/tvm_micro_runtime.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_aot_headers_compile_as_c(void);

/* Returns 0 on success, or the number of the failed step. */
int crt_aot_headers_compile_as_c(void) {
  static float workspace0[BENCHFARM_SAMPLE_MODEL_OUTPUTS];
  void* workspaces[1];
  float x[BENCHFARM_SAMPLE_MODEL_INPUTS] = {1, 1, 1, 1, 0, 0, 0, 0};
  float y[BENCHFARM_SAMPLE_MODEL_OUTPUTS] = {0};
  void* inputs[1];
  void* outputs[1];
  TVMContext context = {0};
  tvm_device_t device = {0};
  tvm_device_host_t host = {0};

  workspaces[0] = workspace0;
  inputs[0] = x;
  outputs[0] = y;
  if (TVMGetWorkspaceSize(&benchfarm_sample_model, 0) > sizeof(workspace0)) return 1;
  if (TVMGetWorkspaceSize(&benchfarm_sample_model, 1) != 0) return 2;
  if (TVMDeviceInit(&device) != kTvmErrorNoError) return 3;
  if (TVMDevicePlatformBindHost(&device, &host) != kTvmErrorNoError) return 4;
  if (TVMDeviceOpen(&device) != kTvmErrorNoError) return 5;
  TVMSetWorkspaces(&context, workspaces);
  TVMSetDevices(&context, &device);
  if (TVMExecute(&benchfarm_sample_model, inputs, outputs, &context) != kTvmErrorNoError) return 6;
  /* Row 2 is 0.2 everywhere: 0.2 * 4 + 0.25. */
  if (y[2] < 1.049f || y[2] > 1.051f) return 7;
  if (host.launch_count != 1) return 8;
  if (TVMDeviceClose(&device) != kTvmErrorNoError) return 9;
  if (TVMDeviceDestroy(&device) != kTvmErrorNoError) return 10;
  return 0;
}
