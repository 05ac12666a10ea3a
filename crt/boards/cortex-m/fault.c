/*
 * fault.c: what happens when the firmware cannot go on — a fault (HardFault, MemManage, BusFault,
 * UsageFault, SecureFault), an unexpected exception or interrupt, or TVMPlatformAbort.
 *
 * Contract: exactly one session Log line goes to the host through crt_rpc_server_logf (it works in
 * any session state), e.g.
 *   fault: MemManage (data access violation) pc=0x00001234 lr=0x00001201 cfsr=0x00000082
 *          hfsr=0x00000000 addr=0x00000000
 *   fault: TVMPlatformAbort(0x00000101) lr=0x00002345
 * pc and lr are from the exception frame the core stacked (for an imprecise bus fault pc is past
 * the faulting store); addr is MMFAR/BFAR when the core marks it valid, else "-". The UART is then
 * drained (polled) and the chip reset with AIRCR.SYSRESETREQ; the firmware boots again and sends
 * its boot signature, which the host reads as a board reset. A fault while reporting a fault
 * resets at once, without a second line.
 */
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/rpc_server.h>

#include "bf_bsp.h"

void bf_bsp_fault_entry(void) __attribute__((naked));
void bf_bsp_fault_report(const uint32_t* frame, uint32_t exc_return)
    __attribute__((noreturn, used));

static crt_rpc_server_t* volatile g_bf_fault_server;
static volatile int g_bf_in_fatal;

void bf_bsp_fault_set_server(void* server) { g_bf_fault_server = (crt_rpc_server_t*)server; }

/* Every fault-like vector lands here: r0 = the stacked frame (MSP or PSP, per EXC_RETURN bit 2),
 * r1 = EXC_RETURN, then bf_bsp_fault_report. */
void bf_bsp_fault_entry(void) {
  __asm__ volatile(
      "tst lr, #4\n"
      "ite eq\n"
      "mrseq r0, msp\n"
      "mrsne r0, psp\n"
      "mov r1, lr\n"
      "b bf_bsp_fault_report\n");
}

/* Appends s to buf (bounded; buf[size - 1] is kept for the NUL). */
static size_t BfAppend(char* buf, size_t size, size_t pos, const char* s) {
  while (*s != '\0' && pos + 1u < size) buf[pos++] = *s++;
  buf[pos] = '\0';
  return pos;
}

/* Appends "<key>0x%08x". */
static size_t BfAppendHex(char* buf, size_t size, size_t pos, const char* key, uint32_t v) {
  static const char kDigits[] = "0123456789abcdef";
  char hex[11];
  int i;
  hex[0] = '0';
  hex[1] = 'x';
  for (i = 0; i < 8; i++) hex[2 + i] = kDigits[(v >> (28 - 4 * i)) & 0xFu];
  hex[10] = '\0';
  pos = BfAppend(buf, size, pos, key);
  return BfAppend(buf, size, pos, hex);
}

static size_t BfAppendDec(char* buf, size_t size, size_t pos, uint32_t v) {
  char digits[11];
  int n = 10;
  digits[n] = '\0';
  do {
    digits[--n] = (char)('0' + v % 10u);
    v /= 10u;
  } while (v != 0u && n > 0);
  return BfAppend(buf, size, pos, digits + n);
}

/* The first cause the fault status registers name, most specific first. */
static const char* BfFaultCause(uint32_t cfsr, uint32_t hfsr) {
  static const struct {
    uint32_t bit;
    const char* text;
  } kCauses[] = {
      {1u << 0, "instruction access violation"},
      {1u << 1, "data access violation"},
      {1u << 4, "stacking error (MPU)"},
      {1u << 3, "unstacking error (MPU)"},
      {1u << 5, "FP lazy state error (MPU)"},
      {1u << 8, "instruction bus error"},
      {1u << 9, "precise bus fault"},
      {1u << 10, "imprecise bus fault"},
      {1u << 12, "stacking bus error"},
      {1u << 11, "unstacking bus error"},
      {1u << 13, "FP lazy state bus error"},
      {1u << 16, "undefined instruction"},
      {1u << 17, "invalid state"},
      {1u << 18, "invalid exception return"},
      {1u << 19, "no coprocessor"},
      {1u << 20, "stack overflow"},
      {1u << 24, "unaligned access"},
      {1u << 25, "divide by zero"},
  };
  size_t i;
  for (i = 0; i < sizeof(kCauses) / sizeof(kCauses[0]); i++) {
    if ((cfsr & kCauses[i].bit) != 0u) return kCauses[i].text;
  }
  if ((hfsr & (1u << 1)) != 0u) return "vector table read";
  if ((hfsr & (1u << 31)) != 0u) return "debug event";
  return NULL;
}

