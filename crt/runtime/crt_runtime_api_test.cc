// Tests of crt_runtime_api.c: handle encoding (reference 5.3, with quirk 9.11
// fixed), the built-in globals, TVMFuncCall, the last error, and the memory API
// over the fake platform.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "crt/runtime/testing/fake_platform.h"
#include "crt/runtime/testing/test_system_lib.h"
#include "tvm/runtime/c_backend_api.h"
#include "tvm/runtime/c_runtime_api.h"
#include "tvm/runtime/crt/crt.h"
#include "tvm/runtime/crt/module.h"
#include "tvm/runtime/crt/platform.h"

namespace {

static_assert(TVM_CRT_MAX_REGISTERED_MODULES == 2, "golden handle values assume 2 module slots");

void* H(uintptr_t value) { return reinterpret_cast<void*>(value); }
uintptr_t V(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

// A global function that returns its resource_handle.
int ReturnResource(TVMValue*, int*, int, TVMValue* ret, int* ret_tcode, void* resource_handle) {
  ret->v_handle = resource_handle;
  *ret_tcode = kTVMOpaqueHandle;
  return 0;
}

int ReturnSeventeen(TVMValue*, int*, int, TVMValue* ret, int* ret_tcode, void*) {
  ret->v_int64 = 17;
  *ret_tcode = kTVMArgInt;
  return 0;
}

class CrtRuntimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    crt_fake_platform_reset();
    crt_test_system_lib_reset(/*missing=*/0);
    ASSERT_EQ(TVMInitializeRuntime(), kTvmErrorNoError);
  }

  void TearDown() override { EXPECT_EQ(crt_fake_platform_bad_frees(), 0); }

  TVMFunctionHandle Global(const char* name) {
    TVMFunctionHandle h = H(1);
    EXPECT_EQ(TVMFuncGetGlobal(name, &h), 0);
    return h;
  }

  TVMModuleHandle SystemLib() {
    TVMValue ret;
    int tcode = -1;
    EXPECT_EQ(TVMFuncCall(Global("runtime.SystemLib"), nullptr, nullptr, 0, &ret, &tcode), 0);
    EXPECT_EQ(tcode, kTVMModuleHandle);
    return ret.v_handle;
  }

  // Calls tvm.rpc.server.ModuleGetFunction with the given arguments.
  int ModuleGetFunction(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode) {
    return TVMFuncCall(Global("tvm.rpc.server.ModuleGetFunction"), args, tcodes, n, ret, ret_tcode);
  }
};

// ---- handles ------------------------------------------------------------------------------------

TEST_F(CrtRuntimeTest, BuiltinGlobalHandlesAreGolden) {
  EXPECT_EQ(V(Global("runtime.SystemLib")), 0x80028000u);
  EXPECT_EQ(V(Global("tvm.rpc.server.ModuleGetFunction")), 0x80028001u);
}

TEST_F(CrtRuntimeTest, GetGlobalNotFoundIsNullAndSuccess) {
  TVMFunctionHandle h = H(1);
  EXPECT_EQ(TVMFuncGetGlobal("no.such.function", &h), 0);
  EXPECT_EQ(h, nullptr);
  EXPECT_EQ(TVMFuncGetGlobal(nullptr, &h), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMFuncGetGlobal("runtime.SystemLib", nullptr), kTvmErrorFunctionCallInvalidArg);
}

TEST_F(CrtRuntimeTest, SystemLibReturnsSameHandleEveryTime) {
  TVMModuleHandle first = SystemLib();
  EXPECT_EQ(V(first), 0x8000u);
  EXPECT_EQ(SystemLib(), first);
  EXPECT_EQ(crt_test_system_lib_entry_calls(), 1);
}

TEST_F(CrtRuntimeTest, SystemLibMissingIsAnError) {
  crt_test_system_lib_reset(/*missing=*/1);
  TVMValue ret;
  int tcode = -1;
  EXPECT_EQ(TVMFuncCall(Global("runtime.SystemLib"), nullptr, nullptr, 0, &ret, &tcode),
            kTvmErrorFunctionCallNotImplemented);
  EXPECT_EQ(tcode, kTVMNullptr);
}

