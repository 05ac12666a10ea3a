/*
 * board_data.c: benchfarm.PrepareArgs, CheckCall, TimeArgs, ReleaseArgs
 * (board_data.h).
 */
#include <benchfarm/data.h>
#include <crt_config.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/board_data.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/rpc_server.h>
#include <tvm/runtime/crt/time_evaluator.h>
#include <tvm/runtime/crt/wire.h>

static const DLDevice kCpu = {kDLCPU, 0};

/* The prepared set: its tensors (inputs, then out) and ref, in the RPC server's allocations. */
typedef struct {
  int count;   /* inputs + out */
  int has_ref; /* a reference ran: CheckCall compares with ref */
  DLTensor tensors[TVM_CRT_MAX_ARGS];
  int64_t shapes[TVM_CRT_MAX_ARGS][TVM_CRT_MAX_NDIM];
  DLTensor ref;
  int64_t ref_shape[TVM_CRT_MAX_NDIM];
  uint8_t guard_pattern[BF_GUARD_BYTES];
  double atol, rtol;
  uint64_t calls; /* the poison's salt */
} Set;

static Set* g_set; /* from the pool while there is one */

static int Fail(int code, const char* message) {
  TVMAPISetLastError(message);
  return code;
}

/* Appends text to buf[BF_MESSAGE_BYTES] at *pos, cut to fit. */
#define BF_MESSAGE_BYTES 200
static void Append(char* buf, size_t* pos, const char* text) {
  while (*text != '\0' && *pos + 1 < BF_MESSAGE_BYTES) buf[(*pos)++] = *text++;
  buf[*pos] = '\0';
}

/* Fails with "benchfarm.PrepareArgs: the reference NAME" followed by what. */
static int FailReference(int code, const char* name, const char* what) {
  char message[BF_MESSAGE_BYTES];
  size_t pos = 0;
  Append(message, &pos, "benchfarm.PrepareArgs: the reference ");
  Append(message, &pos, name);
  Append(message, &pos, what);
  return Fail(code, message);
}

static size_t Elements(const DLTensor* t) {
  size_t n = 1;
  int i;
  for (i = 0; i < t->ndim; i++) n *= (size_t)t->shape[i];
  return n;
}

static size_t Bytes(const DLTensor* t) { return Elements(t) * bf_data_element_bytes(t->dtype); }

static uint8_t* Data(const DLTensor* t) { return (uint8_t*)t->data; }

static uint8_t* Guard(const DLTensor* t) { return Data(t) + Bytes(t); }

void crt_board_data_clear(void) {
  Set* set = g_set;
  int i;
  if (set == NULL) return;
  g_set = NULL; /* first: releasing the memory calls crt_board_data_forget */
  for (i = 0; i < set->count; i++) crt_rpc_server_release(set->tensors[i].data);
  if (set->has_ref) crt_rpc_server_release(set->ref.data);
  (void)TVMPlatformMemoryFree(set, kCpu);
}

void crt_board_data_forget(const void* data, size_t nbytes) {
  const uint8_t* begin = (const uint8_t*)data;
  int i;
  if (g_set == NULL) return;
  for (i = 0; i <= g_set->count; i++) {
    const DLTensor* t = i < g_set->count ? &g_set->tensors[i] : &g_set->ref;
    const uint8_t* p = Data(t);
    if (p != NULL && p >= begin && p < begin + nbytes) {
      crt_board_data_clear();
      return;
    }
  }
}

/* A system-library function by name; NULL if there is none. */
static TVMFunctionHandle SystemFunction(const char* name) {
  TVMFunctionHandle lib_fn = NULL, fn = NULL;
  TVMValue lib;
  int lib_tcode = kTVMNullptr;
  if (TVMFuncGetGlobal("runtime.SystemLib", &lib_fn) != 0 || lib_fn == NULL) return NULL;
  if (TVMFuncCall(lib_fn, NULL, NULL, 0, &lib, &lib_tcode) != 0 || lib_tcode != kTVMModuleHandle) {
    return NULL;
  }
  if (TVMModGetFunction(lib.v_handle, name, 0, &fn) != 0) return NULL;
  return fn;
}

