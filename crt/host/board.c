/*
 * board: the host-process board — benchfarm's firmware (crt + the MinRPC
 * server + the sample operators) running as a Linux process, so the whole
 * farm can be exercised with no hardware.
 *
 *   board [--pty] [--kind NAME] [--firmware-hash HEX]
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
 * computes for the image it built, so a stale image is caught.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

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
  fprintf(stderr, "usage: board [--pty] [--kind NAME] [--firmware-hash HEX]\n");
}

int main(int argc, char** argv) {
  static uint8_t input[kInputBufferBytes];
  static char exe_hash[17];
  crt_board_info_t info;
  struct sigaction sa;
  struct timespec res;
  int use_pty = 0;
  int in_fd = STDIN_FILENO;
  int slave_keep = -1;
  int i;
  tvm_crt_error_t err;

  info.board_kind = "host-process";
  info.firmware_hash = NULL;
  info.cpu_hz = 0;
  info.timer_source = "monotonic"; /* platform.c times with CLOCK_MONOTONIC */
  for (i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--pty") == 0) {
      use_pty = 1;
    } else if (strcmp(argv[i], "--kind") == 0 && i + 1 < argc) {
      info.board_kind = argv[++i];
    } else if (strcmp(argv[i], "--firmware-hash") == 0 && i + 1 < argc) {
      info.firmware_hash = argv[++i];
    } else {
      Usage();
      return 2;
    }
  }
  if (info.firmware_hash == NULL) {
    info.firmware_hash = HashFile("/proc/self/exe", exe_hash) == 0 ? exe_hash : "unknown";
  }
  info.timer_resolution_s =
      clock_getres(CLOCK_MONOTONIC, &res) == 0 ? (double)res.tv_sec + res.tv_nsec * 1e-9 : 1e-9;

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
  err = crt_rpc_server_init(&g_server, LinkWrite, &g_out, &info);
  if (err != kTvmErrorNoError || Flush(&g_out) != 0) {
    fprintf(stderr, "board: RPC server start failed (0x%x)\n", (unsigned)err);
    return 1;
  }

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
