// Tests for crt_page_allocator: placement, coalescing, exhaustion, bad frees,
// alignment, and a seeded random workload checked against a shadow model.

#include "tvm/runtime/crt/page_allocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

extern "C" int crt_memory_headers_compile_as_c(void);

namespace {

constexpr size_t kPageBytes = 64;

// An arena aligned to 64 so the layout (map, then pages) is predictable:
// 4096 bytes hold 63 pages (63 map bytes + 1 padding + 63 * 64 = 4096).
struct alignas(64) Arena {
  uint8_t bytes[4096];
};

class PageAllocatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::memset(arena_.bytes, 0xEE, sizeof(arena_.bytes));
    ASSERT_EQ(crt_page_allocator_init(&alloc_, arena_.bytes, sizeof(arena_.bytes), kPageBytes),
              kTvmErrorNoError);
  }

  crt_page_allocator_stats_t Stats() {
    crt_page_allocator_stats_t stats;
    EXPECT_EQ(crt_page_allocator_get_stats(&alloc_, &stats), kTvmErrorNoError);
    return stats;
  }

  void* Allocate(size_t nbytes) {
    void* ptr = nullptr;
    EXPECT_EQ(crt_page_allocator_allocate(&alloc_, nbytes, &ptr), kTvmErrorNoError);
    return ptr;
  }

  Arena arena_;
  crt_page_allocator_t alloc_;
};

// The allocator's bytes, copied with memcpy so padding compares equal too.
using AllocatorBytes = std::array<uint8_t, sizeof(crt_page_allocator_t)>;
AllocatorBytes BytesOf(const crt_page_allocator_t& alloc) {
  AllocatorBytes bytes;
  std::memcpy(bytes.data(), &alloc, sizeof(alloc));
  return bytes;
}

bool InArena(const Arena& arena, const void* ptr, size_t nbytes) {
  auto begin = reinterpret_cast<uintptr_t>(arena.bytes);
  auto p = reinterpret_cast<uintptr_t>(ptr);
  return p >= begin && p + nbytes <= begin + sizeof(arena.bytes);
}

TEST(PageAllocator, HeaderCompilesAsC) { EXPECT_EQ(crt_memory_headers_compile_as_c(), 0); }

TEST_F(PageAllocatorTest, InitLaysOutPagesAfterTheMap) {
  crt_page_allocator_stats_t stats = Stats();
  EXPECT_EQ(stats.page_bytes, kPageBytes);
  EXPECT_EQ(stats.pages_total, 63u);
  EXPECT_EQ(stats.pages_used, 0u);
  EXPECT_EQ(stats.largest_free_run_pages, 63u);
  EXPECT_EQ(stats.high_water_pages, 0u);
  EXPECT_EQ(stats.live_blocks, 0u);
}

TEST_F(PageAllocatorTest, AllocateFreeAndReuse) {
  void* a = Allocate(100);  // 2 pages
  void* b = Allocate(64);   // 1 page
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(static_cast<uint8_t*>(b) - static_cast<uint8_t*>(a), 2 * 64);
  EXPECT_TRUE(InArena(arena_, a, 128));
  EXPECT_TRUE(InArena(arena_, b, 64));
  std::memset(a, 0xA1, 100);
  std::memset(b, 0xB2, 64);

  crt_page_allocator_stats_t stats = Stats();
  EXPECT_EQ(stats.pages_used, 3u);
  EXPECT_EQ(stats.live_blocks, 2u);

  EXPECT_EQ(crt_page_allocator_free(&alloc_, a), kTvmErrorNoError);
  EXPECT_EQ(Stats().pages_used, 1u);
  // First fit: a block of up to two pages reuses a's place.
  void* c = Allocate(128);
  EXPECT_EQ(c, a);
  EXPECT_EQ(static_cast<uint8_t*>(b)[63], 0xB2);  // b untouched throughout

  EXPECT_EQ(crt_page_allocator_free(&alloc_, b), kTvmErrorNoError);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, c), kTvmErrorNoError);
  stats = Stats();
  EXPECT_EQ(stats.pages_used, 0u);
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.largest_free_run_pages, 63u);
  EXPECT_EQ(stats.high_water_pages, 3u);
}