TEST_F(CrtRuntimeTest, SystemLibFunctionHandlesAreGolden) {
  TVMModuleHandle lib = SystemLib();
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMModGetFunction(lib, "add_one", 0, &f), 0);
  EXPECT_EQ(V(f), 0x80008000u);
  ASSERT_EQ(TVMModGetFunction(lib, "get_resource", 1, &f), 0);
  EXPECT_EQ(V(f), 0x80008001u);
  EXPECT_EQ(TVMModGetFunction(lib, "nope", 0, &f), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(f, nullptr);
}

TEST_F(CrtRuntimeTest, BadModuleHandles) {
  SystemLib();  // slot 0 registered, slot 1 empty
  const uintptr_t bad[] = {
      0x0,      // NULL
      0x0001,   // no valid bit
      0x8001,   // unregistered slot
      0x8002,   // index == TVM_CRT_MAX_REGISTERED_MODULES (TVM read past its table)
      0x8003,   // index > MAX
      0x18000,  // bits above 15
  };
  for (uintptr_t value : bad) {
    SCOPED_TRACE(testing::Message() << std::hex << value);
    TVMFunctionHandle f = H(1);
    EXPECT_EQ(TVMModGetFunction(H(value), "add_one", 0, &f), -1);
    EXPECT_NE(std::string(TVMGetLastError()), "");
    EXPECT_EQ(TVMModFree(H(value)), -1);
  }
}

TEST_F(CrtRuntimeTest, BadFunctionHandles) {
  SystemLib();
  std::vector<uintptr_t> bad = {
      0x0,         // NULL (TVM decoded it as module 0, function 0)
      0x80000000,  // function valid bit missing
      0x00008000,  // module valid bit missing
      0x00028000,  // module valid bit missing on a global
      0x80020000,  // function valid bit missing on a global
      0x80038000,  // module index 3 > globals index
      0xfffe8000,  // module index 0x7ffe
      0x80018000,  // module slot 1 unregistered
      0x80008002,  // system lib has 2 functions
      0x80028002,  // only 2 built-in globals
      0x8002ffff,  // global function index 0x7fff
  };
  if (sizeof(uintptr_t) == 8) {
    bad.push_back(static_cast<uintptr_t>(0x180028000ull));  // bits above 31
  }
  for (uintptr_t value : bad) {
    SCOPED_TRACE(testing::Message() << std::hex << value);
    TVMAPISetLastError("");
    TVMValue ret;
    int tcode = -1;
    EXPECT_EQ(TVMFuncCall(H(value), nullptr, nullptr, 0, &ret, &tcode), -1);
    EXPECT_NE(std::string(TVMGetLastError()), "");
  }
}

TEST_F(CrtRuntimeTest, InvalidHandleErrorNamesTheHandle) {
  TVMValue ret;
  int tcode;
  EXPECT_EQ(TVMFuncCall(H(0x80038000u), nullptr, nullptr, 0, &ret, &tcode), -1);
  EXPECT_NE(std::string(TVMGetLastError()).find("0x80038000"), std::string::npos)
      << TVMGetLastError();
}

TEST_F(CrtRuntimeTest, FreedModuleHandlesBecomeInvalid) {
  static const TVMModule kOther = *crt_test_system_lib_module();
  TVMModuleHandle lib = SystemLib();
  TVMModuleHandle other = nullptr;
  ASSERT_EQ(TVMCrtModuleRegister(&kOther, &other), kTvmErrorNoError);
  EXPECT_EQ(V(other), 0x8001u);
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMModGetFunction(other, "add_one", 0, &f), 0);
  EXPECT_EQ(V(f), 0x80018000u);

  EXPECT_EQ(TVMModFree(other), 0);
  TVMValue ret;
  int tcode;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &tcode), -1);
  EXPECT_EQ(TVMModGetFunction(other, "add_one", 0, &f), -1);

  // The system library is never freed.
  EXPECT_EQ(TVMModFree(lib), 0);
  EXPECT_EQ(TVMModGetFunction(lib, "add_one", 0, &f), 0);
}

