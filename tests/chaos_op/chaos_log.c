/* The chaos harness's kernel (tests/chaos.py): out[0] = sum(a) + sum(b), and a record of every
 * call on the board's stderr, which the agent appends to <scratch_dir>/<board id>.board.log.
 *
 * A trial is named by its shapes: a is [I], b is [J] (tests/chaos.py gives trial k the pair
 * I = k / 100 + 1, J = k % 100 + 1), so each record says which trial the call belongs to:
 *   "chaos-log: call I J"    every call of the kernel (the output check's and each timed call)
 *   "chaos-log: check I J"   every call of the reference: the output check that starts each
 *                            measurement of a trial (check_outputs), once per measurement.
 * Each record is one write(2) of a short line to a file the agent opened for appending, so
 * records of concurrent or restarted boards never interleave.
 * Host-process boards only (it needs a stderr). */
#define _POSIX_C_SOURCE 200809L
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
#include <unistd.h>

/* Appends the decimal digits of v to line at n; returns the new n. */
static int chaos_digits(char* line, int n, int64_t v) {
  char digits[24];
  int d = 0;
  uint64_t u = v < 0 ? 0 : (uint64_t)v;
  do {
    digits[d++] = (char)('0' + u % 10);
    u /= 10;
  } while (u != 0);
  while (d > 0) line[n++] = digits[--d];
  return n;
}

/* Writes "chaos-log: <what> <i> <j>\n" to stderr, without stdio. */
static void chaos_record(const char* what, int64_t i, int64_t j) {
  char line[96];
  int n = 0;
  const char* s;
  for (s = "chaos-log: "; *s != '\0'; ++s) line[n++] = *s;
  for (s = what; *s != '\0'; ++s) line[n++] = *s;
  line[n++] = ' ';
  n = chaos_digits(line, n, i);
  line[n++] = ' ';
  n = chaos_digits(line, n, j);
  line[n++] = '\n';
  (void)!write(2, line, (size_t)n);
}

/* a [I], b [J], out [1], all float32; -1 otherwise. */
static int unpack(const TVMValue* args, const int* type_codes, int num_args, const DLTensor** a,
                  const DLTensor** b, float** out) {
  int k;
  if (num_args != 3) return -1;
  for (k = 0; k < 3; ++k) {
    if (type_codes[k] != kTVMDLTensorHandle) return -1;
  }
  *a = (const DLTensor*)args[0].v_handle;
  *b = (const DLTensor*)args[1].v_handle;
  if ((*a)->ndim != 1 || (*b)->ndim != 1 || ((const DLTensor*)args[2].v_handle)->ndim != 1)
    return -1;
  *out = (float*)((const DLTensor*)args[2].v_handle)->data;
  return 0;
}

static float chaos_sum(const DLTensor* a, const DLTensor* b) {
  const float* x = (const float*)a->data;
  const float* y = (const float*)b->data;
  float s = 0.0f;
  int64_t k;
  for (k = 0; k < a->shape[0]; ++k) s += x[k];
  for (k = 0; k < b->shape[0]; ++k) s += y[k];
  return s;
}

BF_OPS_DECLARE_PACKED(chaos_log);
BF_OPS_DECLARE_PACKED(chaos_log) {
  const DLTensor* a;
  const DLTensor* b;
  float* out;
  if (unpack(args, type_codes, num_args, &a, &b, &out) != 0) return -1;
  chaos_record("call", a->shape[0], b->shape[0]);
  out[0] = chaos_sum(a, b);
  return 0;
}

BF_OPS_DECLARE_PACKED(chaos_log_reference);
BF_OPS_DECLARE_PACKED(chaos_log_reference) {
  const DLTensor* a;
  const DLTensor* b;
  float* out;
  if (unpack(args, type_codes, num_args, &a, &b, &out) != 0) return -1;
  chaos_record("check", a->shape[0], b->shape[0]);
  out[0] = chaos_sum(a, b);
  return 0;
}
