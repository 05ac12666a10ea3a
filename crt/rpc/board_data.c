/*
 * board_data.c: benchfarm.FillTensor, CheckSetup, CheckCall, CheckClear
 * (board_data.h).
 */
#include <benchfarm/data.h>
#include <crt_config.h>
#include <stddef.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/board_data.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/wire.h>

static const DLDevice kCpu = {kDLCPU, 0};

/* The most bytes of the guard after out that CheckCall watches. */
#define BF_GUARD_MAX_BYTES 64

/* What CheckSetup keeps: the tensors (inputs, then out), ref, the tolerance, out's guard. */
typedef struct {
  int count;      /* inputs + out */
  uint8_t* guard; /* the bytes right after out (NULL: none) */
  size_t guard_bytes;
  uint8_t guard_pattern[BF_GUARD_MAX_BYTES];
  DLTensor tensors[TVM_CRT_MAX_ARGS];
  int64_t shapes[TVM_CRT_MAX_ARGS][TVM_CRT_MAX_NDIM];
  DLTensor ref;
  int64_t ref_shape[TVM_CRT_MAX_NDIM];
  double atol, rtol;
  uint64_t calls; /* the poison's salt */
} Kept;

static Kept* g_kept; /* from the pool while set */

static int Fail(int code, const char* message) {
  TVMAPISetLastError(message);
  return code;
}

static size_t Elements(const DLTensor* t) {
  size_t n = 1;
  int i;
  for (i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
  return n;
}

static void* Data(const DLTensor* t) { return (uint8_t*)t->data + t->byte_offset; }

/* A compact tensor of a dtype benchfarm/data.h takes (the server checked its memory). */
static int IsDataTensor(const TVMValue* v, int tcode) {
  const DLTensor* t = (const DLTensor*)v->v_handle;
  return tcode == kTVMDLTensorHandle && t != NULL && t->strides == NULL &&
         bf_data_element_bytes(t->dtype) != 0u;
}

static int FillTensor(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                      void* resource) {
  const DLTensor* t;
  (void)resource;
  if (n != 5) {
    return Fail(kTvmErrorFunctionCallNumArguments,
                "benchfarm.FillTensor: expects (tensor, seed, stream, lo, hi)");
  }
  if (!IsDataTensor(&args[0], tcodes[0]) || tcodes[1] != kDLInt || tcodes[2] != kDLInt ||
      tcodes[3] != kDLFloat || tcodes[4] != kDLFloat) {
    return Fail(kTvmErrorFunctionCallWrongArgType,
                "benchfarm.FillTensor: expects (compact tensor of a supported dtype, Int, Int, "
                "Float, Float)");
  }
  t = (const DLTensor*)args[0].v_handle;
  if (bf_data_fill(Data(t), Elements(t), t->dtype, (uint64_t)args[1].v_int64,
                   (uint64_t)args[2].v_int64, args[3].v_float64, args[4].v_float64) != 0) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.FillTensor: [lo, hi] is not a range of the tensor's dtype");
  }
  ret->v_int64 = 0;
  *ret_tcode = kTVMNullptr;
  return 0;
}

void crt_board_data_clear(void) {
  if (g_kept != NULL) (void)TVMPlatformMemoryFree(g_kept, kCpu);
  g_kept = NULL;
}

void crt_board_data_forget(const void* data, size_t nbytes) {
  const uint8_t* begin = (const uint8_t*)data;
  int i;
  if (g_kept == NULL) return;
  for (i = 0; i <= g_kept->count; i++) {
    const DLTensor* t = i < g_kept->count ? &g_kept->tensors[i] : &g_kept->ref;
    const uint8_t* p = (const uint8_t*)Data(t);
    if (p >= begin && p < begin + nbytes) {
      crt_board_data_clear();
      return;
    }
  }
}

