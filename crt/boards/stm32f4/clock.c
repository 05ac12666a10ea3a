/*
 * clock.c: STM32F405/F407/F446 clocks — HSI (16 MHz RC) through the main PLL to 168 MHz:
 * PLLM 8 (2 MHz into the VCO), PLLN 168 (336 MHz), PLLP 2 (168 MHz SYSCLK), PLLQ 7 (48 MHz for
 * USB/SDIO); AHB 168 MHz, APB1 42 MHz (/4), APB2 84 MHz (/2); flash FLASH_WAIT_STATES (board.conf:
 * 5) wait states with prefetch and the ART accelerator's caches (2.7-3.6 V). No crystal is needed,
 * so the same image runs on any F405/F407/F446 board; HSI is +-1 % over temperature, fine for a
 * UART at 115200 and for timings (the timer is the same clock).
 *
 * Under QEMU (netduinoplus2) the RCC is not modelled (reads as 0, so HSIRDY is never seen) and the
 * core runs at a fixed 168 MHz: the PLL set-up is then skipped.
 */
#include "bf_bsp.h"

#define BF_RCC_CR 0x40023800u
#define BF_RCC_PLLCFGR 0x40023804u
#define BF_RCC_CFGR 0x40023808u
#define BF_FLASH_ACR 0x40023C00u
#define BF_RCC_CR_HSIRDY (1u << 1)
#define BF_RCC_CR_PLLON (1u << 24)
#define BF_RCC_CR_PLLRDY (1u << 25)

typedef char bf_clock_check_hz[BF_CONF_CPU_HZ == 168000000 ? 1 : -1];
/* board.conf FLASH_WAIT_STATES: 5 at 168 MHz and 2.7-3.6 V (RM0090 Table 11). */
#ifndef BF_CONF_FLASH_WAIT_STATES
#error "BF_CONF_FLASH_WAIT_STATES is not set (board.conf FLASH_WAIT_STATES)"
#endif
typedef char bf_clock_check_wait_states
    [BF_CONF_FLASH_WAIT_STATES >= 5 && BF_CONF_FLASH_WAIT_STATES <= 7 ? 1 : -1];

/* Polls until (reg & mask) == want, at most ~1M reads. Returns 0 or -1 on timeout. */
static int BfWait(uint32_t reg, uint32_t mask, uint32_t want) {
  uint32_t i;
  for (i = 0; i < 1000000u; i++) {
    if ((BF_BSP_REG32(reg) & mask) == want) return 0;
  }
  return -1;
}

void bf_bsp_clock_init(void) {
  if ((BF_BSP_REG32(BF_RCC_CR) & BF_RCC_CR_HSIRDY) == 0u) return;   /* no RCC: an emulator */
  if ((BF_BSP_REG32(BF_RCC_CFGR) & (3u << 2)) == (2u << 2)) return; /* already on the PLL */
  /* Flash wait states before the clock goes up. */
  BF_BSP_REG32(BF_FLASH_ACR) =
      (uint32_t)BF_CONF_FLASH_WAIT_STATES | (1u << 8) | (1u << 9) | (1u << 10);
  (void)BfWait(BF_FLASH_ACR, 0xFu, (uint32_t)BF_CONF_FLASH_WAIT_STATES);
  /* AHB /1, APB1 /4, APB2 /2. */
  BF_BSP_REG32(BF_RCC_CFGR) =
      (BF_BSP_REG32(BF_RCC_CFGR) & ~((0xFu << 4) | (7u << 10) | (7u << 13))) | (5u << 10) |
      (4u << 13);
  BF_BSP_REG32(BF_RCC_CR) &= ~BF_RCC_CR_PLLON;
  (void)BfWait(BF_RCC_CR, BF_RCC_CR_PLLRDY, 0u);
  /* PLLSRC = HSI (bit 22 clear), M = 8, N = 168, P = 2 (field 0), Q = 7. */
  BF_BSP_REG32(BF_RCC_PLLCFGR) = 8u | (168u << 6) | (0u << 16) | (7u << 24);
  BF_BSP_REG32(BF_RCC_CR) |= BF_RCC_CR_PLLON;
  if (BfWait(BF_RCC_CR, BF_RCC_CR_PLLRDY, BF_RCC_CR_PLLRDY) != 0) return; /* stay on HSI */
  BF_BSP_REG32(BF_RCC_CFGR) = (BF_BSP_REG32(BF_RCC_CFGR) & ~3u) | 2u;     /* SW = PLL */
  (void)BfWait(BF_RCC_CFGR, 3u << 2, 2u << 2);
}
