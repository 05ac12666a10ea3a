/*
 * host_device.h: the host binding of the C Device API — a "device" that is
 * just counters in the host process (or on a board, in RAM). It stands in for
 * an accelerator wherever a real driver is absent: the host-process board and
 * tests. It counts every life-cycle hook, can be told to fail the next one,
 * and gives operators one call, TVMDeviceHostLaunch, that demands an Active
 * device the way a real accelerator's "start job" would.
 *
 * No heap, no stdio. Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_PLATFORM_HOST_DEVICE_H_
#define TVM_RUNTIME_CRT_PLATFORM_HOST_DEVICE_H_

#include <stdint.h>
#include <tvm/runtime/c_device_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The driver state of one host device. The caller owns it, zero-initializes
 * it, and keeps it alive while the device is bound; only the hooks and
 * TVMDeviceHostLaunch write the counters.
 */
typedef struct {
  uint32_t init_count;       /* Bind (the init hook) calls. */
  uint32_t open_count;       /* Successful Open transitions. */
  uint32_t activate_count;   /* Successful Activate transitions. */
  uint32_t deactivate_count; /* Successful Deactivate transitions. */
  uint32_t close_count;      /* Successful Close transitions. */
  uint32_t destroy_count;    /* Successful Destroy transitions. */
  uint32_t launch_count;     /* Successful TVMDeviceHostLaunch calls. */
  /*
   * Fault injection: when non-zero, the next hook returns this value (so the
   * transition fails and nothing but this field changes) and resets it to 0.
   */
  int32_t fail_next_hook;
} tvm_device_host_t;

/*
 * Binds an Initialized, unbound dev to the host driver with host as its
 * platform context (borrowed). Counts one init.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev or host is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Initialized or already bound; or
 * host->fail_next_hook if it was set.
 */
int32_t TVMDevicePlatformBindHost(tvm_device_t* dev, tvm_device_host_t* host);

/*
 * What an operator compiled for the host device calls to "run" on it: checks
 * that dev is a host device in the Active state and counts one launch. dev is
 * the operator's resource_handle.
 *
 * Returns, checking in this order: kTvmErrorDeviceInvalid if dev is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Active; kTvmErrorDeviceInvalid if
 * dev is bound to another driver; else kTvmErrorNoError.
 */
int32_t TVMDeviceHostLaunch(tvm_device_t* dev);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_PLATFORM_HOST_DEVICE_H_ */
