/*
 * c_backend_api.h: what TVM-generated operator code calls into the crt.
 *
 * Names and signatures are TVM v0.18's, so generated C code links unchanged.
 * The packed-function signature carries resource_handle (the 6-argument form
 * the crt always uses; see the registry/module RFC).
 *
 * Thread-safety: none. The crt is single-threaded.
 */
#ifndef TVM_RUNTIME_C_BACKEND_API_H_
#define TVM_RUNTIME_C_BACKEND_API_H_

#include <stdint.h>

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A packed C function: every global and module function has this type.
 * args / type_codes hold num_args arguments; the function stores its result in
 * *out_ret_value / *out_ret_tcode (already kTVMNullptr / NULL on entry when
 * called through TVMFuncCall). resource_handle is NULL for a global function
 * and the TVMModule* that holds the function for a module function.
 * Returns 0 on success, else an error code (set TVMAPISetLastError for -1).
 */
typedef int (*TVMBackendPackedCFunc)(TVMValue* args, int* type_codes, int num_args,
                                     TVMValue* out_ret_value, int* out_ret_tcode,
                                     void* resource_handle);

/*
 * Finds a global function for generated code. mod_node is ignored.
 * Returns 0 with *out set; kTvmErrorFunctionNameNotFound (*out = NULL) if there
 * is no such global; kTvmErrorFunctionCallInvalidArg if func_name or out is NULL.
 * (Unlike TVMFuncGetGlobal, a missing function is an error here: generated
 * code would otherwise call a NULL handle.)
 */
TVM_DLL int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out);

/*
 * Allocates an operator's scratch space of nbytes through
 * TVMPlatformMemoryAllocate. The dtype hints are ignored.
 * Returns the memory, or NULL if the platform is out of memory, nbytes does
 * not fit in size_t, or device_type is not kDLCPU. Never aborts (TVM's CRT
 * aborted here; generated code checks for NULL).
 */
TVM_DLL void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes,
                                       int dtype_code_hint, int dtype_bits_hint);

/*
 * Frees memory from TVMBackendAllocWorkspace; NULL is a no-op.
 * Returns 0, kTvmErrorDeviceInvalid for a non-CPU device, or the platform's error.
 */
TVM_DLL int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr);

/* The environment of one parallel task. */
typedef struct {
  void* sync_handle; /* always NULL in the crt */
  int32_t num_task;  /* always 1 in the crt */
} TVMParallelGroupEnv;

/* One task of a parallel region: task_id in 0..penv->num_task-1. Returns 0 or an error. */
typedef int (*FTVMParallelLambda)(int task_id, TVMParallelGroupEnv* penv, void* cdata);

/*
 * Runs flambda once, inline, as task 0 of 1 (the crt has no threads), whatever
 * num_task asks for. Returns flambda's result, or kTvmErrorFunctionCallInvalidArg
 * if flambda is NULL.
 */
TVM_DLL int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task);

/* A barrier among the tasks of a region: with one task, returns 0 at once. */
TVM_DLL int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_C_BACKEND_API_H_ */