TEST_F(PageAllocatorTest, FragmentationThenCoalescing) {
  std::vector<void*> blocks;
  for (int i = 0; i < 63; ++i) blocks.push_back(Allocate(kPageBytes));
  // Free every even page: 32 free pages, but no two adjacent.
  for (int i = 0; i < 63; i += 2) {
    ASSERT_EQ(crt_page_allocator_free(&alloc_, blocks[i]), kTvmErrorNoError);
  }
  crt_page_allocator_stats_t stats = Stats();
  EXPECT_EQ(stats.pages_used, 31u);
  EXPECT_EQ(stats.largest_free_run_pages, 1u);

  void* two_pages = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(crt_page_allocator_allocate(&alloc_, 2 * kPageBytes, &two_pages),
            kTvmErrorPlatformNoMemory);
  EXPECT_EQ(two_pages, nullptr);

  // Freeing page 1 joins pages 0..2 into one run of three.
  ASSERT_EQ(crt_page_allocator_free(&alloc_, blocks[1]), kTvmErrorNoError);
  EXPECT_EQ(Stats().largest_free_run_pages, 3u);
  void* three = Allocate(3 * kPageBytes);
  EXPECT_EQ(three, blocks[0]);
  ASSERT_EQ(crt_page_allocator_free(&alloc_, three), kTvmErrorNoError);

  // Freeing the rest coalesces everything back into one run.
  for (int i = 3; i < 63; i += 2) {
    ASSERT_EQ(crt_page_allocator_free(&alloc_, blocks[i]), kTvmErrorNoError);
  }
  stats = Stats();
  EXPECT_EQ(stats.pages_used, 0u);
  EXPECT_EQ(stats.largest_free_run_pages, 63u);
  EXPECT_EQ(Allocate(63 * kPageBytes), blocks[0]);
}

TEST_F(PageAllocatorTest, ExhaustionReturnsNoMemoryAndLeavesStateIntact) {
  void* a = Allocate(40 * kPageBytes);
  ASSERT_NE(a, nullptr);
  std::memset(a, 0x5A, 40 * kPageBytes);

  AllocatorBytes before_alloc = BytesOf(alloc_);
  Arena before_arena = arena_;
  crt_page_allocator_stats_t before = Stats();

  const size_t too_big[] = {24 * kPageBytes, 63 * kPageBytes, 1u << 20, SIZE_MAX,
                            SIZE_MAX - kPageBytes};
  for (size_t nbytes : too_big) {
    void* out = reinterpret_cast<void*>(0x1);
    EXPECT_EQ(crt_page_allocator_allocate(&alloc_, nbytes, &out), kTvmErrorPlatformNoMemory)
        << nbytes;
    EXPECT_EQ(out, nullptr);
  }
  // Byte-for-byte: neither the map nor any block changed.
  EXPECT_EQ(before_alloc, BytesOf(alloc_));
  EXPECT_EQ(std::memcmp(&before_arena, &arena_, sizeof(arena_)), 0);
  crt_page_allocator_stats_t after = Stats();
  EXPECT_EQ(after.pages_used, before.pages_used);
  EXPECT_EQ(after.largest_free_run_pages, before.largest_free_run_pages);
  EXPECT_EQ(after.high_water_pages, before.high_water_pages);

  // What is left still fits exactly.
  EXPECT_NE(Allocate(23 * kPageBytes), nullptr);
  void* out = nullptr;
  EXPECT_EQ(crt_page_allocator_allocate(&alloc_, 0, &out), kTvmErrorPlatformNoMemory);
}

