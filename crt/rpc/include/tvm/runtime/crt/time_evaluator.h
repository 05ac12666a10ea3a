/*
 * time_evaluator.h: runtime.RPCTimeEvaluator, timing an operator on the board
 * itself (docs/microtvm-reference.md section 4; TVM's 12-argument form).
 *
 *   runtime.RPCTimeEvaluator(module, name, device_type, device_id, number,
 *       repeat, min_repeat_ms, limit_zero_time_iterations,
 *       cooldown_interval_ms, repeats_to_cooldown, cache_flush_bytes,
 *       f_preproc) -> packed function handle 0xffff8000 | index
 *
 * Argument types: module kTVMModuleHandle, name kTVMStr, f_preproc kTVMStr,
 * the rest kDLInt; fewer than 12 arguments is kTvmErrorFunctionCallNumArguments,
 * a wrong type kTvmErrorFunctionCallWrongArgType, a name the module lacks
 * kTvmErrorFunctionNameNotFound, number < 1, repeat outside
 * 1..CRT_TIME_EVALUATOR_MAX_REPEAT or a negative time kTvmErrorFunctionCallInvalidArg.
 * cache_flush_bytes and f_preproc are accepted and ignored (as TVM's CRT does).
 *
 * Calling the returned handle with the operator's own arguments makes one
 * untimed warm-up call, then for each of `repeat` repeats runs the operator
 * `number` times between TVMPlatformTimerStart/Stop (bracketed by
 * Before/AfterMeasurement), growing number by TVM's rule
 *   number = max(min_repeat_ms / 1000 / (elapsed / number) + 1, number * 1.618)
 * until a repeat lasts min_repeat_ms or limit_zero_time_iterations repeats
 * measured exactly zero; it returns kTVMBytes holding `repeat` little-endian
 * doubles, seconds per call (allocated from the pool; the caller frees it
 * with TVMByteArrayFree). Cooldown: after repeat i with
 * i % repeats_to_cooldown == 0 it waits cooldown_interval_ms by polling the
 * platform timer (platform.h has no sleep).
 *
 * Fixed relative to TVM (docs/wire-protocol.md): up to TVM_CRT_MAX_TIME_EVALUATORS
 * evaluators are live at once (creating one more retires the oldest; calling a
 * retired handle is kTvmErrorTimeEvaluatorBadHandle); each call starts again
 * from the configured number, so results do not depend on earlier calls;
 * repeats_to_cooldown of 0 is read as 1; number growth is capped at
 * CRT_TIME_EVALUATOR_MAX_NUMBER.
 *
 * Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_TIME_EVALUATOR_H_
#define TVM_RUNTIME_CRT_TIME_EVALUATOR_H_

#include <stdbool.h>
#include <stdint.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CRT_TIME_EVALUATOR_NUM_ARGS 12
#ifndef CRT_TIME_EVALUATOR_MAX_REPEAT
#define CRT_TIME_EVALUATOR_MAX_REPEAT 1024
#endif
#ifndef CRT_TIME_EVALUATOR_MAX_NUMBER
#define CRT_TIME_EVALUATOR_MAX_NUMBER ((int64_t)1 << 31)
#endif

/* An evaluator's options (runtime.RPCTimeEvaluator's arguments 4-9). */
typedef struct {
  int64_t number;
  int64_t repeat;
  int64_t min_repeat_ms;
  int64_t limit_zero_time_iterations;
  int64_t cooldown_interval_ms;
  int64_t repeats_to_cooldown; /* 0 is read as 1 */
} crt_time_options_t;

/* The options from six Int values in that order (number ... repeats_to_cooldown). */
crt_time_options_t crt_time_options_read(const TVMValue* six);

/* NULL if the options are in range (as above), else what is wrong. */
const char* crt_time_options_check(const crt_time_options_t* options);

/*
 * What calling an evaluator does (above), for target with these arguments and
 * checked options: the result is kTVMBytes of options->repeat doubles. For
 * other ways in to the same timing (benchfarm.TimeArgs, board_data.h).
 */
int crt_time_evaluator_run(TVMFunctionHandle target, const crt_time_options_t* options,
                           TVMValue* args, int* type_codes, int num_args, TVMValue* out_ret_value,
                           int* out_ret_tcode);

/*
 * Registers the global runtime.RPCTimeEvaluator and installs the evaluator
 * call hook (crt.h); retires every live evaluator. Call after
 * TVMInitializeRuntime. Returns kTvmErrorNoError or the registry's error.
 */
tvm_crt_error_t crt_time_evaluator_register(void);

/*
 * If handle is a live evaluator, retires it and returns true; false otherwise
 * (nothing changes). For FreeHandle of a packed function handle.
 */
bool crt_time_evaluator_free(TVMFunctionHandle handle);

/* Retires every live evaluator. */
void crt_time_evaluator_free_all(void);

/* Live evaluators (for tests). */
int crt_time_evaluator_live_count(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_TIME_EVALUATOR_H_ */