TEST_F(CrtRuntimeTest, ModuleTableFull) {
  static const TVMModule kA = *crt_test_system_lib_module();
  static const TVMModule kB = *crt_test_system_lib_module();
  SystemLib();
  TVMModuleHandle h = nullptr;
  ASSERT_EQ(TVMCrtModuleRegister(&kA, &h), kTvmErrorNoError);
  TVMModuleHandle again = nullptr;
  EXPECT_EQ(TVMCrtModuleRegister(&kA, &again), kTvmErrorNoError);
  EXPECT_EQ(again, h);
  EXPECT_EQ(TVMCrtModuleRegister(&kB, &again), kTvmErrorFunctionRegistryFull);
  EXPECT_EQ(TVMCrtModuleRegister(nullptr, &again), kTvmErrorFunctionCallInvalidArg);
}

// ---- TVMFuncCall
// ---------------------------------------------------------------------------------

TEST_F(CrtRuntimeTest, CallModuleFunction) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMModGetFunction(SystemLib(), "add_one", 0, &f), 0);
  TVMValue arg;
  arg.v_int64 = 41;
  int arg_tcode = kTVMArgInt;
  TVMValue ret;
  int ret_tcode = -1;
  ASSERT_EQ(TVMFuncCall(f, &arg, &arg_tcode, 1, &ret, &ret_tcode), 0);
  EXPECT_EQ(ret_tcode, kTVMArgInt);
  EXPECT_EQ(ret.v_int64, 42);

  // The function's own error comes back unchanged.
  arg_tcode = kTVMStr;
  EXPECT_EQ(TVMFuncCall(f, &arg, &arg_tcode, 1, &ret, &ret_tcode),
            kTvmErrorFunctionCallWrongArgType);
}

TEST_F(CrtRuntimeTest, ResourceHandleIsModuleForModuleFunctionsAndNullForGlobals) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMModGetFunction(SystemLib(), "get_resource", 0, &f), 0);
  TVMValue ret;
  int tcode = -1;
  ASSERT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, &tcode), 0);
  EXPECT_EQ(tcode, kTVMOpaqueHandle);
  EXPECT_EQ(ret.v_handle, static_cast<const void*>(crt_test_system_lib_module()));

  ASSERT_EQ(TVMCrtFuncRegisterGlobal("test.resource", ReturnResource, 0), 0);
  TVMFunctionHandle g = Global("test.resource");
  ret.v_handle = H(1);
  ASSERT_EQ(TVMFuncCall(g, nullptr, nullptr, 0, &ret, &tcode), 0);
  EXPECT_EQ(ret.v_handle, nullptr);
}

TEST_F(CrtRuntimeTest, CallRejectsBadArguments) {
  TVMFunctionHandle f = Global("runtime.SystemLib");
  TVMValue ret;
  int tcode;
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, nullptr, &tcode), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 0, &ret, nullptr), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, -1, &ret, &tcode), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMFuncCall(f, nullptr, nullptr, 1, &ret, &tcode), kTvmErrorFunctionCallInvalidArg);
}

TEST_F(CrtRuntimeTest, TimeEvaluatorHandles) {
  TVMFunctionHandle te = TVMCrtEncodeTimeEvaluatorHandle(3);
  EXPECT_EQ(V(te), 0xffff8003u);
  EXPECT_EQ(TVMCrtEncodeTimeEvaluatorHandle(0x8000), nullptr);

  TVMValue ret;
  int tcode;
  EXPECT_EQ(TVMFuncCall(te, nullptr, nullptr, 0, &ret, &tcode), kTvmErrorTimeEvaluatorBadHandle);

  static uint16_t seen_index;
  static int seen_args;
  TVMCrtSetTimeEvaluatorCall(
      [](uint16_t index, TVMValue*, int*, int n, TVMValue* r, int* r_tcode) -> int {
        seen_index = index;
        seen_args = n;
        r->v_int64 = 5;
        *r_tcode = kTVMArgInt;
        return 0;
      });
  TVMValue arg;
  arg.v_int64 = 0;
  int arg_tcode = kTVMArgInt;
  ASSERT_EQ(TVMFuncCall(te, &arg, &arg_tcode, 1, &ret, &tcode), 0);
  EXPECT_EQ(seen_index, 3);
  EXPECT_EQ(seen_args, 1);
  EXPECT_EQ(ret.v_int64, 5);

  // Re-initialising the runtime uninstalls the evaluator.
  ASSERT_EQ(TVMInitializeRuntime(), kTvmErrorNoError);
  EXPECT_EQ(TVMFuncCall(te, nullptr, nullptr, 0, &ret, &tcode), kTvmErrorTimeEvaluatorBadHandle);
}