static void Keep(DLTensor* into, int64_t* shape, const DLTensor* from) {
  *into = *from;
  memcpy(shape, from->shape, (size_t)from->ndim * sizeof(int64_t));
  into->shape = shape;
  into->strides = NULL;
}

static int SameLayout(const DLTensor* a, const DLTensor* b) {
  return a->ndim == b->ndim && a->dtype.code == b->dtype.code && a->dtype.bits == b->dtype.bits &&
         a->dtype.lanes == b->dtype.lanes &&
         memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof(int64_t)) == 0;
}

static int CheckSetup(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                      void* resource) {
  const DLTensor* out;
  const DLTensor* ref;
  int i, err;
  (void)resource;
  const DLTensor* guard = NULL;
  if (n < 5) {
    return Fail(kTvmErrorFunctionCallNumArguments,
                "benchfarm.CheckSetup: expects (atol, rtol, guard, inputs..., out, ref)");
  }
  if (tcodes[2] == kTVMDLTensorHandle) {
    guard = (const DLTensor*)args[2].v_handle;
    if (guard == NULL || guard->strides != NULL || guard->dtype.code != kDLUInt ||
        guard->dtype.bits != 8u || guard->ndim != 1 || guard->shape[0] > BF_GUARD_MAX_BYTES) {
      return Fail(kTvmErrorFunctionCallInvalidArg,
                  "benchfarm.CheckSetup: guard must be at most 64 compact uint8 bytes");
    }
  } else if (tcodes[2] != kTVMNullptr) {
    return Fail(kTvmErrorFunctionCallWrongArgType,
                "benchfarm.CheckSetup: guard must be a tensor or null");
  }
  if (tcodes[0] != kDLFloat || tcodes[1] != kDLFloat) {
    return Fail(kTvmErrorFunctionCallWrongArgType,
                "benchfarm.CheckSetup: atol and rtol must be Float");
  }
  if (!(args[0].v_float64 >= 0.0) || !(args[1].v_float64 >= 0.0)) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.CheckSetup: atol and rtol must be >= 0");
  }
  for (i = 3; i < n; i++) {
    if (tcodes[i] != kTVMDLTensorHandle || args[i].v_handle == NULL ||
        ((const DLTensor*)args[i].v_handle)->strides != NULL) {
      return Fail(kTvmErrorFunctionCallWrongArgType,
                  "benchfarm.CheckSetup: inputs, out and ref must be compact tensors");
    }
  }
  out = (const DLTensor*)args[n - 2].v_handle;
  ref = (const DLTensor*)args[n - 1].v_handle;
  if (!IsDataTensor(&args[n - 2], tcodes[n - 2]) || !SameLayout(out, ref)) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.CheckSetup: out and ref must have one shape and a supported dtype");
  }
  crt_board_data_clear();
  err = TVMPlatformMemoryAllocate(sizeof(Kept), kCpu, (void**)&g_kept);
  if (err != 0) {
    g_kept = NULL;
    return Fail(err, "benchfarm.CheckSetup: out of memory");
  }
  memset(g_kept, 0, sizeof(*g_kept));
  g_kept->count = n - 4;
  for (i = 0; i < g_kept->count; i++) {
    Keep(&g_kept->tensors[i], g_kept->shapes[i], (const DLTensor*)args[i + 3].v_handle);
  }
  if (guard != NULL) {
    g_kept->guard = (uint8_t*)Data(guard);
    g_kept->guard_bytes = (size_t)guard->shape[0];
    (void)bf_data_poison(g_kept->guard_pattern, g_kept->guard_bytes, guard->dtype, 0x6775u);
    memcpy(g_kept->guard, g_kept->guard_pattern, g_kept->guard_bytes);
  }
  Keep(&g_kept->ref, g_kept->ref_shape, ref);
  g_kept->atol = args[0].v_float64;
  g_kept->rtol = args[1].v_float64;
  (void)bf_data_poison(Data(out), Elements(out), out->dtype, 0u);
  ret->v_int64 = 0;
  *ret_tcode = kTVMNullptr;
  return 0;
}

