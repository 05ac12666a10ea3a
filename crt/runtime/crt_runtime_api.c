/*
 * crt_runtime_api.c: the TVM C runtime API over crt modules and registries.
 *
 * Handles are integers, never pointers (reference 5.3; the values are
 * wire-visible and match TVM v0.18):
 *   module handle    (module_index | 0x8000)
 *   function handle  ((module_index | 0x8000) << 16) | (function_index | 0x8000)
 *     module_index = TVM_CRT_MAX_REGISTERED_MODULES  global functions
 *     module_index = 0x7fff                          time evaluators
 * Handles come back from the host, so decoding validates everything (fixing
 * TVM's quirk 9.11): both valid bits must be set, nothing above bit 31, the
 * module index must be < TVM_CRT_MAX_REGISTERED_MODULES and registered (no
 * off-by-one), and the function index must exist. NULL is never valid.
 *
 * Deviation from TVM v0.18: a module function's resource_handle is the
 * TVMModule* (as the registry/module RFC specifies), not module->registry.
 */
#include <string.h>

#include <crt_config.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/func_registry.h>
#include <tvm/runtime/crt/module.h>
#include <tvm/runtime/crt/platform.h>

/* Bytes of the last-error message buffer, including the NUL. */
#ifndef TVM_CRT_LAST_ERROR_BYTES
#define TVM_CRT_LAST_ERROR_BYTES 128
#endif
TVM_CRT_STATIC_CHECK(TVM_CRT_LAST_ERROR_BYTES >= 32 && TVM_CRT_LAST_ERROR_BYTES <= 4096,
                     last_error_bytes);
TVM_CRT_STATIC_CHECK(sizeof(uintptr_t) >= 4, handles_need_32_bits);
TVM_CRT_STATIC_CHECK(TVM_CRT_MAX_REGISTERED_MODULES < 0x7fff, module_index_below_time_evaluator);

#define HANDLE_VALID_BIT 0x8000u
#define HANDLE_INDEX_MASK 0x7fffu
#define FUNCTION_HANDLE_MODULE_VALID_BIT 0x80000000u
/* Module index of global functions in a function handle. */
#define GLOBALS_MODULE_INDEX ((tvm_module_index_t)TVM_CRT_MAX_REGISTERED_MODULES)
/* Module index of time evaluators in a function handle. */
#define TIME_EVALUATOR_MODULE_INDEX ((tvm_module_index_t)0x7fff)

static char g_last_error[TVM_CRT_LAST_ERROR_BYTES];

static const TVMModule* g_modules[TVM_CRT_MAX_REGISTERED_MODULES];
static int g_system_lib_registered;
static TVMModuleHandle g_system_lib_handle;

static TVMCrtTimeEvaluatorCall g_time_evaluator_call;

static int g_initialized;
static TVMMutableFuncRegistry g_global_registry;
/* The union aligns the buffer, so funcs[] lands exactly at its end. */
static union {
  uint8_t bytes[TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES];
  TVMBackendPackedCFunc align;
} g_global_registry_buffer;

/* ---- last error -------------------------------------------------------------------------------
 */

/* Appends s at pos, truncating; keeps g_last_error NUL-terminated. Returns the new end. */
static size_t AppendError(size_t pos, const char* s) {
  while (pos + 1u < sizeof(g_last_error) && *s != '\0') {
    g_last_error[pos++] = *s++;
  }
  g_last_error[pos] = '\0';
  return pos;
}

/* Appends " 0x<hex value>" at pos. Returns the new end. */
static size_t AppendErrorHex(size_t pos, uintptr_t value) {
  static const char kDigits[] = "0123456789abcdef";
  char digits[2u * sizeof(uintptr_t) + 1u];
  size_t n = sizeof(digits) - 1u;
  digits[n] = '\0';
  do {
    digits[--n] = kDigits[value & 0xfu];
    value >>= 4;
  } while (value != 0u && n > 0u);
  pos = AppendError(pos, " 0x");
  return AppendError(pos, &digits[n]);
}

