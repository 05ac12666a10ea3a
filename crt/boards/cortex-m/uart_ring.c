/*
 * uart_ring.c: the UART receive ring — single producer (the UART interrupt), single consumer
 * (main's loop). The interrupt owns `head`, the loop owns `tail`; each only reads the other's, so
 * no lock is needed on one core. Indices run freely and wrap modulo 2^32; the ring holds
 * BF_CONF_RX_RING_BYTES bytes (a power of two).
 *
 * Flow control: when the ring is full the interrupt stops reading the UART and masks its receive
 * interrupt (the driver does that); bf_bsp_uart_read unmasks it once it has made room. Under QEMU
 * the emulated UART then holds further input back, so nothing is lost; on hardware the UART's own
 * buffer overruns if the host keeps sending into a full ring (counted by bf_bsp_rx_stalls).
 */
#include "bf_bsp.h"

#define BF_RING_MASK ((uint32_t)BF_CONF_RX_RING_BYTES - 1u)
#define BF_COMPILER_BARRIER() __asm__ volatile("" ::: "memory")

static uint8_t g_bf_ring[BF_CONF_RX_RING_BYTES];
static volatile uint32_t g_bf_head; /* next write (interrupt) */
static volatile uint32_t g_bf_tail; /* next read (thread) */
static volatile uint32_t g_bf_masked;
static volatile uint32_t g_bf_stalls;

int bf_bsp_rx_full(void) { return g_bf_head - g_bf_tail >= (uint32_t)BF_CONF_RX_RING_BYTES; }

void bf_bsp_rx_push(uint8_t byte) {
  uint32_t head = g_bf_head;
  g_bf_ring[head & BF_RING_MASK] = byte;
  BF_COMPILER_BARRIER(); /* the byte is stored before the consumer can see the new head */
  g_bf_head = head + 1u;
}

void bf_bsp_rx_stall(void) {
  g_bf_stalls = g_bf_stalls + 1u;
  g_bf_masked = 1u;
}

size_t bf_bsp_uart_read(uint8_t* buf, size_t n) {
  uint32_t tail = g_bf_tail;
  uint32_t avail = g_bf_head - tail;
  size_t i;
  BF_COMPILER_BARRIER(); /* head is read before the bytes it covers */
  if (avail > n) avail = (uint32_t)n;
  for (i = 0; i < avail; i++) buf[i] = g_bf_ring[(tail + i) & BF_RING_MASK];
  BF_COMPILER_BARRIER();
  g_bf_tail = tail + avail;
  if (g_bf_masked && avail > 0u) {
    g_bf_masked = 0u;
    bf_bsp_uart_rx_irq_enable(1);
  }
  return avail;
}

uint32_t bf_bsp_rx_stalls(void) { return g_bf_stalls; }
