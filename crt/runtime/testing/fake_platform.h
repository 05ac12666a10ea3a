/*
 * fake_platform.h: a TVMPlatform* implementation for crt unit tests.
 *
 * Memory comes from a small static bump pool (never reused until reset).
 * Tests can shrink the pool or make the next allocations fail, and can check
 * that every allocation was freed. The timer returns a settable duration.
 * Test-only: TVMPlatformAbort calls abort().
 */
#ifndef CRT_RUNTIME_TESTING_FAKE_PLATFORM_H_
#define CRT_RUNTIME_TESTING_FAKE_PLATFORM_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes in the fake pool. */
#define CRT_FAKE_PLATFORM_POOL_BYTES 4096
/* Most allocations live at once (more fail with kTvmErrorPlatformNoMemory). */
#define CRT_FAKE_PLATFORM_MAX_LIVE 64

/* Empties the pool, forgets all allocations, clears failure injection. */
void crt_fake_platform_reset(void);

/* Limits the pool to limit_bytes (<= CRT_FAKE_PLATFORM_POOL_BYTES) from now on. */
void crt_fake_platform_set_pool_limit(size_t limit_bytes);

/* The next n allocations succeed (if they fit), later ones fail; n < 0: no limit. */
void crt_fake_platform_set_allocations_left(int n);

/* Allocations not yet freed. */
int crt_fake_platform_live_allocations(void);

/* Frees of pointers the pool never handed out (or freed twice). */
int crt_fake_platform_bad_frees(void);

/* The duration TVMPlatformTimerStop reports. */
void crt_fake_platform_set_elapsed_seconds(double seconds);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CRT_RUNTIME_TESTING_FAKE_PLATFORM_H_ */