// ---- tvm.rpc.server.ModuleGetFunction
// ------------------------------------------------------------

TEST_F(CrtRuntimeTest, ModuleGetFunctionGlobal) {
  TVMValue args[4];
  int tcodes[4] = {kTVMModuleHandle, kTVMStr, kTVMArgInt, kTVMArgInt};
  args[0].v_handle = SystemLib();
  args[1].v_str = "get_resource";
  args[2].v_int64 = 0;
  args[3].v_int64 = 0;
  TVMValue ret;
  int ret_tcode = -1;

  ASSERT_EQ(ModuleGetFunction(args, tcodes, 3, &ret, &ret_tcode), 0);
  EXPECT_EQ(ret_tcode, kTVMPackedFuncHandle);
  EXPECT_EQ(V(ret.v_handle), 0x80008001u);

  tcodes[2] = kTVMArgBool;
  args[2].v_int64 = 1;
  ASSERT_EQ(ModuleGetFunction(args, tcodes, 3, &ret, &ret_tcode), 0);
  EXPECT_EQ(ret_tcode, kTVMPackedFuncHandle);

  // Not found: success with a null result.
  args[1].v_str = "missing";
  ret.v_handle = H(1);
  ASSERT_EQ(ModuleGetFunction(args, tcodes, 3, &ret, &ret_tcode), 0);
  EXPECT_EQ(ret_tcode, kTVMNullptr);
  EXPECT_EQ(ret.v_handle, nullptr);
  args[1].v_str = "add_one";

  EXPECT_EQ(ModuleGetFunction(args, tcodes, 2, &ret, &ret_tcode),
            kTvmErrorFunctionCallNumArguments);
  EXPECT_EQ(ModuleGetFunction(args, tcodes, 4, &ret, &ret_tcode),
            kTvmErrorFunctionCallNumArguments);
  EXPECT_EQ(ModuleGetFunction(nullptr, nullptr, 0, &ret, &ret_tcode),
            kTvmErrorFunctionCallNumArguments);

  const int wrong[][3] = {
      {kTVMOpaqueHandle, kTVMStr, kTVMArgInt},
      {kTVMModuleHandle, kTVMBytes, kTVMArgInt},
      {kTVMModuleHandle, kTVMStr, kTVMStr},
      {kTVMModuleHandle, kTVMStr, kTVMArgFloat},
  };
  for (const auto& codes : wrong) {
    int t[3] = {codes[0], codes[1], codes[2]};
    EXPECT_EQ(ModuleGetFunction(args, t, 3, &ret, &ret_tcode), kTvmErrorFunctionCallWrongArgType);
    EXPECT_EQ(ret_tcode, kTVMNullptr);
  }

  // A module handle from the wire that names no module.
  args[0].v_handle = H(0x8001);
  EXPECT_EQ(ModuleGetFunction(args, tcodes, 3, &ret, &ret_tcode), -1);
  EXPECT_EQ(ret_tcode, kTVMNullptr);
}

// ---- globals
// --------------------------------------------------------------------------------------

TEST_F(CrtRuntimeTest, RegisterGlobal) {
  ASSERT_EQ(TVMFuncRegisterGlobal("test.f", reinterpret_cast<void*>(&ReturnResource), 0), 0);
  EXPECT_EQ(V(Global("test.f")), 0x80028002u);
  EXPECT_EQ(TVMFuncRegisterGlobal("test.f", reinterpret_cast<void*>(&ReturnSeventeen), 0),
            kTvmErrorFunctionAlreadyDefined);
  ASSERT_EQ(TVMFuncRegisterGlobal("test.f", reinterpret_cast<void*>(&ReturnSeventeen), 1), 0);
  TVMValue ret;
  int tcode;
  ASSERT_EQ(TVMFuncCall(Global("test.f"), nullptr, nullptr, 0, &ret, &tcode), 0);
  EXPECT_EQ(ret.v_int64, 17);
  EXPECT_EQ(TVMFuncRegisterGlobal("test.g", nullptr, 0), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMFuncRegisterGlobal(nullptr, reinterpret_cast<void*>(&ReturnSeventeen), 0),
            kTvmErrorFunctionCallInvalidArg);
}

