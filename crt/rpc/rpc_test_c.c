/* Compiles the public crt/rpc headers as C99 and exercises them from C. */
#include <tvm/runtime/crt/rpc_server.h>
#include <tvm/runtime/crt/time_evaluator.h>

int crt_rpc_test_c_live_evaluators(void);
int crt_rpc_test_c_live_evaluators(void) { return crt_time_evaluator_live_count(); }

size_t crt_rpc_test_c_server_bytes(void);
size_t crt_rpc_test_c_server_bytes(void) { return sizeof(crt_rpc_server_t); }
