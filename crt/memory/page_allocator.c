/*
 * page_allocator.c: first-fit pages over a caller-supplied arena.
 *
 * The page map holds one byte per page. A block is a kPageHead byte followed
 * by kPageBody bytes; free pages are kPageFree. Because a block's length is
 * implied by the map, free needs no header inside the block, and a pointer is
 * valid to free exactly when it maps to a kPageHead page — which rejects
 * double frees and pointers into the middle of a block with one lookup.
 */
#include <string.h>
#include <tvm/runtime/crt/page_allocator.h>

enum {
  kPageFree = 0,
  kPageHead = 1,
  kPageBody = 2,
};

static int IsInitialized(const crt_page_allocator_t* alloc) {
  return alloc != NULL && alloc->num_pages != 0;
}

tvm_crt_error_t crt_page_allocator_init(crt_page_allocator_t* alloc, void* arena,
                                        size_t arena_bytes, size_t page_bytes) {
  size_t align;
  size_t num_pages;
  size_t pad = 0;
  uint32_t log2 = 0;

  if (alloc == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  memset(alloc, 0, sizeof(*alloc));
  if (arena == NULL || page_bytes < CRT_PAGE_ALLOCATOR_MIN_PAGE_BYTES ||
      (page_bytes & (page_bytes - 1)) != 0) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  while (((size_t)1 << log2) != page_bytes) {
    ++log2;
  }
  align = CRT_PAGE_ALLOCATOR_ALIGNMENT(page_bytes);

  /*
   * Each page costs page_bytes + 1 map byte; alignment padding (< 64 bytes)
   * may cost a page or two more, so step down until the layout fits. Offsets,
   * not pointers, so nothing overflows near the top of the address space.
   */
  num_pages = arena_bytes / (page_bytes + 1);
  while (num_pages > 0) {
    size_t misalign = (size_t)(((uintptr_t)arena + num_pages) & (uintptr_t)(align - 1));
    pad = misalign == 0 ? 0 : align - misalign;
    if (num_pages + pad <= arena_bytes &&
        (arena_bytes - num_pages - pad) / page_bytes >= num_pages) {
      break;
    }
    --num_pages;
  }
  if (num_pages == 0) {
    return kTvmErrorPlatformNoMemory;
  }

  alloc->page_map = (uint8_t*)arena;
  alloc->pages = alloc->page_map + num_pages + pad;
  alloc->page_bytes = page_bytes;
  alloc->page_bytes_log2 = log2;
  memset(alloc->page_map, kPageFree, num_pages);
  alloc->num_pages = num_pages; /* Last: marks the allocator initialized. */
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_page_allocator_allocate(crt_page_allocator_t* alloc, size_t nbytes,
                                            void** out) {
  size_t needed;
  size_t run_start = 0;
  size_t run_length = 0;
  size_t i;

  if (out == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  *out = NULL;
  if (!IsInitialized(alloc)) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  /* Written this way so that nbytes near SIZE_MAX cannot overflow. */
  needed = nbytes == 0 ? 1 : ((nbytes - 1) >> alloc->page_bytes_log2) + 1;
  if (needed > alloc->num_pages - alloc->pages_used) {
    return kTvmErrorPlatformNoMemory;
  }

  for (i = 0; i < alloc->num_pages; ++i) {
    if (alloc->page_map[i] != kPageFree) {
      run_length = 0;
      continue;
    }
    if (run_length == 0) {
      run_start = i;
    }
    if (++run_length == needed) {
      break;
    }
  }
  if (run_length < needed) {
    return kTvmErrorPlatformNoMemory;
  }

  alloc->page_map[run_start] = kPageHead;
  if (needed > 1) {
    memset(alloc->page_map + run_start + 1, kPageBody, needed - 1);
  }
  alloc->pages_used += needed;
  if (alloc->pages_used > alloc->high_water_pages) {
    alloc->high_water_pages = alloc->pages_used;
  }
  ++alloc->live_blocks;
  *out = alloc->pages + (run_start << alloc->page_bytes_log2);
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_page_allocator_free(crt_page_allocator_t* alloc, void* ptr) {
  uintptr_t first;
  uintptr_t address;
  size_t offset;
  size_t page;
  size_t end;

  if (!IsInitialized(alloc)) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (ptr == NULL) {
    return kTvmErrorNoError;
  }
  /* Integer comparison: ptr may belong to another object entirely. */
  first = (uintptr_t)alloc->pages;
  address = (uintptr_t)ptr;
  if (address < first) {
    return kTvmErrorPlatformStackAllocBadFree;
  }
  offset = (size_t)(address - first);
  page = offset >> alloc->page_bytes_log2;
  if (page >= alloc->num_pages || (offset & (alloc->page_bytes - 1)) != 0 ||
      alloc->page_map[page] != kPageHead) {
    return kTvmErrorPlatformStackAllocBadFree;
  }

  end = page + 1;
  while (end < alloc->num_pages && alloc->page_map[end] == kPageBody) {
    ++end;
  }
  memset(alloc->page_map + page, kPageFree, end - page);
  alloc->pages_used -= end - page;
  --alloc->live_blocks;
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_page_allocator_get_stats(const crt_page_allocator_t* alloc,
                                             crt_page_allocator_stats_t* out) {
  size_t largest = 0;
  size_t run = 0;
  size_t i;

  if (out == NULL || !IsInitialized(alloc)) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  for (i = 0; i < alloc->num_pages; ++i) {
    run = alloc->page_map[i] == kPageFree ? run + 1 : 0;
    if (run > largest) {
      largest = run;
    }
  }
  out->page_bytes = alloc->page_bytes;
  out->pages_total = alloc->num_pages;
  out->pages_used = alloc->pages_used;
  out->largest_free_run_pages = largest;
  out->high_water_pages = alloc->high_water_pages;
  out->live_blocks = alloc->live_blocks;
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_page_allocator_reset_high_water(crt_page_allocator_t* alloc) {
  if (!IsInitialized(alloc)) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  alloc->high_water_pages = alloc->pages_used;
  return kTvmErrorNoError;
}
