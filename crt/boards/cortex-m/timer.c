/*
 * timer.c: a 64-bit count of core clock cycles since boot, for TVMPlatformTimer* and the random
 * source.
 *
 * Source, chosen once at boot:
 *   "dwt"     the DWT cycle counter (CYCCNT, 32 bits), when the core has one and it counts: it is
 *             enabled (DEMCR.TRCENA, DWT_CTRL.CYCCNTENA) and must advance over a short busy loop.
 *             QEMU models no DWT (CYCCNT reads 0), so under QEMU this falls back to SysTick.
 *   "systick" SysTick at the core clock (CLKSOURCE = processor), reload 2^24 - 1.
 * Either way SysTick runs with its interrupt every 2^24 cycles: it counts SysTick wraps, and in
 * DWT mode samples CYCCNT so its 32-bit wraps are counted too (a sample at least every 2^32
 * cycles is all that needs). Readers use a double-read of the wrap count; a wrap that happened
 * but whose interrupt has not run yet (masked, or higher-priority code running) is detected by
 * SysTick's pending bit (ICSR.PENDSTSET) together with the counter value, so a read is exact for
 * up to one unserviced wrap.
 *
 * Determinism: in SysTick mode bf_bsp_timer_rebase (called by TVMPlatformTimerStart) restarts
 * SysTick's period at that instant, folding the cycles so far into a base. Everything timed after
 * it then sees the timer at the same phase — tick edges and wrap interrupts at the same
 * instructions — so under QEMU -icount the same code measures the same count every time. In DWT
 * mode it does nothing (the counter is cycle-exact already).
 */
#include "bf_bsp.h"

#define BF_SYST_CSR 0xE000E010u
#define BF_SYST_RVR 0xE000E014u
#define BF_SYST_CVR 0xE000E018u
#define BF_DEMCR 0xE000EDFCu
#define BF_DWT_CTRL 0xE0001000u
#define BF_DWT_CYCCNT 0xE0001004u
#define BF_DWT_LAR 0xE0001FB0u
#define BF_ICSR_PENDSTSET (1u << 26)
#define BF_ICSR_PENDSTCLR (1u << 25)
#define BF_SYST_RELOAD 0x00FFFFFFu

void bf_bsp_systick_handler(void);

static volatile uint32_t g_bf_systick_wraps; /* SysTick wraps serviced since the last restart */
static volatile uint64_t g_bf_systick_base;  /* cycles at the last restart */
/* The last SysTick-mode reading: time never runs backwards. Under QEMU the counter's value comes
 * from the host clock while the wrap interrupt (and its pending bit) is raised by a timer callback
 * that a loaded host may run late, so the counter can already have wrapped with nothing to say
 * so; a reading below the last one is that wrap, counted here. */
static uint64_t g_bf_systick_last;
static volatile uint32_t g_bf_dwt_high; /* CYCCNT wraps seen by the SysTick handler */
static volatile uint32_t g_bf_dwt_last; /* CYCCNT at the last SysTick interrupt */
static int g_bf_use_dwt;

const char* bf_bsp_timer_source(void) { return g_bf_use_dwt ? "dwt" : "systick"; }

/* Enables the cycle counter; non-zero if it advances. */
static int BfDwtWorks(void) {
  volatile uint32_t spin;
  uint32_t start;
  BF_BSP_REG32(BF_DEMCR) |= 1u << 24; /* TRCENA */
  BF_BSP_DSB();
  if ((BF_BSP_REG32(BF_DWT_CTRL) & (1u << 25)) != 0u) return 0; /* NOCYCCNT */
  BF_BSP_REG32(BF_DWT_LAR) = 0xC5ACCE55u; /* unlock where a lock exists (Cortex-M7); else ignored */
  BF_BSP_REG32(BF_DWT_CYCCNT) = 0u;
  BF_BSP_REG32(BF_DWT_CTRL) |= 1u; /* CYCCNTENA */
  start = BF_BSP_REG32(BF_DWT_CYCCNT);
  for (spin = 0; spin < 100u; spin++) {
  }
  return BF_BSP_REG32(BF_DWT_CYCCNT) != start;
}

