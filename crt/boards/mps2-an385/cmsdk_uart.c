/*
 * cmsdk_uart.c: the Arm CMSDK APB UART (Cortex-M System Design Kit, DDI 0479) — the UART of the
 * MPS2/MPS3 FPGA images (AN385, AN547, ...) and of QEMU's models of them. 8N1, no FIFO: one
 * receive and one transmit holding register.
 *
 * board.conf: UART_BASE, UART_IRQ (the UART's receive interrupt; CMSDK UARTs have separate RX and
 * TX interrupts, only RX is used: transmit is polled), UART_BAUD, UART_CLOCK_HZ (the APB clock;
 * BAUDDIV = UART_CLOCK_HZ / UART_BAUD, at least 16).
 */
#include "bf_bsp.h"

#if !defined(BF_CONF_UART_BASE) || !defined(BF_CONF_UART_BAUD) || !defined(BF_CONF_UART_CLOCK_HZ)
#error "cmsdk_uart.c needs board.conf UART_BASE, UART_BAUD and UART_CLOCK_HZ"
#endif

#define BF_CMSDK_DATA (BF_CONF_UART_BASE + 0x00u)
#define BF_CMSDK_STATE (BF_CONF_UART_BASE + 0x04u)
#define BF_CMSDK_CTRL (BF_CONF_UART_BASE + 0x08u)
#define BF_CMSDK_INTCLEAR (BF_CONF_UART_BASE + 0x0Cu)
#define BF_CMSDK_BAUDDIV (BF_CONF_UART_BASE + 0x10u)

#define BF_CMSDK_STATE_TXFULL 1u
#define BF_CMSDK_STATE_RXFULL 2u
#define BF_CMSDK_CTRL_TXEN 1u
#define BF_CMSDK_CTRL_RXEN 2u
#define BF_CMSDK_CTRL_RXINTEN 8u
#define BF_CMSDK_INT_RX 2u

typedef char bf_cmsdk_check_bauddiv[(BF_CONF_UART_CLOCK_HZ) / (BF_CONF_UART_BAUD) >= 16 ? 1 : -1];

void bf_bsp_uart_init(void) {
  BF_BSP_REG32(BF_CMSDK_CTRL) = 0u;
  BF_BSP_REG32(BF_CMSDK_BAUDDIV) = (uint32_t)((BF_CONF_UART_CLOCK_HZ) / (BF_CONF_UART_BAUD));
  BF_BSP_REG32(BF_CMSDK_STATE) = 0xCu;    /* clear overrun flags */
  BF_BSP_REG32(BF_CMSDK_INTCLEAR) = 0xFu; /* and pending interrupts */
  BF_BSP_REG32(BF_CMSDK_CTRL) = BF_CMSDK_CTRL_TXEN | BF_CMSDK_CTRL_RXEN | BF_CMSDK_CTRL_RXINTEN;
  bf_bsp_nvic_enable(BF_CONF_UART_IRQ, 0x80u);
}

void bf_bsp_uart_put(uint8_t byte) {
  while ((BF_BSP_REG32(BF_CMSDK_STATE) & BF_CMSDK_STATE_TXFULL) != 0u) {
  }
  BF_BSP_REG32(BF_CMSDK_DATA) = byte;
}

void bf_bsp_uart_drain(void) {
  volatile uint32_t spin;
  while ((BF_BSP_REG32(BF_CMSDK_STATE) & BF_CMSDK_STATE_TXFULL) != 0u) {
  }
  /* The holding register is empty; the shift register may still hold the last byte, and the
   * CMSDK UART has no "transmitter idle" flag: wait one character time (10 bits) at the core
   * clock, counting about 4 cycles per iteration. */
  for (spin = 0; spin < (uint32_t)(10ull * BF_CONF_CPU_HZ / BF_CONF_UART_BAUD / 4u); spin++) {
  }
}

void bf_bsp_uart_rx_irq_enable(int on) {
  if (on) {
    BF_BSP_REG32(BF_CMSDK_CTRL) |= BF_CMSDK_CTRL_RXINTEN;
    /* The interrupt status latches on reception only: a byte left waiting while the interrupt
     * was masked raises nothing by itself. */
    if ((BF_BSP_REG32(BF_CMSDK_STATE) & BF_CMSDK_STATE_RXFULL) != 0u)
      bf_bsp_nvic_pend(BF_CONF_UART_IRQ);
  } else {
    BF_BSP_REG32(BF_CMSDK_CTRL) &= ~BF_CMSDK_CTRL_RXINTEN;
  }
}

void bf_bsp_uart_irq_handler(void) {
  BF_BSP_REG32(BF_CMSDK_INTCLEAR) = BF_CMSDK_INT_RX;
  while ((BF_BSP_REG32(BF_CMSDK_STATE) & BF_CMSDK_STATE_RXFULL) != 0u) {
    if (bf_bsp_rx_full()) { /* the byte stays in the UART until the ring has room */
      bf_bsp_uart_rx_irq_enable(0);
      bf_bsp_rx_stall();
      return;
    }
    bf_bsp_rx_push((uint8_t)BF_BSP_REG32(BF_CMSDK_DATA));
  }
}
