/*
 * c_device_api.h: the C Device API — how crt drives an accelerator or other
 * device through an executor's life-cycle without knowing the board's driver
 * API (the "[pre-RFC] C Device API" TVM adopted as RFC 31).
 *
 * A tvm_device_t is owned by the application (no dynamic allocation): it
 * declares one, calls TVMDeviceInit, then a platform binding such as
 * TVMDevicePlatformBindHost (tvm/runtime/crt/platform/host_device.h) gives it
 * a table of driver hooks and the driver's context. The executor then moves
 * the device through its life-cycle; generated code hands the device to each
 * operator that runs on it as the operator's resource_handle (void*), so an
 * operator reaches its driver with `(tvm_device_t*)resource_handle`.
 *
 * Life-cycle (each arrow is one call; anything else is refused):
 *
 *   Uninitialized --Init--> Initialized --Open--> Open --Activate--> Active
 *   Destroyed ----Init-->     ^ (Bind here)        |   ^                 |
 *                             +------Close---------+   +---Deactivate----+
 *   Initialized --Destroy--> Destroyed
 *
 * i.e. Init -> Open -> (Activate -> Deactivate)* -> Close -> (Open ...)* -> Destroy.
 * A call made out of order returns kTvmErrorDeviceBadLifecycle and changes
 * nothing (no hook runs). A NULL device returns kTvmErrorDeviceInvalid.
 *
 * Hooks: each transition calls the matching hook of the bound ops table (a
 * NULL hook means "nothing to do"). A hook returns 0 or an error; on error the
 * transition does not happen, the device stays in its previous state, and the
 * hook's error is returned unchanged.
 *
 * Thread-safety: none; the executor serializes calls on one device.
 */
#ifndef TVM_RUNTIME_C_DEVICE_API_H_
#define TVM_RUNTIME_C_DEVICE_API_H_

#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Life-cycle states. Values other than 0 are unlikely bit patterns so that a
 * tvm_device_t left as uninitialized stack memory is almost never mistaken
 * for a live device (see TVMDeviceInit).
 */
typedef enum {
  kTVMDeviceStateUninitialized = 0,        /* Zeroed storage; never initialized. */
  kTVMDeviceStateInitialized = 0x44560031, /* Init done, or Closed: not holding resources. */
  kTVMDeviceStateOpen = 0x44560032,        /* Device memory available; may be in low power. */
  kTVMDeviceStateActive = 0x44560033,      /* Out of low power; running operators. */
  kTVMDeviceStateDestroyed = 0x44560034    /* No longer used; Init may reuse the struct. */
} tvm_device_state_t;

struct tvm_device;

/*
 * A device hook: does the driver's part of one transition for dev (whose
 * platform_context is the driver's). Returns 0 (kTvmErrorNoError) or an error
 * code, which aborts the transition.
 */
typedef int32_t (*tvm_device_hook_t)(struct tvm_device* dev);

/*
 * A driver's hooks, one per transition; any may be NULL. Platform bindings
 * provide a table with static storage duration; the device only borrows it.
 */
typedef struct {
  tvm_device_hook_t init;       /* When a platform binds the device (TVMDeviceBind). */
  tvm_device_hook_t open;       /* Initialized -> Open. */
  tvm_device_hook_t activate;   /* Open -> Active. */
  tvm_device_hook_t deactivate; /* Active -> Open. */
  tvm_device_hook_t close;      /* Open -> Initialized. */
  tvm_device_hook_t destroy;    /* Initialized -> Destroyed. */
} tvm_device_ops_t;

/*
 * One device. The application owns the storage and keeps it alive from Init
 * to Destroy. Fields are read and written only by this API and the platform
 * binding; use TVMDeviceGetState to read the state.
 */
typedef struct tvm_device {
  const tvm_device_ops_t* ops; /* NULL until a platform binds the device. */
  void* platform_context;      /* The driver's state; borrowed, owned by the binding's caller. */
  tvm_device_state_t state;
} tvm_device_t;

/*
 * Prepares dev for use: no binding, state Initialized. No hook runs (nothing
 * is bound yet). dev must be zeroed storage, a Destroyed device, or memory
 * never used as a device; calling Init on a live device would leak its
 * resources, so it is refused.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is Initialized, Open or Active.
 */
int32_t TVMDeviceInit(tvm_device_t* dev);

/*
 * Attaches a driver to an Initialized, unbound device: stores ops and
 * platform_context (both borrowed), then runs ops->init. If the hook fails,
 * the binding is undone and its error returned. Platform bindings
 * (TVMDevicePlatformBind*) call this; applications call the binding.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev or ops is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Initialized or is already bound;
 * or the init hook's error.
 */
int32_t TVMDeviceBind(tvm_device_t* dev, const tvm_device_ops_t* ops, void* platform_context);

/*
 * Open: matches instantiating the executor. Contract: after success the
 * device's memory is available (constants may be preloaded). Initialized -> Open.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev is NULL or not bound
 * to a platform; kTvmErrorDeviceBadLifecycle if dev is not Initialized; or the
 * open hook's error.
 */
int32_t TVMDeviceOpen(tvm_device_t* dev);

/*
 * Activate: matches the start of the executor's run. Contract: after success
 * the device has left any low-power state that would add latency, and
 * operators may launch work on it. Open -> Active.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Open; or the activate hook's error.
 */
int32_t TVMDeviceActivate(tvm_device_t* dev);

/*
 * Deactivate: matches the end of the executor's run. Contract: the device may
 * re-enter the low-power state Activate left, but must keep its memory
 * contents. Active -> Open.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Active; or the deactivate hook's error.
 */
int32_t TVMDeviceDeactivate(tvm_device_t* dev);

/*
 * Close: matches releasing the executor. Contract: the device may be released
 * for others to use; its memory contents are lost. The binding stays, so the
 * device may be Opened again. Open -> Initialized (an Active device must be
 * Deactivated first).
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Open; or the close hook's error.
 */
int32_t TVMDeviceClose(tvm_device_t* dev);

/*
 * Destroy: the struct is no longer used by TVM; runs the destroy hook (if
 * bound) and drops the binding. Initialized -> Destroyed (an Open device must
 * be Closed first). The application may then reuse or discard the storage.
 *
 * Returns kTvmErrorNoError; kTvmErrorDeviceInvalid if dev is NULL;
 * kTvmErrorDeviceBadLifecycle if dev is not Initialized; or the destroy hook's error.
 */
int32_t TVMDeviceDestroy(tvm_device_t* dev);

/* dev's state; kTVMDeviceStateUninitialized for NULL. */
tvm_device_state_t TVMDeviceGetState(const tvm_device_t* dev);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_C_DEVICE_API_H_ */
