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
 * firmware_hash (the firmware id build.sh computed), timer_resolution_s = 1 / CPU_HZ, cpu_hz,
 * timer=dwt|systick, and (added here, after the core's lines)
 * calibration_instructions_per_iteration = 2 and calibration_cycles_per_iteration = board.conf
 * CALIBRATION_CYCLES_PER_ITERATION (0 when the package does not declare it: unknown).
 *
 * benchfarm.Calibrate(int64 iterations) -> float64 seconds (global 6, after the core's): the
 * calibration kernel, `1: subs r, r, #1; bne 1b` — 2 instructions per iteration, 3 cycles on a
 * Cortex-M3/M4 at zero wait states (SUBS 1 + taken BNE 1 + P, P = 1 nominal) — run `iterations`
 * times between TVMPlatformTimerStart and Stop. The loop is inline assembly, so no compiler can
 * change it; kept out of the crt core (crt/rpc), which stays portable and small. iterations
 * outside 1..2^40: kTvmErrorFunctionCallInvalidArg with a message.
 *
 * benchfarm.Microbench and benchfarm.Microbenchmarks: microbench.c (one loop per timing rule).
 *
 * A Shutdown request, an unrecoverable link write error or a failed start resets the chip, so the
 * board is always ready for the next host session.
 */
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/rpc_server.h>

#include "bf_bsp.h"

#ifndef BF_CONF_CLOCK_INIT
#define BF_CONF_CLOCK_INIT 0
#endif
/* Cycles one iteration of the calibration loop takes on this part (board.conf, data; 0: unknown).
 */
#ifndef BF_CONF_CALIBRATION_CYCLES_PER_ITERATION
#define BF_CONF_CALIBRATION_CYCLES_PER_ITERATION 0
#endif
#define BF_STRINGIFY2(x) #x
#define BF_STRINGIFY(x) BF_STRINGIFY2(x)

/* What the firmware adds to the core's DeviceInfo lines (no NUL: sized to the text). */
#define BF_CALIBRATION_INFO                    \
  "calibration_instructions_per_iteration=2\n" \
  "calibration_cycles_per_iteration=" BF_STRINGIFY(BF_CONF_CALIBRATION_CYCLES_PER_ITERATION) "\n"
static const char kBfCalibrationInfo[sizeof(BF_CALIBRATION_INFO) - 1] = BF_CALIBRATION_INFO;
/* The core's DeviceInfo text (at most 255 bytes), the lines above and a NUL. */
static char g_bf_device_info[256 + sizeof(kBfCalibrationInfo) + 1];

/* Texts as arrays, not literals: with -fdata-sections they stay in sections of their own, where
 * ./farm crt-size counts them as this object's. Literals go to the linker's merged string
 * sections, whose bytes the link map (and so crt-size) reports against the core's objects. */
static const char kBfCalibrateArgs[] =
    "benchfarm.Calibrate: expects one int64 argument (iterations)";
static const char kBfCalibrateRange[] = "benchfarm.Calibrate: iterations must be 1 to 2^40";
static const char kBfCalibrateTimer[] = "benchfarm.Calibrate: the platform timer failed";
static const char kBfDeviceInfoFailed[] = "benchfarm.DeviceInfo failed";
static const char kBfRegisterFailed[] = "cannot register benchfarm.Calibrate";
static const char kBfDeviceInfoName[] = "benchfarm.DeviceInfo";
static const char kBfCalibrateName[] = "benchfarm.Calibrate";

/* n iterations (n >= 1) of 2 Thumb instructions: SUBS (16-bit, a low register) and BNE back.
 * Word-aligned, so the pair is one 32-bit fetch (the alignment NOP, if any, runs once). */
static void BfCalibrationLoop(uint32_t n) {
  __asm__ volatile(".balign 4\n1:\n\tsubs %0, %0, #1\n\tbne 1b" : "+l"(n) : : "cc");
}

/* benchfarm.Calibrate(int64 iterations) -> float64 seconds. */
static int BfCalibrate(TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_tcode,
                       void* resource_handle) {
  uint64_t left;
  double seconds = 0.0;
  tvm_crt_error_t err;
  (void)resource_handle;
  if (num_args != 1 || type_codes[0] != kTVMArgInt) {
    TVMAPISetLastError(kBfCalibrateArgs);
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (args[0].v_int64 < 1 || args[0].v_int64 > ((int64_t)1 << 40)) {
    TVMAPISetLastError(kBfCalibrateRange);
    return kTvmErrorFunctionCallInvalidArg;
  }
  left = (uint64_t)args[0].v_int64;
  err = TVMPlatformTimerStart();
  if (err != kTvmErrorNoError) {
    TVMAPISetLastError(kBfCalibrateTimer);
    return err;
  }
  /* One run of the loop up to 2^31 iterations (the counter is 32 bits). */
  while (left > 0u) {
    uint32_t chunk = left > 0x80000000u ? 0x80000000u : (uint32_t)left;
    BfCalibrationLoop(chunk);
    left -= chunk;
  }
  err = TVMPlatformTimerStop(&seconds);
  if (err != kTvmErrorNoError) {
    TVMAPISetLastError(kBfCalibrateTimer);
    return err;
  }
  ret->v_float64 = seconds;
  *ret_tcode = kTVMArgFloat;
  return 0;
}

static int BfDeviceInfo(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
                        int* ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  ret->v_str = g_bf_device_info;
  *ret_tcode = kTVMStr;
  return 0;
}

/* Replaces the core's benchfarm.DeviceInfo (same handle) with its text (constant once the server
 * is up) plus the calibration lines, and registers benchfarm.Calibrate. */
static void BfRegisterBoardGlobals(void) {
  TVMFunctionHandle core = NULL;
  TVMValue value;
  int tcode = kTVMNullptr;
  size_t n = 0;
  size_t i;
  const char* volatile extra;
  value.v_str = NULL;
  if (TVMFuncGetGlobal(kBfDeviceInfoName, &core) != 0 || core == NULL ||
      TVMFuncCall(core, NULL, NULL, 0, &value, &tcode) != 0 || tcode != kTVMStr ||
      value.v_str == NULL) {
    bf_bsp_fatal(kBfDeviceInfoFailed);
  }
  while (n < 255u && value.v_str[n] != '\0') {
    g_bf_device_info[n] = value.v_str[n];
    n++;
  }
  /* Read through a volatile pointer: GCC would otherwise copy from a literal of its own making. */
  extra = kBfCalibrationInfo;
  for (i = 0; i < sizeof(kBfCalibrationInfo); i++) g_bf_device_info[n + i] = extra[i];
  g_bf_device_info[n + i] = '\0';
  if (TVMCrtFuncRegisterGlobal(kBfDeviceInfoName, BfDeviceInfo, 1) != 0 ||
      TVMCrtFuncRegisterGlobal(kBfCalibrateName, BfCalibrate, 0) != 0 ||
      bf_bsp_microbench_register() != 0) {
    bf_bsp_fatal(kBfRegisterFailed);
  }
}

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
  BfRegisterBoardGlobals();

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
