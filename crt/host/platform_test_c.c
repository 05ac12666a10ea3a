/*
 * platform_test_c.c: proves host_platform.h (and platform.h through it) is
 * valid C99.
 *
 * Uses the host platform from C; platform_test.cc calls
 * crt_host_headers_compile_as_c() and expects 0.
 */
#include <crt_config.h>
#include <tvm/runtime/crt/host_platform.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_host_headers_compile_as_c(void);

/* Returns 0 on success, or the number of the failed step. */
int crt_host_headers_compile_as_c(void) {
  DLDevice cpu;
  crt_page_allocator_stats_t before;
  crt_page_allocator_stats_t during;
  void* block = NULL;
  uint8_t nonce[4];
  double elapsed = -1.0;
  crt_host_timer_totals_t totals;

  cpu.device_type = kDLCPU;
  cpu.device_id = 0;
  if (TVMPlatformInitialize() != kTvmErrorNoError) return 1;
  if (crt_host_platform_get_memory_stats(&before) != kTvmErrorNoError) return 2;
  if (TVMPlatformMemoryAllocate(3 * TVM_CRT_PAGE_BYTES, cpu, &block) != kTvmErrorNoError) return 3;
  if (crt_host_platform_get_memory_stats(&during) != kTvmErrorNoError) return 4;
  if (during.pages_used != before.pages_used + 3) return 5;
  if (TVMPlatformMemoryFree(block, cpu) != kTvmErrorNoError) return 6;
  if (TVMPlatformGenerateRandom(nonce, sizeof(nonce)) != kTvmErrorNoError) return 7;
  if (TVMPlatformTimerStart() != kTvmErrorNoError) return 8;
  if (TVMPlatformTimerStop(&elapsed) != kTvmErrorNoError || elapsed < 0.0) return 9;
  if (crt_host_platform_timer_totals(&totals, 1) != kTvmErrorNoError || totals.intervals < 1u) {
    return 10;
  }
  if (crt_host_platform_timer_source() == NULL || crt_host_platform_timer_resolution_s() <= 0.0) {
    return 11;
  }
  return 0;
}
