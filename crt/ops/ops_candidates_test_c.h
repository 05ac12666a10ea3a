/*
 * ops_candidates_test_c.h: a grid of tuning candidates compiled from one C99
 * file (ops_candidates_test_c.c), the way the agent builds a batch of
 * candidates into one firmware image. ops_test.cc checks every candidate
 * against the reference, and knobs_test.cc checks the grid covers every value
 * knobs.json allows.
 */
#ifndef BENCHFARM_OPS_OPS_CANDIDATES_TEST_C_H_
#define BENCHFARM_OPS_OPS_CANDIDATES_TEST_C_H_

#include <stdint.h>
#include <tvm/runtime/c_backend_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One candidate: its C name, the function, and the knobs it was built with. */
typedef struct {
  const char* name;
  TVMBackendPackedCFunc fn;
  /* Integer knobs in BF_DEFINE_* argument order; unused entries are 0. */
  int32_t knobs[4];
  /* The ORDER knob's token, or NULL for add. */
  const char* order;
} bf_ops_test_candidate_t;

/* The candidates of each operator; *count receives how many. Static storage. */
const bf_ops_test_candidate_t* bf_ops_test_add_candidates(int* count);
const bf_ops_test_candidate_t* bf_ops_test_matmul_candidates(int* count);
const bf_ops_test_candidate_t* bf_ops_test_conv2d_candidates(int* count);

/*
 * Includes every public //crt/ops header in C, runs the default matmul on a
 * 2x2 example from C and returns 0 when C == [[19, 22], [43, 50]], else nonzero.
 */
int bf_ops_headers_compile_as_c(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* BENCHFARM_OPS_OPS_CANDIDATES_TEST_C_H_ */
