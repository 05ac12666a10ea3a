/*
 * main.c: benchfarm's firmware on a Cortex-M — crt's MinRPC server answering on the package's
 * UART, driven by the host exactly like the host-process board (crt/host/board.c).
 *
 * Boot: clocks (if the package has them), vector table / faults / MPU NULL guard, cycle timer,
 * UART, TVMPlatformInitialize, crt_rpc_server_init (which sends the boot signature
 * FE FF FD 03 00 00 00 00 00 02 66 77). Then forever: bytes the UART interrupt put in the ring go
 * to crt_rpc_server_receive; with nothing to do the core sleeps (WFI) until the next interrupt.
 *
 * benchfarm.DeviceInfo reports board_kind (build.sh --kind, default the package name),
 * firmware_hash (the firmware id build.sh computed), timer_resolution_s = 1 / CPU_HZ, cpu_hz and
 * timer=dwt|systick.
 *
 * A Shutdown request, an unrecoverable link write error or a failed start resets the chip, so the
 * board is always ready for the next host session.
 */
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/rpc_server.h>

#include "bf_bsp.h"

#ifndef BF_CONF_CLOCK_INIT
#define BF_CONF_CLOCK_INIT 0
#endif

/* The framer's write callback: every byte, polled (the receive side keeps running under it). */
static tvm_crt_error_t BfLinkWrite(void* ctx, const uint8_t* data, size_t n) {
  size_t i;
  (void)ctx;
  for (i = 0; i < n; i++) bf_bsp_uart_put(data[i]);
  return kTvmErrorNoError;
}

int main(void) {
  static crt_rpc_server_t server; /* large: static, never on the stack */
  static crt_board_info_t info;
  static uint8_t chunk[256];
  tvm_crt_error_t err;

#if BF_CONF_CLOCK_INIT
  bf_bsp_clock_init();
#endif
  bf_bsp_core_init();
  bf_bsp_timer_init();
  bf_bsp_uart_init();
  __asm__ volatile("cpsie i" ::: "memory");

  info.board_kind = bf_bsp_board_kind;
  info.firmware_hash = bf_bsp_firmware_hash;
  info.timer_resolution_s = 1.0 / (double)BF_CONF_CPU_HZ;
  info.cpu_hz = (uint64_t)BF_CONF_CPU_HZ;
  info.timer_source = bf_bsp_timer_source();

  if (TVMPlatformInitialize() != kTvmErrorNoError) bf_bsp_fatal("TVMPlatformInitialize failed");
  err = crt_rpc_server_init(&server, BfLinkWrite, NULL, &info);
  bf_bsp_fault_set_server(&server);
  if (err != kTvmErrorNoError) bf_bsp_fatal("crt_rpc_server_init failed");

  for (;;) {
    size_t n;
    /* Sleep only when the ring is empty, checked with interrupts masked: an interrupt arriving
     * after the check still ends the WFI (a pending interrupt wakes the core even when masked). */
    __asm__ volatile("cpsid i" ::: "memory");
    n = bf_bsp_uart_read(chunk, sizeof(chunk));
    if (n == 0u) __asm__ volatile("wfi" ::: "memory");
    __asm__ volatile("cpsie i" ::: "memory");
    if (n == 0u) continue;
    err = crt_rpc_server_receive(&server, chunk, n);
    if (err == kTvmErrorPlatformShutdown) bf_bsp_reset();
    /* A write error resets the link inside the server; the UART cannot fail a write, so any
     * other error is unexpected: keep serving. */
  }
}
