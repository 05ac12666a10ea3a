/*
 * board: the host-process board — benchfarm's firmware (crt + the MinRPC
 * server + the sample operators) running as a Linux process, so the whole
 * farm can be exercised with no hardware.
 *
 *   board [--pty] [--kind NAME] [--firmware-hash HEX] [--cpu N]
 *
 * The link is stdin/stdout by default. With --pty the board opens a
 * pseudo-terminal, prints "pty: <path of the slave>" as the first line on
 * stdout, and speaks the link on it — the host opens that path exactly like a
 * USB-serial port (and may close and reopen it; the board keeps the slave
 * open itself so nothing is lost in between). Diagnostics go to stderr.
 *
 * It exits 0 after a Shutdown request or at end of input (stdin closed, or
 * SIGTERM/SIGHUP/SIGINT), 1 if the link cannot be set up or written.
 *
 * benchfarm.DeviceInfo reports board_kind (default "host-process") and
 * firmware_hash: --firmware-hash, or else the FNV-1a 64-bit hash of this
 * executable's bytes (/proc/self/exe) as 16 hex digits — what the agent
 * computes for the image it built, so a stale image is caught. `timer` is
 * the platform's clock: "thread-cputime" (this thread's CPU time, so other
 * processes on the same CPU do not inflate costs) or "monotonic" (the
 * fallback where the thread clock is unavailable), with its clock_getres
 * resolution. The board adds two lines to the core's DeviceInfo:
 * calibration_instructions_per_iteration and calibration_cycles_per_iteration
 * (of benchfarm.Calibrate's loop; 0 = unknown).
 *
 * --cpu N pins the process to CPU N (sched_setaffinity) before it serves
 * anything; a CPU it may not run on is an error on stderr and exit 1.
 *
 * A fault in the code it runs (SIGSEGV, SIGBUS, SIGFPE, SIGILL) sends one
 * session Log line first, as a Cortex-M board's fault handler does, and the
 * process then dies of the signal as it would have:
 *   fault: SIGSEGV (address not mapped) pc=0x11b9 caller=0x1f30 addr=0x0
 * pc (the faulting instruction) and caller (the return address into the
 * faulting function's caller, found with the unwinder) are addresses of this
 * executable as linked — what addr2line takes — or, outside it (a shared
 * library), the address as run followed by "(outside the image)"; caller is
 * "-" when the unwinder cannot tell. addr is the fault's address.
 *
 * Built with CRT_RPC_TVM_ONLY defined (//crt/host:board_tvm_only, for tests) it serves TVM
 * v0.18's globals alone: no benchfarm.DeviceInfo, PrepareArgs/CheckCall/TimeArgs/ReleaseArgs,
 * Calibrate or TimerTotals — what a host meets on a board running TVM's own CRT.
 *
 * Globals the board adds to the core's (crt/rpc/README.md), after them:
 *   6 benchfarm.Calibrate(int64 iterations) -> float64 seconds: a busy loop of
 *     `iterations` iterations of known cost (inline assembly; x86-64
 *     "dec; jnz": 2 instructions, 1 cycle), timed with TVMPlatformTimerStart/
 *     Stop. iterations outside 1..2^40: kTvmErrorFunctionCallInvalidArg.
 *   7 benchfarm.TimerTotals() -> str: "cpu_s=<%.9g>\nwall_s=<%.9g>\n
 *     intervals=<n>\n", the platform timer's thread-CPU and wall seconds
 *     summed over every Start/Stop interval since the previous call, which
 *     resets them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <termios.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/host_platform.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/rpc_server.h>

enum { kOutputBufferBytes = 64 * 1024, kInputBufferBytes = 16 * 1024 };

typedef struct {
  int fd;
  uint8_t buf[kOutputBufferBytes];
  size_t len;
  int failed;
} Output;

static volatile sig_atomic_t g_stop;
static crt_rpc_server_t g_server;
static Output g_out;

static void OnSignal(int sig) {
  (void)sig;
  g_stop = 1;
}

static int WriteAll(int fd, const uint8_t* data, size_t n) {
  while (n > 0u) {
    ssize_t w = write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    data += w;
    n -= (size_t)w;
  }
  return 0;
}

static int Flush(Output* out) {
  if (out->len > 0u && !out->failed) {
    if (WriteAll(out->fd, out->buf, out->len) != 0) {
      fprintf(stderr, "board: link write failed: %s\n", strerror(errno));
      out->failed = 1;
    }
  }
  out->len = 0;
  return out->failed ? -1 : 0;
}

/* The framer's write callback: buffered, flushed after each batch of input. */
static tvm_crt_error_t LinkWrite(void* ctx, const uint8_t* data, size_t n) {
  Output* out = (Output*)ctx;
  if (out->failed) return kTvmErrorWriteStreamShortWrite;
  if (out->len + n > sizeof(out->buf)) {
    if (Flush(out) != 0) return kTvmErrorWriteStreamShortWrite;
    if (n > sizeof(out->buf)) {
      if (WriteAll(out->fd, data, n) != 0) {
        out->failed = 1;
        return kTvmErrorWriteStreamShortWrite;
      }
      return kTvmErrorNoError;
    }
  }
  memcpy(out->buf + out->len, data, n);
  out->len += n;
  return kTvmErrorNoError;
}

