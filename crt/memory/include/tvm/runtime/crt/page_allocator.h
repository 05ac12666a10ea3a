/*
 * page_allocator.h: a first-fit page allocator over one caller-supplied arena.
 *
 * crt has no heap. A board hands this allocator a block of RAM (the arena);
 * the allocator carves it into fixed-size pages and serves every request as a
 * run of whole, contiguous pages. Its bookkeeping (one byte per page, the
 * "page map") lives at the start of the arena itself, so the only memory the
 * allocator needs besides the arena is the small crt_page_allocator_t the
 * caller owns.
 *
 * - Placement: first fit, lowest address first.
 * - Coalescing: free pages are runs in the page map, so a freed block joins
 *   its free neighbours at once; no separate merge step exists.
 * - Alignment: every block starts at an address that is a multiple of
 *   CRT_PAGE_ALLOCATOR_ALIGNMENT(page_bytes) = min(page_bytes, 64), so at
 *   least 8 bytes (page_bytes >= 8).
 * - Cost: allocate, free and stats are O(number of pages); nothing else.
 * - Never aborts, never touches stdio or a heap.
 *
 * Thread-safety: none; crt is single-threaded. One allocator per arena.
 */
#ifndef TVM_RUNTIME_CRT_PAGE_ALLOCATOR_H_
#define TVM_RUNTIME_CRT_PAGE_ALLOCATOR_H_

#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Smallest page the allocator accepts (bytes); page_bytes must also be a power of two. */
#define CRT_PAGE_ALLOCATOR_MIN_PAGE_BYTES 8

/* Most alignment the allocator pads the arena for (bytes). */
#define CRT_PAGE_ALLOCATOR_MAX_ALIGNMENT 64

/* Alignment of every block for a given page size: min(page_bytes, 64). */
#define CRT_PAGE_ALLOCATOR_ALIGNMENT(page_bytes)                          \
  ((page_bytes) < CRT_PAGE_ALLOCATOR_MAX_ALIGNMENT ? (size_t)(page_bytes) \
                                                   : (size_t)CRT_PAGE_ALLOCATOR_MAX_ALIGNMENT)

/*
 * One allocator. The caller owns this struct (static storage or stack) and
 * must keep it and the arena alive while any block is in use. The fields are
 * private: read them only through crt_page_allocator_get_stats. A
 * zero-initialized struct is "not initialized"; every call but init then
 * fails with kTvmErrorFunctionCallInvalidArg.
 */
typedef struct {
  uint8_t* page_map; /* num_pages state bytes, at the start of the arena. */
  uint8_t* pages;    /* First page; aligned to CRT_PAGE_ALLOCATOR_ALIGNMENT. */
  size_t num_pages;  /* 0 means not initialized. */
  size_t page_bytes; /* A power of two, >= CRT_PAGE_ALLOCATOR_MIN_PAGE_BYTES. */
  uint32_t page_bytes_log2;
  size_t pages_used;
  size_t high_water_pages;
  size_t live_blocks;
} crt_page_allocator_t;

/* A snapshot of an allocator's state, from crt_page_allocator_get_stats. */
typedef struct {
  size_t page_bytes;             /* Size of one page. */
  size_t pages_total;            /* Pages the arena holds after the page map and padding. */
  size_t pages_used;             /* Pages in live blocks. */
  size_t largest_free_run_pages; /* Longest run of free pages: the largest block that fits. */
  size_t high_water_pages;       /* Most pages ever used at once since init or reset. */
  size_t live_blocks;            /* Blocks allocated and not yet freed. */
} crt_page_allocator_stats_t;

/*
 * Lays out the allocator over arena[0, arena_bytes): the page map first, then
 * padding up to the alignment, then as many pages as fit. Every page starts
 * free. Any previous state of *alloc is discarded (blocks from it become
 * invalid). The allocator borrows the arena; it never frees it.
 *
 * Returns:
 *   kTvmErrorNoError                 on success.
 *   kTvmErrorFunctionCallInvalidArg  alloc or arena is NULL, or page_bytes is not a
 *                                    power of two >= CRT_PAGE_ALLOCATOR_MIN_PAGE_BYTES.
 *   kTvmErrorPlatformNoMemory        the arena cannot hold even one page with its map.
 * On error *alloc is left not initialized (if alloc is non-NULL).
 */
tvm_crt_error_t crt_page_allocator_init(crt_page_allocator_t* alloc, void* arena,
                                        size_t arena_bytes, size_t page_bytes);

/*
 * Allocates a block of at least nbytes bytes (rounded up to whole pages) at the
 * lowest address where enough contiguous free pages exist, and stores it in
 * *out. The block's contents are unspecified. A zero-byte request takes one
 * page and returns a unique, freeable pointer, like a non-zero request.
 *
 * Returns:
 *   kTvmErrorNoError                 on success; *out is the block, aligned to
 *                                    CRT_PAGE_ALLOCATOR_ALIGNMENT(page_bytes).
 *   kTvmErrorPlatformNoMemory        no run of free pages is long enough (including
 *                                    requests larger than the arena); *out = NULL
 *                                    and the allocator is unchanged.
 *   kTvmErrorFunctionCallInvalidArg  alloc or out is NULL, or alloc is not
 *                                    initialized; *out = NULL when out is non-NULL.
 */
tvm_crt_error_t crt_page_allocator_allocate(crt_page_allocator_t* alloc, size_t nbytes, void** out);

/*
 * Returns the block at ptr to the free pages. ptr must be exactly a pointer
 * crt_page_allocator_allocate returned from this allocator and not yet freed.
 * Freeing NULL is a no-op and succeeds.
 *
 * Returns:
 *   kTvmErrorNoError                    on success.
 *   kTvmErrorPlatformStackAllocBadFree  ptr is outside the arena's pages, not the
 *                                       start of a block (e.g. points inside one),
 *                                       or its block was already freed. Nothing changes.
 *   kTvmErrorFunctionCallInvalidArg     alloc is NULL or not initialized.
 */
tvm_crt_error_t crt_page_allocator_free(crt_page_allocator_t* alloc, void* ptr);

/*
 * Stores a snapshot of the allocator's state in *out (O(pages) for the
 * largest free run).
 *
 * Returns kTvmErrorNoError, or kTvmErrorFunctionCallInvalidArg if alloc or out
 * is NULL or alloc is not initialized (then *out is unchanged).
 */
tvm_crt_error_t crt_page_allocator_get_stats(const crt_page_allocator_t* alloc,
                                             crt_page_allocator_stats_t* out);

/*
 * Restarts the high-water mark at the pages in use now, e.g. before measuring
 * one model's peak. Returns kTvmErrorNoError, or kTvmErrorFunctionCallInvalidArg
 * if alloc is NULL or not initialized.
 */
tvm_crt_error_t crt_page_allocator_reset_high_water(crt_page_allocator_t* alloc);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_PAGE_ALLOCATOR_H_ */
