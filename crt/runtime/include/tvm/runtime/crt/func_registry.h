/*
 * func_registry.h: look up packed C functions by name.
 *
 * A TVMFuncRegistry pairs a names blob with an array of function pointers. It
 * is read-only, so generated code can place one in flash. The blob layout is
 * TVM v0.18's (reference 5.1):
 *
 *   bytes 0-1   number of functions N, uint16 little-endian
 *   then        N names, each NUL-terminated, in index order
 *   then        one more NUL, which ends the list
 *
 *   e.g. "\x02\x00" "Foo\0" "Bar\0" (the C literal adds the final NUL).
 *
 * funcs[i] is the function named by the i-th name. A function's index is its
 * identity in a function handle (crt_runtime_api.c), so indexes never change
 * once assigned.
 *
 * A TVMMutableFuncRegistry is a registry in a caller's RAM buffer that can
 * grow (the global function table). Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_FUNC_REGISTRY_H_
#define TVM_RUNTIME_CRT_FUNC_REGISTRY_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <crt_config.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Index of a function within a registry. Handles keep 15 bits of it. */
typedef uint16_t tvm_function_index_t;

/* Index of a module in the crt's module table. */
typedef uint16_t tvm_module_index_t;

/* A read-only function registry. Both pointers must stay valid while it is used. */
typedef struct TVMFuncRegistry {
  /* The names blob, laid out as described above. */
  const char* names;
  /* One function per name, in the same order. */
  const TVMBackendPackedCFunc* funcs;
} TVMFuncRegistry;

/*
 * Compares the registry string at *cursor with name, like strcmp, and leaves
 * *cursor on the NUL that ends the registry string, whatever the result.
 * Returns 0 when equal; otherwise (registry char - name char) as unsigned
 * chars, at the first difference (a NUL on either side counts as a difference).
 * Both strings must be NUL-terminated. Exposed for tests; lookups use it.
 */
int TVMFuncRegistry_StrCmpCursor(const char** cursor, const char* name);

/* The number of functions in reg (blob bytes 0-1). reg must be valid. */
tvm_function_index_t TVMFuncRegistry_GetNumFuncs(const TVMFuncRegistry* reg);

/*
 * Finds name in reg; *function_index = its index. Scans at most N names and
 * stops at the list's end marker.
 * Returns 0; kTvmErrorFunctionNameNotFound (*function_index unchanged) if
 * absent or if reg, its names, name or function_index is NULL.
 */
tvm_crt_error_t TVMFuncRegistry_Lookup(const TVMFuncRegistry* reg, const char* name,
                                       tvm_function_index_t* function_index);

/*
 * *out_func = the function at index.
 * Returns 0; kTvmErrorFunctionIndexInvalid (*out_func unchanged) if
 * index >= N or if reg, its arrays or out_func is NULL.
 */
tvm_crt_error_t TVMFuncRegistry_GetByIndex(const TVMFuncRegistry* reg, tvm_function_index_t index,
                                           TVMBackendPackedCFunc* out_func);

/* A registry in RAM that TVMMutableFuncRegistry_Set can extend. */
typedef struct TVMMutableFuncRegistry {
  /* names and funcs both point into the buffer given to Create. */
  TVMFuncRegistry registry;
  /* How many functions fit in funcs. */
  size_t max_functions;
} TVMMutableFuncRegistry;

/* Bytes a mutable registry plans per function: an average name, its NUL, a pointer. */
#define TVM_CRT_FUNC_REGISTRY_AVERAGE_ENTRY_BYTES \
  (TVM_CRT_AVERAGE_FUNCTION_NAME_STRLEN_BYTES + 1 + sizeof(TVMBackendPackedCFunc))

/*
 * Makes reg an empty registry inside buffer (TVM v0.18's capacity rule,
 * reference 5.2): max_functions = buffer_size_bytes / AVERAGE_ENTRY_BYTES
 * (capped at 0x7fff, the handle limit); funcs[] takes the end of the buffer,
 * names the rest from the start. funcs[] is placed on a pointer-aligned
 * address, so when buffer + buffer_size_bytes is pointer-aligned the layout
 * is exactly TVM's; otherwise the names area loses the few padding bytes.
 * The buffer must outlive reg and not be touched by anything else.
 * Returns 0; kTvmErrorBufferTooSmall if buffer_size_bytes < AVERAGE_ENTRY_BYTES
 * or leaves no room for an empty names blob; kTvmErrorFunctionCallInvalidArg if
 * reg or buffer is NULL.
 */
tvm_crt_error_t TVMMutableFuncRegistry_Create(TVMMutableFuncRegistry* reg, uint8_t* buffer,
                                              size_t buffer_size_bytes);

/*
 * Adds func as name, or replaces the function of an existing name when
 * override is true. A new name gets the next index.
 * The names blob always keeps its end-of-list NUL inside the names area, so a
 * registry filled exactly never overwrites funcs[0] (TVM v0.18 did; reference
 * quirk 9.12). Hence a new name needs strlen(name) + 2 free bytes, one more
 * than TVM required.
 * Returns 0; kTvmErrorFunctionAlreadyDefined if name exists and !override;
 * kTvmErrorFunctionRegistryFull if all max_functions slots are used or the
 * name does not fit; kTvmErrorFunctionCallInvalidArg if reg, name or func is
 * NULL, name is empty, or strlen(name) >= TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES.
 */
tvm_crt_error_t TVMMutableFuncRegistry_Set(TVMMutableFuncRegistry* reg, const char* name,
                                           TVMBackendPackedCFunc func, bool override);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_FUNC_REGISTRY_H_ */
