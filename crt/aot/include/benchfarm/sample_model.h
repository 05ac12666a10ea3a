/*
 * sample_model.h: a tiny hand-written AOT model, shaped like generated code,
 * that exercises the whole micro interface: a workspace, a device, and an
 * operator that receives that device as its resource_handle.
 *
 * It computes y = relu(W x + b) for float32 x[8], y[4] and the constant
 * weights below.
 *
 * Context: workspace[0] of TVMGetWorkspaceSize(&benchfarm_sample_model, 0)
 * bytes, aligned for float (scratch for W x); devices[0], an Open device
 * bound to the host driver (tvm/runtime/crt/platform/host_device.h). The model
 * Activates the device, runs its one operator with resource_handle =
 * &devices[0], and Deactivates it again, also when the operator fails.
 *
 * Entry point errors (first that applies):
 *   kTvmErrorFunctionCallInvalidArg    inputs, outputs, inputs[0] or outputs[0] is NULL.
 *   kTvmErrorExecutorModuleBadContext  context, its workspace array, workspace[0] or its
 *                                      devices is NULL, or workspace[0] is not float-aligned.
 *   kTvmErrorDeviceBadLifecycle        devices[0] is not Open (from TVMDeviceActivate).
 *   kTvmErrorDeviceInvalid             devices[0] is not a host device (from the operator).
 *   any error of the device's activate or deactivate hook.
 * On error outputs[0] may be partly written.
 */
#ifndef BENCHFARM_SAMPLE_MODEL_H_
#define BENCHFARM_SAMPLE_MODEL_H_

#include <tvm/runtime/tvm_micro_backend.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BENCHFARM_SAMPLE_MODEL_INPUTS 8  /* Elements of x. */
#define BENCHFARM_SAMPLE_MODEL_OUTPUTS 4 /* Elements of y. */

extern const TVMModel benchfarm_sample_model;

/* W (row-major, [output][input]) and b, for computing a reference. */
extern const float benchfarm_sample_model_weights[BENCHFARM_SAMPLE_MODEL_OUTPUTS]
                                                 [BENCHFARM_SAMPLE_MODEL_INPUTS];
extern const float benchfarm_sample_model_bias[BENCHFARM_SAMPLE_MODEL_OUTPUTS];

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_SAMPLE_MODEL_H_ */
