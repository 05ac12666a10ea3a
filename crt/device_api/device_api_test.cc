// Tests for the C Device API life-cycle and its host binding.

#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "tvm/runtime/c_device_api.h"
#include "tvm/runtime/crt/platform/host_device.h"

extern "C" int crt_device_api_headers_compile_as_c(void);

namespace {

// Where a test device starts. Initialized comes bound and unbound.
enum class Start { kZeroed, kUnbound, kInitialized, kOpen, kActive, kDestroyed };

const char* Name(Start start) {
  switch (start) {
    case Start::kZeroed:
      return "Zeroed";
    case Start::kUnbound:
      return "InitializedUnbound";
    case Start::kInitialized:
      return "Initialized";
    case Start::kOpen:
      return "Open";
    case Start::kActive:
      return "Active";
    case Start::kDestroyed:
      return "Destroyed";
  }
  return "?";
}

// Brings dev (bound to host where needed) to `start` through legal calls.
void Reach(Start start, tvm_device_t* dev, tvm_device_host_t* host) {
  std::memset(dev, 0, sizeof(*dev));
  *host = tvm_device_host_t{};
  if (start == Start::kZeroed) return;
  ASSERT_EQ(TVMDeviceInit(dev), kTvmErrorNoError);
  if (start == Start::kUnbound) return;
  if (start == Start::kDestroyed) {
    ASSERT_EQ(TVMDeviceDestroy(dev), kTvmErrorNoError);
    return;
  }
  ASSERT_EQ(TVMDevicePlatformBindHost(dev, host), kTvmErrorNoError);
  if (start == Start::kInitialized) return;
  ASSERT_EQ(TVMDeviceOpen(dev), kTvmErrorNoError);
  if (start == Start::kOpen) return;
  ASSERT_EQ(TVMDeviceActivate(dev), kTvmErrorNoError);
}

struct Call {
  const char* name;
  std::function<int32_t(tvm_device_t*, tvm_device_host_t*)> run;
};

const std::vector<Call>& AllCalls() {
  static const std::vector<Call> calls = {
      {"Init", [](tvm_device_t* d, tvm_device_host_t*) { return TVMDeviceInit(d); }},
      {"BindHost",
       [](tvm_device_t* d, tvm_device_host_t* h) { return TVMDevicePlatformBindHost(d, h); }},
      {"Open", [](tvm_device_t* d, tvm_device_host_t*) { return TVMDeviceOpen(d); }},
      {"Activate", [](tvm_device_t* d, tvm_device_host_t*) { return TVMDeviceActivate(d); }},
      {"Deactivate", [](tvm_device_t* d, tvm_device_host_t*) { return TVMDeviceDeactivate(d); }},
      {"Close", [](tvm_device_t* d, tvm_device_host_t*) { return TVMDeviceClose(d); }},
      {"Destroy", [](tvm_device_t* d, tvm_device_host_t*) { return TVMDeviceDestroy(d); }},
  };
  return calls;
}

struct Legal {
  Start from;
  std::string call;
  tvm_device_state_t to;
};

// The whole legal transition relation; every other (state, call) pair is refused.
const std::vector<Legal> kLegal = {
    {Start::kZeroed, "Init", kTVMDeviceStateInitialized},
    {Start::kDestroyed, "Init", kTVMDeviceStateInitialized},
    {Start::kUnbound, "BindHost", kTVMDeviceStateInitialized},
    {Start::kUnbound, "Destroy", kTVMDeviceStateDestroyed},
    {Start::kInitialized, "Open", kTVMDeviceStateOpen},
    {Start::kInitialized, "Destroy", kTVMDeviceStateDestroyed},
    {Start::kOpen, "Activate", kTVMDeviceStateActive},
    {Start::kOpen, "Close", kTVMDeviceStateInitialized},
    {Start::kActive, "Deactivate", kTVMDeviceStateOpen},
};

using DeviceBytes = std::array<uint8_t, sizeof(tvm_device_t)>;
DeviceBytes BytesOf(const tvm_device_t& dev) {
  DeviceBytes bytes;
  std::memcpy(bytes.data(), &dev, sizeof(dev));
  return bytes;
}

bool SameCounters(const tvm_device_host_t& a, const tvm_device_host_t& b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

TEST(DeviceApi, HeaderCompilesAsC) { EXPECT_EQ(crt_device_api_headers_compile_as_c(), 0); }

TEST(DeviceApi, FullLegalLifeCycle) {
  tvm_device_t dev = {};
  tvm_device_host_t host = {};
  EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateUninitialized);
  ASSERT_EQ(TVMDeviceInit(&dev), kTvmErrorNoError);
  EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateInitialized);
  EXPECT_EQ(dev.ops, nullptr);
  ASSERT_EQ(TVMDevicePlatformBindHost(&dev, &host), kTvmErrorNoError);
  EXPECT_EQ(dev.platform_context, &host);
  EXPECT_EQ(host.init_count, 1u);

