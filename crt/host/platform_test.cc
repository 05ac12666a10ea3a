// Tests for the host-process platform: timer, randomness, memory pool,
// message formatting and abort.

#include "tvm/runtime/crt/platform.h"

#include <gtest/gtest.h>
#include <time.h>

#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "crt_config.h"
#include "tvm/runtime/crt/host_platform.h"

extern "C" int crt_host_headers_compile_as_c(void);

namespace {

constexpr DLDevice kCpu = {kDLCPU, 0};

size_t Format(char* buf, size_t size, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  size_t n = TVMPlatformFormatMessage(buf, size, fmt, args);
  va_end(args);
  return n;
}

crt_page_allocator_stats_t PoolStats() {
  crt_page_allocator_stats_t stats;
  EXPECT_EQ(crt_host_platform_get_memory_stats(&stats), kTvmErrorNoError);
  return stats;
}

TEST(HostPlatform, HeaderCompilesAsC) { EXPECT_EQ(crt_host_headers_compile_as_c(), 0); }

TEST(HostPlatform, InitializeIsIdempotent) {
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  void* block = nullptr;
  ASSERT_EQ(TVMPlatformMemoryAllocate(100, kCpu, &block), kTvmErrorNoError);
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  // The block survived the second Initialize.
  EXPECT_EQ(PoolStats().live_blocks, 1u);
  EXPECT_EQ(TVMPlatformMemoryFree(block, kCpu), kTvmErrorNoError);
  EXPECT_EQ(PoolStats().live_blocks, 0u);
}

// Spins until this thread has used `seconds` of CPU time (by the thread clock itself).
void BurnCpu(double seconds) {
  timespec start, now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
  do {
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  } while ((now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) * 1e-9 < seconds);
}

crt_host_timer_totals_t Totals(bool reset) {
  crt_host_timer_totals_t totals;
  EXPECT_EQ(crt_host_platform_timer_totals(&totals, reset ? 1 : 0), kTvmErrorNoError);
  return totals;
}

TEST(HostPlatform, TimerIsTheThreadCpuClock) {
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  ASSERT_STREQ(crt_host_platform_timer_source(), "thread-cputime");
  timespec res;
  ASSERT_EQ(clock_getres(CLOCK_THREAD_CPUTIME_ID, &res), 0);
  EXPECT_DOUBLE_EQ(crt_host_platform_timer_resolution_s(), res.tv_sec + res.tv_nsec * 1e-9);
  EXPECT_GT(crt_host_platform_timer_resolution_s(), 0.0);

  // Asleep, the thread uses no CPU: 50 ms of sleep measure (far) less than 10 ms.
  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  double elapsed = -1;
  ASSERT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
  EXPECT_GE(elapsed, 0.0);
  EXPECT_LT(elapsed, 0.010);

  // Busy, it counts the CPU time used (however long the wall clock took on a loaded machine).
  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
  BurnCpu(0.030);
  ASSERT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
  EXPECT_GE(elapsed, 0.030);
  EXPECT_LT(elapsed, 0.030 + 0.5);

  // Back to back, the timer resolves well under a millisecond.
  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
  ASSERT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
  EXPECT_GE(elapsed, 0.0);
  EXPECT_LT(elapsed, 0.001);
}

TEST(HostPlatform, TimerFallsBackToTheMonotonicClock) {
  // A clock clock_gettime refuses (ids past the kernel's static clocks are EINVAL): monotonic.
  EXPECT_STREQ(crt_host_platform_select_timer_clock(0x7fffffff), "monotonic");
  EXPECT_STREQ(crt_host_platform_timer_source(), "monotonic");
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);  // keeps the choice
  EXPECT_STREQ(crt_host_platform_timer_source(), "monotonic");
  EXPECT_GT(crt_host_platform_timer_resolution_s(), 0.0);
  // Wall time: a sleep counts.
  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  double elapsed = -1;
  ASSERT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
  EXPECT_GE(elapsed, 0.05);
  EXPECT_LT(elapsed, 0.05 + 1.0);
  EXPECT_STREQ(crt_host_platform_select_timer_clock(CLOCK_PROCESS_CPUTIME_ID), "process-cputime");
  EXPECT_STREQ(crt_host_platform_select_timer_clock(CLOCK_THREAD_CPUTIME_ID), "thread-cputime");
}

