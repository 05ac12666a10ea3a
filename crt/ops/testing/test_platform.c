/* test_platform.c: see test_platform.h. */
#include "crt/ops/testing/test_platform.h"

#include <stdint.h>
#include <stdlib.h>
#include <tvm/runtime/crt/platform.h>

static int g_live_allocations;
static int g_timer_running;
static uint8_t g_random_state = 0x3c;

int bf_ops_test_platform_live_allocations(void) { return g_live_allocations; }

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
  (void)dev;
  /* malloc(0) may return NULL; a zero-byte request still gets an address. */
  *out_ptr = malloc(num_bytes == 0 ? 1u : num_bytes);
  if (*out_ptr == NULL) {
    return kTvmErrorPlatformNoMemory;
  }
  g_live_allocations++;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  (void)dev;
  if (ptr != NULL) {
    free(ptr);
    g_live_allocations--;
  }
  return kTvmErrorNoError;
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
  *elapsed_time_seconds = 1e-3;
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
  g_timer_running = 0;
  return kTvmErrorNoError;
}
