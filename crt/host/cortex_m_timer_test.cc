// The Cortex-M cycle timer (crt/boards/cortex-m/timer.c) on the host, against fake SysTick, SCB
// and DWT registers that each test sets: readings across SysTick wraps — serviced, pending but
// not yet serviced, and the late wrap QEMU produces on a loaded host (the counter already
// reloaded, its interrupt not even pending: readings used to run backwards by 2^24 cycles) —,
// the restart in bf_bsp_timer_rebase, a SysTick that does not count, and the DWT counter's own
// 32-bit wraps. Deterministic: no emulator, no real time.

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "testing/cortex_m_fake_registers.h"

extern "C" {
const char* bf_bsp_timer_source(void);
void bf_bsp_timer_init(void);
void bf_bsp_systick_handler(void);
uint64_t bf_bsp_cycles(void);
void bf_bsp_timer_rebase(void);
}

namespace {

constexpr uint32_t kReload = 0x00FFFFFFu;
constexpr uint64_t kPeriod = uint64_t{1} << 24;  // SysTick counts RELOAD..0: 2^24 ticks a period
constexpr uint32_t kPendStSet = 1u << 26;
constexpr uint32_t kPendStClr = 1u << 25;

struct Registers {
  uint32_t syst_csr, syst_rvr, syst_cvr;
  uint32_t icsr, shpr3;
  uint32_t demcr, dwt_ctrl, dwt_cyccnt, dwt_lar;
  uint32_t cyccnt_step;  // added to CYCCNT at every access: a DWT that counts
  uint64_t cvr_reads;
};
Registers g_regs;

}  // namespace

extern "C" {

uint32_t bf_test_primask;

volatile uint32_t* bf_test_register(uint32_t address) {
  switch (address) {
    case 0xE000E010u:
      return &g_regs.syst_csr;
    case 0xE000E014u:
      return &g_regs.syst_rvr;
    case 0xE000E018u:
      ++g_regs.cvr_reads;
      return &g_regs.syst_cvr;
    case 0xE000ED04u:
      return &g_regs.icsr;
    case 0xE000ED20u:
      return &g_regs.shpr3;
    case 0xE000EDFCu:
      return &g_regs.demcr;
    case 0xE0001000u:
      return &g_regs.dwt_ctrl;
    case 0xE0001004u:
      g_regs.dwt_cyccnt += g_regs.cyccnt_step;
      return &g_regs.dwt_cyccnt;
    case 0xE0001FB0u:
      return &g_regs.dwt_lar;
  }
  std::fprintf(stderr, "timer.c touched register 0x%08x, which the fake does not model\n", address);
  std::abort();
}

}  // extern "C"

namespace {

// A core without a counting DWT (QEMU's model): the timer falls back to SysTick.
void InitSysTick() {
  std::memset(&g_regs, 0, sizeof(g_regs));
  bf_test_primask = 0;
  bf_bsp_timer_init();
  ASSERT_STREQ(bf_bsp_timer_source(), "systick");
  ASSERT_EQ(g_regs.syst_rvr, kReload);
  ASSERT_EQ(g_regs.syst_csr, 7u);  // core clock, interrupt, enabled
  ASSERT_EQ(g_regs.shpr3 >> 24, 0x40u);
}

// The count SysTick shows `ticks` after its last (re)start, with `wraps` wraps serviced.
uint32_t Counter(uint64_t ticks_into_period) {
  return kReload - static_cast<uint32_t>(ticks_into_period);
}

TEST(CortexMTimer, SysTickCountsDownWithinAPeriod) {
  InitSysTick();
  g_regs.syst_cvr = Counter(100);
  EXPECT_EQ(bf_bsp_cycles(), 100u);
  g_regs.syst_cvr = Counter(5000);
  EXPECT_EQ(bf_bsp_cycles(), 5000u);
  g_regs.syst_cvr = 1;  // the last tick but one of the period
  EXPECT_EQ(bf_bsp_cycles(), kPeriod - 2);
}

TEST(CortexMTimer, AServicedWrapAddsAPeriod) {
  InitSysTick();
  g_regs.syst_cvr = Counter(kPeriod - 10);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod - 10);
  bf_bsp_systick_handler();
  g_regs.syst_cvr = Counter(3);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod + 3);
  bf_bsp_systick_handler();
  g_regs.syst_cvr = Counter(7);
  EXPECT_EQ(bf_bsp_cycles(), 2 * kPeriod + 7);
}

TEST(CortexMTimer, APendingWrapCountsOnlyOnceTheCounterReloaded) {
  InitSysTick();
  g_regs.syst_cvr = Counter(kPeriod - 10);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod - 10);
  // Wrapped, interrupt pending (masked or a higher priority running): the counter is near RELOAD.
  g_regs.icsr = kPendStSet;
  g_regs.syst_cvr = Counter(2);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod + 2);
  // Pending, but the counter was read before the wrap (near 0): not counted twice.
  InitSysTick();
  g_regs.icsr = kPendStSet;
  g_regs.syst_cvr = 10;
  EXPECT_EQ(bf_bsp_cycles(), kPeriod - 11);
  // The handler runs (pending cleared) and the reading goes on from there.
  g_regs.icsr = 0;
  bf_bsp_systick_handler();
  g_regs.syst_cvr = Counter(4);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod + 4);
}