/* Sets the last error to "msg 0x<value>". */
static void SetLastErrorWithValue(const char* msg, uintptr_t value) {
  AppendErrorHex(AppendError(0, msg), value);
}

void TVMAPISetLastError(const char* msg) { AppendError(0, msg == NULL ? "" : msg); }

const char* TVMGetLastError(void) { return g_last_error; }

/* ---- handles ----------------------------------------------------------------------------------
 */

static TVMModuleHandle EncodeModuleHandle(tvm_module_index_t module_index) {
  return (TVMModuleHandle)(uintptr_t)(module_index | HANDLE_VALID_BIT);
}

static TVMFunctionHandle EncodeFunctionHandle(tvm_module_index_t module_index,
                                              tvm_function_index_t function_index) {
  uintptr_t value = ((uintptr_t)(module_index | HANDLE_VALID_BIT) << 16) |
                    (uintptr_t)(function_index | HANDLE_VALID_BIT);
  return (TVMFunctionHandle)value;
}

/* *module_index = the slot of a registered module. Returns 0, or -1 with the last error set. */
static int DecodeModuleHandle(TVMModuleHandle handle, tvm_module_index_t* module_index) {
  uintptr_t value = (uintptr_t)handle;
  uintptr_t index = value & HANDLE_INDEX_MASK;
  if ((value & ~(uintptr_t)0xffffu) != 0u || (value & HANDLE_VALID_BIT) == 0u ||
      index >= TVM_CRT_MAX_REGISTERED_MODULES || g_modules[index] == NULL) {
    SetLastErrorWithValue("invalid module handle", value);
    return -1;
  }
  *module_index = (tvm_module_index_t)index;
  return 0;
}

typedef enum { kFunctionKindGlobal, kFunctionKindModule, kFunctionKindTimeEvaluator } FunctionKind;

typedef struct {
  FunctionKind kind;
  tvm_module_index_t module_index;     /* kFunctionKindModule only */
  tvm_function_index_t function_index; /* index in its registry, or the evaluator's index */
} DecodedFunctionHandle;

/* Decodes and bounds-checks a function handle. Returns 0, or -1 with the last error set. */
static int DecodeFunctionHandle(TVMFunctionHandle handle, DecodedFunctionHandle* out) {
  uintptr_t value = (uintptr_t)handle;
  tvm_module_index_t module_index = (tvm_module_index_t)((value >> 16) & HANDLE_INDEX_MASK);
  tvm_function_index_t function_index = (tvm_function_index_t)(value & HANDLE_INDEX_MASK);
  const TVMFuncRegistry* registry = NULL;

  /* Two 16-bit shifts: a single 32-bit shift is undefined where uintptr_t has 32 bits. */
  if (((value >> 16) >> 16) != 0u || (value & FUNCTION_HANDLE_MODULE_VALID_BIT) == 0u ||
      (value & HANDLE_VALID_BIT) == 0u) {
    SetLastErrorWithValue("invalid function handle", value);
    return -1;
  }
  out->module_index = module_index;
  out->function_index = function_index;
  if (module_index == TIME_EVALUATOR_MODULE_INDEX) {
    out->kind = kFunctionKindTimeEvaluator;
    return 0;
  }
  if (module_index == GLOBALS_MODULE_INDEX) {
    out->kind = kFunctionKindGlobal;
    if (g_initialized) {
      registry = &g_global_registry.registry;
    }
  } else if (module_index < TVM_CRT_MAX_REGISTERED_MODULES && g_modules[module_index] != NULL) {
    out->kind = kFunctionKindModule;
    registry = g_modules[module_index]->registry;
  }
  if (registry == NULL) {
    SetLastErrorWithValue("function handle names no registered module", value);
    return -1;
  }
  if (function_index >= TVMFuncRegistry_GetNumFuncs(registry)) {
    SetLastErrorWithValue("function handle index out of range", value);
    return -1;
  }
  return 0;
}