/* ---- faults -------------------------------------------------------------------------------- */

/* This executable in memory: its load bias (run address - linked address) and the range its
 * loadable segments span as run. */
static uintptr_t g_image_bias;
static uintptr_t g_image_lo;
static uintptr_t g_image_hi;
static char g_fault_stack[64 * 1024]; /* the handler's stack: a stack overflow faults too */

static void FindImage(void) {
  const ElfW(Phdr)* phdr = (const ElfW(Phdr)*)getauxval(AT_PHDR);
  size_t n = (size_t)getauxval(AT_PHNUM);
  size_t i;
  if (phdr == NULL) return;
  for (i = 0; i < n; i++) {
    if (phdr[i].p_type == PT_PHDR) g_image_bias = (uintptr_t)phdr - phdr[i].p_vaddr;
  }
  g_image_lo = UINTPTR_MAX;
  for (i = 0; i < n; i++) {
    if (phdr[i].p_type != PT_LOAD) continue;
    if (phdr[i].p_vaddr + g_image_bias < g_image_lo) g_image_lo = phdr[i].p_vaddr + g_image_bias;
    if (phdr[i].p_vaddr + phdr[i].p_memsz + g_image_bias > g_image_hi) {
      g_image_hi = phdr[i].p_vaddr + phdr[i].p_memsz + g_image_bias;
    }
  }
}

/* Appends " KEY=ADDRESS" as the file comment says. */
static size_t AppendAddress(char* line, size_t size, size_t pos, const char* key, uintptr_t a) {
  int n;
  if (pos >= size) return pos;
  if (a >= g_image_lo && a < g_image_hi) {
    n = snprintf(line + pos, size - pos, " %s=0x%lx", key, (unsigned long)(a - g_image_bias));
  } else {
    n = snprintf(line + pos, size - pos, " %s=0x%lx (outside the image)", key, (unsigned long)a);
  }
  return n < 0 ? pos : pos + (size_t)n;
}

static const char* FaultCause(int sig, int code) {
  switch (sig) {
    case SIGSEGV:
      return code == SEGV_MAPERR   ? "address not mapped"
             : code == SEGV_ACCERR ? "access not permitted"
                                   : "segmentation fault";
    case SIGBUS:
      return code == BUS_ADRALN   ? "misaligned address"
             : code == BUS_ADRERR ? "nonexistent physical address"
                                  : "bus error";
    case SIGFPE:
      return code == FPE_INTDIV   ? "integer divide by zero"
             : code == FPE_INTOVF ? "integer overflow"
                                  : "arithmetic exception";
    default:
      return "illegal instruction";
  }
}

static void OnFault(int sig, siginfo_t* info, void* context) {
  char line[256];
  void* frames[32];
  uintptr_t pc = 0;
  size_t pos;
  int n;
  int i;
  const char* name = sig == SIGSEGV  ? "SIGSEGV"
                     : sig == SIGBUS ? "SIGBUS"
                     : sig == SIGFPE ? "SIGFPE"
                                     : "SIGILL";
#if defined(__x86_64__)
  pc = (uintptr_t)((ucontext_t*)context)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
  pc = (uintptr_t)((ucontext_t*)context)->uc_mcontext.pc;
#else
  (void)context;
#endif
  n = snprintf(line, sizeof(line), "%s (%s)", name, FaultCause(sig, info->si_code));
  pos = n < 0 ? 0u : (size_t)n;
  if (pc != 0u) {
    pos = AppendAddress(line, sizeof(line), pos, "pc", pc);
    /* The frame past the faulting one (the unwinder steps through the signal frame). */
    n = backtrace(frames, (int)(sizeof(frames) / sizeof(frames[0])));
    for (i = 0; i + 1 < n && (uintptr_t)frames[i] != pc; i++) {
    }
    if (i + 1 < n) {
      pos = AppendAddress(line, sizeof(line), pos, "caller", (uintptr_t)frames[i + 1]);
    } else if (pos < sizeof(line)) {
      n = snprintf(line + pos, sizeof(line) - pos, " caller=-");
      pos = n < 0 ? pos : pos + (size_t)n;
    }
  }
  if (pos < sizeof(line)) {
    (void)snprintf(line + pos, sizeof(line) - pos, " addr=0x%lx",
                   (unsigned long)(uintptr_t)info->si_addr);
  }
  (void)crt_rpc_server_logf(&g_server, "fault: %s", line);
  (void)Flush(&g_out);
  raise(sig); /* SA_RESETHAND: the default action, once this handler returns */
}

