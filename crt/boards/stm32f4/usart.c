/*
 * usart.c: an STM32F4 USART/UART (F405/F407/F415/F417/F427/F429/F446 share the register layout),
 * register-level, no vendor HAL. 8N1, oversampling by 16, receive interrupt into the ring,
 * polled transmit. Also QEMU's stm32f2xx-usart model (netduinoplus2), which ignores BRR, RCC
 * and GPIO.
 *
 * board.conf: UART_BASE, UART_IRQ, UART_BAUD, UART_CLOCK_HZ (the APB clock of that bus after
 * bf_bsp_clock_init), UART_RCC_APB (1 or 2: the bus whose RCC_APBxENR gates it) and UART_RCC_BIT
 * (its enable bit there), UART_TX_PIN / UART_RX_PIN (e.g. PA9 / PA10) and UART_AF (the pins'
 * alternate function number, 7 for USART1..3, 8 for UART4/5 and USART6).
 */
#include "bf_bsp.h"

#if !defined(BF_CONF_UART_BASE) || !defined(BF_CONF_UART_BAUD) ||        \
    !defined(BF_CONF_UART_CLOCK_HZ) || !defined(BF_CONF_UART_RCC_APB) || \
    !defined(BF_CONF_UART_RCC_BIT) || !defined(BF_CONF_UART_TX_PIN) ||   \
    !defined(BF_CONF_UART_RX_PIN) || !defined(BF_CONF_UART_AF)
#error \
    "stm32f4/usart.c needs board.conf UART_BASE, UART_BAUD, UART_CLOCK_HZ, UART_RCC_APB, UART_RCC_BIT, UART_TX_PIN, UART_RX_PIN, UART_AF"
#endif

#define BF_USART_SR (BF_CONF_UART_BASE + 0x00u)
#define BF_USART_DR (BF_CONF_UART_BASE + 0x04u)
#define BF_USART_BRR (BF_CONF_UART_BASE + 0x08u)
#define BF_USART_CR1 (BF_CONF_UART_BASE + 0x0Cu)
#define BF_USART_CR2 (BF_CONF_UART_BASE + 0x10u)
#define BF_USART_CR3 (BF_CONF_UART_BASE + 0x14u)
#define BF_USART_SR_ORE (1u << 3)
#define BF_USART_SR_RXNE (1u << 5)
#define BF_USART_SR_TC (1u << 6)
#define BF_USART_SR_TXE (1u << 7)
#define BF_USART_CR1_RE (1u << 2)
#define BF_USART_CR1_TE (1u << 3)
#define BF_USART_CR1_RXNEIE (1u << 5)
#define BF_USART_CR1_UE (1u << 13)

#define BF_RCC_AHB1ENR 0x40023830u
#define BF_RCC_APB1ENR 0x40023840u
#define BF_RCC_APB2ENR 0x40023844u
#define BF_GPIO_BASE(port) (0x40020000u + 0x400u * (uint32_t)(port))

typedef char bf_usart_check_af[BF_CONF_UART_AF >= 0 && BF_CONF_UART_AF <= 15 ? 1 : -1];
typedef char bf_usart_check_apb[BF_CONF_UART_RCC_APB == 1 || BF_CONF_UART_RCC_APB == 2 ? 1 : -1];

/* Puts pin (port << 4 | number) in alternate function `af`: push-pull, high speed, pull-up. */
static void BfPinAlternate(uint32_t pin, uint32_t af) {
  uint32_t port = pin >> 4;
  uint32_t n = pin & 15u;
  uint32_t base = BF_GPIO_BASE(port);
  BF_BSP_REG32(BF_RCC_AHB1ENR) |= 1u << port;
  BF_BSP_DSB();
  BF_BSP_REG32(base + 0x20u + 4u * (n >> 3)) =
      (BF_BSP_REG32(base + 0x20u + 4u * (n >> 3)) & ~(0xFu << (4u * (n & 7u)))) |
      (af << (4u * (n & 7u)));
  BF_BSP_REG32(base + 0x04u) &= ~(1u << n); /* OTYPER */
  BF_BSP_REG32(base + 0x08u) =
      (BF_BSP_REG32(base + 0x08u) & ~(3u << (2u * n))) | (2u << (2u * n)); /* OSPEEDR high */
  BF_BSP_REG32(base + 0x0Cu) =
      (BF_BSP_REG32(base + 0x0Cu) & ~(3u << (2u * n))) | (1u << (2u * n)); /* PUPDR up */
  BF_BSP_REG32(base + 0x00u) =
      (BF_BSP_REG32(base + 0x00u) & ~(3u << (2u * n))) | (2u << (2u * n)); /* MODER AF */
}