TVMFunctionHandle TVMCrtEncodeTimeEvaluatorHandle(uint16_t index) {
  if (index > HANDLE_INDEX_MASK) {
    return NULL;
  }
  return EncodeFunctionHandle(TIME_EVALUATOR_MODULE_INDEX, index);
}

void TVMCrtSetTimeEvaluatorCall(TVMCrtTimeEvaluatorCall call) { g_time_evaluator_call = call; }

/* ---- modules ----------------------------------------------------------------------------------
 */

tvm_crt_error_t TVMCrtModuleRegister(const TVMModule* mod, TVMModuleHandle* out_handle) {
  tvm_module_index_t i;
  if (mod == NULL || mod->registry == NULL || mod->registry->names == NULL || out_handle == NULL) {
    TVMAPISetLastError("TVMCrtModuleRegister: NULL module, registry or out_handle");
    return kTvmErrorFunctionCallInvalidArg;
  }
  for (i = 0; i < TVM_CRT_MAX_REGISTERED_MODULES; i++) {
    if (g_modules[i] == mod) {
      *out_handle = EncodeModuleHandle(i);
      return kTvmErrorNoError;
    }
  }
  for (i = 0; i < TVM_CRT_MAX_REGISTERED_MODULES; i++) {
    if (g_modules[i] == NULL) {
      g_modules[i] = mod;
      *out_handle = EncodeModuleHandle(i);
      return kTvmErrorNoError;
    }
  }
  TVMAPISetLastError("TVMCrtModuleRegister: module table full");
  return kTvmErrorFunctionRegistryFull;
}

int TVMModFree(TVMModuleHandle mod) {
  tvm_module_index_t index;
  if (DecodeModuleHandle(mod, &index) != 0) {
    return -1;
  }
  if (g_system_lib_registered && mod == g_system_lib_handle) {
    return 0; /* the system library lives as long as the runtime */
  }
  g_modules[index] = NULL;
  return 0;
}