/* Reads argument i's layout and range from the spec into t (shape into shape); NULL or why not. */
static const char* ReadArg(crt_wire_reader_t* r, DLTensor* t, int64_t* shape, double* lo,
                           double* hi) {
  size_t elements = 1, bytes;
  int d;
  memset(t, 0, sizeof(*t));
  t->device = kCpu;
  t->dtype.code = crt_wire_read_u8(r);
  t->dtype.bits = crt_wire_read_u8(r);
  t->dtype.lanes = crt_wire_read_u16(r);
  t->ndim = crt_wire_read_u8(r);
  if (!crt_wire_reader_ok(r) || t->ndim > TVM_CRT_MAX_NDIM) {
    return "benchfarm.PrepareArgs: spec: an argument's dtype or ndim is cut short or too large";
  }
  if (bf_data_element_bytes(t->dtype) == 0u) {
    return "benchfarm.PrepareArgs: spec: a dtype benchfarm cannot fill or check";
  }
  for (d = 0; d < t->ndim; d++) {
    shape[d] = crt_wire_read_i64(r);
    if (!crt_wire_reader_ok(r) || shape[d] < 0 || (uint64_t)shape[d] > SIZE_MAX / 4u ||
        (shape[d] != 0 && elements > SIZE_MAX / 4u / (size_t)shape[d])) {
      return "benchfarm.PrepareArgs: spec: a shape is cut short, negative or too large";
    }
    elements *= (size_t)shape[d];
  }
  t->shape = shape;
  bytes = elements * bf_data_element_bytes(t->dtype);
  if (bytes / bf_data_element_bytes(t->dtype) != elements || bytes > SIZE_MAX / 4u) {
    return "benchfarm.PrepareArgs: spec: a tensor too large";
  }
  *lo = crt_wire_read_f64(r);
  *hi = crt_wire_read_f64(r);
  if (!crt_wire_reader_ok(r)) return "benchfarm.PrepareArgs: spec: a range is cut short";
  return NULL;
}

/* Allocates t's data (with a guard when guarded); 0 or an error with its message set. */
static int Allocate(DLTensor* t, int guarded, const uint8_t* pattern) {
  t->data = crt_rpc_server_allocate(Bytes(t) + (guarded ? BF_GUARD_BYTES : 0u), t->dtype);
  if (t->data == NULL) {
    return Fail(kTvmErrorPlatformNoMemory,
                "benchfarm.PrepareArgs: out of memory (or allocations) for the arguments");
  }
  if (guarded) memcpy(Guard(t), pattern, BF_GUARD_BYTES);
  return 0;
}

/* Reads the spec and makes the set (without the reference's run); 0 or an error. */
static int MakeSet(Set* set, const TVMByteArray* spec, uint64_t seed) {
  crt_wire_reader_t r;
  double lo[TVM_CRT_MAX_ARGS], hi[TVM_CRT_MAX_ARGS];
  const char* bad;
  int i, err;
  crt_wire_reader_init(&r, (const uint8_t*)spec->data, spec->size);
  set->count = crt_wire_read_u8(&r);
  if (!crt_wire_reader_ok(&r) || set->count < 2 || set->count > TVM_CRT_MAX_ARGS) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.PrepareArgs: spec: count must be 2..TVM_CRT_MAX_ARGS (inputs and out)");
  }
  for (i = 0; i < set->count; i++) {
    bad = ReadArg(&r, &set->tensors[i], set->shapes[i], &lo[i], &hi[i]);
    if (bad != NULL) return Fail(kTvmErrorFunctionCallInvalidArg, bad);
    if (i + 1 < set->count && bf_data_check_range(set->tensors[i].dtype, lo[i], hi[i]) != 0) {
      return Fail(kTvmErrorFunctionCallInvalidArg,
                  "benchfarm.PrepareArgs: spec: an input's [lo, hi] is not a range of its dtype");
    }
  }
  if (crt_wire_reader_remaining(&r) != 0u) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.PrepareArgs: spec: bytes after the last argument");
  }
  (void)bf_data_poison(set->guard_pattern, BF_GUARD_BYTES, (DLDataType){kDLUInt, 8, 1}, 0x6775u);
  for (i = 0; i < set->count; i++) {
    DLTensor* t = &set->tensors[i];
    const int out = i + 1 == set->count;
    err = Allocate(t, out, set->guard_pattern);
    if (err != 0) return err;
    if (out) {
      (void)bf_data_poison(Data(t), Elements(t), t->dtype, 0u);
    } else {
      (void)bf_data_fill(Data(t), Elements(t), t->dtype, seed, (uint64_t)i, lo[i], hi[i]);
    }
  }
  return 0;
}

/* Calls fn with (inputs..., out) or, with_ref, (inputs..., ref); its error, or 0. */
static int CallWithSet(TVMFunctionHandle fn, const Set* set, int with_ref) {
  TVMValue values[TVM_CRT_MAX_ARGS];
  int codes[TVM_CRT_MAX_ARGS];
  TVMValue fn_ret;
  int fn_tcode = kTVMNullptr;
  int i, err;
  for (i = 0; i < set->count; i++) {
    const int out = i + 1 == set->count;
    values[i].v_handle = out && with_ref ? (void*)&set->ref : (void*)&set->tensors[i];
    codes[i] = kTVMDLTensorHandle;
  }
  err = TVMFuncCall(fn, values, codes, set->count, &fn_ret, &fn_tcode);
  if (err == 0 && fn_tcode == kTVMBytes) (void)TVMByteArrayFree((TVMByteArray*)fn_ret.v_handle);
  return err;
}

