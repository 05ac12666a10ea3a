/* test_system_lib.c: see test_system_lib.h. */
#include "crt/runtime/testing/test_system_lib.h"

#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/error_codes.h>

static int AddOne(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                  int* out_ret_tcode, void* resource_handle) {
  (void)resource_handle;
  if (num_args != 1) {
    return kTvmErrorFunctionCallNumArguments;
  }
  if (type_codes[0] != kTVMArgInt) {
    return kTvmErrorFunctionCallWrongArgType;
  }
  out_ret_value->v_int64 = args[0].v_int64 + 1;
  *out_ret_tcode = kTVMArgInt;
  return 0;
}

static int GetResource(TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                       int* out_ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  out_ret_value->v_handle = resource_handle;
  *out_ret_tcode = kTVMOpaqueHandle;
  return 0;
}

static const TVMBackendPackedCFunc kFuncs[CRT_TEST_SYSTEM_LIB_NUM_FUNCS] = {AddOne, GetResource};

static const TVMFuncRegistry kRegistry = {
    "\x02\x00"
    "add_one\0"
    "get_resource\0",
    kFuncs};

static const TVMModule kModule = {&kRegistry};

static int g_missing;
static int g_entry_calls;

const TVMModule* crt_test_system_lib_module(void) { return &kModule; }

int crt_test_system_lib_entry_calls(void) { return g_entry_calls; }

void crt_test_system_lib_reset(int missing) {
  g_missing = missing;
  g_entry_calls = 0;
}

const TVMModule* TVMSystemLibEntryPoint(void) {
  g_entry_calls++;
  return g_missing ? NULL : &kModule;
}
