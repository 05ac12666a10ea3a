/*
 * tvm_micro_runtime.h: the application's stable interface to an AOT model.
 *
 *   #include <tvm/runtime/tvm_micro_runtime.h>
 *   extern const TVMModel my_model;
 *
 *   static uint8_t workspace0[MY_MODEL_WORKSPACE_BYTES];  // >= TVMGetWorkspaceSize(&my_model, 0)
 *   void* workspaces[] = {workspace0};
 *   TVMContext context = {0};
 *   TVMSetWorkspaces(&context, workspaces);
 *   TVMSetDevices(&context, devices);                      // Open devices, if the model uses any
 *   int32_t err = TVMExecute(&my_model, inputs, outputs, &context);
 *
 * Every function is static inline over the descriptor, so the layer costs
 * nothing and the descriptor's layout can change behind it. No heap, no stdio.
 */
#ifndef TVM_RUNTIME_TVM_MICRO_RUNTIME_H_
#define TVM_RUNTIME_TVM_MICRO_RUNTIME_H_

#include <tvm/runtime/tvm_micro_backend.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Runs model once: calls its entry point with inputs, outputs and context
 * (which may be NULL if the model needs no workspace or device).
 *
 * Returns kTvmErrorFunctionCallInvalidArg if model or its entry point is NULL;
 * otherwise whatever the entry point returns (0 on success).
 */
static inline int32_t TVMExecute(const TVMModel* model, void** inputs, void** outputs,
                                 TVMContext* context) {
  if (model == NULL || model->entrypoint == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  return model->entrypoint(inputs, outputs, context);
}

/*
 * Bytes workspace workspace_index of model needs. Returns 0 when model is NULL
 * or workspace_index >= the model's number of workspaces (so "no such
 * workspace" and "needs no memory" read the same).
 */
static inline size_t TVMGetWorkspaceSize(const TVMModel* model, size_t workspace_index) {
  if (model == NULL || model->workspace_size == NULL || workspace_index >= model->num_workspaces) {
    return 0;
  }
  return model->workspace_size[workspace_index];
}

/* Number of workspaces model needs in its context; 0 for NULL. */
static inline uint32_t TVMGetNumWorkspaces(const TVMModel* model) {
  return model == NULL ? 0 : model->num_workspaces;
}

/* Number of devices model needs in its context; 0 for NULL. */
static inline uint32_t TVMGetNumDevices(const TVMModel* model) {
  return model == NULL ? 0 : model->num_devices;
}

/* Number of input / output tensors of model; 0 for NULL. */
static inline uint32_t TVMGetNumInputTensors(const TVMModel* model) {
  return model == NULL ? 0 : model->num_input_tensors;
}
static inline uint32_t TVMGetNumOutputTensors(const TVMModel* model) {
  return model == NULL ? 0 : model->num_output_tensors;
}

/*
 * Points context at the application's workspace array (borrowed: it and each
 * workspace must outlive every TVMExecute using context). No-op if context is NULL.
 */
static inline void TVMSetWorkspaces(TVMContext* context, void** workspace) {
  if (context != NULL) {
    context->workspace = workspace;
  }
}

/*
 * Points context at the application's device array (borrowed, as above).
 * No-op if context is NULL.
 */
static inline void TVMSetDevices(TVMContext* context, tvm_device_t* devices) {
  if (context != NULL) {
    context->devices = devices;
  }
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_TVM_MICRO_RUNTIME_H_ */
