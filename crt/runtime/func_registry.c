/*
 * func_registry.c: name -> function lookup over TVM's names blob.
 *
 * Lookups stop at whichever comes first, the count in bytes 0-1 or the
 * end-of-list NUL, so a blob whose count and names disagree cannot send a scan
 * past its end marker.
 */
#include <tvm/runtime/crt/func_registry.h>

#include <string.h>

/* Bytes 0-1 of the blob hold the count. */
#define NAMES_HEADER_BYTES 2u
/* Function indexes live in 15 bits of a handle. */
#define MAX_FUNCTION_INDEX 0x7fffu

TVM_CRT_STATIC_CHECK(TVM_CRT_FUNC_REGISTRY_AVERAGE_ENTRY_BYTES > sizeof(TVMBackendPackedCFunc),
                     func_registry_entry_has_name_room);

/* Length of s, or max when s has no NUL in its first max bytes. */
static size_t BoundedStrLen(const char* s, size_t max) {
  size_t n = 0;
  while (n < max && s[n] != '\0') {
    n++;
  }
  return n;
}

static void StoreCount(char* names, tvm_function_index_t count) {
  names[0] = (char)(count & 0xffu);
  names[1] = (char)((count >> 8) & 0xffu);
}

int TVMFuncRegistry_StrCmpCursor(const char** cursor, const char* name) {
  const char* c = *cursor;
  int result;
  while (*c != '\0' && *c == *name) {
    c++;
    name++;
  }
  result = (int)(unsigned char)*c - (int)(unsigned char)*name;
  while (*c != '\0') {
    c++;
  }
  *cursor = c;
  return result;
}

tvm_function_index_t TVMFuncRegistry_GetNumFuncs(const TVMFuncRegistry* reg) {
  const unsigned char* n = (const unsigned char*)reg->names;
  return (tvm_function_index_t)(n[0] | (n[1] << 8));
}

tvm_crt_error_t TVMFuncRegistry_Lookup(const TVMFuncRegistry* reg, const char* name,
                                       tvm_function_index_t* function_index) {
  tvm_function_index_t count;
  tvm_function_index_t idx;
  const char* cursor;

  if (reg == NULL || reg->names == NULL || name == NULL || function_index == NULL) {
    return kTvmErrorFunctionNameNotFound;
  }
  count = TVMFuncRegistry_GetNumFuncs(reg);
  cursor = reg->names + NAMES_HEADER_BYTES;
  for (idx = 0; idx < count && *cursor != '\0'; idx++) {
    if (TVMFuncRegistry_StrCmpCursor(&cursor, name) == 0) {
      *function_index = idx;
      return kTvmErrorNoError;
    }
    cursor++; /* past this name's NUL */
  }
  return kTvmErrorFunctionNameNotFound;
}

tvm_crt_error_t TVMFuncRegistry_GetByIndex(const TVMFuncRegistry* reg, tvm_function_index_t index,
                                           TVMBackendPackedCFunc* out_func) {
  if (reg == NULL || reg->names == NULL || reg->funcs == NULL || out_func == NULL) {
    return kTvmErrorFunctionIndexInvalid;
  }
  if (index >= TVMFuncRegistry_GetNumFuncs(reg)) {
    return kTvmErrorFunctionIndexInvalid;
  }
  *out_func = reg->funcs[index];
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMMutableFuncRegistry_Create(TVMMutableFuncRegistry* reg, uint8_t* buffer,
                                              size_t buffer_size_bytes) {
  const size_t ptr_bytes = sizeof(TVMBackendPackedCFunc);
  size_t max_functions;
  size_t funcs_offset;

  if (reg == NULL || buffer == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (buffer_size_bytes < TVM_CRT_FUNC_REGISTRY_AVERAGE_ENTRY_BYTES) {
    return kTvmErrorBufferTooSmall;
  }
  max_functions = buffer_size_bytes / TVM_CRT_FUNC_REGISTRY_AVERAGE_ENTRY_BYTES;
  if (max_functions > MAX_FUNCTION_INDEX) {
    max_functions = MAX_FUNCTION_INDEX;
  }
  funcs_offset = buffer_size_bytes - max_functions * ptr_bytes;
  /* sizeof is a multiple of the alignment, so this aligns funcs[]. */
  funcs_offset -= (size_t)(((uintptr_t)buffer + funcs_offset) % ptr_bytes);
  /* Room for the count and the end-of-list NUL of an empty blob. */
  if (funcs_offset < NAMES_HEADER_BYTES + 1u) {
    return kTvmErrorBufferTooSmall;
  }

  buffer[0] = 0;
  buffer[1] = 0;
  buffer[NAMES_HEADER_BYTES] = 0;
  reg->registry.names = (const char*)buffer;
  reg->registry.funcs = (const TVMBackendPackedCFunc*)(void*)(buffer + funcs_offset);
  reg->max_functions = max_functions;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMMutableFuncRegistry_Set(TVMMutableFuncRegistry* reg, const char* name,
                                           TVMBackendPackedCFunc func, bool override) {
  char* names;
  TVMBackendPackedCFunc* funcs;
  const char* names_limit; /* first byte past the names area (= funcs) */
  tvm_function_index_t count;
  tvm_function_index_t idx;
  char* end_of_list;
  size_t name_len;

  if (reg == NULL || name == NULL || func == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  name_len = BoundedStrLen(name, TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES);
  if (name_len == 0 || name_len >= TVM_CRT_MAX_FUNCTION_NAME_LENGTH_BYTES) {
    return kTvmErrorFunctionCallInvalidArg;
  }

  /* The buffer is the caller's writable memory given to Create; the const in
   * TVMFuncRegistry only describes how lookups see it. */
  names = (char*)reg->registry.names;
  funcs = (TVMBackendPackedCFunc*)reg->registry.funcs;
  names_limit = (const char*)(const void*)funcs;

  if (TVMFuncRegistry_Lookup(&reg->registry, name, &idx) == kTvmErrorNoError) {
    if (!override) {
      return kTvmErrorFunctionAlreadyDefined;
    }
    funcs[idx] = func;
    return kTvmErrorNoError;
  }

  count = TVMFuncRegistry_GetNumFuncs(&reg->registry);
  if ((size_t)count >= reg->max_functions) {
    return kTvmErrorFunctionRegistryFull;
  }

  /* Walk to the end-of-list NUL. */
  end_of_list = names + NAMES_HEADER_BYTES;
  for (idx = 0; idx < count && end_of_list < names_limit; idx++) {
    while (end_of_list < names_limit && *end_of_list != '\0') {
      end_of_list++;
    }
    end_of_list++;
  }
  /* The name, its NUL and the new end-of-list NUL must all fit before funcs. */
  if (end_of_list >= names_limit || (size_t)(names_limit - end_of_list) < name_len + 2u) {
    return kTvmErrorFunctionRegistryFull;
  }

  memcpy(end_of_list, name, name_len);
  end_of_list[name_len] = '\0';
  end_of_list[name_len + 1u] = '\0';
  funcs[count] = func;
  StoreCount(names, (tvm_function_index_t)(count + 1u));
  return kTvmErrorNoError;
}
