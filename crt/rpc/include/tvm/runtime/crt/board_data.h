/*
 * board_data.h: a measurement's data on the board (benchfarm/data.h), as
 * global functions the host calls over MinRPC, so that inputs, the output's
 * poison, the reference's output and the check never cross the link:
 *
 *   benchfarm.FillTensor(tensor, seed, stream, lo, hi) -> void
 *       fills the tensor from (seed, stream) in [lo, hi] (DLTensor, Int, Int,
 *       Float, Float).
 *   benchfarm.CheckSetup(atol, rtol, guard, in..., out, ref) -> void
 *       keeps the call's tensors for CheckCall (copies of the DLTensors: the
 *       memory stays the host's allocations) and poisons out. out and ref
 *       must have one shape and dtype; ref holds the reference's output.
 *       guard (null, or at most 64 uint8 bytes: the host allocates out with
 *       them right after it) is filled with a pattern CheckCall watches.
 *   benchfarm.CheckCall(function) -> bytes[BF_DATA_REPORT_BYTES]
 *       poisons out, calls the function with (in..., out), compares out with
 *       ref and returns the report (benchfarm/data.h). A failing call
 *       returns its error; a call that changed the guard is an error saying
 *       it wrote past the end of its output.
 *   benchfarm.CheckClear() -> void
 *
 * Bad arguments are kTvmErrorFunctionCallNumArguments, ...WrongArgType or
 * ...InvalidArg with a message naming the function and argument. The kept
 * tensors are dropped by CheckClear, by a new session, and when any of their
 * memory is freed (crt_board_data_forget), so CheckCall never touches freed
 * memory.
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

/* Registers the four functions. Call after TVMInitializeRuntime. */
tvm_crt_error_t crt_board_data_register(void);

/* Memory [data, data + nbytes) was freed: drops the kept tensors if any lies in it. */
void crt_board_data_forget(const void* data, size_t nbytes);

/* Drops the kept tensors (a new session). */
void crt_board_data_clear(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_BOARD_DATA_H_ */