/* A kTVMBytes result of n bytes to write into; NULL (message set) when out of memory. */
static uint8_t* NewBytes(size_t n, TVMValue* ret, int* ret_tcode) {
  TVMByteArray* result = NULL;
  uint8_t* bytes = NULL;
  int err = TVMPlatformMemoryAllocate(sizeof(TVMByteArray), kCpu, (void**)&result);
  if (err == 0) err = TVMPlatformMemoryAllocate(n == 0u ? 1u : n, kCpu, (void**)&bytes);
  if (err != 0) {
    if (result != NULL) (void)TVMPlatformMemoryFree(result, kCpu);
    TVMAPISetLastError("benchfarm: out of memory for the result");
    return NULL;
  }
  result->data = (const char*)bytes;
  result->size = n;
  ret->v_handle = result;
  *ret_tcode = kTVMBytes;
  return bytes;
}

static int PrepareArgs(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                       void* resource) {
  TVMFunctionHandle reference = NULL;
  crt_wire_writer_t w;
  uint8_t* bytes;
  Set* set = NULL;
  int i, err;
  (void)resource;
  if (n != 5) {
    return Fail(kTvmErrorFunctionCallNumArguments,
                "benchfarm.PrepareArgs: expects (seed, atol, rtol, reference, spec)");
  }
  if (tcodes[0] != kDLInt || tcodes[1] != kDLFloat || tcodes[2] != kDLFloat ||
      tcodes[3] != kTVMStr || tcodes[4] != kTVMBytes || args[4].v_handle == NULL) {
    return Fail(kTvmErrorFunctionCallWrongArgType,
                "benchfarm.PrepareArgs: expects (Int, Float, Float, Str, Bytes)");
  }
  if (!(args[1].v_float64 >= 0.0) || !(args[2].v_float64 >= 0.0)) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.PrepareArgs: atol and rtol must be >= 0");
  }
  if (args[3].v_str[0] != '\0') {
    reference = SystemFunction(args[3].v_str);
    if (reference == NULL) {
      return FailReference(kTvmErrorFunctionNameNotFound, args[3].v_str,
                           " is not in the system library");
    }
  }
  crt_board_data_clear();
  err = TVMPlatformMemoryAllocate(sizeof(Set), kCpu, (void**)&set);
  if (err != 0) return Fail(err, "benchfarm.PrepareArgs: out of memory");
  memset(set, 0, sizeof(*set));
  set->atol = args[1].v_float64;
  set->rtol = args[2].v_float64;
  g_set = set; /* from here on, crt_board_data_clear frees what is made */
  err = MakeSet(set, (const TVMByteArray*)args[4].v_handle, (uint64_t)args[0].v_int64);
  if (err == 0 && reference != NULL) {
    const DLTensor* out = &set->tensors[set->count - 1];
    memcpy(set->ref_shape, out->shape, (size_t)out->ndim * sizeof(int64_t));
    set->ref = *out;
    set->ref.shape = set->ref_shape;
    err = Allocate(&set->ref, 1, set->guard_pattern);
    if (err == 0) {
      set->has_ref = 1;
      (void)bf_data_poison(Data(&set->ref), Elements(&set->ref), set->ref.dtype, 0u);
      err = CallWithSet(reference, set, 1);
      if (err != 0) {
        char kernel[BF_MESSAGE_BYTES];
        size_t pos = 0;
        Append(kernel, &pos, ": ");
        Append(kernel, &pos, TVMGetLastError());
        err = FailReference(err, args[3].v_str, kernel);
      }
    }
    if (err == 0 && g_set != set) {
      err = FailReference(kTvmErrorFunctionCallInvalidArg, args[3].v_str, " freed the arguments");
    } else if (err == 0 && memcmp(Guard(&set->ref), set->guard_pattern, BF_GUARD_BYTES) != 0) {
      err = FailReference(kTvmErrorFunctionCallInvalidArg, args[3].v_str,
                          " wrote past the end of its output (the bytes after it changed)");
    }
  }
  bytes = err == 0 ? NewBytes((size_t)(set->count + set->has_ref) * 8u, ret, ret_tcode) : NULL;
  if (err == 0 && bytes == NULL) err = kTvmErrorPlatformNoMemory;
  if (err != 0) {
    crt_board_data_clear();
    return err;
  }
  crt_wire_writer_init(&w, bytes, (size_t)(set->count + set->has_ref) * 8u);
  for (i = 0; i < set->count; i++)
    crt_wire_write_u64(&w, (uint64_t)(uintptr_t)Data(&set->tensors[i]));
  if (set->has_ref) crt_wire_write_u64(&w, (uint64_t)(uintptr_t)Data(&set->ref));
  return 0;
}