/* Sends the fault line above before the process dies of a fault. */
static void CatchFaults(void) {
  static const int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
  struct sigaction sa;
  stack_t stack;
  void* frame;
  size_t i;
  FindImage();
  (void)backtrace(&frame, 1); /* loads the unwinder now, not in the handler */
  stack.ss_sp = g_fault_stack;
  stack.ss_size = sizeof(g_fault_stack);
  stack.ss_flags = 0;
  (void)sigaltstack(&stack, NULL);
  memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = OnFault;
  sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&sa.sa_mask);
  for (i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); i++) sigaction(kSignals[i], &sa, NULL);
}

/* FNV-1a 64 of the file at path into hex[17]; returns 0 or -1. */
static int HashFile(const char* path, char hex[17]) {
  uint64_t h = 0xcbf29ce484222325ull;
  uint8_t buf[65536];
  size_t n;
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0u) {
    size_t i;
    for (i = 0; i < n; i++) {
      h ^= buf[i];
      h *= 0x100000001b3ull;
    }
  }
  fclose(f);
  snprintf(hex, 17, "%016llx", (unsigned long long)h);
  return 0;
}

/* Opens a pty in raw mode; *slave_keep stays open so the master never sees EIO. */
static int OpenPty(int* slave_keep) {
  struct termios tio;
  const char* name;
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0) {
    fprintf(stderr, "board: cannot create a pseudo-terminal: %s\n", strerror(errno));
    return -1;
  }
  name = ptsname(master);
  if (name == NULL) {
    fprintf(stderr, "board: ptsname failed: %s\n", strerror(errno));
    return -1;
  }
  *slave_keep = open(name, O_RDWR | O_NOCTTY);
  if (*slave_keep < 0 || tcgetattr(*slave_keep, &tio) != 0) {
    fprintf(stderr, "board: cannot open %s: %s\n", name, strerror(errno));
    return -1;
  }
  cfmakeraw(&tio);
  if (tcsetattr(*slave_keep, TCSANOW, &tio) != 0) {
    fprintf(stderr, "board: cannot set %s raw: %s\n", name, strerror(errno));
    return -1;
  }
  printf("pty: %s\n", name);
  fflush(stdout);
  return master;
}

static void Usage(void) {
  fprintf(stderr, "usage: board [--pty] [--kind NAME] [--firmware-hash HEX] [--cpu N]\n");
}

#ifndef CRT_RPC_TVM_ONLY
/* ---- the calibration kernel ----------------------------------------------------------------- */

/* The loop's known cost per iteration (0 = unknown), reported in DeviceInfo. */
#if defined(__x86_64__)
/* dec + jnz: 2 instructions, one macro-fused op, 1 cycle per iteration (its dependency chain is
 * one 1-cycle dec). Measured on an AMD EPYC VM: 1.000 cycles against a chain of dependent adds. */
#define BOARD_CALIBRATION_INSTRUCTIONS "2"
#define BOARD_CALIBRATION_CYCLES "1"
static void CalibrationLoop(uint64_t n) {
  __asm__ volatile("1:\n\tdec %0\n\tjnz 1b" : "+r"(n) : : "cc");
}
#elif defined(__aarch64__)
/* subs + b.ne: 2 instructions; cycles depend on the core (branch throughput): unknown. */
#define BOARD_CALIBRATION_INSTRUCTIONS "2"
#define BOARD_CALIBRATION_CYCLES "0"
static void CalibrationLoop(uint64_t n) {
  __asm__ volatile("1:\n\tsubs %0, %0, #1\n\tb.ne 1b" : "+r"(n) : : "cc");
}
#else
/* Portable C: what the compiler makes of it is unknown. */
#define BOARD_CALIBRATION_INSTRUCTIONS "0"
#define BOARD_CALIBRATION_CYCLES "0"
static void CalibrationLoop(uint64_t n) {
  volatile uint64_t counter = n;
  while (counter != 0u) counter = counter - 1u;
}
#endif

