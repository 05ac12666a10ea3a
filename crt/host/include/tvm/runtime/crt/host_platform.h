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
 * - Timer: CLOCK_MONOTONIC, in seconds. TimerStop(NULL) returns
 *   kTvmErrorFunctionCallInvalidArg and leaves the timer running; on any
 *   error *elapsed_time_seconds is left unchanged.
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_HOST_PLATFORM_H_ */
