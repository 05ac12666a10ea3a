// Wait states and the ART accelerator (memory.h): parsing regions, and instruction fetch and data
// reads as RM0090 describes them — the current line free, the prefetched line ready WS + 1 cycles
// after its predecessor began, branch targets cached (64 lines, least recently used out), data in
// 8 lines.

#include "cyclemodel/memory.h"

#include <string>

#include "gtest/gtest.h"

namespace benchfarm::cyclemodel {
namespace {

bf_memory Flash(const char* spec) {
  bf_memory m;
  bf_memory_init(&m);
  char error[160];
  EXPECT_EQ(bf_memory_add_region(&m, spec, error, sizeof(error)), 0) << error;
  return m;
}

TEST(Memory, Regions) {
  bf_memory m;
  bf_memory_init(&m);
  char error[160];
  EXPECT_EQ(bf_memory_add_region(&m, "0x08000000:0x80000:5:art", error, sizeof(error)), 0);
  EXPECT_EQ(bf_memory_add_region(&m, "0:4194304:0", error, sizeof(error)), 0);
  ASSERT_NE(bf_memory_region(&m, 0x08000010), nullptr);
  EXPECT_EQ(bf_memory_region(&m, 0x08000010)->wait_states, 5);
  EXPECT_TRUE(bf_memory_region(&m, 0x08000010)->art);
  EXPECT_EQ(bf_memory_region(&m, 0x20000000), nullptr);
  EXPECT_EQ(bf_memory_region(&m, 0x08080000), nullptr);
  EXPECT_TRUE(bf_memory_has_wait_states(&m));
  for (const char* bad : {"", "0x0800:5", "x:1:2", "0:0:1", "0:16:16", "0:16:1:cache",
                          "0xFFFFFFF0:0x20:1", "0x08000100:16:1"}) {
    EXPECT_EQ(bf_memory_add_region(&m, bad, error, sizeof(error)), -1) << bad;
    EXPECT_NE(std::string(error).find("region"), std::string::npos) << error;
  }
  bf_memory zero;
  bf_memory_init(&zero);
  EXPECT_EQ(bf_memory_add_region(&zero, "0:16:0", error, sizeof(error)), 0);
  EXPECT_FALSE(bf_memory_has_wait_states(&zero));
}

TEST(Memory, ZeroWaitMemoryNeverStalls) {
  bf_memory m = Flash("0x08000000:0x80000:5:art");
  EXPECT_EQ(bf_memory_fetch(&m, 0x20000000, 0), 0u);
  EXPECT_EQ(bf_memory_read(&m, 0x20000000), 0u);
}

TEST(Memory, BranchTargetsMissOnceThenHitTheCache) {
  bf_memory m = Flash("0x08000000:0x80000:5:art");
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000100, 0), 5u);   // cold
  EXPECT_EQ(bf_memory_fetch(&m, 0x0800010e, 6), 0u);   // same line
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000400, 10), 5u);  // elsewhere, cold
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000100, 20), 0u);  // back: cached
  EXPECT_EQ(m.counters.line_misses, 2u);
  EXPECT_EQ(m.counters.line_hits, 1u);
}

TEST(Memory, ThePrefetchedLineWaitsOnlyForWhatIsLeftOfItsRead) {
  bf_memory m = Flash("0x08000000:0x80000:5:art");
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000000, 0), 5u);  // line 0 ready at 5
  // Line 1 was read from 5 on: ready at 5 + 6 = 11. Entered at 9: 2 cycles; at 13: none.
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000010, 9), 2u);   // ready at 11
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000020, 20), 0u);  // read since 11: ready at 17
  EXPECT_EQ(m.counters.prefetched, 2u);
  // Prefetched lines are not cached: branching back to line 1 misses.
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000010, 30), 5u);
}