TEST_F(PageAllocatorTest, BadFreeIsRejectedAndChangesNothing) {
  void* a = Allocate(3 * kPageBytes);
  void* b = Allocate(kPageBytes);
  AllocatorBytes before_alloc = BytesOf(alloc_);
  Arena before_arena = arena_;

  int not_from_arena = 0;
  uint8_t* inside = static_cast<uint8_t*>(a);
  void* bad[] = {
      &not_from_arena,                      // another object
      arena_.bytes,                         // the page map
      inside + 1,                           // misaligned, inside a block
      inside + kPageBytes,                  // page-aligned, but the middle of a block
      inside + 5 * kPageBytes,              // a free page
      arena_.bytes + sizeof(arena_.bytes),  // one past the end
  };
  for (void* ptr : bad) {
    EXPECT_EQ(crt_page_allocator_free(&alloc_, ptr), kTvmErrorPlatformStackAllocBadFree) << ptr;
  }
  EXPECT_EQ(before_alloc, BytesOf(alloc_));
  EXPECT_EQ(std::memcmp(&before_arena, &arena_, sizeof(arena_)), 0);

  // Double free.
  EXPECT_EQ(crt_page_allocator_free(&alloc_, b), kTvmErrorNoError);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, b), kTvmErrorPlatformStackAllocBadFree);
  EXPECT_EQ(Stats().pages_used, 3u);
  EXPECT_EQ(Stats().live_blocks, 1u);

  // NULL is a no-op.
  EXPECT_EQ(crt_page_allocator_free(&alloc_, nullptr), kTvmErrorNoError);
  EXPECT_EQ(Stats().pages_used, 3u);
}

TEST_F(PageAllocatorTest, ZeroByteAllocationIsAUniqueFreeablePage) {
  void* a = Allocate(0);
  void* b = Allocate(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_EQ(Stats().pages_used, 2u);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, a), kTvmErrorNoError);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, b), kTvmErrorNoError);
  EXPECT_EQ(Stats().pages_used, 0u);
}

TEST_F(PageAllocatorTest, ExactFitOfTheWholeArena) {
  void* all = Allocate(63 * kPageBytes);
  ASSERT_NE(all, nullptr);
  EXPECT_TRUE(InArena(arena_, all, 63 * kPageBytes));
  std::memset(all, 0x77, 63 * kPageBytes);  // The whole block is usable.
  crt_page_allocator_stats_t stats = Stats();
  EXPECT_EQ(stats.pages_used, 63u);
  EXPECT_EQ(stats.largest_free_run_pages, 0u);
  void* one = nullptr;
  EXPECT_EQ(crt_page_allocator_allocate(&alloc_, 1, &one), kTvmErrorPlatformNoMemory);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, all), kTvmErrorNoError);
  EXPECT_EQ(Allocate(63 * kPageBytes - 1), all);
}

TEST(PageAllocator, AlignmentHoldsForAnyArenaOffset) {
  alignas(64) static uint8_t storage[2048 + 64];
  const size_t page_sizes[] = {8, 16, 32, 64, 128, 256};
  for (size_t page_bytes : page_sizes) {
    for (size_t offset = 0; offset < 64; ++offset) {
      crt_page_allocator_t alloc;
      ASSERT_EQ(crt_page_allocator_init(&alloc, storage + offset, 2048, page_bytes),
                kTvmErrorNoError);
      const size_t alignment = std::min<size_t>(page_bytes, 64);
      EXPECT_EQ(CRT_PAGE_ALLOCATOR_ALIGNMENT(page_bytes), alignment);
      crt_page_allocator_stats_t stats;
      ASSERT_EQ(crt_page_allocator_get_stats(&alloc, &stats), kTvmErrorNoError);
      // The layout never wastes more than the map, the padding and one page.
      EXPECT_GE(stats.pages_total * (page_bytes + 1) + alignment + page_bytes, 2048u);
      const size_t sizes[] = {0, 1, 7, 8, 9, 100};
      for (size_t nbytes : sizes) {
        void* ptr = nullptr;
        ASSERT_EQ(crt_page_allocator_allocate(&alloc, nbytes, &ptr), kTvmErrorNoError);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % alignment, 0u)
            << "page_bytes=" << page_bytes << " offset=" << offset;
        EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 8, 0u);
        auto p = reinterpret_cast<uintptr_t>(ptr);
        auto begin = reinterpret_cast<uintptr_t>(storage + offset);
        EXPECT_GE(p, begin + stats.pages_total);  // after the page map
        EXPECT_LE(p + std::max<size_t>(nbytes, 1), begin + 2048);
      }
    }
  }
}

