/*
 * test_platform.h: a TVMPlatform* implementation (platform.h) for the
 * //crt/ops tests, which link their own system library and so cannot use
 * //crt/runtime:testing (it brings a TVMSystemLibEntryPoint too).
 *
 * Memory comes from malloc (test-only), with a count of live allocations so
 * tests can check that everything was freed. The timer reports a fixed 1 ms.
 * TVMPlatformAbort calls abort(). Thread-safety: none.
 */
#ifndef BENCHFARM_OPS_TESTING_TEST_PLATFORM_H_
#define BENCHFARM_OPS_TESTING_TEST_PLATFORM_H_

#ifdef __cplusplus
extern "C" {
#endif

/* Allocations from TVMPlatformMemoryAllocate not yet freed. */
int bf_ops_test_platform_live_allocations(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_OPS_TESTING_TEST_PLATFORM_H_ */