void bf_bsp_uart_init(void) {
  BF_BSP_REG32(BF_CONF_UART_RCC_APB == 1 ? BF_RCC_APB1ENR : BF_RCC_APB2ENR) |=
      1u << BF_CONF_UART_RCC_BIT;
  BF_BSP_DSB();
  BfPinAlternate((uint32_t)BF_CONF_UART_TX_PIN, (uint32_t)BF_CONF_UART_AF);
  BfPinAlternate((uint32_t)BF_CONF_UART_RX_PIN, (uint32_t)BF_CONF_UART_AF);
  BF_BSP_REG32(BF_USART_CR1) = 0u;
  BF_BSP_REG32(BF_USART_CR2) = 0u; /* 1 stop bit */
  BF_BSP_REG32(BF_USART_CR3) = 0u; /* no flow control, no DMA */
  /* Oversampling by 16: BRR = f / baud, rounded (mantissa and 4-bit fraction in one). */
  BF_BSP_REG32(BF_USART_BRR) =
      (uint32_t)(((uint32_t)BF_CONF_UART_CLOCK_HZ + (uint32_t)BF_CONF_UART_BAUD / 2u) /
                 (uint32_t)BF_CONF_UART_BAUD);
  BF_BSP_REG32(BF_USART_CR1) =
      BF_USART_CR1_UE | BF_USART_CR1_TE | BF_USART_CR1_RE | BF_USART_CR1_RXNEIE;
  bf_bsp_nvic_enable(BF_CONF_UART_IRQ, 0x80u);
}

void bf_bsp_uart_put(uint8_t byte) {
  while ((BF_BSP_REG32(BF_USART_SR) & BF_USART_SR_TXE) == 0u) {
  }
  BF_BSP_REG32(BF_USART_DR) = byte;
}

void bf_bsp_uart_drain(void) {
  /* TC: the last byte's stop bit has left the pin. */
  while ((BF_BSP_REG32(BF_USART_SR) & (BF_USART_SR_TXE | BF_USART_SR_TC)) !=
         (BF_USART_SR_TXE | BF_USART_SR_TC)) {
  }
}

void bf_bsp_uart_rx_irq_enable(int on) {
  /* RXNEIE is level-sensitive on RXNE: a byte already waiting raises the interrupt at once. */
  if (on) {
    BF_BSP_REG32(BF_USART_CR1) |= BF_USART_CR1_RXNEIE;
  } else {
    BF_BSP_REG32(BF_USART_CR1) &= ~BF_USART_CR1_RXNEIE;
  }
}

void bf_bsp_uart_irq_handler(void) {
  for (;;) {
    uint32_t sr = BF_BSP_REG32(BF_USART_SR);
    if ((sr & (BF_USART_SR_RXNE | BF_USART_SR_ORE)) == 0u) return;
    if (bf_bsp_rx_full()) { /* the byte stays in the USART until the ring has room */
      bf_bsp_uart_rx_irq_enable(0);
      bf_bsp_rx_stall();
      return;
    }
    /* Reading DR after SR also clears an overrun (ORE), which would otherwise keep the interrupt
     * asserted; the byte lost to it is the host's to detect (CRC). */
    bf_bsp_rx_push((uint8_t)BF_BSP_REG32(BF_USART_DR));
  }
}
