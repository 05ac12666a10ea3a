/*
 * test_system_lib.h: a two-function system library for crt unit tests.
 *
 * TVMSystemLibEntryPoint() returns a module whose registry is the const blob
 * "\x02\x00" "add_one\0" "get_resource\0" (index 0 add_one, 1 get_resource):
 *   add_one(Int x)   -> Int x + 1; kTvmErrorFunctionCallNumArguments unless
 *                       1 argument, kTvmErrorFunctionCallWrongArgType unless Int.
 *   get_resource()   -> the resource_handle it was called with (kTVMOpaqueHandle).
 * crt_test_system_lib_set_missing(1) makes the entry point return NULL.
 */
#ifndef CRT_RUNTIME_TESTING_TEST_SYSTEM_LIB_H_
#define CRT_RUNTIME_TESTING_TEST_SYSTEM_LIB_H_

#include <tvm/runtime/crt/module.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Number of functions in the test system library. */
#define CRT_TEST_SYSTEM_LIB_NUM_FUNCS 2

/* The module TVMSystemLibEntryPoint returns (when not missing). */
const TVMModule* crt_test_system_lib_module(void);

/* How many times TVMSystemLibEntryPoint has been called since the last reset. */
int crt_test_system_lib_entry_calls(void);

/* missing != 0: the entry point returns NULL. Also resets the call count. */
void crt_test_system_lib_reset(int missing);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CRT_RUNTIME_TESTING_TEST_SYSTEM_LIB_H_ */
