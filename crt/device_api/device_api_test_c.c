/*
 * device_api_test_c.c: proves c_device_api.h and host_device.h are valid C99.
 *
 * Walks a host device through its whole life-cycle from C;
 * device_api_test.cc calls crt_device_api_headers_compile_as_c() and expects 0.
 */
#include <tvm/runtime/c_device_api.h>
#include <tvm/runtime/crt/platform/host_device.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_device_api_headers_compile_as_c(void);

/* Returns 0 on success, or the number of the failed step. */
int crt_device_api_headers_compile_as_c(void) {
  tvm_device_t dev = {0};
  tvm_device_host_t host = {0};

  if (TVMDeviceInit(&dev) != kTvmErrorNoError) return 1;
  if (TVMDevicePlatformBindHost(&dev, &host) != kTvmErrorNoError) return 2;
  if (TVMDeviceActivate(&dev) != kTvmErrorDeviceBadLifecycle) return 3;
  if (TVMDeviceOpen(&dev) != kTvmErrorNoError) return 4;
  if (TVMDeviceActivate(&dev) != kTvmErrorNoError) return 5;
  if (TVMDeviceHostLaunch(&dev) != kTvmErrorNoError) return 6;
  if (TVMDeviceDeactivate(&dev) != kTvmErrorNoError) return 7;
  if (TVMDeviceClose(&dev) != kTvmErrorNoError) return 8;
  if (TVMDeviceDestroy(&dev) != kTvmErrorNoError) return 9;
  if (TVMDeviceGetState(&dev) != kTVMDeviceStateDestroyed) return 10;
  if (host.init_count + host.open_count + host.activate_count + host.deactivate_count +
          host.close_count + host.destroy_count + host.launch_count !=
      7) {
    return 11;
  }
  return 0;
}
