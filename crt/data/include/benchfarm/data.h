/*
 * benchfarm/data.h: a measurement's data, made and checked where it lives.
 *
 * The same functions run on every benchfarm board (crt/rpc/board_data.c
 * uses them in benchfarm.PrepareArgs and benchfarm.CheckCall) and on the host (the agent's path for
 * boards without them), so the same seed gives the same bytes on every board kind.
 *
 * Dtypes: int8, uint8, int16, uint16, int32, uint32, float16 (IEEE binary16,
 * converted in software: no compiler support needed), float32, float64; one
 * lane. Data is in the board's byte order (little-endian on every supported
 * board).
 *
 * The generator: SplitMix64 started from (seed, stream); element i takes the
 * i-th draw. Integers are uniform in [lo, hi] (both whole and inside the
 * dtype; the draw modulo the range's size); floats are lo + (hi - lo) * u with
 * u the draw's top 24 bits (float16, float32) or 53 bits (float64) over 2^24
 * or 2^53, computed in double without fused multiply-add, then rounded to the
 * dtype (to nearest, ties to even), so it is in [lo, hi].
 *
 * The check: integers must be equal; floats within atol + rtol * |want|
 * (NaN never matches; equal infinities do).
 *
 * Thread-safety: functions are pure but for the memory they are given.
 */
#ifndef BENCHFARM_DATA_H_
#define BENCHFARM_DATA_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The dtype's name ("int8", ..., "float64"); NULL for a dtype these functions do not take. */
const char* bf_data_dtype_name(DLDataType dtype);

/* 0 with *dtype set for one of those names; -1 otherwise. */
int bf_data_parse_dtype(const char* name, DLDataType* dtype);

/* Bytes of one element; 0 for a dtype these functions do not take. */
size_t bf_data_element_bytes(DLDataType dtype);

/* The default range of a dtype: its whole range for integers, [-1, 1] for floats. */
void bf_data_default_range(DLDataType dtype, double* lo, double* hi);

/*
 * 0 if [lo, hi] is a range the generator takes for the dtype: lo <= hi, both
 * finite; for integers both whole and representable in the dtype. -1 otherwise.
 */
int bf_data_check_range(DLDataType dtype, double lo, double hi);

/* Fills count elements from (seed, stream) in [lo, hi]. -1 on a bad dtype or range, else 0. */
int bf_data_fill(void* data, size_t count, DLDataType dtype, uint64_t seed, uint64_t stream,
                 double lo, double hi);

/*
 * Fills count elements with values a kernel that writes nothing is caught by:
 * NaN for floats; for integers a 32-bit LCG's bytes seeded by `salt` (not the
 * generator above: cheaper on a core without a 64-bit multiplier). -1 on a bad
 * dtype.
 */
int bf_data_poison(void* data, size_t count, DLDataType dtype, uint64_t salt);

/* Element i as a double (exact for every dtype above). */
double bf_data_get(const void* data, size_t i, DLDataType dtype);

typedef struct {
  uint64_t mismatches;  /* elements outside the tolerance */
  int64_t first_index;  /* the first of them, -1 if none */
  double got, want;     /* its values (0 if none) */
  double max_abs_error; /* over every element; +inf where a NaN or infinity differs */
} bf_data_report_t;

/* The report's encoding on the wire: u64, i64, then three f64, little-endian. */
#define BF_DATA_REPORT_BYTES 40

/*
 * Compares got with want element by element (above). -1 on a bad dtype, or a
 * tolerance that is negative or NaN; else 0 with *report filled.
 */
int bf_data_compare(const void* got, const void* want, size_t count, DLDataType dtype, double atol,
                    double rtol, bf_data_report_t* report);

/* IEEE binary16 conversions, to nearest (ties to even), NaN kept a NaN. */
uint16_t bf_data_f16_from_f32(float value);
float bf_data_f16_to_f32(uint16_t bits);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_DATA_H_ */
