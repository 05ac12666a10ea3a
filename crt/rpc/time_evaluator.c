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
  int64_t number;
  int64_t repeat;
  int64_t min_repeat_ms;
  int64_t limit_zero_time_iterations;
  int64_t cooldown_interval_ms;
  int64_t repeats_to_cooldown;
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
static int CallTarget(const Evaluator* ev, int64_t count, TVMValue* args, int* type_codes,
                      int num_args) {
  int64_t k;
  for (k = 0; k < count; k++) {
    TVMValue ret;
    int ret_tcode = kTVMNullptr;
    int err = TVMFuncCall(ev->target, args, type_codes, num_args, &ret, &ret_tcode);
    if (err != 0) {
      return err;
    }
    if (ret_tcode == kTVMBytes) {
      (void)TVMByteArrayFree((TVMByteArray*)ret.v_handle);
    }
  }
  return 0;
}

static int RunEvaluator(uint16_t index, TVMValue* args, int* type_codes, int num_args,
                        TVMValue* out_ret_value, int* out_ret_tcode) {
  Evaluator* ev = FindByIndex(index);
  TVMByteArray* result = NULL;
  uint8_t* data = NULL;
  crt_wire_writer_t out; /* the result: one LE double per repeat */
  int64_t number;
  int64_t i;
  int err;

  if (ev == NULL) {
    TVMAPISetLastError("time evaluator: handle is not live (retired or never created)");
    return kTvmErrorTimeEvaluatorBadHandle;
  }
  err = TVMPlatformMemoryAllocate(sizeof(TVMByteArray), kCpu, (void**)&result);
  if (err != 0) {
    TVMAPISetLastError("time evaluator: out of memory for the result");
    return err;
  }
  err = TVMPlatformMemoryAllocate((size_t)ev->repeat * 8u, kCpu, (void**)&data);
  if (err != 0) {
    (void)TVMPlatformMemoryFree(result, kCpu);
    TVMAPISetLastError("time evaluator: out of memory for the result");
    return err;
  }
  result->data = (const char*)data;
  result->size = (size_t)ev->repeat * 8u;
  crt_wire_writer_init(&out, data, result->size);

  err = CallTarget(ev, 1, args, type_codes, num_args); /* warm-up, untimed */
  number = ev->number;
  for (i = 0; err == 0 && i < ev->repeat; i++) {
    double elapsed = 0.0;
    int64_t zero_time_count = 0;
    do {
      if (elapsed > 0.0) {
        double grown = (double)ev->min_repeat_ms / 1000.0 / (elapsed / (double)number) + 1.0;
        double golden = (double)number * 1.618;
        double next = grown > golden ? grown : golden;
        number = next >= (double)CRT_TIME_EVALUATOR_MAX_NUMBER ? CRT_TIME_EVALUATOR_MAX_NUMBER
                                                               : (int64_t)next;
      }
      err = TVMPlatformBeforeMeasurement();
      if (err == 0) err = TVMPlatformTimerStart();
      if (err != 0) break;
      err = CallTarget(ev, number, args, type_codes, num_args);
      {
        int stop_err = TVMPlatformTimerStop(&elapsed);
        int after_err = TVMPlatformAfterMeasurement();
        if (err == 0) err = stop_err != 0 ? stop_err : after_err;
      }
      if (err != 0) break;
      if (elapsed == 0.0) {
        zero_time_count++;
      }
    } while (elapsed < (double)ev->min_repeat_ms / 1000.0 &&
             zero_time_count < ev->limit_zero_time_iterations &&
             number < CRT_TIME_EVALUATOR_MAX_NUMBER);
    if (err != 0) break;
    crt_wire_write_f64(&out, elapsed / (double)number);
    if (ev->cooldown_interval_ms > 0 && i % ev->repeats_to_cooldown == 0) {
      err = Cooldown(ev->cooldown_interval_ms);
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

static int CreateEvaluator(TVMValue* args, int* type_codes, int num_args, TVMValue* ret_value,
                           int* ret_tcode, void* resource_handle) {
  static const int kExpected[CRT_TIME_EVALUATOR_NUM_ARGS] = {
      kTVMModuleHandle, kTVMStr, kDLInt, kDLInt, kDLInt, kDLInt,
      kDLInt,           kDLInt,  kDLInt, kDLInt, kDLInt, kTVMStr};
  TVMFunctionHandle target = NULL;
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
  if (args[4].v_int64 < 1 || args[5].v_int64 < 1 ||
      args[5].v_int64 > CRT_TIME_EVALUATOR_MAX_REPEAT || args[6].v_int64 < 0 ||
      args[7].v_int64 < 0 || args[8].v_int64 < 0 || args[9].v_int64 < 0 ||
      args[4].v_int64 > CRT_TIME_EVALUATOR_MAX_NUMBER || args[6].v_int64 > 3600000 ||
      args[8].v_int64 > 3600000) {
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
  slot->number = args[4].v_int64;
  slot->repeat = args[5].v_int64;
  slot->min_repeat_ms = args[6].v_int64;
  slot->limit_zero_time_iterations = args[7].v_int64;
  slot->cooldown_interval_ms = args[8].v_int64;
  slot->repeats_to_cooldown = args[9].v_int64 == 0 ? 1 : args[9].v_int64;
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
