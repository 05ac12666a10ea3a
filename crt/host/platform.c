/*
 * platform.c: platform.h for the host-process board — crt running as a Linux
 * process. The only crt source allowed POSIX and stdio; the contracts are in
 * host_platform.h.
 */
/* clock_gettime, CLOCK_MONOTONIC and CLOCK_THREAD_CPUTIME_ID are POSIX, hidden by -std=c99
 * otherwise. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include <crt_config.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <tvm/runtime/crt/host_platform.h>
#include <unistd.h>

/* The pool, aligned for anything crt stores in it. */
static union {
  uint8_t bytes[TVM_CRT_MEMORY_POOL_SIZE_BYTES];
  uint64_t align_u64;
  double align_double;
  void* align_pointer;
} g_pool_storage;

static crt_page_allocator_t g_pool;
static int g_pool_ready;

static int g_timer_running;
static struct timespec g_timer_start; /* on g_timer_clock */
static struct timespec g_wall_start;  /* on CLOCK_MONOTONIC */
/* The timer's clock, chosen once (TVMPlatformInitialize or the first timer call):
 * CLOCK_THREAD_CPUTIME_ID where clock_gettime supports it, else CLOCK_MONOTONIC. */
static clockid_t g_timer_clock = CLOCK_MONOTONIC;
static int g_timer_clock_chosen;
static double g_timer_resolution_s = 1e-9;
/* Sums over every completed Start/Stop interval since the last reset. */
static double g_totals_cpu_s;
static double g_totals_wall_s;
static uint64_t g_totals_intervals;

/* Sets the pool up once; later calls keep its blocks. */
static tvm_crt_error_t EnsurePool(void) {
  tvm_crt_error_t err;
  if (g_pool_ready) {
    return kTvmErrorNoError;
  }
  err = crt_page_allocator_init(&g_pool, g_pool_storage.bytes, sizeof(g_pool_storage.bytes),
                                TVM_CRT_PAGE_BYTES);
  if (err == kTvmErrorNoError) {
    g_pool_ready = 1;
  }
  return err;
}

void TVMPlatformAbort(tvm_crt_error_t code) {
  fprintf(stderr, "TVMPlatformAbort: crt error 0x%x\n", (unsigned)code);
  fflush(stderr);
  abort();
}

size_t TVMPlatformFormatMessage(char* out_buf, size_t out_buf_size_bytes, const char* fmt,
                                va_list args) {
  int written;
  if (out_buf == NULL || out_buf_size_bytes == 0) {
    return 0;
  }
  written = vsnprintf(out_buf, out_buf_size_bytes, fmt, args);
  if (written < 0) {
    out_buf[0] = '\0';
    return 0;
  }
  /* vsnprintf reports the untruncated length; report what is in out_buf. */
  if ((size_t)written >= out_buf_size_bytes) {
    return out_buf_size_bytes - 1;
  }
  return (size_t)written;
}

tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  tvm_crt_error_t err;
  (void)dev;
  if (out_ptr == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  *out_ptr = NULL;
  err = EnsurePool();
  if (err != kTvmErrorNoError) {
    return err;
  }
  return crt_page_allocator_allocate(&g_pool, num_bytes, out_ptr);
}

tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  tvm_crt_error_t err;
  (void)dev;
  if (ptr == NULL) {
    return kTvmErrorNoError;
  }
  err = EnsurePool();
  if (err != kTvmErrorNoError) {
    return err;
  }
  return crt_page_allocator_free(&g_pool, ptr);
}

