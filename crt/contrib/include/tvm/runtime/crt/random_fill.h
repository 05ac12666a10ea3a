/*
 * random_fill.h: the global tvm.contrib.random.random_fill, which AutoTVM's
 * RPCRunner looks up on the board and calls on every input tensor before it
 * measures (TVM v0.18's CRT registers it as global 4).
 *
 * crt_rpc_server_init registers it at TVM's index 4 (handle 0x80028004), so
 * the host-process board and every Cortex-M firmware serve it. It lives
 * outside crt's core (runtime, link, MinRPC, time evaluator) as TVM keeps it
 * in contrib; `./farm crt-size` counts it under "other".
 *
 * Thread-safety: none (it uses the platform's random source and the last error).
 */
#ifndef TVM_RUNTIME_CRT_RANDOM_FILL_H_
#define TVM_RUNTIME_CRT_RANDOM_FILL_H_

#include <tvm/runtime/c_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The global's name, as TVM's host asks for it. */
#define TVM_CRT_RANDOM_FILL_NAME "tvm.contrib.random.random_fill"

/*
 * random_fill(tensor), a TVMBackendPackedCFunc: fills a compact CPU tensor
 * (type code kTVMDLTensorHandle, or kTVMNDArrayHandle) from data + byte_offset
 * with bytes from TVMPlatformGenerateRandom. Elements of float16, float32,
 * float64 and bfloat16 become uniform values in [1, 2): the random mantissa
 * with the sign and exponent of 1.0, so never NaN, infinite, subnormal or
 * zero, and no float arithmetic is needed. Other dtypes keep the raw bytes.
 * No result (ret is left as TVMFuncCall set it, kTVMNullptr).
 *
 * The tensor's memory is trusted; over the wire the RPC server has already
 * checked that it lies inside memory it allocated.
 *
 * Errors, with the last error set: kTvmErrorFunctionCallNumArguments unless
 * exactly 1 argument; kTvmErrorFunctionCallWrongArgType unless it is a
 * non-NULL tensor; kTvmErrorFunctionCallInvalidArg for NULL data, a device
 * other than kDLCPU, or a dtype/shape/strides TVMCrtCompactTensorBytes
 * refuses; the random source's error.
 *
 * Differences from TVM: TVM's CRT fills raw bytes for every dtype (so float
 * inputs may be NaN or Inf) and ignores byte_offset; TVM's C++ runtime draws
 * floats from [1, 10).
 */
int TVMCrtRandomFill(TVMValue* args, int* type_codes, int num_args, TVMValue* ret_value,
                     int* ret_tcode, void* resource_handle);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_RANDOM_FILL_H_ */
