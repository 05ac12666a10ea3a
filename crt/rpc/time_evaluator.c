/*
 * time_evaluator.c: runtime.RPCTimeEvaluator (time_evaluator.h).
 *
 * Evaluators live in a small table; a handle carries a 15-bit index that
 * keeps counting up (1..0x7fff, then wraps), so a retired slot's old handle
 * never matches its new occupant.
 */
#include <crt_config.h>
#include <stddef.h>
#include <string.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/time_evaluator.h>
#include <tvm/runtime/crt/wire.h>

typedef struct {
  uint16_t index;   /* 0: free */
  uint32_t created; /* creation order, to retire the oldest */
  TVMFunctionHandle target;
  crt_time_options_t options;
} Evaluator;

static Evaluator g_evaluators[TVM_CRT_MAX_TIME_EVALUATORS];
static uint16_t g_last_index;
static uint32_t g_created;

static const DLDevice kCpu = {kDLCPU, 0};

static Evaluator* FindByIndex(uint16_t index) {
  int i;
  if (index == 0u) {
    return NULL;
  }
  for (i = 0; i < TVM_CRT_MAX_TIME_EVALUATORS; i++) {
    if (g_evaluators[i].index == index) {
      return &g_evaluators[i];
    }
  }
  return NULL;
}

static Evaluator* TakeSlot(void) {
  Evaluator* slot = &g_evaluators[0];
  int i;
  for (i = 0; i < TVM_CRT_MAX_TIME_EVALUATORS; i++) {
    if (g_evaluators[i].index == 0u) {
      return &g_evaluators[i];
    }
    /* The largest distance back from the newest is the oldest (wrap-safe). */
    if ((uint32_t)(g_created - g_evaluators[i].created) > (uint32_t)(g_created - slot->created)) {
      slot = &g_evaluators[i];
    }
  }
  return slot;
}

static uint16_t NextIndex(void) {
  do {
    g_last_index = (uint16_t)((g_last_index + 1u) & 0x7fffu);
  } while (g_last_index == 0u || FindByIndex(g_last_index) != NULL);
  return g_last_index;
}

/* Waits about ms milliseconds by polling the platform timer. */
static int Cooldown(int64_t ms) {
  double waited = 0.0;
  double target = (double)ms / 1000.0;
  while (waited < target) {
    double slice = 0.0;
    int err = TVMPlatformTimerStart();
    if (err != 0) {
      return err;
    }
    err = TVMPlatformTimerStop(&slice);
    if (err != 0) {
      return err;
    }
    /* A timer too coarse to see one poll still makes progress. */
    waited += slice > 0.0 ? slice : 1e-6;
  }
  return 0;
}

/* Calls the target count times; the first error stops it. */
static int CallTarget(TVMFunctionHandle target, int64_t count, TVMValue* args, int* type_codes,
                      int num_args) {
  int64_t k;
  for (k = 0; k < count; k++) {
    TVMValue ret;
    int ret_tcode = kTVMNullptr;
    int err = TVMFuncCall(target, args, type_codes, num_args, &ret, &ret_tcode);
    if (err != 0) {
      return err;
    }
    if (ret_tcode == kTVMBytes) {
      (void)TVMByteArrayFree((TVMByteArray*)ret.v_handle);
    }
  }
  return 0;
}

crt_time_options_t crt_time_options_read(const TVMValue* six) {
  crt_time_options_t o;
  o.number = six[0].v_int64;
  o.repeat = six[1].v_int64;
  o.min_repeat_ms = six[2].v_int64;
  o.limit_zero_time_iterations = six[3].v_int64;
  o.cooldown_interval_ms = six[4].v_int64;
  o.repeats_to_cooldown = six[5].v_int64;
  return o;
}

const char* crt_time_options_check(const crt_time_options_t* o) {
  if (o->number < 1 || o->number > CRT_TIME_EVALUATOR_MAX_NUMBER || o->repeat < 1 ||
      o->repeat > CRT_TIME_EVALUATOR_MAX_REPEAT || o->min_repeat_ms < 0 ||
      o->min_repeat_ms > 3600000 || o->limit_zero_time_iterations < 0 ||
      o->cooldown_interval_ms < 0 || o->cooldown_interval_ms > 3600000 ||
      o->repeats_to_cooldown < 0) {
    return "need number >= 1, 1 <= repeat <= 1024, times >= 0";
  }
  return NULL;
}