TEST_F(CrtRuntimeTest, RegisterGlobalUntilFull) {
  int registered = 0;
  int err = 0;
  for (int i = 0; i < 100 && err == 0; i++) {
    std::string name = "g." + std::to_string(i);
    err = TVMCrtFuncRegisterGlobal(name.c_str(), ReturnSeventeen, 0);
    if (err == 0) registered++;
  }
  EXPECT_EQ(err, kTvmErrorFunctionRegistryFull);
  // 512 bytes hold 26 functions; the 2 built-ins take two of them.
  EXPECT_EQ(registered, static_cast<int>(TVM_CRT_GLOBAL_FUNC_REGISTRY_SIZE_BYTES /
                                         TVM_CRT_FUNC_REGISTRY_AVERAGE_ENTRY_BYTES) -
                            2);
  // Nothing was corrupted: the built-ins and the last global still work.
  EXPECT_EQ(V(SystemLib()), 0x8000u);
  TVMValue ret;
  int tcode;
  std::string last = "g." + std::to_string(registered - 1);
  ASSERT_EQ(TVMFuncCall(Global(last.c_str()), nullptr, nullptr, 0, &ret, &tcode), 0);
  EXPECT_EQ(ret.v_int64, 17);
}

TEST_F(CrtRuntimeTest, InitializeResetsEverything) {
  ASSERT_EQ(TVMCrtFuncRegisterGlobal("test.f", ReturnSeventeen, 0), 0);
  SystemLib();
  TVMAPISetLastError("old error");
  ASSERT_EQ(TVMInitializeRuntime(), kTvmErrorNoError);
  EXPECT_STREQ(TVMGetLastError(), "");
  EXPECT_EQ(Global("test.f"), nullptr);
  TVMFunctionHandle f = nullptr;
  EXPECT_EQ(TVMModGetFunction(H(0x8000), "add_one", 0, &f), -1);  // module table cleared
  EXPECT_EQ(V(SystemLib()), 0x8000u);
  EXPECT_EQ(crt_test_system_lib_entry_calls(), 2);
}

TEST_F(CrtRuntimeTest, BackendGetFuncFromEnv) {
  TVMFunctionHandle f = nullptr;
  ASSERT_EQ(TVMBackendGetFuncFromEnv(nullptr, "runtime.SystemLib", &f), 0);
  EXPECT_EQ(V(f), 0x80028000u);
  EXPECT_EQ(TVMBackendGetFuncFromEnv(nullptr, "missing", &f), kTvmErrorFunctionNameNotFound);
  EXPECT_EQ(f, nullptr);
}

// ---- last error
// -----------------------------------------------------------------------------------

TEST_F(CrtRuntimeTest, LastError) {
  TVMAPISetLastError("something broke");
  EXPECT_STREQ(TVMGetLastError(), "something broke");
  TVMAPISetLastError(nullptr);
  EXPECT_STREQ(TVMGetLastError(), "");
  const std::string long_message(1000, 'e');
  TVMAPISetLastError(long_message.c_str());
  const std::string stored = TVMGetLastError();
  EXPECT_GT(stored.size(), 0u);
  EXPECT_LT(stored.size(), long_message.size());
  EXPECT_EQ(long_message.compare(0, stored.size(), stored), 0);
}

// ---- memory
// ---------------------------------------------------------------------------------------

TEST_F(CrtRuntimeTest, ArrayAllocAndFree) {
  const tvm_index_t shape[] = {2, 3};
  TVMArrayHandle a = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &a), 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(a->data, nullptr);
  EXPECT_EQ(a->ndim, 2);
  EXPECT_EQ(a->shape[0], 2);
  EXPECT_EQ(a->shape[1], 3);
  EXPECT_EQ(a->strides, nullptr);
  EXPECT_EQ(a->byte_offset, 0u);
  EXPECT_EQ(a->dtype.bits, 32);
  EXPECT_EQ(a->device.device_type, kDLCPU);
  std::memset(a->data, 0xab, 24);  // the whole data area is writable
  EXPECT_EQ(crt_fake_platform_live_allocations(), 2);
  EXPECT_EQ(TVMArrayFree(a), 0);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);
  EXPECT_EQ(TVMArrayFree(nullptr), 0);
}