TEST(PageAllocator, InitRejectsBadArguments) {
  alignas(64) static uint8_t storage[1024];
  crt_page_allocator_t alloc;
  EXPECT_EQ(crt_page_allocator_init(nullptr, storage, sizeof(storage), 64),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_init(&alloc, nullptr, sizeof(storage), 64),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_init(&alloc, storage, sizeof(storage), 0),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_init(&alloc, storage, sizeof(storage), 4),
            kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_init(&alloc, storage, sizeof(storage), 48),
            kTvmErrorFunctionCallInvalidArg);
  // Too small for a page and its map byte.
  EXPECT_EQ(crt_page_allocator_init(&alloc, storage, 64, 64), kTvmErrorPlatformNoMemory);
  EXPECT_EQ(crt_page_allocator_init(&alloc, storage, 0, 64), kTvmErrorPlatformNoMemory);
  // A failed init leaves the allocator unusable rather than half-built.
  void* out = nullptr;
  EXPECT_EQ(crt_page_allocator_allocate(&alloc, 1, &out), kTvmErrorFunctionCallInvalidArg);
  // Smallest arena that works: 1 map byte + 63 padding + one 64-byte page.
  ASSERT_EQ(crt_page_allocator_init(&alloc, storage, 128, 64), kTvmErrorNoError);
  EXPECT_EQ(crt_page_allocator_allocate(&alloc, 64, &out), kTvmErrorNoError);
  EXPECT_EQ(out, storage + 64);
}

TEST(PageAllocator, UninitializedOrNullAllocatorIsRejected) {
  crt_page_allocator_t zeroed;
  std::memset(&zeroed, 0, sizeof(zeroed));
  void* out = reinterpret_cast<void*>(0x1);
  crt_page_allocator_stats_t stats;
  EXPECT_EQ(crt_page_allocator_allocate(&zeroed, 8, &out), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(out, nullptr);
  EXPECT_EQ(crt_page_allocator_allocate(nullptr, 8, &out), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_free(&zeroed, nullptr), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_free(nullptr, &out), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_get_stats(&zeroed, &stats), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_reset_high_water(nullptr), kTvmErrorFunctionCallInvalidArg);

  alignas(64) static uint8_t storage[1024];
  crt_page_allocator_t alloc;
  ASSERT_EQ(crt_page_allocator_init(&alloc, storage, sizeof(storage), 64), kTvmErrorNoError);
  EXPECT_EQ(crt_page_allocator_allocate(&alloc, 8, nullptr), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_page_allocator_get_stats(&alloc, nullptr), kTvmErrorFunctionCallInvalidArg);
}

TEST_F(PageAllocatorTest, HighWaterMarkTracksThePeakAndResets) {
  void* a = Allocate(10 * kPageBytes);
  void* b = Allocate(5 * kPageBytes);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, a), kTvmErrorNoError);
  EXPECT_EQ(Stats().high_water_pages, 15u);
  EXPECT_EQ(crt_page_allocator_reset_high_water(&alloc_), kTvmErrorNoError);
  EXPECT_EQ(Stats().high_water_pages, 5u);
  void* c = Allocate(2 * kPageBytes);
  EXPECT_EQ(Stats().high_water_pages, 7u);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, b), kTvmErrorNoError);
  EXPECT_EQ(crt_page_allocator_free(&alloc_, c), kTvmErrorNoError);
  EXPECT_EQ(Stats().high_water_pages, 7u);
}

