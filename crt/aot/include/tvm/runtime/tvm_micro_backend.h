/*
 * tvm_micro_backend.h: the types an AOT-compiled model and the application
 * share — the model descriptor the compiler emits (TVMModel) and the context
 * the application fills in (TVMContext). From TVM's "C Runtime API for the
 * AOT micro entrypoint" RFC; applications include tvm_micro_runtime.h, which
 * wraps these in stable inline accessors.
 *
 * No heap, no stdio; nothing here allocates.
 */
#ifndef TVM_RUNTIME_TVM_MICRO_BACKEND_H_
#define TVM_RUNTIME_TVM_MICRO_BACKEND_H_

#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/c_device_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

struct TVMContext;

/*
 * A model's generated entry point. inputs[i] (i < num_input_tensors) and
 * outputs[i] (i < num_output_tensors) are the data of each tensor, in the
 * layout the model was compiled for; the application owns them. context may
 * be NULL for a model that needs no workspace or device. Returns 0 or a
 * tvm_crt_error_t; each model documents the errors it returns.
 */
typedef int32_t (*TVMMicroEntryPoint)(void** inputs, void** outputs, struct TVMContext* context);

/*
 * The model descriptor: generated, constant, addressed by name
 * (`extern const TVMModel my_model;`). Read it through the accessors in
 * tvm_micro_runtime.h so new fields can be added without breaking callers.
 */
typedef struct {
  uint32_t num_input_tensors;    /* Entries the entry point reads from inputs. */
  uint32_t num_output_tensors;   /* Entries the entry point writes through outputs. */
  const size_t* workspace_size;  /* num_workspaces sizes in bytes; NULL if none. */
  uint32_t num_workspaces;       /* Workspaces the application must supply in the context. */
  TVMMicroEntryPoint entrypoint; /* The generated run function. */
  uint32_t num_devices;          /* Devices the application must supply in the context. */
} TVMModel;

/*
 * What the application provides for one run: memory and devices. Owned by
 * the application, which keeps everything it points to alive during
 * TVMExecute. The model only borrows it.
 */
typedef struct TVMContext {
  /* workspace[i], i < num_workspaces: at least TVMGetWorkspaceSize(model, i) bytes each. */
  void** workspace;
  /*
   * devices[i], i < num_devices: Open devices (see c_device_api.h). The model
   * Activates each around its run and hands it to operators as their
   * resource_handle.
   */
  tvm_device_t* devices;
} TVMContext;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_TVM_MICRO_BACKEND_H_ */
