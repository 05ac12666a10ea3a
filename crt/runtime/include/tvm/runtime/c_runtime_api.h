/*
 * c_runtime_api.h: the TVM C runtime API, as benchfarm's crt provides it.
 *
 * Types, constants and prototypes carry TVM v0.18's names, numbers and
 * signatures, so C code written against TVM's c_runtime_api.h (generated
 * operators, executors, the MinRPC server) compiles unchanged. Only the subset
 * the crt implements is declared.
 *
 * Error convention (TVM's): a function returns 0 on success. An invalid handle
 * gives -1 with a message in TVMGetLastError(); other failures give a
 * tvm_crt_error_t code (error_codes.h). Each prototype lists what it returns.
 *
 * Thread-safety: none. The crt is single-threaded.
 */
#ifndef TVM_RUNTIME_C_RUNTIME_API_H_
#define TVM_RUNTIME_C_RUNTIME_API_H_

#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TVM_DLL
#define TVM_DLL
#endif

/* TVM release whose API this header follows. */
#define TVM_VERSION "0.18.0"

/* Index type of tensor shapes (TVMArrayAlloc). int64_t, as in TVM. */
typedef int64_t tvm_index_t;

/* Device types TVM adds to DLPack's. kDLMicroDev is a TVM extension. */
typedef enum { kDLMicroDev = 35, TVMDeviceExtType_End = 36 } TVMDeviceExtType;

/*
 * The type code of a packed-function argument or return value (reference 3.3).
 * The numbers travel on the wire (MinRPC); they must never change.
 */
typedef enum {
  kTVMArgInt = kDLInt,        /* 0: v_int64 */
  kTVMArgFloat = kDLFloat,    /* 2: v_float64 (kDLUInt = 1 is also valid) */
  kTVMOpaqueHandle = 3U,      /* v_handle, opaque */
  kTVMNullptr = 4U,           /* no value */
  kTVMDataType = 5U,          /* v_type */
  kDLDevice = 6U,             /* v_device */
  kTVMDLTensorHandle = 7U,    /* v_handle: DLTensor* */
  kTVMObjectHandle = 8U,      /* v_handle */
  kTVMModuleHandle = 9U,      /* v_handle: TVMModuleHandle */
  kTVMPackedFuncHandle = 10U, /* v_handle: TVMFunctionHandle */
  kTVMStr = 11U,              /* v_str: NUL-terminated */
  kTVMBytes = 12U,            /* v_handle: TVMByteArray* */
  kTVMNDArrayHandle = 13U,    /* v_handle */
  kTVMObjectRValueRefArg = 14U,
  kTVMArgBool = 15U, /* v_int64, 0 or 1 */
  /* Extension codes, 16..127. */
  kTVMExtBegin = 16U,
  kTVMNNVMFirst = 16U,
  kTVMNNVMLast = 20U,
  kTVMExtReserveEnd = 64U,
  kTVMExtEnd = 128U
} TVMArgTypeCode;

/* One packed-function argument or return value; its type code says which member is live. */
typedef union {
  int64_t v_int64;
  double v_float64;
  void* v_handle;
  const char* v_str;
  DLDataType v_type;
  DLDevice v_device;
} TVMValue;

/* A byte string that may contain NULs (kTVMBytes). */
typedef struct {
  const char* data;
  size_t size;
} TVMByteArray;

/*
 * Handles. In the crt a module or function handle is an encoded integer, not a
 * pointer (see crt_runtime_api.c); never dereference one.
 */
typedef void* TVMModuleHandle;
typedef void* TVMFunctionHandle;
typedef void* TVMRetValueHandle;
typedef void* TVMStreamHandle;
typedef void* TVMObjectHandle;
typedef DLTensor* TVMArrayHandle;

/*
 * Stores msg (truncated to fit, always NUL-terminated) as the last error.
 * msg NULL stores "". Uses a fixed static buffer; never allocates.
 */
TVM_DLL void TVMAPISetLastError(const char* msg);

/* The last error message; never NULL. Valid until the next TVMAPISetLastError. */
TVM_DLL const char* TVMGetLastError(void);

/*
 * Releases a module handle. The system library is never released (returns 0).
 * Returns 0, or -1 if mod is not a registered module handle.
 */
TVM_DLL int TVMModFree(TVMModuleHandle mod);

/*
 * Looks up func_name in module mod. query_imports is ignored (the crt has no
 * imports). On success *out is the function handle.
 * Returns 0; -1 if mod is not a registered module handle;
 * kTvmErrorFunctionCallInvalidArg if func_name or out is NULL;
 * kTvmErrorFunctionNameNotFound (*out = NULL) if the module has no such function.
 */
