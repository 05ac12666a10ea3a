/*
 * sample_model.c: benchfarm_sample_model, y = relu(W x + b), written the way
 * TVM's AOT code generator lays a model out: a descriptor, a run function
 * that sets up the device, and an operator function whose last argument is
 * its resource_handle.
 */
#include <benchfarm/sample_model.h>
#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/platform/host_device.h>

const float
    benchfarm_sample_model_weights[BENCHFARM_SAMPLE_MODEL_OUTPUTS][BENCHFARM_SAMPLE_MODEL_INPUTS] =
        {
            {0.50f, -0.25f, 0.00f, 1.00f, -0.75f, 0.25f, 0.10f, -0.10f},
            {-1.00f, 0.50f, 0.25f, -0.50f, 0.00f, 0.75f, -0.20f, 0.30f},
            {0.20f, 0.20f, 0.20f, 0.20f, 0.20f, 0.20f, 0.20f, 0.20f},
            {-0.30f, -0.60f, 0.90f, -0.10f, 0.40f, -0.80f, 0.70f, 0.00f},
};

const float benchfarm_sample_model_bias[BENCHFARM_SAMPLE_MODEL_OUTPUTS] = {0.50f, -1.00f, 0.25f,
                                                                           -0.125f};

/* Workspace 0 holds W x before the bias and relu. */
static const size_t kWorkspaceSizes[1] = {BENCHFARM_SAMPLE_MODEL_OUTPUTS * sizeof(float)};

/*
 * The fused dense + bias + relu operator. resource_handle is the device it
 * runs on; like an accelerator kernel, it first launches on the device, which
 * fails unless the executor Activated it.
 */
static int32_t DenseBiasRelu(const float* x, float* y, float* scratch, void* resource_handle) {
  size_t i;
  size_t j;
  int32_t err = TVMDeviceHostLaunch((tvm_device_t*)resource_handle);
  if (err != kTvmErrorNoError) {
    return err;
  }
  for (i = 0; i < BENCHFARM_SAMPLE_MODEL_OUTPUTS; ++i) {
    scratch[i] = 0.0f;
    for (j = 0; j < BENCHFARM_SAMPLE_MODEL_INPUTS; ++j) {
      scratch[i] += benchfarm_sample_model_weights[i][j] * x[j];
    }
  }
  for (i = 0; i < BENCHFARM_SAMPLE_MODEL_OUTPUTS; ++i) {
    float v = scratch[i] + benchfarm_sample_model_bias[i];
    y[i] = v > 0.0f ? v : 0.0f;
  }
  return kTvmErrorNoError;
}

/* The run function: checks the context, then Activate -> operator -> Deactivate. */
static int32_t SampleModelRun(void** inputs, void** outputs, TVMContext* context) {
  tvm_device_t* device;
  void* scratch;
  int32_t err;
  int32_t deactivate_err;

  if (inputs == NULL || outputs == NULL || inputs[0] == NULL || outputs[0] == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (context == NULL || context->workspace == NULL || context->workspace[0] == NULL ||
      context->devices == NULL) {
    return kTvmErrorExecutorModuleBadContext;
  }
  scratch = context->workspace[0];
  if (((uintptr_t)scratch & (uintptr_t)(sizeof(float) - 1)) != 0) {
    return kTvmErrorExecutorModuleBadContext;
  }
  device = &context->devices[0];

  err = TVMDeviceActivate(device);
  if (err != kTvmErrorNoError) {
    return err;
  }
  err = DenseBiasRelu((const float*)inputs[0], (float*)outputs[0], (float*)scratch, device);
  /* Deactivate even after a failed operator, so the device can idle again. */
  deactivate_err = TVMDeviceDeactivate(device);
  return err != kTvmErrorNoError ? err : deactivate_err;
}

const TVMModel benchfarm_sample_model = {
    1,               /* num_input_tensors */
    1,               /* num_output_tensors */
    kWorkspaceSizes, /* workspace_size */
    1,               /* num_workspaces */
    SampleModelRun,  /* entrypoint */
    1,               /* num_devices */
};