TEST_F(CrtRuntimeTest, ArrayAllocOutOfMemoryIsAnErrorAndLeaksNothing) {
  const tvm_index_t shape[] = {4};
  TVMArrayHandle a = reinterpret_cast<TVMArrayHandle>(H(0x1234));

  crt_fake_platform_set_allocations_left(0);  // the struct fails
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLInt, 8, 1, kDLCPU, 0, &a), kTvmErrorPlatformNoMemory);
  EXPECT_EQ(V(a), 0x1234u);

  crt_fake_platform_set_allocations_left(1);  // the data fails
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLInt, 8, 1, kDLCPU, 0, &a), kTvmErrorPlatformNoMemory);
  EXPECT_EQ(V(a), 0x1234u);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);

  crt_fake_platform_set_allocations_left(-1);
  const tvm_index_t big[] = {1 << 20};
  EXPECT_EQ(TVMArrayAlloc(big, 1, kDLFloat, 32, 1, kDLCPU, 0, &a), kTvmErrorPlatformNoMemory);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);
}

TEST_F(CrtRuntimeTest, ArrayAllocRejectsBadArguments) {
  const tvm_index_t shape[] = {2, -1};
  const tvm_index_t huge[] = {INT64_MAX, INT64_MAX};
  TVMArrayHandle a = nullptr;
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCPU, 0, nullptr),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(shape, -1, kDLFloat, 32, 1, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(shape, TVM_CRT_MAX_NDIM + 1, kDLFloat, 32, 1, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(nullptr, 1, kDLFloat, 32, 1, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(shape, 2, kDLFloat, 32, 1, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 0, 1, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 0, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(huge, 2, kDLFloat, 32, 1, kDLCPU, 0, &a),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMArrayAlloc(shape, 1, kDLFloat, 32, 1, kDLCUDA, 0, &a), kTvmErrorDeviceInvalid);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);
}

TEST_F(CrtRuntimeTest, DeviceCopyDataFromTo) {
  const tvm_index_t shape[] = {4};
  TVMArrayHandle a = nullptr;
  TVMArrayHandle b = nullptr;
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLInt, 32, 1, kDLCPU, 0, &a), 0);
  ASSERT_EQ(TVMArrayAlloc(shape, 1, kDLInt, 32, 1, kDLCPU, 0, &b), 0);
  const int32_t values[4] = {1, 2, 3, 4};
  std::memcpy(a->data, values, sizeof(values));
  ASSERT_EQ(TVMDeviceCopyDataFromTo(a, b, nullptr), 0);
  EXPECT_EQ(std::memcmp(b->data, values, sizeof(values)), 0);

  // Compact explicit strides are fine; anything else is refused.
  int64_t strides[1] = {1};
  a->strides = strides;
  EXPECT_EQ(TVMDeviceCopyDataFromTo(a, b, nullptr), 0);
  strides[0] = 2;
  EXPECT_EQ(TVMDeviceCopyDataFromTo(a, b, nullptr), kTvmErrorFunctionCallInvalidArg);
  a->strides = nullptr;

  // Sizes must match.
  const tvm_index_t small_shape[] = {2};
  TVMArrayHandle c = nullptr;
  ASSERT_EQ(TVMArrayAlloc(small_shape, 1, kDLInt, 32, 1, kDLCPU, 0, &c), 0);
  EXPECT_EQ(TVMDeviceCopyDataFromTo(a, c, nullptr), kTvmErrorFunctionCallInvalidArg);

  // byte_offset is honoured: copy a's last two elements into c.
  int64_t two = 2;
  DLTensor view = *a;
  view.shape = &two;
  view.byte_offset = 2 * sizeof(int32_t);
  ASSERT_EQ(TVMDeviceCopyDataFromTo(&view, c, nullptr), 0);
  EXPECT_EQ(static_cast<int32_t*>(c->data)[0], 3);
  EXPECT_EQ(static_cast<int32_t*>(c->data)[1], 4);

  view.device.device_type = kDLCUDA;
  EXPECT_EQ(TVMDeviceCopyDataFromTo(&view, c, nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceCopyDataFromTo(nullptr, c, nullptr), kTvmErrorFunctionCallInvalidArg);

  EXPECT_EQ(TVMArrayFree(a), 0);
  EXPECT_EQ(TVMArrayFree(b), 0);
  EXPECT_EQ(TVMArrayFree(c), 0);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);
}