static int CheckCall(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                     void* resource) {
  const DLTensor* out;
  bf_data_report_t report;
  uint8_t* bytes;
  crt_wire_writer_t w;
  int err;
  (void)resource;
  if (n != 1 || tcodes[0] != kTVMPackedFuncHandle) {
    return Fail(kTvmErrorFunctionCallWrongArgType, "benchfarm.CheckCall: expects (function)");
  }
  if (g_set == NULL || !g_set->has_ref) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.CheckCall: no benchfarm.PrepareArgs with a reference (or its tensors "
                "were freed)");
  }
  out = &g_set->tensors[g_set->count - 1];
  (void)bf_data_poison(Data(out), Elements(out), out->dtype, ++g_set->calls);
  err = CallWithSet(args[0].v_handle, g_set, 0);
  if (err != 0) return err; /* the kernel's error and message */
  if (g_set == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg, "benchfarm.CheckCall: the call freed its tensors");
  }
  if (memcmp(Guard(out), g_set->guard_pattern, BF_GUARD_BYTES) != 0) {
    memcpy(Guard(out), g_set->guard_pattern, BF_GUARD_BYTES);
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.CheckCall: the candidate wrote past the end of its output (the bytes "
                "after it changed)");
  }
  (void)bf_data_compare(Data(out), Data(&g_set->ref), Elements(out), out->dtype, g_set->atol,
                        g_set->rtol, &report);
  bytes = NewBytes(BF_DATA_REPORT_BYTES, ret, ret_tcode);
  if (bytes == NULL) return kTvmErrorPlatformNoMemory;
  crt_wire_writer_init(&w, bytes, BF_DATA_REPORT_BYTES);
  crt_wire_write_u64(&w, report.mismatches);
  crt_wire_write_i64(&w, report.first_index);
  crt_wire_write_f64(&w, report.got);
  crt_wire_write_f64(&w, report.want);
  crt_wire_write_f64(&w, report.max_abs_error);
  return 0;
}

static int TimeArgs(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                    void* resource) {
  TVMValue values[TVM_CRT_MAX_ARGS];
  int codes[TVM_CRT_MAX_ARGS];
  crt_time_options_t o;
  TVMFunctionHandle fn;
  int i;
  (void)resource;
  if (n != 7) {
    return Fail(kTvmErrorFunctionCallNumArguments,
                "benchfarm.TimeArgs: expects (name, number, repeat, min_repeat_ms, "
                "limit_zero_time_iterations, cooldown_interval_ms, repeats_to_cooldown)");
  }
  for (i = 1; i < n; i++) {
    if (tcodes[i] != kDLInt) break;
  }
  if (tcodes[0] != kTVMStr || i < n) {
    return Fail(kTvmErrorFunctionCallWrongArgType, "benchfarm.TimeArgs: expects (Str, Int x 6)");
  }
  o = crt_time_options_read(&args[1]);
  if (crt_time_options_check(&o) != NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.TimeArgs: need number >= 1, 1 <= repeat <= 1024, times >= 0");
  }
  fn = SystemFunction(args[0].v_str);
  if (fn == NULL) {
    return Fail(kTvmErrorFunctionNameNotFound,
                "benchfarm.TimeArgs: function not found in the system library");
  }
  if (g_set == NULL) {
    return Fail(kTvmErrorFunctionCallInvalidArg,
                "benchfarm.TimeArgs: no benchfarm.PrepareArgs (or its tensors were freed)");
  }
  for (i = 0; i < g_set->count; i++) {
    values[i].v_handle = &g_set->tensors[i];
    codes[i] = kTVMDLTensorHandle;
  }
  return crt_time_evaluator_run(fn, &o, values, codes, g_set->count, ret, ret_tcode);
}

static int ReleaseArgs(TVMValue* args, int* tcodes, int n, TVMValue* ret, int* ret_tcode,
                       void* resource) {
  (void)args;
  (void)tcodes;
  (void)resource;
  if (n != 0) return Fail(kTvmErrorFunctionCallNumArguments, "benchfarm.ReleaseArgs: expects ()");
  crt_board_data_clear();
  ret->v_int64 = 0;
  *ret_tcode = kTVMNullptr;
  return 0;
}

tvm_crt_error_t crt_board_data_register(void) {
  int rc;
  crt_board_data_clear();
  rc = TVMCrtFuncRegisterGlobal("benchfarm.PrepareArgs", PrepareArgs, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.CheckCall", CheckCall, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.TimeArgs", TimeArgs, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.ReleaseArgs", ReleaseArgs, 1);
  return (tvm_crt_error_t)rc;
}