TEST(HostPlatform, TimerTotalsSumEveryIntervalAndReset) {
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  ASSERT_STREQ(crt_host_platform_timer_source(), "thread-cputime");
  (void)Totals(true);
  crt_host_timer_totals_t zero = Totals(false);
  EXPECT_EQ(zero.intervals, 0u);
  EXPECT_EQ(zero.cpu_s, 0.0);
  EXPECT_EQ(zero.wall_s, 0.0);

  double sum = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
    BurnCpu(0.005);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // wall time, not CPU time
    double elapsed = -1;
    ASSERT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
    sum += elapsed;
  }
  // Neither a failed Stop nor a running interval counts.
  double unused;
  EXPECT_EQ(TVMPlatformTimerStop(&unused), kTvmErrorPlatformTimerBadState);
  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);

  crt_host_timer_totals_t t = Totals(false);
  EXPECT_EQ(t.intervals, 3u);
  EXPECT_DOUBLE_EQ(t.cpu_s, sum);  // exactly what Stop returned
  EXPECT_GE(t.cpu_s, 3 * 0.005);
  EXPECT_LT(t.cpu_s, 3 * 0.005 + 0.010);
  EXPECT_GE(t.wall_s, 3 * 0.025);  // the sleeps count on the wall clock
  EXPECT_GE(t.wall_s, t.cpu_s);

  // Reading without reset keeps them; with reset they start again from 0.
  crt_host_timer_totals_t again = Totals(true);
  EXPECT_EQ(again.intervals, 3u);
  EXPECT_EQ(again.wall_s, t.wall_s);
  crt_host_timer_totals_t after = Totals(false);
  EXPECT_EQ(after.intervals, 0u);
  EXPECT_EQ(after.cpu_s, 0.0);
  EXPECT_EQ(after.wall_s, 0.0);

  // The running interval counts once it stops.
  double elapsed;
  ASSERT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
  EXPECT_EQ(Totals(true).intervals, 1u);
  EXPECT_EQ(crt_host_platform_timer_totals(nullptr, 0), kTvmErrorFunctionCallInvalidArg);
}

TEST(HostPlatform, TimerBadStates) {
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  double elapsed = 123.0;
  EXPECT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorPlatformTimerBadState);
  EXPECT_EQ(elapsed, 123.0);

  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
  EXPECT_EQ(TVMPlatformTimerStart(), kTvmErrorPlatformTimerBadState);
  EXPECT_EQ(TVMPlatformTimerStop(nullptr), kTvmErrorFunctionCallInvalidArg);
  // Neither error stopped the timer.
  EXPECT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorNoError);
  EXPECT_LT(elapsed, 1.0);
  elapsed = 123.0;
  EXPECT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorPlatformTimerBadState);
  EXPECT_EQ(elapsed, 123.0);

  // Initialize stops a running timer.
  ASSERT_EQ(TVMPlatformTimerStart(), kTvmErrorNoError);
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  EXPECT_EQ(TVMPlatformTimerStop(&elapsed), kTvmErrorPlatformTimerBadState);
}

TEST(HostPlatform, RandomBytesDifferBetweenCalls) {
  uint8_t a[32];
  uint8_t b[32];
  std::memset(a, 0, sizeof(a));
  std::memset(b, 0, sizeof(b));
  ASSERT_EQ(TVMPlatformGenerateRandom(a, sizeof(a)), kTvmErrorNoError);
  ASSERT_EQ(TVMPlatformGenerateRandom(b, sizeof(b)), kTvmErrorNoError);
  // 2^-256 chance of a false failure.
  EXPECT_NE(std::memcmp(a, b, sizeof(a)), 0);
  const uint8_t zeros[32] = {};
  EXPECT_NE(std::memcmp(a, zeros, sizeof(a)), 0);

  // Large requests are filled completely (getrandom may return short reads).
  std::vector<uint8_t> big(1 << 20, 0);
  ASSERT_EQ(TVMPlatformGenerateRandom(big.data(), big.size()), kTvmErrorNoError);
  size_t zero_count = 0;
  for (size_t i = big.size() - 4096; i < big.size(); ++i) zero_count += big[i] == 0;
  EXPECT_LT(zero_count, 64u);  // ~16 expected in 4096 random bytes

  EXPECT_EQ(TVMPlatformGenerateRandom(nullptr, 0), kTvmErrorNoError);
  EXPECT_EQ(TVMPlatformGenerateRandom(nullptr, 4), kTvmErrorFunctionCallInvalidArg);
}