  ASSERT_EQ(TVMDeviceOpen(&dev), kTvmErrorNoError);
  EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateOpen);
  for (int run = 0; run < 3; ++run) {
    ASSERT_EQ(TVMDeviceActivate(&dev), kTvmErrorNoError);
    EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateActive);
    ASSERT_EQ(TVMDeviceHostLaunch(&dev), kTvmErrorNoError);
    ASSERT_EQ(TVMDeviceDeactivate(&dev), kTvmErrorNoError);
    EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateOpen);
  }
  ASSERT_EQ(TVMDeviceClose(&dev), kTvmErrorNoError);
  EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateInitialized);
  ASSERT_EQ(TVMDeviceDestroy(&dev), kTvmErrorNoError);
  EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateDestroyed);
  EXPECT_EQ(dev.ops, nullptr);
  EXPECT_EQ(dev.platform_context, nullptr);

  EXPECT_EQ(host.init_count, 1u);
  EXPECT_EQ(host.open_count, 1u);
  EXPECT_EQ(host.activate_count, 3u);
  EXPECT_EQ(host.launch_count, 3u);
  EXPECT_EQ(host.deactivate_count, 3u);
  EXPECT_EQ(host.close_count, 1u);
  EXPECT_EQ(host.destroy_count, 1u);
}