void bf_bsp_timer_init(void) {
  g_bf_use_dwt = BfDwtWorks();
  g_bf_systick_wraps = 0;
  g_bf_systick_base = 0;
  g_bf_systick_last = 0;
  g_bf_dwt_high = 0;
  g_bf_dwt_last = g_bf_use_dwt ? BF_BSP_REG32(BF_DWT_CYCCNT) : 0u;
  /* SysTick: most urgent of the firmware's interrupts (priority 0x40), above the UART (0x80). */
  BF_BSP_REG32(BF_BSP_SCB_SHPR3) = (BF_BSP_REG32(BF_BSP_SCB_SHPR3) & 0x00FFFFFFu) | (0x40u << 24);
  BF_BSP_REG32(BF_SYST_CSR) = 0u;
  BF_BSP_REG32(BF_SYST_RVR) = BF_SYST_RELOAD;
  BF_BSP_REG32(BF_SYST_CVR) = 0u;
  BF_BSP_REG32(BF_SYST_CSR) = 7u; /* CLKSOURCE = core clock, TICKINT, ENABLE */
}

void bf_bsp_systick_handler(void) {
  g_bf_systick_wraps = g_bf_systick_wraps + 1u;
  if (g_bf_use_dwt) {
    uint32_t now = BF_BSP_REG32(BF_DWT_CYCCNT);
    if (now < g_bf_dwt_last) g_bf_dwt_high = g_bf_dwt_high + 1u;
    g_bf_dwt_last = now;
  }
}

uint64_t bf_bsp_cycles(void) {
  uint32_t zero_reads;
  if (g_bf_use_dwt) {
    for (;;) {
      uint32_t high = g_bf_dwt_high;
      uint32_t last = g_bf_dwt_last;
      uint32_t now = BF_BSP_REG32(BF_DWT_CYCCNT);
      if (high != g_bf_dwt_high) continue; /* the handler ran in between: read again */
      if (now < last) high++;              /* wrapped since the handler's last sample */
      return ((uint64_t)high << 32) | now;
    }
  }
  for (zero_reads = 0;;) {
    uint32_t wraps = g_bf_systick_wraps;
    uint32_t value = BF_BSP_REG32(BF_SYST_CVR);
    uint32_t pending = BF_BSP_REG32(BF_BSP_SCB_ICSR) & BF_ICSR_PENDSTSET;
    uint64_t ticks;
    /* 0 lasts one tick: the last of a period (its wrap may or may not be counted yet) or the
     * tick after a restart. Wait for the reload rather than guess — but not forever, should
     * SysTick not be counting at all. */
    if (value == 0u && ++zero_reads < 100000u) continue;
    if (wraps != g_bf_systick_wraps) continue;
    ticks = g_bf_systick_base + ((uint64_t)wraps << 24) + (BF_SYST_RELOAD - value);
    /* A wrap not yet counted: the counter was read after it (value near the reload). */
    if (pending != 0u && value > (BF_SYST_RELOAD >> 1)) ticks += (uint64_t)1u << 24;
    /* A wrap not even pending yet (see g_bf_systick_last). */
    if (ticks < g_bf_systick_last) ticks += (uint64_t)1u << 24;
    if (ticks > g_bf_systick_last) g_bf_systick_last = ticks;
    return ticks;
  }
}

void bf_bsp_timer_rebase(void) {
  uint32_t primask;
  uint64_t now;
  if (g_bf_use_dwt) return;
  BF_BSP_IRQ_SAVE(primask);
  now = bf_bsp_cycles();
  BF_BSP_REG32(BF_SYST_CSR) = 0u;
  BF_BSP_REG32(BF_BSP_SCB_ICSR) = BF_ICSR_PENDSTCLR; /* a wrap in `now` already */
  g_bf_systick_base = now;
  g_bf_systick_wraps = 0u;
  g_bf_systick_last = now;
  BF_BSP_REG32(BF_SYST_CVR) = 0u; /* restart: RELOAD at the next tick, counted as cycle `now` */
  BF_BSP_REG32(BF_SYST_CSR) = 7u;
  BF_BSP_IRQ_RESTORE(primask);
}