TEST(HostPlatform, AllocateUntilOutOfMemoryThenFreeMakesRoom) {
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  const crt_page_allocator_stats_t start = PoolStats();
  EXPECT_EQ(start.page_bytes, static_cast<size_t>(TVM_CRT_PAGE_BYTES));
  EXPECT_LE(start.pages_total * start.page_bytes,
            static_cast<size_t>(TVM_CRT_MEMORY_POOL_SIZE_BYTES));

  constexpr size_t kBlock = 1000;
  std::vector<void*> blocks;
  void* ptr = nullptr;
  tvm_crt_error_t err;
  while ((err = TVMPlatformMemoryAllocate(kBlock, kCpu, &ptr)) == kTvmErrorNoError) {
    ASSERT_NE(ptr, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 8, 0u);
    std::memset(ptr, 0xAB, kBlock);
    blocks.push_back(ptr);
    ASSERT_LE(blocks.size() * kBlock, static_cast<size_t>(TVM_CRT_MEMORY_POOL_SIZE_BYTES));
  }
  EXPECT_EQ(err, kTvmErrorPlatformNoMemory);
  EXPECT_EQ(ptr, nullptr);
  // The pool is nearly full: less than one more block's worth is left.
  const size_t pages_per_block = (kBlock + start.page_bytes - 1) / start.page_bytes;
  EXPECT_LT(PoolStats().largest_free_run_pages, pages_per_block);
  EXPECT_GT(blocks.size() * kBlock, static_cast<size_t>(TVM_CRT_MEMORY_POOL_SIZE_BYTES) * 8 / 10);

  // Freeing one block makes room for exactly that block again.
  void* freed = blocks.back();
  blocks.pop_back();
  ASSERT_EQ(TVMPlatformMemoryFree(freed, kCpu), kTvmErrorNoError);
  ASSERT_EQ(TVMPlatformMemoryAllocate(kBlock, kCpu, &ptr), kTvmErrorNoError);
  EXPECT_EQ(ptr, freed);
  blocks.push_back(ptr);

  for (void* block : blocks) ASSERT_EQ(TVMPlatformMemoryFree(block, kCpu), kTvmErrorNoError);
  EXPECT_EQ(PoolStats().pages_used, start.pages_used);
}

TEST(HostPlatform, FreeRejectsForeignPointersAndDoubleFrees) {
  ASSERT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
  EXPECT_EQ(TVMPlatformMemoryFree(nullptr, kCpu), kTvmErrorNoError);
  int local = 0;
  EXPECT_EQ(TVMPlatformMemoryFree(&local, kCpu), kTvmErrorPlatformStackAllocBadFree);
  void* block = nullptr;
  ASSERT_EQ(TVMPlatformMemoryAllocate(0, kCpu, &block), kTvmErrorNoError);
  EXPECT_NE(block, nullptr);
  EXPECT_EQ(TVMPlatformMemoryFree(block, kCpu), kTvmErrorNoError);
  EXPECT_EQ(TVMPlatformMemoryFree(block, kCpu), kTvmErrorPlatformStackAllocBadFree);
  EXPECT_EQ(TVMPlatformMemoryAllocate(8, kCpu, nullptr), kTvmErrorFunctionCallInvalidArg);
  EXPECT_EQ(crt_host_platform_get_memory_stats(nullptr), kTvmErrorFunctionCallInvalidArg);
}

TEST(HostPlatform, FormatMessageClampsToTheBuffer) {
  char buf[8];
  EXPECT_EQ(Format(buf, sizeof(buf), "ab%dc", 7), 4u);
  EXPECT_STREQ(buf, "ab7c");
  EXPECT_EQ(Format(buf, sizeof(buf), "hello %d", 12345), 7u);
  EXPECT_STREQ(buf, "hello 1");
  EXPECT_EQ(Format(buf, 1, "x"), 0u);
  EXPECT_STREQ(buf, "");
  EXPECT_EQ(Format(buf, 0, "x"), 0u);
}

TEST(HostPlatform, MeasurementHooksSucceed) {
  EXPECT_EQ(TVMPlatformBeforeMeasurement(), kTvmErrorNoError);
  EXPECT_EQ(TVMPlatformAfterMeasurement(), kTvmErrorNoError);
}

TEST(HostPlatformDeathTest, AbortPrintsTheCodeAndDies) {
  EXPECT_DEATH(TVMPlatformAbort(kTvmErrorPlatformNoMemory), "TVMPlatformAbort: crt error 0x503");
}

}  // namespace