TEST_F(CrtRuntimeTest, DeviceAllocDataSpace) {
  const DLDevice cpu = {kDLCPU, 0};
  const DLDevice gpu = {kDLCUDA, 0};
  const DLDataType f32 = {kDLFloat, 32, 1};
  void* p = H(1);
  EXPECT_EQ(TVMDeviceAllocDataSpace(cpu, 10, 3, f32, &p), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMDeviceAllocDataSpace(gpu, 10, 8, f32, &p), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceAllocDataSpace(cpu, SIZE_MAX, 64, f32, &p), kTvmErrorFunctionCallInvalidArg);
  ASSERT_EQ(TVMDeviceAllocDataSpace(cpu, 10, 64, f32, &p), 0);
  EXPECT_NE(p, nullptr);
  EXPECT_EQ(TVMDeviceFreeDataSpace(gpu, p), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceFreeDataSpace(cpu, p), 0);
  EXPECT_EQ(TVMDeviceFreeDataSpace(cpu, nullptr), 0);

  crt_fake_platform_set_pool_limit(0);
  EXPECT_EQ(TVMDeviceAllocDataSpace(cpu, 10, 0, f32, &p), kTvmErrorPlatformNoMemory);
  EXPECT_EQ(p, nullptr);
}

TEST_F(CrtRuntimeTest, BackendWorkspace) {
  void* p = TVMBackendAllocWorkspace(kDLCPU, 0, 100, kDLFloat, 32);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, p), 0);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);

  // Failures return NULL; TVM's CRT aborted here.
  crt_fake_platform_set_allocations_left(0);
  EXPECT_EQ(TVMBackendAllocWorkspace(kDLCPU, 0, 100, kDLFloat, 32), nullptr);
  crt_fake_platform_set_allocations_left(-1);
  EXPECT_EQ(TVMBackendAllocWorkspace(kDLCPU, 0, 1 << 20, kDLFloat, 32), nullptr);
  EXPECT_EQ(TVMBackendAllocWorkspace(kDLCPU, 0, UINT64_MAX, kDLFloat, 32), nullptr);
  EXPECT_EQ(TVMBackendAllocWorkspace(kDLCUDA, 0, 100, kDLFloat, 32), nullptr);
  EXPECT_EQ(TVMBackendFreeWorkspace(kDLCPU, 0, nullptr), 0);
}

TEST_F(CrtRuntimeTest, BackendParallelLaunchRunsOnceInline) {
  static int calls;
  static int seen_task;
  static int seen_num_task;
  calls = 0;
  int cdata = 9;
  auto lambda = [](int task_id, TVMParallelGroupEnv* penv, void* data) -> int {
    calls++;
    seen_task = task_id;
    seen_num_task = penv->num_task;
    return *static_cast<int*>(data);
  };
  EXPECT_EQ(TVMBackendParallelLaunch(lambda, &cdata, 4), 9);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen_task, 0);
  EXPECT_EQ(seen_num_task, 1);
  EXPECT_EQ(TVMBackendParallelLaunch(nullptr, &cdata, 1), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(TVMBackendParallelBarrier(0, nullptr), 0);
}

TEST_F(CrtRuntimeTest, ByteArrayFreeFreesDataThenStruct) {
  const DLDevice cpu = {kDLCPU, 0};
  void* mem = nullptr;
  void* data = nullptr;
  ASSERT_EQ(TVMPlatformMemoryAllocate(sizeof(TVMByteArray), cpu, &mem), kTvmErrorNoError);
  ASSERT_EQ(TVMPlatformMemoryAllocate(8, cpu, &data), kTvmErrorNoError);
  TVMByteArray* arr = static_cast<TVMByteArray*>(mem);
  arr->data = static_cast<const char*>(data);
  arr->size = 8;
  EXPECT_EQ(TVMByteArrayFree(arr), 0);
  EXPECT_EQ(crt_fake_platform_live_allocations(), 0);
  EXPECT_EQ(TVMByteArrayFree(nullptr), 0);
  EXPECT_EQ(TVMFuncFree(H(0x80028000u)), 0);
  EXPECT_EQ(TVMObjectFree(nullptr), 0);
}

}  // namespace