#define BOARD_CALIBRATION_MAX_ITERATIONS ((int64_t)1 << 40)

/* benchfarm.Calibrate(int64 iterations) -> float64 seconds. */
static int Calibrate(TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_tcode,
                     void* resource_handle) {
  double seconds = 0.0;
  tvm_crt_error_t err;
  (void)resource_handle;
  if (num_args != 1 || type_codes[0] != kTVMArgInt) {
    TVMAPISetLastError("benchfarm.Calibrate: expects one int64 argument (iterations)");
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (args[0].v_int64 < 1 || args[0].v_int64 > BOARD_CALIBRATION_MAX_ITERATIONS) {
    TVMAPISetLastError("benchfarm.Calibrate: iterations must be 1 to 2^40");
    return kTvmErrorFunctionCallInvalidArg;
  }
  err = TVMPlatformTimerStart();
  if (err != kTvmErrorNoError) {
    TVMAPISetLastError("benchfarm.Calibrate: the platform timer did not start");
    return err;
  }
  CalibrationLoop((uint64_t)args[0].v_int64);
  err = TVMPlatformTimerStop(&seconds);
  if (err != kTvmErrorNoError) {
    TVMAPISetLastError("benchfarm.Calibrate: the platform timer did not stop");
    return err;
  }
  ret->v_float64 = seconds;
  *ret_tcode = kTVMArgFloat;
  return 0;
}

/* benchfarm.TimerTotals() -> str, and resets the totals. */
static int TimerTotals(TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_tcode,
                       void* resource_handle) {
  static char text[128];
  crt_host_timer_totals_t totals;
  (void)args;
  (void)type_codes;
  (void)resource_handle;
  if (num_args != 0) {
    TVMAPISetLastError("benchfarm.TimerTotals: takes no arguments");
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (crt_host_platform_timer_totals(&totals, 1) != kTvmErrorNoError) {
    TVMAPISetLastError("benchfarm.TimerTotals: no totals");
    return kTvmErrorPlatformCheckFailure;
  }
  snprintf(text, sizeof(text), "cpu_s=%.9g\nwall_s=%.9g\nintervals=%llu\n", totals.cpu_s,
           totals.wall_s, (unsigned long long)totals.intervals);
  ret->v_str = text;
  *ret_tcode = kTVMStr;
  return 0;
}

/* DeviceInfo: the core's lines (constant once the server is up), then the board's own. */
static char g_device_info[512];

static int DeviceInfo(TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_tcode,
                      void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  ret->v_str = g_device_info;
  *ret_tcode = kTVMStr;
  return 0;
}

/* Registers the board's globals: the core's benchfarm.DeviceInfo is replaced (same handle) by one
 * that adds the calibration lines; benchfarm.Calibrate and benchfarm.TimerTotals are new. */
static int RegisterBoardGlobals(void) {
  TVMFunctionHandle core = NULL;
  TVMValue value;
  int tcode = kTVMNullptr;
  value.v_str = NULL;
  if (TVMFuncGetGlobal("benchfarm.DeviceInfo", &core) != 0 || core == NULL ||
      TVMFuncCall(core, NULL, NULL, 0, &value, &tcode) != 0 || tcode != kTVMStr ||
      value.v_str == NULL) {
    fprintf(stderr, "board: benchfarm.DeviceInfo failed: %s\n", TVMGetLastError());
    return -1;
  }
  snprintf(g_device_info, sizeof(g_device_info),
           "%scalibration_instructions_per_iteration=" BOARD_CALIBRATION_INSTRUCTIONS
           "\ncalibration_cycles_per_iteration=" BOARD_CALIBRATION_CYCLES "\n",
           value.v_str);
  if (TVMCrtFuncRegisterGlobal("benchfarm.DeviceInfo", DeviceInfo, 1) != 0 ||
      TVMCrtFuncRegisterGlobal("benchfarm.Calibrate", Calibrate, 0) != 0 ||
      TVMCrtFuncRegisterGlobal("benchfarm.TimerTotals", TimerTotals, 0) != 0) {
    fprintf(stderr, "board: cannot register its globals: %s\n", TVMGetLastError());
    return -1;
  }
  return 0;
}
#endif /* CRT_RPC_TVM_ONLY */

/* Pins this process to CPU `text` (a decimal number); 0, or -1 with the reason on stderr. */
static int PinToCpu(const char* text) {
  cpu_set_t want;
  cpu_set_t allowed;
  char* end = NULL;
  long cpu;
  errno = 0;
  cpu = strtol(text, &end, 10);
  if (text[0] < '0' || text[0] > '9' || end == NULL || *end != '\0' || errno != 0 || cpu < 0 ||
      cpu >= CPU_SETSIZE) {
    fprintf(stderr, "board: --cpu %s: not a CPU number (0 to %d)\n", text, CPU_SETSIZE - 1);
    return -1;
  }
  CPU_ZERO(&want);
  CPU_SET((int)cpu, &want);
  if (sched_setaffinity(0, sizeof(want), &want) != 0) {
    int err = errno;
    char list[256];
    size_t pos = 0;
    int i;
    list[0] = '\0';
    if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0) {
      for (i = 0; i < CPU_SETSIZE && pos + 8u < sizeof(list); i++) {
        if (CPU_ISSET(i, &allowed)) {
          pos += (size_t)snprintf(list + pos, sizeof(list) - pos, "%s%d", pos > 0u ? "," : "", i);
        }
      }
    }
    fprintf(stderr, "board: --cpu %ld: cannot run on CPU %ld: %s (this process may use CPUs %s)\n",
            cpu, cpu, strerror(err), pos > 0u ? list : "?");
    return -1;
  }
  return 0;
}

int main(int argc, char** argv) {
  static uint8_t input[kInputBufferBytes];
  static char exe_hash[17];
  crt_board_info_t info;
  struct sigaction sa;
  int use_pty = 0;
  const char* cpu = NULL;
  int in_fd = STDIN_FILENO;
  int slave_keep = -1;
  int i;
  tvm_crt_error_t err;

  info.board_kind = "host-process";
  info.firmware_hash = NULL;
  info.cpu_hz = 0;
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--pty") == 0) {
      use_pty = 1;
    } else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc) {
      info.board_kind = argv[++i];
    } else if (strcmp(argv[i], "--firmware-hash") == 0 && i + 1 < argc) {
      info.firmware_hash = argv[++i];
    } else if (strcmp(argv[i], "--cpu") == 0 && i + 1 < argc) {
      cpu = argv[++i];
    } else {
      Usage();
      return 2;
    }
  }
  if (cpu != NULL && PinToCpu(cpu) != 0) return 1;
  if (info.firmware_hash == NULL) {
    info.firmware_hash = HashFile("/proc/self/exe", exe_hash) == 0 ? exe_hash : "unknown";
  }

  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal; /* no SA_RESTART: a blocked read returns EINTR */
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  g_out.fd = STDOUT_FILENO;
  if (use_pty) {
    in_fd = OpenPty(&slave_keep);
    if (in_fd < 0) return 1;
    g_out.fd = in_fd;
  }

  if (TVMPlatformInitialize() != kTvmErrorNoError) {
    fprintf(stderr, "board: platform initialisation failed\n");
    return 1;
  }
  info.timer_source = crt_host_platform_timer_source();
  info.timer_resolution_s = crt_host_platform_timer_resolution_s();
  err = crt_rpc_server_init(&g_server, LinkWrite, &g_out, &info);
#ifndef CRT_RPC_TVM_ONLY
  if (err == kTvmErrorNoError && RegisterBoardGlobals() != 0) return 1;
#endif
  if (err != kTvmErrorNoError || Flush(&g_out) != 0) {
    fprintf(stderr, "board: RPC server start failed (0x%x)\n", (unsigned)err);
    return 1;
  }
  CatchFaults();

  while (!g_stop) {
    ssize_t n = read(in_fd, input, sizeof(input));
    if (n < 0) {
      if (errno == EINTR) continue;
      fprintf(stderr, "board: link read failed: %s\n", strerror(errno));
      return 1;
    }
    if (n == 0) break; /* end of input */
    err = crt_rpc_server_receive(&g_server, input, (size_t)n);
    if (Flush(&g_out) != 0) return 1;
    if (err == kTvmErrorPlatformShutdown) break;
    if (err != kTvmErrorNoError) {
      fprintf(stderr, "board: link error 0x%x\n", (unsigned)err);
      return 1;
    }
  }
  if (slave_keep >= 0) {
    /* Let the host drain the last reply before the pty disappears. */
    (void)tcdrain(slave_keep);
    close(slave_keep);
  }
  return 0;
}