int TVMModGetFunction(TVMModuleHandle mod, const char* func_name, int query_imports,
                      TVMFunctionHandle* out) {
  tvm_module_index_t module_index;
  tvm_function_index_t function_index;
  (void)query_imports; /* crt modules have no imports */

  if (DecodeModuleHandle(mod, &module_index) != 0) {
    return -1;
  }
  if (func_name == NULL || out == NULL) {
    TVMAPISetLastError("TVMModGetFunction: NULL name or out");
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (TVMFuncRegistry_Lookup(g_modules[module_index]->registry, func_name, &function_index) !=
      kTvmErrorNoError) {
    *out = NULL;
    return kTvmErrorFunctionNameNotFound;
  }
  *out = EncodeFunctionHandle(module_index, function_index);
  return 0;
}

/* ---- functions --------------------------------------------------------------------------------
 */

int TVMFuncFree(TVMFunctionHandle func) {
  (void)func;
  return 0;
}

int TVMObjectFree(TVMObjectHandle obj) {
  (void)obj;
  return 0;
}

int TVMFuncGetGlobal(const char* name, TVMFunctionHandle* out) {
  tvm_function_index_t index;
  if (name == NULL || out == NULL) {
    TVMAPISetLastError("TVMFuncGetGlobal: NULL name or out");
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (!g_initialized ||
      TVMFuncRegistry_Lookup(&g_global_registry.registry, name, &index) != kTvmErrorNoError) {
    *out = NULL; /* not found is not an error, as in TVM's C++ runtime */
    return 0;
  }
  *out = EncodeFunctionHandle(GLOBALS_MODULE_INDEX, index);
  return 0;
}

int TVMCrtFuncRegisterGlobal(const char* name, TVMBackendPackedCFunc func, int override) {
  tvm_crt_error_t err;
  if (!g_initialized) {
    TVMAPISetLastError("TVMFuncRegisterGlobal: runtime not initialized");
    return kTvmErrorDeviceBadLifecycle;
  }
  err = TVMMutableFuncRegistry_Set(&g_global_registry, name, func, override != 0);
  if (err != kTvmErrorNoError) {
    SetLastErrorWithValue("TVMFuncRegisterGlobal failed:", (uintptr_t)err);
  }
  return err;
}

int TVMFuncRegisterGlobal(const char* name, TVMFunctionHandle f, int override) {
  /* TVM's CRT convention: f is the C function itself, not an encoded handle. */
  return TVMCrtFuncRegisterGlobal(name, (TVMBackendPackedCFunc)(uintptr_t)f, override);
}

int TVMFuncCall(TVMFunctionHandle func, TVMValue* arg_values, int* type_codes, int num_args,
                TVMValue* ret_val, int* ret_type_code) {
  DecodedFunctionHandle decoded;
  const TVMFuncRegistry* registry;
  TVMBackendPackedCFunc target = NULL;
  void* resource_handle = NULL;

  if (DecodeFunctionHandle(func, &decoded) != 0) {
    return -1;
  }
  if (ret_val == NULL || ret_type_code == NULL || num_args < 0 ||
      (num_args > 0 && (arg_values == NULL || type_codes == NULL))) {
    TVMAPISetLastError("TVMFuncCall: NULL arguments or result");
    return kTvmErrorFunctionCallInvalidArg;
  }
  ret_val->v_handle = NULL;
  *ret_type_code = kTVMNullptr;

  if (decoded.kind == kFunctionKindTimeEvaluator) {
    if (g_time_evaluator_call == NULL) {
      SetLastErrorWithValue("TVMFuncCall: no time evaluator installed; handle", (uintptr_t)func);
      return kTvmErrorTimeEvaluatorBadHandle;
    }
    return g_time_evaluator_call(decoded.function_index, arg_values, type_codes, num_args, ret_val,
                                 ret_type_code);
  }
  if (decoded.kind == kFunctionKindGlobal) {
    registry = &g_global_registry.registry;
  } else {
    registry = g_modules[decoded.module_index]->registry;
    resource_handle = (void*)(uintptr_t)g_modules[decoded.module_index];
  }
  if (TVMFuncRegistry_GetByIndex(registry, decoded.function_index, &target) != kTvmErrorNoError ||
      target == NULL) {
    SetLastErrorWithValue("TVMFuncCall: no function behind handle", (uintptr_t)func);
    return -1;
  }
  return target(arg_values, type_codes, num_args, ret_val, ret_type_code, resource_handle);
}

/* ---- built-in globals -------------------------------------------------------------------------
 */

/* runtime.SystemLib(): the system library's module handle, registering it on first call. */
static int SystemLib(TVMValue* args, int* type_codes, int num_args, TVMValue* ret_value,
                     int* ret_tcode, void* resource_handle) {
  tvm_crt_error_t err;
  /* Arguments are ignored: TVM's C++ runtime accepts an optional symbol prefix here. */
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  if (ret_value == NULL || ret_tcode == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  ret_value->v_handle = NULL;
  *ret_tcode = kTVMNullptr;
  if (!g_system_lib_registered) {
    const TVMModule* lib = TVMSystemLibEntryPoint();
    if (lib == NULL) {
      TVMAPISetLastError("runtime.SystemLib: the firmware has no system library");
      return kTvmErrorFunctionCallNotImplemented;
    }
    err = TVMCrtModuleRegister(lib, &g_system_lib_handle);
    if (err != kTvmErrorNoError) {
      return err;
    }
    g_system_lib_registered = 1;
  }
  ret_value->v_handle = g_system_lib_handle;
  *ret_tcode = kTVMModuleHandle;
  return 0;
}

/*
 * tvm.rpc.server.ModuleGetFunction(module, name, query_imports): a function
 * handle, or kTVMNullptr (with success) when the module has no such function.
 * Errors: kTvmErrorFunctionCallNumArguments unless 3 arguments;
 * kTvmErrorFunctionCallWrongArgType unless (Module, Str, Int or Bool);
 * TVMModGetFunction's other errors.
 */
static int ModuleGetFunction(TVMValue* args, int* type_codes, int num_args, TVMValue* ret_value,
                             int* ret_tcode, void* resource_handle) {
  int err;
  (void)resource_handle;
  if (ret_value == NULL || ret_tcode == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  ret_value->v_handle = NULL;
  *ret_tcode = kTVMNullptr;
  if (num_args != 3) {
    TVMAPISetLastError("tvm.rpc.server.ModuleGetFunction: expects 3 arguments");
    return kTvmErrorFunctionCallNumArguments;
  }
  if (args == NULL || type_codes == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (type_codes[0] != kTVMModuleHandle || type_codes[1] != kTVMStr ||
      (type_codes[2] != kTVMArgInt && type_codes[2] != kTVMArgBool)) {
    TVMAPISetLastError("tvm.rpc.server.ModuleGetFunction: expects (Module, Str, Int)");
    return kTvmErrorFunctionCallWrongArgType;
  }
  err = TVMModGetFunction(args[0].v_handle, args[1].v_str, args[2].v_int64 != 0,
                          &ret_value->v_handle);
  if (err == 0) {
    *ret_tcode = kTVMPackedFuncHandle;
    return 0;
  }
  ret_value->v_handle = NULL;
  /* As in TVM's C++ runtime: a missing function is a NULL result, not an error. */
  return err == kTvmErrorFunctionNameNotFound ? 0 : err;
}

typedef struct {
  const char* name;
  TVMBackendPackedCFunc func;
} BuiltinGlobal;

/*
 * The built-in globals, in index order. Their handles (0x80028000 + index) are
 * seen by hosts, so append only; never reorder.
 */
static const BuiltinGlobal kBuiltinGlobals[] = {
    {"runtime.SystemLib", SystemLib},                        /* 0 */
    {"tvm.rpc.server.ModuleGetFunction", ModuleGetFunction}, /* 1 */
    /* 2 runtime.RPCTimeEvaluator and 3 tvm.rpc.server.GetCRTMaxPacketSize go here. */
};

tvm_crt_error_t TVMInitializeRuntime(void) {
  size_t i;
  tvm_crt_error_t err;

  g_last_error[0] = '\0';
  for (i = 0; i < TVM_CRT_MAX_REGISTERED_MODULES; i++) {
    g_modules[i] = NULL;
  }
  g_system_lib_registered = 0;
  g_system_lib_handle = NULL;
  g_time_evaluator_call = NULL;

  g_initialized = 0;
  err = TVMMutableFuncRegistry_Create(&g_global_registry, g_global_registry_buffer.bytes,
                                      sizeof(g_global_registry_buffer.bytes));
  if (err != kTvmErrorNoError) {
    return err;
  }
  g_initialized = 1;
  for (i = 0; i < sizeof(kBuiltinGlobals) / sizeof(kBuiltinGlobals[0]); i++) {
    err = TVMMutableFuncRegistry_Set(&g_global_registry, kBuiltinGlobals[i].name,
                                     kBuiltinGlobals[i].func, false);
    if (err != kTvmErrorNoError) {
      g_initialized = 0;
      return err;
    }
  }
  return kTvmErrorNoError;
}

/* ---- memory -----------------------------------------------------------------------------------
 */

static const DLDevice kCpuDevice = {kDLCPU, 0};

tvm_crt_error_t TVMCrtCompactTensorBytes(int ndim, const int64_t* shape, const int64_t* strides,
                                         DLDataType dtype, size_t* out_bytes) {
  size_t elements = 1;
  size_t element_bytes;
  uint64_t expected_stride = 1;
  int i;

  if (ndim < 0 || ndim > TVM_CRT_MAX_NDIM || (ndim > 0 && shape == NULL) || dtype.bits == 0 ||
      dtype.lanes == 0) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  for (i = 0; i < ndim; i++) {
    if (shape[i] < 0 || (uint64_t)shape[i] > (uint64_t)SIZE_MAX) {
      return kTvmErrorFunctionCallInvalidArg;
    }
    if (shape[i] != 0 && elements > SIZE_MAX / (size_t)shape[i]) {
      return kTvmErrorFunctionCallInvalidArg;
    }
    elements *= (size_t)shape[i];
  }
  if (strides != NULL && elements != 0) {
    /* Row-major compact; a dimension of extent 1 may carry any stride. */
    for (i = ndim - 1; i >= 0; i--) {
      if (shape[i] != 1 && (strides[i] < 0 || (uint64_t)strides[i] != expected_stride)) {
        return kTvmErrorFunctionCallInvalidArg;
      }
      expected_stride *= (uint64_t)shape[i]; /* fits: the element count fits size_t */
    }
  }
  element_bytes = ((size_t)dtype.bits * dtype.lanes + 7u) / 8u;
  if (elements != 0 && element_bytes > SIZE_MAX / elements) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  *out_bytes = elements * element_bytes;
  return kTvmErrorNoError;
}

int TVMDeviceAllocDataSpace(DLDevice dev, size_t nbytes, size_t alignment, DLDataType type_hint,
                            void** out_data) {
  tvm_crt_error_t err;
  (void)type_hint;
  if (out_data == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  *out_data = NULL;
  if (dev.device_type != kDLCPU) {
    return kTvmErrorDeviceInvalid;
  }
  if (alignment > 1u) {
    size_t rem;
    if ((alignment & (alignment - 1u)) != 0u) {
      return kTvmErrorFunctionCallInvalidArg;
    }
    rem = nbytes % alignment;
    if (rem != 0u) {
      if (nbytes > SIZE_MAX - (alignment - rem)) {
        return kTvmErrorFunctionCallInvalidArg;
      }
      nbytes += alignment - rem;
    }
  }
  err = TVMPlatformMemoryAllocate(nbytes, dev, out_data);
  if (err != kTvmErrorNoError) {
    *out_data = NULL;
    return err;
  }
  return 0;
}

int TVMDeviceFreeDataSpace(DLDevice dev, void* ptr) {
  if (ptr == NULL) {
    return 0;
  }
  if (dev.device_type != kDLCPU) {
    return kTvmErrorDeviceInvalid;
  }
  return TVMPlatformMemoryFree(ptr, dev);
}

int TVMDeviceCopyDataFromTo(DLTensor* from, DLTensor* to, TVMStreamHandle stream) {
  size_t from_bytes;
  size_t to_bytes;
  (void)stream;
  if (from == NULL || to == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (from->device.device_type != kDLCPU || to->device.device_type != kDLCPU) {
    return kTvmErrorDeviceInvalid;
  }
  if (TVMCrtCompactTensorBytes(from->ndim, from->shape, from->strides, from->dtype, &from_bytes) !=
          0 ||
      TVMCrtCompactTensorBytes(to->ndim, to->shape, to->strides, to->dtype, &to_bytes) != 0 ||
      from_bytes != to_bytes) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (from_bytes == 0u) {
    return 0;
  }
  if (from->data == NULL || to->data == NULL || from->byte_offset > (uint64_t)SIZE_MAX ||
      to->byte_offset > (uint64_t)SIZE_MAX) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  memmove((uint8_t*)to->data + (size_t)to->byte_offset,
          (const uint8_t*)from->data + (size_t)from->byte_offset, from_bytes);
  return 0;
}

int TVMArrayAlloc(const tvm_index_t* shape, int ndim, int dtype_code, int dtype_bits,
                  int dtype_lanes, int device_type, int device_id, TVMArrayHandle* out) {
  DLDevice dev;
  DLDataType dtype;
  size_t data_bytes;
  void* block = NULL;
  void* data = NULL;
  DLTensor* tensor;
  int64_t* shape_copy;
  int err;
  int i;

  if (out == NULL || dtype_code < 0 || dtype_code > 255 || dtype_bits < 1 || dtype_bits > 255 ||
      dtype_lanes < 1 || dtype_lanes > 65535) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  dtype.code = (uint8_t)dtype_code;
  dtype.bits = (uint8_t)dtype_bits;
  dtype.lanes = (uint16_t)dtype_lanes;
  if (TVMCrtCompactTensorBytes(ndim, shape, NULL, dtype, &data_bytes) != kTvmErrorNoError) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (device_type != kDLCPU) {
    return kTvmErrorDeviceInvalid;
  }
  dev.device_type = kDLCPU;
  dev.device_id = device_id;

  /* The DLTensor and its shape share one block; sizeof(DLTensor) keeps int64 alignment. */
  err = TVMPlatformMemoryAllocate(sizeof(DLTensor) + (size_t)ndim * sizeof(int64_t), dev, &block);
  if (err != kTvmErrorNoError) {
    return err;
  }
  /* At least one byte, so data is never NULL even for an empty tensor. */
  err = TVMDeviceAllocDataSpace(dev, data_bytes == 0u ? 1u : data_bytes, 0, dtype, &data);
  if (err != 0) {
    (void)TVMPlatformMemoryFree(block, dev);
    return err;
  }
  tensor = (DLTensor*)block;
  shape_copy = (int64_t*)(void*)((uint8_t*)block + sizeof(DLTensor));
  for (i = 0; i < ndim; i++) {
    shape_copy[i] = shape[i];
  }
  tensor->data = data;
  tensor->device = dev;
  tensor->ndim = ndim;
  tensor->dtype = dtype;
  tensor->shape = ndim > 0 ? shape_copy : NULL;
  tensor->strides = NULL;
  tensor->byte_offset = 0;
  *out = tensor;
  return 0;
}

int TVMArrayFree(TVMArrayHandle handle) {
  int data_err;
  int block_err;
  if (handle == NULL) {
    return 0;
  }
  data_err = TVMDeviceFreeDataSpace(handle->device, handle->data);
  block_err = TVMPlatformMemoryFree(handle, handle->device);
  return data_err != 0 ? data_err : block_err;
}

int TVMByteArrayFree(TVMByteArray* arr) {
  int data_err = 0;
  if (arr == NULL) {
    return 0;
  }
  if (arr->data != NULL) {
    data_err = TVMPlatformMemoryFree((void*)(uintptr_t)arr->data, kCpuDevice);
  }
  {
    int struct_err = TVMPlatformMemoryFree(arr, kCpuDevice);
    return data_err != 0 ? data_err : struct_err;
  }
}

/* ---- backend ----------------------------------------------------------------------------------
 */

int TVMBackendGetFuncFromEnv(void* mod_node, const char* func_name, TVMFunctionHandle* out) {
  int err;
  (void)mod_node;
  err = TVMFuncGetGlobal(func_name, out);
  if (err != 0) {
    return err;
  }
  return *out == NULL ? kTvmErrorFunctionNameNotFound : 0;
}

void* TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t nbytes, int dtype_code_hint,
                               int dtype_bits_hint) {
  DLDevice dev;
  void* ptr = NULL;
  (void)dtype_code_hint;
  (void)dtype_bits_hint;
  if (device_type != kDLCPU || nbytes > (uint64_t)SIZE_MAX) {
    return NULL;
  }
  dev.device_type = kDLCPU;
  dev.device_id = device_id;
  if (TVMPlatformMemoryAllocate((size_t)nbytes, dev, &ptr) != kTvmErrorNoError) {
    return NULL;
  }
  return ptr;
}

int TVMBackendFreeWorkspace(int device_type, int device_id, void* ptr) {
  DLDevice dev;
  if (ptr == NULL) {
    return 0;
  }
  if (device_type != kDLCPU) {
    return kTvmErrorDeviceInvalid;
  }
  dev.device_type = kDLCPU;
  dev.device_id = device_id;
  return TVMPlatformMemoryFree(ptr, dev);
}

int TVMBackendParallelLaunch(FTVMParallelLambda flambda, void* cdata, int num_task) {
  TVMParallelGroupEnv env;
  (void)num_task; /* one task, inline: the crt has no threads */
  if (flambda == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  env.sync_handle = NULL;
  env.num_task = 1;
  return flambda(0, &env, cdata);
}

int TVMBackendParallelBarrier(int task_id, TVMParallelGroupEnv* penv) {
  (void)task_id;
  (void)penv;
  return 0;
}
