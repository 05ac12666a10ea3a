/* fake_platform.c: see fake_platform.h. */
#include "crt/runtime/testing/fake_platform.h"

#include <stdint.h>
#include <stdlib.h>

#include <tvm/runtime/crt/platform.h>

/* Every block starts on this boundary (enough for int64_t, double and pointers). */
#define FAKE_ALIGN 16u

static union {
  uint8_t bytes[CRT_FAKE_PLATFORM_POOL_BYTES];
  long double align;
} g_pool;
static size_t g_used;
static size_t g_limit = CRT_FAKE_PLATFORM_POOL_BYTES;
static int g_allocations_left = -1;
static void* g_live[CRT_FAKE_PLATFORM_MAX_LIVE];
static int g_bad_frees;
static int g_timer_running;
static double g_elapsed_seconds = 1e-3;
static uint8_t g_random_state = 0x5a;

void crt_fake_platform_reset(void) {
  size_t i;
  g_used = 0;
  g_limit = CRT_FAKE_PLATFORM_POOL_BYTES;
  g_allocations_left = -1;
  for (i = 0; i < CRT_FAKE_PLATFORM_MAX_LIVE; i++) {
    g_live[i] = NULL;
  }
  g_bad_frees = 0;
  g_timer_running = 0;
  g_elapsed_seconds = 1e-3;
}

void crt_fake_platform_set_pool_limit(size_t limit_bytes) {
  g_limit = limit_bytes < CRT_FAKE_PLATFORM_POOL_BYTES ? limit_bytes : CRT_FAKE_PLATFORM_POOL_BYTES;
}

void crt_fake_platform_set_allocations_left(int n) { g_allocations_left = n; }

int crt_fake_platform_live_allocations(void) {
  int n = 0;
  size_t i;
  for (i = 0; i < CRT_FAKE_PLATFORM_MAX_LIVE; i++) {
    n += g_live[i] != NULL;
  }
  return n;
}

int crt_fake_platform_bad_frees(void) { return g_bad_frees; }

void crt_fake_platform_set_elapsed_seconds(double seconds) { g_elapsed_seconds = seconds; }

void TVMPlatformAbort(tvm_crt_error_t code) {
  (void)code;
  abort();
}

size_t TVMPlatformFormatMessage(char* out_buf, size_t out_buf_size_bytes, const char* fmt,
                                va_list args) {
  /* No formatting: the format string itself, truncated. */
  size_t n = 0;
  (void)args;
  if (out_buf_size_bytes == 0) {
    return 0;
  }
  while (n + 1 < out_buf_size_bytes && fmt[n] != '\0') {
    out_buf[n] = fmt[n];
    n++;
  }
  out_buf[n] = '\0';
  return n;
}

tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  size_t start = (g_used + FAKE_ALIGN - 1u) / FAKE_ALIGN * FAKE_ALIGN;
  size_t slot;
  (void)dev;
  *out_ptr = NULL;
  if (g_allocations_left == 0 || start > g_limit || num_bytes > g_limit - start) {
    return kTvmErrorPlatformNoMemory;
  }
  for (slot = 0; slot < CRT_FAKE_PLATFORM_MAX_LIVE && g_live[slot] != NULL; slot++) {
  }
  if (slot == CRT_FAKE_PLATFORM_MAX_LIVE) {
    return kTvmErrorPlatformNoMemory;
  }
  if (g_allocations_left > 0) {
    g_allocations_left--;
  }
  /* A zero-byte request still gets a distinct address. */
  g_used = start + (num_bytes == 0 ? 1u : num_bytes);
  g_live[slot] = &g_pool.bytes[start];
  *out_ptr = g_live[slot];
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  size_t i;
  (void)dev;
  if (ptr == NULL) {
    return kTvmErrorNoError;
  }
  for (i = 0; i < CRT_FAKE_PLATFORM_MAX_LIVE; i++) {
    if (g_live[i] == ptr) {
      g_live[i] = NULL;
      return kTvmErrorNoError;
    }
  }
  g_bad_frees++;
  return kTvmErrorPlatformStackAllocBadFree;
}

tvm_crt_error_t TVMPlatformTimerStart(void) {
  if (g_timer_running) {
    return kTvmErrorPlatformTimerBadState;
  }
  g_timer_running = 1;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  if (!g_timer_running) {
    return kTvmErrorPlatformTimerBadState;
  }
  g_timer_running = 0;
  *elapsed_time_seconds = g_elapsed_seconds;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformBeforeMeasurement(void) { return kTvmErrorNoError; }

tvm_crt_error_t TVMPlatformAfterMeasurement(void) { return kTvmErrorNoError; }

tvm_crt_error_t TVMPlatformGenerateRandom(uint8_t* buffer, size_t num_bytes) {
  size_t i;
  for (i = 0; i < num_bytes; i++) {
    g_random_state = (uint8_t)(g_random_state * 37u + 11u);
    buffer[i] = g_random_state;
  }
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformInitialize(void) {
  crt_fake_platform_reset();
  return kTvmErrorNoError;
}
