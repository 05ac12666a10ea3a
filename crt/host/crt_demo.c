/*
 * crt_demo: crt's runtime core in a host process, as a user first meets it.
 *
 * 1. Boots the runtime the way firmware does (platform, TVMInitializeRuntime),
 *    fetches the system library through the global "runtime.SystemLib", looks
 *    up the sample "add" operator in it and calls it through TVMFuncCall with
 *    DLTensor arguments allocated from crt's page pool.
 * 2. Runs the AOT sample model through TVMExecute, with a workspace and a host
 *    device handed to its operator as resource_handle.
 * Prints what it did; exits non-zero if any step fails or a result is wrong.
 * The one crt program allowed stdio: it lives in crt/host/.
 */
#include <benchfarm/sample_model.h>
#include <math.h>
#include <stdio.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform/host_device.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/tvm_micro_runtime.h>

#define CHECK_OK(expr)                                                                \
  do {                                                                                \
    int check_ok_rc = (int)(expr);                                                    \
    if (check_ok_rc != 0) {                                                           \
      fprintf(stderr, "crt_demo: %s failed: 0x%x %s\n", #expr, (unsigned)check_ok_rc, \
              TVMGetLastError());                                                     \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

enum { kAddElements = 16 };

static int CallAddThroughSystemLib(void) {
  TVMFunctionHandle system_lib_fn = NULL;
  TVMValue ret;
  int ret_tcode = 0;
  TVMModuleHandle lib;
  TVMFunctionHandle add = NULL;
  int64_t shape[1] = {kAddElements};
  TVMArrayHandle tensors[3] = {NULL, NULL, NULL};
  TVMValue args[3];
  int tcodes[3] = {kTVMDLTensorHandle, kTVMDLTensorHandle, kTVMDLTensorHandle};
  const float* c;
  int i;

  CHECK_OK(TVMFuncGetGlobal("runtime.SystemLib", &system_lib_fn));
  CHECK_OK(TVMFuncCall(system_lib_fn, NULL, NULL, 0, &ret, &ret_tcode));
  lib = ret.v_handle;
  CHECK_OK(TVMModGetFunction(lib, "add", 0, &add));
  printf("system library: module handle 0x%lx, \"add\" is function handle 0x%lx\n",
         (unsigned long)(uintptr_t)lib, (unsigned long)(uintptr_t)add);

  for (i = 0; i < 3; ++i) {
    CHECK_OK(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, &tensors[i]));
    args[i].v_handle = tensors[i];
  }
  for (i = 0; i < kAddElements; ++i) {
    ((float*)tensors[0]->data)[i] = (float)i;
    ((float*)tensors[1]->data)[i] = 0.5f * (float)i;
  }
  CHECK_OK(TVMFuncCall(add, args, tcodes, 3, &ret, &ret_tcode));
  c = (const float*)tensors[2]->data;
  for (i = 0; i < kAddElements; ++i) {
    if (c[i] != 1.5f * (float)i) {
      fprintf(stderr, "crt_demo: add gave c[%d] = %g, want %g\n", i, c[i], 1.5 * i);
      return 1;
    }
  }
  printf("TVMFuncCall(add) on float32[%d]: c[%d] = %g (a + b, checked)\n", kAddElements,
         kAddElements - 1, c[kAddElements - 1]);
  for (i = 0; i < 3; ++i) CHECK_OK(TVMArrayFree(tensors[i]));
  return 0;
}

static int RunSampleModel(void) {
  static float workspace[64];
  float x[BENCHFARM_SAMPLE_MODEL_INPUTS];
  float y[BENCHFARM_SAMPLE_MODEL_OUTPUTS];
  void* inputs[1] = {x};
  void* outputs[1] = {y};
  void* workspaces[1] = {workspace};
  tvm_device_t device;
  tvm_device_host_t host = {0};
  TVMContext context = {0};
  int i, j;

  if (TVMGetWorkspaceSize(&benchfarm_sample_model, 0) > sizeof(workspace)) {
    fprintf(stderr, "crt_demo: sample model needs a larger workspace\n");
    return 1;
  }
  for (i = 0; i < BENCHFARM_SAMPLE_MODEL_INPUTS; ++i) x[i] = (float)(i - 3);
  CHECK_OK(TVMDeviceInit(&device));
  CHECK_OK(TVMDevicePlatformBindHost(&device, &host));
  CHECK_OK(TVMDeviceOpen(&device));
  TVMSetWorkspaces(&context, workspaces);
  TVMSetDevices(&context, &device);
  CHECK_OK(TVMExecute(&benchfarm_sample_model, inputs, outputs, &context));
  CHECK_OK(TVMDeviceClose(&device));
  CHECK_OK(TVMDeviceDestroy(&device));

  printf("TVMExecute(sample model, y = relu(W x + b)): y =");
  for (j = 0; j < BENCHFARM_SAMPLE_MODEL_OUTPUTS; ++j) {
    float want = benchfarm_sample_model_bias[j];
    for (i = 0; i < BENCHFARM_SAMPLE_MODEL_INPUTS; ++i) {
      want += benchfarm_sample_model_weights[j][i] * x[i];
    }
    if (want < 0.0f) want = 0.0f;
    if (fabsf(want - y[j]) > 1e-5f) {
      fprintf(stderr, "\ncrt_demo: y[%d] = %g, want %g\n", j, y[j], want);
      return 1;
    }
    printf(" %g", y[j]);
  }
  printf(" (checked)\ndevice life cycle: %u activate, %u launch, %u deactivate\n",
         (unsigned)host.activate_count, (unsigned)host.launch_count,
         (unsigned)host.deactivate_count);
  return 0;
}

int main(void) {
  CHECK_OK(TVMPlatformInitialize());
  CHECK_OK(TVMInitializeRuntime());
  if (CallAddThroughSystemLib() != 0) return 1;
  return RunSampleModel();
}