// A seeded random workload. Every live block is filled with its own tag byte;
// a block whose bytes change was overlapped by another. Placement is checked
// against a shadow first-fit model of the page map.
TEST(PageAllocator, RandomWorkloadNeverOverlapsAndMatchesFirstFitModel) {
  constexpr size_t kArenaBytes = 16 * 1024;
  constexpr size_t kPage = 32;
  alignas(64) static uint8_t storage[kArenaBytes];
  crt_page_allocator_t alloc;
  ASSERT_EQ(crt_page_allocator_init(&alloc, storage, kArenaBytes, kPage), kTvmErrorNoError);
  crt_page_allocator_stats_t stats;
  ASSERT_EQ(crt_page_allocator_get_stats(&alloc, &stats), kTvmErrorNoError);
  const size_t total = stats.pages_total;
  uint8_t* first_page = nullptr;
  {
    void* probe = nullptr;
    ASSERT_EQ(crt_page_allocator_allocate(&alloc, 1, &probe), kTvmErrorNoError);
    first_page = static_cast<uint8_t*>(probe);
    ASSERT_EQ(crt_page_allocator_free(&alloc, probe), kTvmErrorNoError);
  }

  struct Block {
    uint8_t* ptr;
    size_t nbytes;
    uint8_t tag;
  };
  std::vector<Block> live;
  std::vector<bool> used(total, false);  // the shadow page map
  std::mt19937 rng(20240607);
  size_t peak = 0;
  size_t failures = 0;
  uint8_t next_tag = 1;

  auto check_block = [](const Block& block) {
    for (size_t i = 0; i < block.nbytes; ++i) {
      if (block.ptr[i] != block.tag) return false;
    }
    return true;
  };

  for (int step = 0; step < 20000; ++step) {
    const bool allocate = live.empty() || rng() % 100 < 55;
    if (allocate) {
      // Mostly small blocks, sometimes large ones, sometimes zero bytes.
      size_t nbytes = rng() % 10 == 0 ? rng() % (kArenaBytes / 4) : rng() % (4 * kPage);
      size_t pages = nbytes == 0 ? 1 : (nbytes + kPage - 1) / kPage;
      // Shadow first fit.
      size_t expected = total;
      for (size_t start = 0, run = 0; start < total; ++start) {
        run = used[start] ? 0 : run + 1;
        if (run == pages) {
          expected = start + 1 - pages;
          break;
        }
      }
      void* out = nullptr;
      tvm_crt_error_t err = crt_page_allocator_allocate(&alloc, nbytes, &out);
      if (expected == total) {
        ASSERT_EQ(err, kTvmErrorPlatformNoMemory) << "step " << step;
        ASSERT_EQ(out, nullptr);
        ++failures;
        continue;
      }
      ASSERT_EQ(err, kTvmErrorNoError) << "step " << step;
      ASSERT_EQ(static_cast<uint8_t*>(out), first_page + expected * kPage) << "step " << step;
      ASSERT_EQ(reinterpret_cast<uintptr_t>(out) % 8, 0u);
      for (size_t p = expected; p < expected + pages; ++p) used[p] = true;
      Block block{static_cast<uint8_t*>(out), nbytes, next_tag};
      next_tag = static_cast<uint8_t>(next_tag == 255 ? 1 : next_tag + 1);
      std::memset(block.ptr, block.tag, block.nbytes);
      live.push_back(block);
    } else {
      size_t index = rng() % live.size();
      Block block = live[index];
      ASSERT_TRUE(check_block(block)) << "overwritten before free, step " << step;
      ASSERT_EQ(crt_page_allocator_free(&alloc, block.ptr), kTvmErrorNoError);
      size_t first = static_cast<size_t>(block.ptr - first_page) / kPage;
      size_t pages = block.nbytes == 0 ? 1 : (block.nbytes + kPage - 1) / kPage;
      for (size_t p = first; p < first + pages; ++p) used[p] = false;
      live[index] = live.back();
      live.pop_back();
    }

    size_t used_pages = static_cast<size_t>(std::count(used.begin(), used.end(), true));
    peak = std::max(peak, used_pages);
    ASSERT_EQ(crt_page_allocator_get_stats(&alloc, &stats), kTvmErrorNoError);
    ASSERT_EQ(stats.pages_used, used_pages) << "step " << step;
    ASSERT_EQ(stats.live_blocks, live.size());
    ASSERT_EQ(stats.high_water_pages, peak);
  }
  EXPECT_GT(failures, 0u) << "the workload should reach exhaustion sometimes";
  EXPECT_GT(live.size(), 0u);

  // Pairwise: no two live blocks overlap, and all contents survived.
  std::sort(live.begin(), live.end(), [](const Block& a, const Block& b) { return a.ptr < b.ptr; });
  for (size_t i = 0; i < live.size(); ++i) {
    EXPECT_TRUE(check_block(live[i]));
    if (i + 1 < live.size()) {
      EXPECT_LE(live[i].ptr + std::max<size_t>(live[i].nbytes, 1), live[i + 1].ptr);
    }
  }
  for (const Block& block : live) {
    ASSERT_EQ(crt_page_allocator_free(&alloc, block.ptr), kTvmErrorNoError);
  }
  ASSERT_EQ(crt_page_allocator_get_stats(&alloc, &stats), kTvmErrorNoError);
  EXPECT_EQ(stats.pages_used, 0u);
  EXPECT_EQ(stats.largest_free_run_pages, total);
}

}  // namespace
