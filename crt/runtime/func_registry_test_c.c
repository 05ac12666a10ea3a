/*
 * func_registry_test_c.c: proves every public header of //crt/runtime is valid C99.
 *
 * Includes them all and uses the registry API from C; func_registry_test.cc
 * calls crt_runtime_headers_compile_as_c() and checks its result.
 */
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/func_registry.h>
#include <tvm/runtime/crt/module.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_runtime_headers_compile_as_c(void);

static int ReturnSeven(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                       int* out_ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  out_ret_value->v_int64 = 7;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

static int ReturnEight(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                       int* out_ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  out_ret_value->v_int64 = 8;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

/*
 * Looks up "eight" in a const two-function registry and calls it.
 * Returns 100 * index + the call's result (1 * 100 + 8 = 108), or a negative
 * number naming the step that failed.
 */
int crt_runtime_headers_compile_as_c(void) {
  static const TVMBackendPackedCFunc kFuncs[2] = {ReturnSeven, ReturnEight};
  static const TVMFuncRegistry kRegistry = {
      "\x02\x00"
      "seven\0"
      "eight\0",
      kFuncs};
  const TVMModule module = {&kRegistry};
  tvm_function_index_t index = 0;
  TVMBackendPackedCFunc func = NULL;
  TVMValue ret;
  int ret_tcode = kTVMNullptr;

  if (TVMFuncRegistry_Lookup(module.registry, "eight", &index) != kTvmErrorNoError) {
    return -1;
  }
  if (TVMFuncRegistry_GetByIndex(module.registry, index, &func) != kTvmErrorNoError) {
    return -2;
  }
  ret.v_int64 = 0;
  if (func(NULL, NULL, 0, &ret, &ret_tcode, NULL) != 0 || ret_tcode != kTVMArgInt) {
    return -3;
  }
  return (int)(100 * index + ret.v_int64);
}
