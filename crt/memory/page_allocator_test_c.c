/*
 * page_allocator_test_c.c: proves page_allocator.h is valid C99.
 *
 * Uses the allocator from C over a small static arena; page_allocator_test.cc
 * calls crt_memory_headers_compile_as_c() and expects 0.
 */
#include <tvm/runtime/crt/page_allocator.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_memory_headers_compile_as_c(void);

/*
 * Allocates two blocks, frees them, and checks the stats say the arena is
 * empty again. Returns 0 on success, or the number of the failed step.
 */
int crt_memory_headers_compile_as_c(void) {
  static uint64_t arena[64]; /* 512 bytes, 8-aligned */
  crt_page_allocator_t alloc;
  crt_page_allocator_stats_t stats;
  void* a = NULL;
  void* b = NULL;

  if (crt_page_allocator_init(&alloc, arena, sizeof(arena), 16) != kTvmErrorNoError) return 1;
  if (crt_page_allocator_allocate(&alloc, 20, &a) != kTvmErrorNoError) return 2;
  if (crt_page_allocator_allocate(&alloc, 0, &b) != kTvmErrorNoError) return 3;
  if (crt_page_allocator_get_stats(&alloc, &stats) != kTvmErrorNoError) return 4;
  if (stats.pages_used != 3 || stats.live_blocks != 2) return 5;
  if (crt_page_allocator_free(&alloc, a) != kTvmErrorNoError) return 6;
  if (crt_page_allocator_free(&alloc, a) != kTvmErrorPlatformStackAllocBadFree) return 7;
  if (crt_page_allocator_free(&alloc, b) != kTvmErrorNoError) return 8;
  if (crt_page_allocator_get_stats(&alloc, &stats) != kTvmErrorNoError) return 9;
  if (stats.pages_used != 0 || stats.largest_free_run_pages != stats.pages_total) return 10;
  return 0;
}