static int CheckCall(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                     void* resource) {
  TVMValue values[TVM_CRT_MAX_ARGS];
  int codes[TVM_CRT_MAX_ARGS];
  TVMValue fn_ret;
  int fn_tcode = kTVMNullptr;
  const DLTensor* out;
  bf_data_report_t report;
  TVMByteArray* result = NULL;
  uint8_t* bytes = NULL;
  crt_wire_writer_t w;
  int i, err;
  (void)resource;
  if (n != 1 || tcodes[0] != kTVMPackedFuncHandle) {
    return Fail(kTvmErrorFunctionCallWrongArgType, "benchfarm.CheckCall: expects (function)");
  }
  if (g_kept == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.CheckCall: no benchfarm.CheckSetup (or its tensors were freed)");
  }
  out = &g_kept->tensors[g_kept->count - 1];
  (void)bf_data_poison(Data(out), Elements(out), out->dtype, ++g_kept->calls);
  for (i = 0; i < g_kept->count; i++) {
    values[i].v_handle = &g_kept->tensors[i];
    codes[i] = kTVMDLTensorHandle;
  }
  err = TVMFuncCall(args[0].v_handle, values, codes, g_kept->count, &fn_ret, &fn_tcode);
  if (err != 0) return err; /* the kernel's error and message */
  if (fn_tcode == kTVMBytes) (void)TVMByteArrayFree((TVMByteArray*)fn_ret.v_handle);
  if (g_kept == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg, "benchfarm.CheckCall: the call freed its tensors");
  }
  if (g_kept->guard != NULL &&
      memcmp(g_kept->guard, g_kept->guard_pattern, g_kept->guard_bytes) != 0) {
    memcpy(g_kept->guard, g_kept->guard_pattern, g_kept->guard_bytes);
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.CheckCall: the candidate wrote past the end of its output (the bytes "
                "after it changed)");
  }
  (void)bf_data_compare(Data(out), Data(&g_kept->ref), Elements(out), out->dtype, g_kept->atol,
                        g_kept->rtol, &report);
  err = TVMPlatformMemoryAllocate(sizeof(TVMByteArray), kCpu, (void**)&result);
  if (err == 0) err = TVMPlatformMemoryAllocate(BF_DATA_REPORT_BYTES, kCpu, (void**)&bytes);
  if (err != 0) {
    if (result != NULL) (void)TVMPlatformMemoryFree(result, kCpu);
    return Fail(err, "benchfarm.CheckCall: out of memory for the report");
  }
  crt_wire_writer_init(&w, bytes, BF_DATA_REPORT_BYTES);
  crt_wire_write_u64(&w, report.mismatches);
  crt_wire_write_i64(&w, report.first_index);
  crt_wire_write_f64(&w, report.got);
  crt_wire_write_f64(&w, report.want);
  crt_wire_write_f64(&w, report.max_abs_error);
  result->data = (const char*)bytes;
  result->size = BF_DATA_REPORT_BYTES;
  ret->v_handle = result;
  *ret_tcode = kTVMBytes;
  return 0;
}

static int CheckClear(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                      void* resource) {
  (void)args;
  (void)tcodes;
  (void)resource;
  if (n != 0) return Fail(kTvmErrorFunctionCallNumArguments, "benchfarm.CheckClear: expects ()");
  crt_board_data_clear();
  ret->v_int64 = 0;
  *ret_tcode = kTVMNullptr;
  return 0;
}

tvm_crt_error_t crt_board_data_register(void) {
  int rc;
  crt_board_data_clear();
  rc = TVMCrtFuncRegisterGlobal("benchfarm.FillTensor", FillTensor, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.CheckSetup", CheckSetup, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.CheckCall", CheckCall, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.CheckClear", CheckClear, 1);
  return (tvm_crt_error_t)rc;
}
