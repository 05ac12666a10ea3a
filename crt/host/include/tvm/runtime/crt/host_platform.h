/*
 * host_platform.h: what the host-process platform (//crt/host:platform) adds
 * to platform.h. That library implements every TVMPlatform* function for a
 * crt running as an ordinary Linux process — the host-process board — using
 * POSIX (clock_gettime, getrandom, stderr); board code never sees this.
 *
 * Host specifics of the platform.h functions:
 * - Memory: a static pool of TVM_CRT_MEMORY_POOL_SIZE_BYTES carved into
 *   TVM_CRT_PAGE_BYTES pages by crt_page_allocator. TVMPlatformInitialize
 *   sets it up, or the first allocation does. The DLDevice argument is
 *   ignored (the host has only CPU memory). Blocks are aligned to
 *   CRT_PAGE_ALLOCATOR_ALIGNMENT(TVM_CRT_PAGE_BYTES). Besides
 *   kTvmErrorPlatformNoMemory, Allocate returns kTvmErrorFunctionCallInvalidArg
 *   for a NULL out_ptr; Free returns kTvmErrorPlatformStackAllocBadFree for a
 *   pointer the pool did not hand out, or one already freed.
 * - TVMPlatformInitialize: idempotent — a second call keeps the pool and its
 *   live blocks, and stops the timer.
 * - Timer: in seconds, on the calling thread's CPU clock
 *   (CLOCK_THREAD_CPUTIME_ID): the time this thread spent on a CPU, so a board
 *   sharing its CPU with other processes is not charged for their time, nor
 *   for time it was asleep. Where clock_gettime refuses that clock (checked
 *   once, at TVMPlatformInitialize or the first timer call) it falls back to
 *   CLOCK_MONOTONIC; crt_host_platform_timer_source() says which. Start and
 *   Stop must run on the same thread. TimerStop(NULL) returns
 *   kTvmErrorFunctionCallInvalidArg and leaves the timer running; on any
 *   error *elapsed_time_seconds is left unchanged. Every completed Start/Stop
 *   interval is also added to the totals (crt_host_platform_timer_totals).
 * - TVMPlatformGenerateRandom: getrandom(2), or /dev/urandom where the
 *   kernel lacks it. kTvmErrorFunctionCallInvalidArg for a NULL buffer with
 *   num_bytes > 0; kTvmErrorPlatformCheckFailure if the OS gives no randomness.
 * - TVMPlatformAbort: writes "TVMPlatformAbort: crt error 0x<code>" to stderr,
 *   then abort(3) (SIGABRT), so the process that launched the board sees it die.
 * - TVMPlatformFormatMessage: vsnprintf, clamped to what was written (a
 *   truncated message returns out_buf_size_bytes - 1).
 * - Before/AfterMeasurement: nothing to do; return kTvmErrorNoError.
 *
 * Thread-safety: none, like crt itself.
 */
#ifndef TVM_RUNTIME_CRT_HOST_PLATFORM_H_
#define TVM_RUNTIME_CRT_HOST_PLATFORM_H_

#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/page_allocator.h>
#include <tvm/runtime/crt/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Stores a snapshot of the memory pool's state in *out (setting the pool up
 * first if nothing has yet). Returns kTvmErrorNoError, or
 * kTvmErrorFunctionCallInvalidArg if out is NULL.
 */
tvm_crt_error_t crt_host_platform_get_memory_stats(crt_page_allocator_stats_t* out);

/*
 * The timer's clock: "thread-cputime" (CLOCK_THREAD_CPUTIME_ID) or "monotonic"
 * (CLOCK_MONOTONIC, the fallback) — what DeviceInfo reports as `timer`;
 * "process-cputime" or "other" only after crt_host_platform_select_timer_clock — and
 * its resolution in seconds (clock_getres; 1e-9 if that fails). Both choose
 * the clock first if nothing has yet.
 */
const char* crt_host_platform_timer_source(void);
double crt_host_platform_timer_resolution_s(void);

/*
 * Makes clock_id (a clockid_t) the timer's clock if clock_gettime accepts it,
 * else CLOCK_MONOTONIC, exactly as the automatic choice does with
 * CLOCK_THREAD_CPUTIME_ID; stops a running timer. Returns the name of the
 * clock now in use (as crt_host_platform_timer_source). For tests and for a
 * board that wants wall time.
 */
const char* crt_host_platform_select_timer_clock(int clock_id);

/* What the timer measured since the totals were last reset. */
typedef struct crt_host_timer_totals {
  /* Sum of the intervals TimerStop returned (the timer's clock: thread CPU
   * seconds, or wall seconds when the timer fell back to CLOCK_MONOTONIC). */
  double cpu_s;
  /* Sum of the same intervals on CLOCK_MONOTONIC (wall time); each wall
   * interval encloses its timed one, so wall_s >= cpu_s up to clock steps. */
  double wall_s;
  /* Completed Start/Stop intervals. */
  uint64_t intervals;
} crt_host_timer_totals_t;

/*
 * Stores the totals in *out and, if reset is non-zero, sets them back to 0.
 * A running interval is not counted until it stops. Returns kTvmErrorNoError,
 * or kTvmErrorFunctionCallInvalidArg if out is NULL.
 */
tvm_crt_error_t crt_host_platform_timer_totals(crt_host_timer_totals_t* out, int reset);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_HOST_PLATFORM_H_ */
