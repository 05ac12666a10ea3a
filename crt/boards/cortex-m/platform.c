/*
 * platform.c: crt's platform.h for the Cortex-M packages.
 *
 * - Memory: a static pool of TVM_CRT_MEMORY_POOL_SIZE_BYTES (board.conf MEMORY_POOL_BYTES) carved
 *   into TVM_CRT_PAGE_BYTES pages by crt_page_allocator; the only heap. TVMPlatformInitialize sets
 *   it up; a second call keeps it. The DLDevice argument is ignored (CPU memory only).
 * - Timer: core clock cycles (timer.c: DWT or SysTick), converted to seconds with BF_CONF_CPU_HZ;
 *   resolution 1 / CPU_HZ. Start while running and Stop while stopped are
 *   kTvmErrorPlatformTimerBadState. The interval between Start and Stop is marked for an emulated
 *   board's cycle model (BF_BSP_CYCLE_MARK_*, NOPs on silicon).
 * - TVMPlatformGenerateRandom: session nonces and random_fill's benchmark inputs — an xorshift
 *   state stirred with the cycle count at each call. Not for security; under a deterministic
 *   emulator (QEMU -icount) the sequence repeats from boot to boot.
 * - Before/AfterMeasurement: nothing to do.
 * - TVMPlatformAbort: fault.c (logs one line, resets). TVMPlatformFormatMessage: format.c.
 */
#include <crt_config.h>
#include <tvm/runtime/crt/page_allocator.h>
#include <tvm/runtime/crt/platform.h>

#include "bf_bsp.h"

static union {
  uint8_t bytes[TVM_CRT_MEMORY_POOL_SIZE_BYTES];
  uint64_t align_u64;
  double align_double;
  void* align_pointer;
} g_bf_pool_storage;

static crt_page_allocator_t g_bf_pool;
static int g_bf_pool_ready;
static int g_bf_timer_running;
static uint64_t g_bf_timer_start;
static uint32_t g_bf_random_state = 0x9E3779B9u;

tvm_crt_error_t TVMPlatformInitialize(void) {
  tvm_crt_error_t err;
  g_bf_timer_running = 0;
  if (g_bf_pool_ready) return kTvmErrorNoError;
  err = crt_page_allocator_init(&g_bf_pool, g_bf_pool_storage.bytes,
                                sizeof(g_bf_pool_storage.bytes), TVM_CRT_PAGE_BYTES);
  if (err == kTvmErrorNoError) g_bf_pool_ready = 1;
  return err;
}

tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  (void)dev;
  if (out_ptr == NULL) return kTvmErrorFunctionCallInvalidArg;
  *out_ptr = NULL;
  if (!g_bf_pool_ready) return kTvmErrorPlatformNoMemory;
  return crt_page_allocator_allocate(&g_bf_pool, num_bytes, out_ptr);
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  (void)dev;
  if (ptr == NULL) return kTvmErrorNoError;
  if (!g_bf_pool_ready) return kTvmErrorPlatformStackAllocBadFree;
  return crt_page_allocator_free(&g_bf_pool, ptr);
}

tvm_crt_error_t TVMPlatformTimerStart(void) {
  if (g_bf_timer_running) return kTvmErrorPlatformTimerBadState;
  g_bf_timer_running = 1;
  bf_bsp_timer_rebase(); /* a fixed timer phase: repeatable counts under QEMU -icount */
  g_bf_timer_start = bf_bsp_cycles();
  BF_BSP_CYCLE_MARK_START();
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  uint64_t now;
  BF_BSP_CYCLE_MARK_STOP();
  now = bf_bsp_cycles();
  if (!g_bf_timer_running) return kTvmErrorPlatformTimerBadState;
  if (elapsed_time_seconds == NULL) return kTvmErrorFunctionCallInvalidArg;
  g_bf_timer_running = 0;
  *elapsed_time_seconds = (double)(now - g_bf_timer_start) / (double)BF_CONF_CPU_HZ;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformBeforeMeasurement(void) { return kTvmErrorNoError; }

tvm_crt_error_t TVMPlatformAfterMeasurement(void) { return kTvmErrorNoError; }

tvm_crt_error_t TVMPlatformGenerateRandom(uint8_t* buffer, size_t num_bytes) {
  uint32_t x = g_bf_random_state;
  size_t i;
  if (buffer == NULL && num_bytes > 0u) return kTvmErrorFunctionCallInvalidArg;
  x ^= (uint32_t)bf_bsp_cycles();
  if (x == 0u) x = 0x9E3779B9u; /* xorshift's one fixed point */
  for (i = 0; i < num_bytes; i++) {
    x ^= x << 13; /* xorshift32 */
    x ^= x >> 17;
    x ^= x << 5;
    buffer[i] = (uint8_t)(x >> 24);
  }
  g_bf_random_state = x;
  return kTvmErrorNoError;
}
