/*
 * host_device.c: the host driver for the C Device API — counters, and one
 * injectable failure, behind the ops table.
 */
#include <stddef.h>
#include <tvm/runtime/crt/platform/host_device.h>

/*
 * Every hook: returns the injected failure if one is pending (consuming it and
 * counting nothing), else counts one call in *counter.
 */
static int32_t CountUnlessFailing(tvm_device_host_t* host, uint32_t* counter) {
  int32_t err = host->fail_next_hook;
  if (err != 0) {
    host->fail_next_hook = 0;
    return err;
  }
  ++*counter;
  return kTvmErrorNoError;
}

static int32_t HostInit(tvm_device_t* dev) {
  tvm_device_host_t* host = (tvm_device_host_t*)dev->platform_context;
  return CountUnlessFailing(host, &host->init_count);
}

static int32_t HostOpen(tvm_device_t* dev) {
  tvm_device_host_t* host = (tvm_device_host_t*)dev->platform_context;
  return CountUnlessFailing(host, &host->open_count);
}

static int32_t HostActivate(tvm_device_t* dev) {
  tvm_device_host_t* host = (tvm_device_host_t*)dev->platform_context;
  return CountUnlessFailing(host, &host->activate_count);
}

static int32_t HostDeactivate(tvm_device_t* dev) {
  tvm_device_host_t* host = (tvm_device_host_t*)dev->platform_context;
  return CountUnlessFailing(host, &host->deactivate_count);
}

static int32_t HostClose(tvm_device_t* dev) {
  tvm_device_host_t* host = (tvm_device_host_t*)dev->platform_context;
  return CountUnlessFailing(host, &host->close_count);
}

static int32_t HostDestroy(tvm_device_t* dev) {
  tvm_device_host_t* host = (tvm_device_host_t*)dev->platform_context;
  return CountUnlessFailing(host, &host->destroy_count);
}

static const tvm_device_ops_t kHostDeviceOps = {
    HostInit, HostOpen, HostActivate, HostDeactivate, HostClose, HostDestroy,
};

int32_t TVMDevicePlatformBindHost(tvm_device_t* dev, tvm_device_host_t* host) {
  if (dev == NULL || host == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  return TVMDeviceBind(dev, &kHostDeviceOps, host);
}

int32_t TVMDeviceHostLaunch(tvm_device_t* dev) {
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  /* State before binding: only a live device's ops field is meaningful. */
  if (dev->state != kTVMDeviceStateActive) {
    return kTvmErrorDeviceBadLifecycle;
  }
  if (dev->ops != &kHostDeviceOps) {
    return kTvmErrorDeviceInvalid;
  }
  ++((tvm_device_host_t*)dev->platform_context)->launch_count;
  return kTvmErrorNoError;
}