tvm_crt_error_t crt_host_platform_get_memory_stats(crt_page_allocator_stats_t* out) {
  tvm_crt_error_t err;
  if (out == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  err = EnsurePool();
  if (err != kTvmErrorNoError) {
    return err;
  }
  return crt_page_allocator_get_stats(&g_pool, out);
}

/* Picks the timer's clock: `preferred` if clock_gettime works with it, else CLOCK_MONOTONIC. */
static void ChooseClock(clockid_t preferred) {
  struct timespec probe;
  struct timespec res;
  g_timer_clock = clock_gettime(preferred, &probe) == 0 ? preferred : CLOCK_MONOTONIC;
  g_timer_resolution_s = 1e-9;
  if (clock_getres(g_timer_clock, &res) == 0 && (res.tv_sec > 0 || res.tv_nsec > 0)) {
    g_timer_resolution_s = (double)res.tv_sec + (double)res.tv_nsec * 1e-9;
  }
  g_timer_clock_chosen = 1;
}

static void EnsureClock(void) {
  if (!g_timer_clock_chosen) ChooseClock(CLOCK_THREAD_CPUTIME_ID);
}

/* b - a in seconds; whole seconds and nanoseconds apart, so no precision is lost to an epoch. */
static double Seconds(const struct timespec* a, const struct timespec* b) {
  return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

tvm_crt_error_t TVMPlatformTimerStart(void) {
  if (g_timer_running) {
    return kTvmErrorPlatformTimerBadState;
  }
  EnsureClock();
  /* Wall clock first, the timer's clock last: the wall interval encloses the timed one. */
  if (clock_gettime(CLOCK_MONOTONIC, &g_wall_start) != 0 ||
      clock_gettime(g_timer_clock, &g_timer_start) != 0) {
    return kTvmErrorPlatformCheckFailure;
  }
  g_timer_running = 1;
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds) {
  struct timespec now;
  struct timespec wall_now;
  double elapsed;
  if (!g_timer_running) {
    return kTvmErrorPlatformTimerBadState;
  }
  if (elapsed_time_seconds == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (clock_gettime(g_timer_clock, &now) != 0 || clock_gettime(CLOCK_MONOTONIC, &wall_now) != 0) {
    return kTvmErrorPlatformCheckFailure;
  }
  g_timer_running = 0;
  elapsed = Seconds(&g_timer_start, &now);
  g_totals_cpu_s += elapsed;
  g_totals_wall_s += Seconds(&g_wall_start, &wall_now);
  g_totals_intervals++;
  *elapsed_time_seconds = elapsed;
  return kTvmErrorNoError;
}

const char* crt_host_platform_timer_source(void) {
  EnsureClock();
  if (g_timer_clock == CLOCK_THREAD_CPUTIME_ID) return "thread-cputime";
  if (g_timer_clock == CLOCK_MONOTONIC) return "monotonic";
  if (g_timer_clock == CLOCK_PROCESS_CPUTIME_ID) return "process-cputime";
  return "other"; /* a clock a caller selected (crt_host_platform_select_timer_clock) */
}

double crt_host_platform_timer_resolution_s(void) {
  EnsureClock();
  return g_timer_resolution_s;
}

const char* crt_host_platform_select_timer_clock(int clock_id) {
  g_timer_running = 0;
  ChooseClock((clockid_t)clock_id);
  return crt_host_platform_timer_source();
}

tvm_crt_error_t crt_host_platform_timer_totals(crt_host_timer_totals_t* out, int reset) {
  if (out == NULL) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  out->cpu_s = g_totals_cpu_s;
  out->wall_s = g_totals_wall_s;
  out->intervals = g_totals_intervals;
  if (reset) {
    g_totals_cpu_s = 0;
    g_totals_wall_s = 0;
    g_totals_intervals = 0;
  }
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformBeforeMeasurement(void) { return kTvmErrorNoError; }

tvm_crt_error_t TVMPlatformAfterMeasurement(void) { return kTvmErrorNoError; }

/* Fills buffer from /dev/urandom; 0 on success, -1 on failure. */
static int ReadUrandom(uint8_t* buffer, size_t num_bytes) {
  int fd = open("/dev/urandom", O_RDONLY);
  if (fd < 0) {
    return -1;
  }
  while (num_bytes > 0) {
    ssize_t got = read(fd, buffer, num_bytes);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got <= 0) {
      close(fd);
      return -1;
    }
    buffer += got;
    num_bytes -= (size_t)got;
  }
  close(fd);
  return 0;
}

tvm_crt_error_t TVMPlatformGenerateRandom(uint8_t* buffer, size_t num_bytes) {
  if (buffer == NULL && num_bytes > 0) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  while (num_bytes > 0) {
    /* getrandom may return fewer bytes than asked (large requests, signals). */
    ssize_t got = getrandom(buffer, num_bytes, 0);
    if (got < 0 && errno == EINTR) {
      continue;
    }
    if (got < 0 && errno == ENOSYS) {
      return ReadUrandom(buffer, num_bytes) == 0 ? kTvmErrorNoError : kTvmErrorPlatformCheckFailure;
    }
    if (got <= 0) {
      return kTvmErrorPlatformCheckFailure;
    }
    buffer += got;
    num_bytes -= (size_t)got;
  }
  return kTvmErrorNoError;
}

tvm_crt_error_t TVMPlatformInitialize(void) {
  g_timer_running = 0;
  EnsureClock();
  return EnsurePool();
}