TEST(DeviceApi, ReopenAfterClose) {
  tvm_device_t dev;
  tvm_device_host_t host;
  Reach(Start::kOpen, &dev, &host);
  ASSERT_EQ(TVMDeviceClose(&dev), kTvmErrorNoError);
  // The binding survives Close: Open again without re-binding.
  ASSERT_EQ(TVMDeviceOpen(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceActivate(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceDeactivate(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceClose(&dev), kTvmErrorNoError);
  EXPECT_EQ(host.init_count, 1u);
  EXPECT_EQ(host.open_count, 2u);
  EXPECT_EQ(host.close_count, 2u);
  EXPECT_EQ(host.activate_count, 1u);
  EXPECT_EQ(TVMDeviceDestroy(&dev), kTvmErrorNoError);
}

TEST(DeviceApi, EveryTransitionFromEveryState) {
  const Start starts[] = {Start::kZeroed, Start::kUnbound, Start::kInitialized,
                          Start::kOpen,   Start::kActive,  Start::kDestroyed};
  int legal = 0;
  int refused = 0;
  for (Start start : starts) {
    for (const Call& call : AllCalls()) {
      SCOPED_TRACE(std::string(Name(start)) + " -> " + call.name);
      tvm_device_t dev;
      tvm_device_host_t host;
      Reach(start, &dev, &host);
      const DeviceBytes before = BytesOf(dev);
      const tvm_device_host_t host_before = host;

      const Legal* expected = nullptr;
      for (const Legal& l : kLegal) {
        if (l.from == start && l.call == call.name) expected = &l;
      }
      int32_t err = call.run(&dev, &host);
      if (expected != nullptr) {
        ++legal;
        EXPECT_EQ(err, kTvmErrorNoError);
        EXPECT_EQ(TVMDeviceGetState(&dev), expected->to);
        // Every legal call but Init and an unbound Destroy runs one counting hook.
        const bool hooked = std::string(call.name) != "Init" &&
                            !(std::string(call.name) == "Destroy" && start == Start::kUnbound);
        EXPECT_EQ(!SameCounters(host, host_before), hooked);
        continue;
      }
      ++refused;
      // Open on an unbound device is "no driver", not an ordering error.
      const int32_t want = start == Start::kUnbound && std::string(call.name) == "Open"
                               ? kTvmErrorDeviceInvalid
                               : kTvmErrorDeviceBadLifecycle;
      EXPECT_EQ(err, want);
      EXPECT_EQ(BytesOf(dev), before) << "a refused call must change nothing";
      EXPECT_TRUE(SameCounters(host, host_before)) << "a refused call must run no hook";
    }
  }
  EXPECT_EQ(legal, static_cast<int>(kLegal.size()));
  EXPECT_EQ(refused, 6 * 7 - static_cast<int>(kLegal.size()));
}

TEST(DeviceApi, NullDeviceIsInvalid) {
  tvm_device_host_t host = {};
  EXPECT_EQ(TVMDeviceInit(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceBind(nullptr, nullptr, nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDevicePlatformBindHost(nullptr, &host), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceOpen(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceActivate(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceDeactivate(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceClose(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceDestroy(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceHostLaunch(nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceGetState(nullptr), kTVMDeviceStateUninitialized);

  tvm_device_t dev = {};
  ASSERT_EQ(TVMDeviceInit(&dev), kTvmErrorNoError);
  EXPECT_EQ(TVMDevicePlatformBindHost(&dev, nullptr), kTvmErrorDeviceInvalid);
  EXPECT_EQ(TVMDeviceBind(&dev, nullptr, &host), kTvmErrorDeviceInvalid);
  EXPECT_EQ(dev.ops, nullptr);
}

TEST(DeviceApi, InitAcceptsGarbageStorage) {
  tvm_device_t dev;
  std::memset(&dev, 0xA5, sizeof(dev));
  ASSERT_EQ(TVMDeviceInit(&dev), kTvmErrorNoError);
  EXPECT_EQ(dev.ops, nullptr);
  EXPECT_EQ(dev.platform_context, nullptr);
  EXPECT_EQ(TVMDeviceGetState(&dev), kTVMDeviceStateInitialized);
}

TEST(DeviceApi, DestroyedDeviceCanBeInitializedAgain) {
  tvm_device_t dev;
  tvm_device_host_t host;
  Reach(Start::kInitialized, &dev, &host);
  ASSERT_EQ(TVMDeviceDestroy(&dev), kTvmErrorNoError);
  tvm_device_host_t host2 = {};
  ASSERT_EQ(TVMDeviceInit(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDevicePlatformBindHost(&dev, &host2), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceOpen(&dev), kTvmErrorNoError);
  EXPECT_EQ(host2.open_count, 1u);
  EXPECT_EQ(host.open_count, 0u);
}

TEST(DeviceApi, FailingHookLeavesStateUnchanged) {
  struct Case {
    Start start;
    const char* call;
  };
  const Case cases[] = {{Start::kUnbound, "BindHost"}, {Start::kInitialized, "Open"},
                        {Start::kOpen, "Activate"},    {Start::kActive, "Deactivate"},
                        {Start::kOpen, "Close"},       {Start::kInitialized, "Destroy"}};
  constexpr int32_t kDriverError = 0x7777;
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(Name(c.start)) + " -> " + c.call);
    tvm_device_t dev;
    tvm_device_host_t host;
    Reach(c.start, &dev, &host);
    const DeviceBytes before = BytesOf(dev);
    host.fail_next_hook = kDriverError;
    tvm_device_host_t host_expected = host;
    host_expected.fail_next_hook = 0;
    for (const Call& call : AllCalls()) {
      if (std::string(call.name) == c.call) {
        EXPECT_EQ(call.run(&dev, &host), kDriverError);
      }
    }
    EXPECT_EQ(BytesOf(dev), before);
    EXPECT_TRUE(SameCounters(host, host_expected));
    // The failure was one-shot: the same call now succeeds.
    for (const Call& call : AllCalls()) {
      if (std::string(call.name) == c.call) {
        EXPECT_EQ(call.run(&dev, &host), kTvmErrorNoError);
      }
    }
  }
}

TEST(DeviceApi, CustomOpsTableAndNullHooks) {
  // A driver may leave hooks NULL: those transitions just happen.
  static const tvm_device_ops_t kNoHooks = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  tvm_device_t dev = {};
  int context = 0;
  ASSERT_EQ(TVMDeviceInit(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceBind(&dev, &kNoHooks, &context), kTvmErrorNoError);
  EXPECT_EQ(TVMDeviceBind(&dev, &kNoHooks, &context), kTvmErrorDeviceBadLifecycle);
  ASSERT_EQ(TVMDeviceOpen(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceActivate(&dev), kTvmErrorNoError);
  // Not a host device: host operators refuse it.
  EXPECT_EQ(TVMDeviceHostLaunch(&dev), kTvmErrorDeviceInvalid);
  ASSERT_EQ(TVMDeviceDeactivate(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceClose(&dev), kTvmErrorNoError);
  ASSERT_EQ(TVMDeviceDestroy(&dev), kTvmErrorNoError);
}

TEST(DeviceApi, HostLaunchNeedsAnActiveHostDevice) {
  const Start starts[] = {Start::kZeroed, Start::kUnbound, Start::kInitialized, Start::kOpen,
                          Start::kDestroyed};
  for (Start start : starts) {
    SCOPED_TRACE(Name(start));
    tvm_device_t dev;
    tvm_device_host_t host;
    Reach(start, &dev, &host);
    EXPECT_EQ(TVMDeviceHostLaunch(&dev), kTvmErrorDeviceBadLifecycle);
    EXPECT_EQ(host.launch_count, 0u);
  }
  tvm_device_t dev;
  tvm_device_host_t host;
  Reach(Start::kActive, &dev, &host);
  EXPECT_EQ(TVMDeviceHostLaunch(&dev), kTvmErrorNoError);
  EXPECT_EQ(host.launch_count, 1u);
}

}  // namespace
