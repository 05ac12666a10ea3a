#include "base/memory.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace benchfarm::base {
namespace {

// Resident set of this process in bytes, from /proc/self/statm.
int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * 4096;
}

// Set by the BUILD target: the malloc this test binary is linked with.
#ifndef BENCHFARM_EXPECTED_ALLOCATOR
#error "BENCHFARM_EXPECTED_ALLOCATOR: the allocator the test binary runs on"
#endif

TEST(MemoryTest, KnowsWhichMallocItRunsOn) {
  EXPECT_STREQ(HeapAllocator(), BENCHFARM_EXPECTED_ALLOCATOR);
}

// 128 MiB in 1 KiB blocks, all freed but the last one: the free memory sits below a live block,
// so malloc cannot give it back by trimming the top of the heap — what a burst of many small
// allocations (watch events, queued jobs) leaves behind.
TEST(MemoryTest, FreedSmallBlocksBelowALiveOneAreHeldUntilReleased) {
  constexpr int kBlocks = 128 * 1024;
  std::vector<char*> blocks(kBlocks);
  for (char*& b : blocks) {
    b = static_cast<char*>(std::malloc(1000));
    ASSERT_NE(b, nullptr);
    for (int i = 0; i < 1000; i += 256) b[i] = 1;  // touch: resident
  }
  char* keep = static_cast<char*>(std::malloc(1000));
  for (char* b : blocks) std::free(b);
  const int64_t held = FreeHeapBytes();
  const int64_t resident_held = ResidentBytes();
  EXPECT_GT(held, 100 << 20);

  EXPECT_FALSE(ReleaseFreeHeapOver(held + (1 << 30)));  // under the threshold: nothing done
  EXPECT_EQ(ResidentBytes() / (1 << 20), resident_held / (1 << 20));
  EXPECT_TRUE(ReleaseFreeHeapOver(64 << 20));
  const int64_t resident_after = ResidentBytes();
  std::printf("%s: free heap %lld MiB; resident %lld -> %lld MiB\n", HeapAllocator(),
              static_cast<long long>(held >> 20), static_cast<long long>(resident_held >> 20),
              static_cast<long long>(resident_after >> 20));
  EXPECT_LT(resident_after, resident_held - (100 << 20));
  std::free(keep);
}

}  // namespace
}  // namespace benchfarm::base