int crt_time_evaluator_run(TVMFunctionHandle target, const crt_time_options_t* o, TVMValue* args,
                           int* type_codes, int num_args, TVMValue* out_ret_value,
                           int* out_ret_tcode) {
  TVMByteArray* result = NULL;
  uint8_t* data = NULL;
  crt_wire_writer_t out; /* the result: one LE double per repeat */
  const int64_t every = o->repeats_to_cooldown == 0 ? 1 : o->repeats_to_cooldown;
  int64_t number;
  int64_t i;
  int err;

  err = TVMPlatformMemoryAllocate(sizeof(TVMByteArray), kCpu, (void**)&result);
  if (err != 0) {
    TVMAPISetLastError("time evaluator: out of memory for the result");
    return err;
  }
  err = TVMPlatformMemoryAllocate((size_t)o->repeat * 8u, kCpu, (void**)&data);
  if (err != 0) {
    (void)TVMPlatformMemoryFree(result, kCpu);
    TVMAPISetLastError("time evaluator: out of memory for the result");
    return err;
  }
  result->data = (const char*)data;
  result->size = (size_t)o->repeat * 8u;
  crt_wire_writer_init(&out, data, result->size);

  err = CallTarget(target, 1, args, type_codes, num_args); /* warm-up, untimed */
  number = o->number;
  for (i = 0; err == 0 && i < o->repeat; i++) {
    double elapsed = 0.0;
    int64_t zero_time_count = 0;
    do {
      if (elapsed > 0.0) {
        double grown = (double)o->min_repeat_ms / 1000.0 / (elapsed / (double)number) + 1.0;
        double golden = (double)number * 1.618;
        double next = grown > golden ? grown : golden;
        number = next >= (double)CRT_TIME_EVALUATOR_MAX_NUMBER ? CRT_TIME_EVALUATOR_MAX_NUMBER
                                                               : (int64_t)next;
      }
      err = TVMPlatformBeforeMeasurement();
      if (err == 0) err = TVMPlatformTimerStart();
      if (err != 0) break;
      err = CallTarget(target, number, args, type_codes, num_args);
      {
        int stop_err = TVMPlatformTimerStop(&elapsed);
        int after_err = TVMPlatformAfterMeasurement();
        if (err == 0) err = stop_err != 0 ? stop_err : after_err;
      }
      if (err != 0) break;
      if (elapsed == 0.0) {
        zero_time_count++;
      }
    } while (elapsed < (double)o->min_repeat_ms / 1000.0 &&
             zero_time_count < o->limit_zero_time_iterations &&
             number < CRT_TIME_EVALUATOR_MAX_NUMBER);
    if (err != 0) break;
    crt_wire_write_f64(&out, elapsed / (double)number);
    if (o->cooldown_interval_ms > 0 && i % every == 0) {
      err = Cooldown(o->cooldown_interval_ms);
    }
  }
  if (err != 0) {
    (void)TVMByteArrayFree(result);
    return err;
  }
  out_ret_value->v_handle = result;
  *out_ret_tcode = kTVMBytes;
  return 0;
}

static int RunEvaluator(uint16_t index, TVMValue* args, int* type_codes, int num_args,
                        TVMValue* out_ret_value, int* out_ret_tcode) {
  Evaluator* ev = FindByIndex(index);
  if (ev == NULL) {
    TVMAPISetLastError("time evaluator: handle is not live (retired or never created)");
    return kTvmErrorTimeEvaluatorBadHandle;
  }
  return crt_time_evaluator_run(ev->target, &ev->options, args, type_codes, num_args, out_ret_value,
                                out_ret_tcode);
}

static int CreateEvaluator(TVMValue* args, int* type_codes, int num_args, TVMValue* ret_value,
                           int* ret_tcode, void* resource_handle) {
  static const int kExpected[CRT_TIME_EVALUATOR_NUM_ARGS] = {
      kTVMModuleHandle, kTVMStr, kDLInt, kDLInt, kDLInt, kDLInt,
      kDLInt,           kDLInt,  kDLInt, kDLInt, kDLInt, kTVMStr};
  TVMFunctionHandle target = NULL;
  crt_time_options_t options;
  Evaluator* slot;
  int i;
  int err;
  (void)resource_handle;

  if (num_args < CRT_TIME_EVALUATOR_NUM_ARGS) {
    TVMAPISetLastError("runtime.RPCTimeEvaluator: expects 12 arguments");
    return kTvmErrorFunctionCallNumArguments;
  }
  for (i = 0; i < CRT_TIME_EVALUATOR_NUM_ARGS; i++) {
    if (type_codes[i] != kExpected[i]) {
      TVMAPISetLastError("runtime.RPCTimeEvaluator: expects (Module, Str, Int x 9, Str)");
      return kTvmErrorFunctionCallWrongArgType;
    }
  }
  options = crt_time_options_read(&args[4]);
  if (crt_time_options_check(&options) != NULL) {
    TVMAPISetLastError(
        "runtime.RPCTimeEvaluator: need number >= 1, 1 <= repeat <= 1024, times >= 0");
    return kTvmErrorFunctionCallInvalidArg;
  }
  err = TVMModGetFunction(args[0].v_handle, args[1].v_str, 0, &target);
  if (err != 0 || target == NULL) {
    TVMAPISetLastError("runtime.RPCTimeEvaluator: function not found in module");
    return kTvmErrorFunctionNameNotFound;
  }
  slot = TakeSlot();
  slot->index = NextIndex();
  slot->created = ++g_created;
  slot->target = target;
  slot->options = options;
  ret_value->v_handle = TVMCrtEncodeTimeEvaluatorHandle(slot->index);
  *ret_tcode = kTVMPackedFuncHandle;
  return 0;
}

tvm_crt_error_t crt_time_evaluator_register(void) {
  int err;
  crt_time_evaluator_free_all();
  err = TVMCrtFuncRegisterGlobal("runtime.RPCTimeEvaluator", CreateEvaluator, 1);
  if (err != 0) {
    return (tvm_crt_error_t)err;
  }
  TVMCrtSetTimeEvaluatorCall(RunEvaluator);
  return kTvmErrorNoError;
}

bool crt_time_evaluator_free(TVMFunctionHandle handle) {
  uintptr_t value = (uintptr_t)handle;
  Evaluator* ev;
  if (handle == NULL || handle != TVMCrtEncodeTimeEvaluatorHandle((uint16_t)(value & 0x7fffu))) {
    return false;
  }
  ev = FindByIndex((uint16_t)(value & 0x7fffu));
  if (ev == NULL) {
    return false;
  }
  memset(ev, 0, sizeof(*ev));
  return true;
}

void crt_time_evaluator_free_all(void) { memset(g_evaluators, 0, sizeof(g_evaluators)); }

int crt_time_evaluator_live_count(void) {
  int i;
  int n = 0;
  for (i = 0; i < TVM_CRT_MAX_TIME_EVALUATORS; i++) {
    n += g_evaluators[i].index != 0u;
  }
  return n;
}