TVM_DLL int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                              TVMFunctionHandle* out);

/* Function handles own nothing: always returns 0. */
TVM_DLL int TVMFuncFree(TVMFunctionHandle func);

/*
 * Calls func with num_args arguments. *ret_val / *ret_type_code receive the
 * result; they are first set to kTVMNullptr / NULL.
 * Returns the function's own result; -1 (last error set) if func is not a valid
 * handle; kTvmErrorFunctionCallInvalidArg if ret_val or ret_type_code is NULL,
 * num_args < 0, or arg_values / type_codes is NULL with num_args > 0;
 * kTvmErrorTimeEvaluatorBadHandle for a time-evaluator handle when no evaluator
 * is installed (TVMCrtSetTimeEvaluatorCall).
 */
TVM_DLL int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                        TVMValue* ret_val, int* ret_type_code);

/*
 * Registers f as global function name. As in TVM's CRT, f must be a
 * TVMBackendPackedCFunc converted to a handle, NOT a handle from
 * TVMFuncGetGlobal/TVMModGetFunction (C code may prefer the typed
 * TVMCrtFuncRegisterGlobal in crt/crt.h). override != 0 replaces an existing one.
 * Returns 0; kTvmErrorFunctionCallInvalidArg if name or f is NULL, or name is
 * empty or longer than TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES - 1;
 * kTvmErrorFunctionAlreadyDefined; kTvmErrorFunctionRegistryFull.
 */
TVM_DLL int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override);

/*
 * Looks up a global function. *out = its handle, or NULL when there is none
 * (still returning 0, like TVM's C++ runtime).
 * Returns 0, or kTvmErrorFunctionCallInvalidArg if name or out is NULL.
 */
TVM_DLL int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out);

/*
 * Allocates a compact tensor (struct, shape and data) from platform memory.
 * Only CPU tensors (kDLCPU). On failure *out is left unchanged and nothing leaks.
 * Returns 0; kTvmErrorFunctionCallInvalidArg for out NULL, ndim outside
 * 0..TVM_CRT_MAX_NDIM, shape NULL with ndim > 0, a negative dimension,
 * dtype_bits outside 1..255, dtype_lanes outside 1..65535, dtype_code outside
 * 0..255, or a size that overflows size_t; kTvmErrorDeviceInvalid for a
 * non-CPU device; kTvmErrorPlatformNoMemory when the platform is out of memory.
 */
TVM_DLL int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                          int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out);

/* Frees a tensor from TVMArrayAlloc (data, then struct). NULL is a no-op. Returns 0. */
TVM_DLL int TVMArrayFree(TVMArrayHandle handle);

/*
 * Allocates nbytes (rounded up to a multiple of alignment) of device memory
 * through TVMPlatformMemoryAllocate. The pointer's alignment is the platform's.
 * Returns 0; kTvmErrorFunctionCallInvalidArg if out_data is NULL, alignment is
 * not 0 or a power of two, or rounding overflows; kTvmErrorDeviceInvalid for a
 * non-CPU device; kTvmErrorPlatformNoMemory (*out_data = NULL).
 */
TVM_DLL int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment,
                                    DLDataType type_hint, void** out_data);

/*
 * Frees memory from TVMDeviceAllocDataSpace; NULL is a no-op.
 * Returns 0, kTvmErrorDeviceInvalid for a non-CPU device, or the platform's error.
 */
TVM_DLL int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr);

/*
 * Copies from's elements into to (memcpy; both must be CPU tensors). stream is
 * ignored. Returns 0; kTvmErrorFunctionCallInvalidArg if either is NULL, has a
 * bad ndim, a NULL shape or data (with elements), non-compact strides, or the
 * two byte sizes differ; kTvmErrorDeviceInvalid if either is not a CPU tensor.
 */
TVM_DLL int TVMDeviceCopyDataFromTo(DLTensor* from, DLTensor* to, TVMStreamHandle stream);

/* The crt has no reference-counted objects: always returns 0. */
TVM_DLL int TVMObjectFree(TVMObjectHandle obj);

/*
 * Frees a TVMByteArray whose struct and data both came from
 * TVMPlatformMemoryAllocate (CPU): data first, then the struct. NULL is a no-op.
 * Returns 0 or the platform's error.
 */
TVM_DLL int TVMByteArrayFree(TVMByteArray* arr);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_C_RUNTIME_API_H_ */
