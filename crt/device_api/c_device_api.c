/*
 * c_device_api.c: the C Device API's life-cycle checks, dispatching each
 * transition to the bound driver's hook.
 */
#include <stddef.h>
#include <tvm/runtime/c_device_api.h>

/*
 * Runs hook (if any) and only then enters `to`, so a failed hook changes
 * nothing. Callers have already checked the current state, which also
 * guarantees dev->ops is a bound table wherever they read a hook from it.
 */
static int32_t RunHookThenEnter(tvm_device_t* dev, tvm_device_hook_t hook, tvm_device_state_t to) {
  if (hook != NULL) {
    int32_t err = hook(dev);
    if (err != kTvmErrorNoError) {
      return err;
    }
  }
  dev->state = to;
  return kTvmErrorNoError;
}

int32_t TVMDeviceInit(tvm_device_t* dev) {
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  if (dev->state == kTVMDeviceStateInitialized || dev->state == kTVMDeviceStateOpen ||
      dev->state == kTVMDeviceStateActive) {
    return kTvmErrorDeviceBadLifecycle;
  }
  dev->ops = NULL;
  dev->platform_context = NULL;
  dev->state = kTVMDeviceStateInitialized;
  return kTvmErrorNoError;
}

int32_t TVMDeviceBind(tvm_device_t* dev, const tvm_device_ops_t* ops, void* platform_context) {
  int32_t err;
  if (dev == NULL || ops == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  if (dev->state != kTVMDeviceStateInitialized || dev->ops != NULL) {
    return kTvmErrorDeviceBadLifecycle;
  }
  dev->ops = ops;
  dev->platform_context = platform_context;
  if (ops->init != NULL) {
    err = ops->init(dev);
    if (err != kTvmErrorNoError) {
      dev->ops = NULL;
      dev->platform_context = NULL;
      return err;
    }
  }
  return kTvmErrorNoError;
}

int32_t TVMDeviceOpen(tvm_device_t* dev) {
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  if (dev->state != kTVMDeviceStateInitialized) {
    return kTvmErrorDeviceBadLifecycle;
  }
  if (dev->ops == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  return RunHookThenEnter(dev, dev->ops->open, kTVMDeviceStateOpen);
}

int32_t TVMDeviceActivate(tvm_device_t* dev) {
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  /* Open implies bound, so ops is non-NULL past the state check. */
  if (dev->state != kTVMDeviceStateOpen) {
    return kTvmErrorDeviceBadLifecycle;
  }
  return RunHookThenEnter(dev, dev->ops->activate, kTVMDeviceStateActive);
}

int32_t TVMDeviceDeactivate(tvm_device_t* dev) {
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  if (dev->state != kTVMDeviceStateActive) {
    return kTvmErrorDeviceBadLifecycle;
  }
  return RunHookThenEnter(dev, dev->ops->deactivate, kTVMDeviceStateOpen);
}

int32_t TVMDeviceClose(tvm_device_t* dev) {
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  if (dev->state != kTVMDeviceStateOpen) {
    return kTvmErrorDeviceBadLifecycle;
  }
  return RunHookThenEnter(dev, dev->ops->close, kTVMDeviceStateInitialized);
}

int32_t TVMDeviceDestroy(tvm_device_t* dev) {
  int32_t err;
  if (dev == NULL) {
    return kTvmErrorDeviceInvalid;
  }
  if (dev->state != kTVMDeviceStateInitialized) {
    return kTvmErrorDeviceBadLifecycle;
  }
  /* An unbound device may be destroyed too: Init then Destroy is legal. */
  err =
      RunHookThenEnter(dev, dev->ops != NULL ? dev->ops->destroy : NULL, kTVMDeviceStateDestroyed);
  if (err == kTvmErrorNoError) {
    dev->ops = NULL;
    dev->platform_context = NULL;
  }
  return err;
}

tvm_device_state_t TVMDeviceGetState(const tvm_device_t* dev) {
  return dev == NULL ? kTVMDeviceStateUninitialized : dev->state;
}
