/*
 * platform.h: the one boundary between crt and a board.
 *
 * A board (or the host process) implements these functions once; nothing else
 * in crt touches hardware. Signatures are TVM v0.18's, so a platform written
 * for TVM's CRT links against ours.
 *
 * Thread-safety: crt is single-threaded; a platform need not lock.
 */
#ifndef TVM_RUNTIME_CRT_PLATFORM_H_
#define TVM_RUNTIME_CRT_PLATFORM_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TVM_CRT_NORETURN __attribute__((noreturn))
#define TVM_CRT_PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define TVM_CRT_NORETURN
#define TVM_CRT_PRINTF_LIKE(fmt, args)
#endif

/* Stops the board after an unrecoverable error. Must not return. */
void TVMPlatformAbort(tvm_crt_error_t code) TVM_CRT_NORETURN;

/*
 * Formats a log message into out_buf (vsnprintf-shaped). Returns the number of
 * characters written, excluding the NUL; never writes more than out_buf_size_bytes.
 */
size_t TVMPlatformFormatMessage(char* out_buf, size_t out_buf_size_bytes, const char* fmt,
                                va_list args);

/*
 * Allocates num_bytes for device dev into *out_ptr. Returns kTvmErrorPlatformNoMemory
 * (leaving *out_ptr NULL) when the pool cannot satisfy the request; never aborts.
 */
tvm_crt_error_t TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr);

/* Frees memory from TVMPlatformMemoryAllocate. Freeing NULL is a no-op. */
tvm_crt_error_t TVMPlatformMemoryFree(void* ptr, DLDevice dev);

/*
 * Starts the measurement timer. kTvmErrorPlatformTimerBadState if it is running.
 */
tvm_crt_error_t TVMPlatformTimerStart(void);

/*
 * Stops the timer and stores the time since TimerStart, in seconds, in
 * *elapsed_time_seconds. kTvmErrorPlatformTimerBadState if it was not running.
 */
tvm_crt_error_t TVMPlatformTimerStop(double* elapsed_time_seconds);

/* Called before and after a timed measurement (e.g. to fix clocks, stop other work). */
tvm_crt_error_t TVMPlatformBeforeMeasurement(void);
tvm_crt_error_t TVMPlatformAfterMeasurement(void);

/* Fills buffer with num_bytes random bytes (session nonces, tvm.contrib.random.random_fill). */
tvm_crt_error_t TVMPlatformGenerateRandom(uint8_t* buffer, size_t num_bytes);

/* Prepares the platform (memory pool, timer). Called once at boot. */
tvm_crt_error_t TVMPlatformInitialize(void);

#ifdef __cplusplus
}  /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_PLATFORM_H_ */