void bf_bsp_fault_report(const uint32_t* frame, uint32_t exc_return) {
  static const char* const kNames[] = {
      "thread",       "reset",        "NMI",         "HardFault",   "MemManage",    "BusFault",
      "UsageFault",   "SecureFault",  "exception 8", "exception 9", "exception 10", "SVCall",
      "DebugMonitor", "exception 13", "PendSV",      "SysTick"};
  char line[200];
  size_t pos = 0;
  uint32_t ipsr;
  uint32_t cfsr = BF_BSP_REG32(BF_BSP_SCB_CFSR);
  uint32_t hfsr = BF_BSP_REG32(BF_BSP_SCB_HFSR);
  uint32_t mmfar = BF_BSP_REG32(BF_BSP_SCB_MMFAR);
  uint32_t bfar = BF_BSP_REG32(BF_BSP_SCB_BFAR);
  const char* cause;
  (void)exc_return;
  __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
  ipsr &= 0x1FFu;
  if (g_bf_in_fatal) bf_bsp_reset();
  g_bf_in_fatal = 1;

  if (ipsr < 16u) {
    pos = BfAppend(line, sizeof(line), pos, kNames[ipsr]);
  } else {
    pos = BfAppend(line, sizeof(line), pos, "IRQ ");
    pos = BfAppendDec(line, sizeof(line), pos, ipsr - 16u);
  }
  cause = BfFaultCause(cfsr, hfsr);
  if (cause != NULL) {
    pos = BfAppend(line, sizeof(line), pos, (hfsr & (1u << 30)) != 0u ? " (escalated: " : " (");
    pos = BfAppend(line, sizeof(line), pos, cause);
    pos = BfAppend(line, sizeof(line), pos, ")");
  }
  /* Stacked frame: r0 r1 r2 r3 r12 lr pc xpsr. */
  pos = BfAppendHex(line, sizeof(line), pos, " pc=", frame[6]);
  pos = BfAppendHex(line, sizeof(line), pos, " lr=", frame[5]);
  pos = BfAppendHex(line, sizeof(line), pos, " cfsr=", cfsr);
  pos = BfAppendHex(line, sizeof(line), pos, " hfsr=", hfsr);
  if ((cfsr & (1u << 7)) != 0u) { /* MMARVALID */
    pos = BfAppendHex(line, sizeof(line), pos, " addr=", mmfar);
  } else if ((cfsr & (1u << 15)) != 0u) { /* BFARVALID */
    pos = BfAppendHex(line, sizeof(line), pos, " addr=", bfar);
  } else {
    pos = BfAppend(line, sizeof(line), pos, " addr=-");
  }
  (void)pos;
  g_bf_in_fatal = 0;
  bf_bsp_fatal(line); /* adds "fault: " */
}

void bf_bsp_fatal(const char* what) {
  crt_rpc_server_t* server = g_bf_fault_server;
  if (!g_bf_in_fatal) {
    g_bf_in_fatal = 1;
    if (server != NULL) (void)crt_rpc_server_logf(server, "fault: %s", what);
  }
  bf_bsp_reset();
}

void bf_bsp_reset(void) {
  bf_bsp_uart_drain();
  BF_BSP_DSB();
  /* VECTKEY, keep PRIGROUP, SYSRESETREQ. */
  BF_BSP_REG32(BF_BSP_SCB_AIRCR) =
      (0x05FAu << 16) | (BF_BSP_REG32(BF_BSP_SCB_AIRCR) & 0x700u) | (1u << 2);
  BF_BSP_DSB();
  for (;;) {
  }
}

void TVMPlatformAbort(tvm_crt_error_t code) {
  char line[64];
  size_t pos = 0;
  pos = BfAppendHex(line, sizeof(line), pos, "TVMPlatformAbort(", (uint32_t)code);
  pos = BfAppendHex(line, sizeof(line), pos,
                    ") lr=", (uint32_t)(uintptr_t)__builtin_return_address(0));
  (void)pos;
  bf_bsp_fatal(line);
}