// QEMU on a loaded host: the counter's value follows the host clock, while the wrap interrupt (and
// its pending bit) comes from a timer callback that may run late. The counter has reloaded, with
// nothing pending and nothing serviced. Before the fix this read 2^24 cycles backwards (a cost
// computed from end < start came out as 7.4e10 s).
TEST(CortexMTimer, ALateWrapNeverRunsBackwards) {
  InitSysTick();
  g_regs.syst_cvr = 50;  // 50 ticks before the wrap
  const uint64_t before = bf_bsp_cycles();
  EXPECT_EQ(before, kPeriod - 51);
  g_regs.syst_cvr = Counter(50);  // reloaded; no pending bit, no interrupt yet
  const uint64_t after = bf_bsp_cycles();
  EXPECT_GE(after, before);
  EXPECT_EQ(after, kPeriod + 50);
  // The interrupt becomes pending late: counted once, not twice.
  g_regs.icsr = kPendStSet;
  g_regs.syst_cvr = Counter(60);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod + 60);
  // And is serviced.
  g_regs.icsr = 0;
  bf_bsp_systick_handler();
  g_regs.syst_cvr = Counter(70);
  EXPECT_EQ(bf_bsp_cycles(), kPeriod + 70);
}

TEST(CortexMTimer, RebaseRestartsThePeriodAndStaysContinuous) {
  InitSysTick();
  bf_bsp_systick_handler();
  bf_bsp_systick_handler();
  g_regs.syst_cvr = Counter(1000);
  const uint64_t now = bf_bsp_cycles();
  EXPECT_EQ(now, 2 * kPeriod + 1000);
  // A wrap pending at the restart: counted in the restart's reading, then its pending bit cleared.
  g_regs.icsr = kPendStSet;
  g_regs.syst_cvr = Counter(999999);
  bf_test_primask = 0;
  bf_bsp_timer_rebase();
  EXPECT_EQ(bf_test_primask, 0u) << "interrupts unmasked again";
  EXPECT_EQ(g_regs.icsr, kPendStClr);
  EXPECT_EQ(g_regs.syst_cvr, 0u) << "the counter was restarted";
  EXPECT_EQ(g_regs.syst_csr, 7u);
  const uint64_t base = 3 * kPeriod + 999999;
  g_regs.icsr = 0;
  g_regs.syst_cvr = Counter(7);
  EXPECT_EQ(bf_bsp_cycles(), base + 7);
  // Wraps count from the restart.
  bf_bsp_systick_handler();
  g_regs.syst_cvr = Counter(8);
  EXPECT_EQ(bf_bsp_cycles(), base + kPeriod + 8);
}

TEST(CortexMTimer, ASysTickThatDoesNotCountDoesNotHangTheReader) {
  InitSysTick();
  g_regs.syst_cvr = Counter(100);
  const uint64_t before = bf_bsp_cycles();
  g_regs.syst_cvr = 0;  // stuck at 0: the reader waits a bounded number of reads, then answers
  g_regs.cvr_reads = 0;
  const uint64_t stuck = bf_bsp_cycles();
  EXPECT_GE(stuck, before);
  EXPECT_GE(g_regs.cvr_reads, 100000u);
  EXPECT_LE(g_regs.cvr_reads, 100001u);
}

TEST(CortexMTimer, TheDwtCounterIsUsedWhereItCountsAndItsWrapsAreCounted) {
  std::memset(&g_regs, 0, sizeof(g_regs));
  g_regs.cyccnt_step = 1;
  bf_bsp_timer_init();
  ASSERT_STREQ(bf_bsp_timer_source(), "dwt");
  EXPECT_NE(g_regs.demcr & (1u << 24), 0u);  // TRCENA
  EXPECT_NE(g_regs.dwt_ctrl & 1u, 0u);       // CYCCNTENA
  EXPECT_EQ(g_regs.dwt_lar, 0xC5ACCE55u);
  g_regs.cyccnt_step = 0;
  g_regs.dwt_cyccnt = 0xFFFFFF00u;
  bf_bsp_systick_handler();  // samples CYCCNT
  EXPECT_EQ(bf_bsp_cycles(), 0xFFFFFF00u);
  g_regs.dwt_cyccnt = 0x100u;  // wrapped before the next SysTick interrupt
  EXPECT_EQ(bf_bsp_cycles(), (uint64_t{1} << 32) + 0x100u);
  bf_bsp_systick_handler();
  g_regs.dwt_cyccnt = 0x200u;
  EXPECT_EQ(bf_bsp_cycles(), (uint64_t{1} << 32) + 0x200u);
  // A DWT with NOCYCCNT set is not used.
  std::memset(&g_regs, 0, sizeof(g_regs));
  g_regs.cyccnt_step = 1;
  g_regs.dwt_ctrl = 1u << 25;
  bf_bsp_timer_init();
  EXPECT_STREQ(bf_bsp_timer_source(), "systick");
}

}  // namespace
