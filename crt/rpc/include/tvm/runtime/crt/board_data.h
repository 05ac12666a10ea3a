/*
 * board_data.h: a measurement's data on the board (benchfarm/data.h), as
 * global functions the host calls over MinRPC, so that inputs, the output's
 * poison, the reference's output, the check and the timed calls' arguments
 * never cross the link. The board keeps one prepared set at a time.
 *
 *   benchfarm.PrepareArgs(seed, atol, rtol, reference, spec) -> bytes
 *       makes a measurement's arguments on the board,
 *       freeing any set made before. Arguments: seed Int, atol Float, rtol
 *       Float (>= 0), reference Str (a system-library function; "" for no
 *       check), spec Bytes listing the arguments (inputs..., out),
 *       little-endian:
 *           u8 count (2..TVM_CRT_MAX_ARGS), then per argument:
 *           u8 dtype code, u8 bits, u16 lanes, u8 ndim (<= TVM_CRT_MAX_NDIM),
 *           i64 shape[ndim] (>= 0), f64 lo, f64 hi (inputs: a range of the
 *           dtype; ignored for out).
 *       Each is allocated as DevAllocData allocates for the host (so the
 *       host may read it, and a new session frees it), out and ref with
 *       BF_GUARD_BYTES bytes after them, filled with a pattern. Input i is
 *       filled from (seed, stream i) in [lo, hi]; out is poisoned. With a
 *       reference, its output ref is allocated too and the reference runs
 *       once with (in..., ref); it must leave ref's guard alone. Returns the
 *       data addresses, u64 each: in..., out, and ref with a reference.
 *   benchfarm.CheckCall(function) -> bytes[BF_DATA_REPORT_BYTES]
 *       poisons out, calls the function with (in..., out), compares out with
 *       ref (atol + rtol * |ref| for floats, exact for integers) and returns
 *       the report (benchfarm/data.h). A failing call returns its error; a
 *       call that changed out's guard is an error saying it wrote past the
 *       end of its output. Needs a set prepared with a reference.
 *   benchfarm.TimeArgs(name, number, repeat, min_repeat_ms,
 *                      limit_zero_time_iterations, cooldown_interval_ms,
 *                      repeats_to_cooldown) -> bytes
 *       (Str, Int x 6) times system-library function `name` called with
 *       (in..., out) exactly as runtime.RPCTimeEvaluator's evaluator would
 *       (time_evaluator.h, its options and result): the timed call without
 *       its tensors on the link.
 *   benchfarm.ReleaseArgs() -> void
 *       frees the set.
 *
 * Bad arguments are kTvmErrorFunctionCallNumArguments, ...WrongArgType or
 * ...InvalidArg with a message naming the function and argument; a failed
 * PrepareArgs leaves no set. The set is dropped by ReleaseArgs, a new
 * session, and when the host frees any of its memory (crt_board_data_forget),
 * so no call touches freed memory.
 *
 * Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_BOARD_DATA_H_
#define TVM_RUNTIME_CRT_BOARD_DATA_H_

#include <stddef.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The guard after out and ref. */
#define BF_GUARD_BYTES 64

/* Registers the four functions. Call after TVMInitializeRuntime and crt_rpc_server_init's own. */
tvm_crt_error_t crt_board_data_register(void);

/* Memory [data, data + nbytes) is being freed: drops the set if any of it lies there. */
void crt_board_data_forget(const void* data, size_t nbytes);

/* Frees the set (a new session, ReleaseArgs). */
void crt_board_data_clear(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_BOARD_DATA_H_ */
