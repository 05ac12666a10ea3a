/*
 * crt.h: the crt runtime's life cycle and the hooks other crt parts install.
 *
 * Call TVMInitializeRuntime once at boot, after the platform (memory) is up
 * and before any other runtime function. Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_CRT_H_
#define TVM_RUNTIME_CRT_CRT_H_

#include <stdint.h>

#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * (Re)initialises all runtime state: clears the last error, the module table,
 * the system library registration and the time-evaluator hook, and rebuilds
 * the global function table with the built-in globals, in this order (their
 * indexes are part of the wire-visible handles 0x80028000 + index):
 *   0 runtime.SystemLib
 *   1 tvm.rpc.server.ModuleGetFunction
 * Calling it again resets everything (tests do this between cases); handles
 * obtained before are then stale.
 * Returns 0, or the registry error if the global table cannot hold the
 * built-ins (a too-small TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES).
 */
tvm_crt_error_t TVMInitializeRuntime(void);

/*
 * Typed form of TVMFuncRegisterGlobal: registers func as global name.
 * Returns as TVMFuncRegisterGlobal does.
 */
int TVMCrtFuncRegisterGlobal(const char* name, TVMBackendPackedCFunc func, int override);

/*
 * *out_bytes = the bytes of a compact row-major tensor's elements:
 * prod(shape) * ceil(bits * lanes / 8). strides may be NULL; otherwise each
 * must be the compact one (a dimension of extent 1 may carry any stride).
 * Returns 0, or kTvmErrorFunctionCallInvalidArg for ndim outside
 * [0, TVM_CRT_MAX_NDIM], a NULL shape with ndim > 0, 0 bits or lanes, a
 * negative extent, other strides, or a size that overflows size_t.
 */
tvm_crt_error_t TVMCrtCompactTensorBytes(int ndim, const int64_t* shape, const int64_t* strides,
                                         DLDataType dtype, size_t* out_bytes);

/*
 * Runs a call of time evaluator `index` (the low 15 bits of its handle).
 * Same contract as TVMBackendPackedCFunc, minus resource_handle.
 */
typedef int (*TVMCrtTimeEvaluatorCall)(uint16_t index, TVMValue* args, int* type_codes,
                                       int num_args, TVMValue* out_ret_value, int* out_ret_tcode);

/*
 * Installs the function TVMFuncCall uses for time-evaluator handles (module
 * index 0x7fff). NULL uninstalls; calls then fail with
 * kTvmErrorTimeEvaluatorBadHandle. TVMInitializeRuntime uninstalls it.
 */
void TVMCrtSetTimeEvaluatorCall(TVMCrtTimeEvaluatorCall call);

/*
 * The function handle of time evaluator `index` (0xffff8000 | index), or NULL
 * if index > 0x7fff.
 */
TVMFunctionHandle TVMCrtEncodeTimeEvaluatorHandle(uint16_t index);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_CRT_H_ */
