/*
 * module.h: crt modules, and the system library's entry point.
 *
 * A crt module is a struct whose first member is a TVMModule (so a TVMModule*
 * is also a pointer to the whole module). Its functions are found by name in
 * its registry and receive the TVMModule* as their resource_handle.
 *
 * Registering a module gives it a slot in a table of
 * TVM_CRT_MAX_REGISTERED_MODULES; its TVMModuleHandle is (slot | 0x8000). The
 * system library is normally the first registered, so its handle is 0x8000.
 *
 * Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_MODULE_H_
#define TVM_RUNTIME_CRT_MODULE_H_

#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/func_registry.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A module: the functions it exports. Must outlive its registration. */
typedef struct TVMModule {
  /* The module's functions. Must not be NULL. */
  const TVMFuncRegistry* registry;
} TVMModule;

/*
 * The system library: provided by generated code (or the application), not by
 * the crt. Called once, by the first call of the global "runtime.SystemLib"
 * after TVMInitializeRuntime. May return NULL when there is no system library.
 */
const TVMModule* TVMSystemLibEntryPoint(void);

/*
 * Registers mod and stores its handle in *out_handle. Registering a module
 * that is already registered returns its existing handle.
 * Returns 0; kTvmErrorFunctionCallInvalidArg if mod, mod->registry,
 * mod->registry->names or out_handle is NULL; kTvmErrorFunctionRegistryFull
 * if all TVM_CRT_MAX_REGISTERED_MODULES slots are taken.
 */
tvm_crt_error_t TVMCrtModuleRegister(const TVMModule* mod, TVMModuleHandle* out_handle);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_MODULE_H_ */