TEST(Memory, TheCacheKeepsTheSixtyFourMostRecentlyUsedLines) {
  bf_memory m = Flash("0x08000000:0x80000:5:art");
  uint64_t now = 0;
  for (uint32_t i = 0; i < 65; ++i) now += bf_memory_fetch(&m, 0x08000000 + i * 64, now) + 10;
  EXPECT_EQ(m.counters.line_misses, 65u);
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000000 + 64 * 64, now), 0u);  // the newest: current line
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000000 + 1 * 64, now), 0u);   // still cached
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000000, now), 5u);            // the oldest went out
}

TEST(Memory, DataReadsUseTheEightLineDataCache) {
  bf_memory m = Flash("0x08000000:0x80000:5:art");
  EXPECT_EQ(bf_memory_read(&m, 0x08001000), 5u);
  EXPECT_EQ(bf_memory_read(&m, 0x08001004), 0u);
  for (uint32_t i = 1; i <= 8; ++i) EXPECT_EQ(bf_memory_read(&m, 0x08001000 + 16 * i), 5u);
  EXPECT_EQ(bf_memory_read(&m, 0x08001000), 5u);  // nine lines: the first went out
  EXPECT_EQ(m.counters.data_misses, 10u);
  EXPECT_EQ(m.counters.data_hits, 1u);
}

TEST(Memory, WithoutTheAcceleratorEveryNewLineAndReadWaits) {
  bf_memory m = Flash("0x08000000:0x80000:2");
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000000, 0), 2u);
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000010, 100), 2u);
  EXPECT_EQ(bf_memory_fetch(&m, 0x08000000, 200), 2u);
  EXPECT_EQ(bf_memory_read(&m, 0x08000100), 2u);
  EXPECT_EQ(bf_memory_read(&m, 0x08000100), 2u);
}

// Hints (one per line of a block, as model.c keeps them) are a shortcut, never a different
// answer: a long pseudo-random walk over more lines than the cache holds stalls and counts the
// same with hints as without — with two hints per line (two blocks fetching it), so that one
// goes stale while the other moves the line.
TEST(Memory, HintsNeverChangeWhatAFetchCosts) {
  bf_memory plain = Flash("0x08000000:0x80000:5:art");
  bf_memory hinted = Flash("0x08000000:0x80000:5:art");
  bf_icache_hint hints[2][200];
  for (auto& block : hints) {
    for (bf_icache_hint& h : block) h = BF_ICACHE_HINT_NONE;
  }
  uint32_t state = 12345, now = 0;
  for (int i = 0; i < 200000; ++i) {
    state = state * 1103515245u + 12345u;
    // Mostly a loop's few lines, sometimes the next line, sometimes any of 200 lines.
    const uint32_t base = 0x08000000u / BF_ART_LINE_BYTES;
    const uint32_t pick = (state >> 16) % 100u;
    const uint32_t index = pick < 60   ? (state >> 8) % 6u
                           : pick < 85 ? (plain.line - base + 1u) % 200u
                                       : (state >> 9) % 200u;
    const uint32_t line = base + index;
    const uint32_t a = bf_memory_fetch_line(&plain, line, 5, 1, now, nullptr);
    const uint32_t b =
        bf_memory_fetch_line(&hinted, line, 5, 1, now, &hints[(state >> 30) & 1u][index]);
    ASSERT_EQ(a, b) << "fetch " << i;
    now += 1 + a + (state >> 24) % 4u;
  }
  EXPECT_EQ(plain.counters.fetch_stall_cycles, hinted.counters.fetch_stall_cycles);
  EXPECT_EQ(plain.counters.line_hits, hinted.counters.line_hits);
  EXPECT_EQ(plain.counters.line_misses, hinted.counters.line_misses);
  EXPECT_EQ(plain.counters.prefetched, hinted.counters.prefetched);
  EXPECT_GT(plain.counters.line_hits, 1000u);
  EXPECT_GT(plain.counters.line_misses, 1000u);
  EXPECT_GT(plain.counters.prefetched, 1000u);
}

}  // namespace
}  // namespace benchfarm::cyclemodel
