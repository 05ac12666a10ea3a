/*
 * rpc_server.c: the board's MinRPC server (rpc_server.h).
 *
 * Every Normal body is taken by the session's streaming body sink, so the
 * server sees a request as it arrives: it buffers the request in request[]
 * (up to TVM_CRT_MAX_PACKET_SIZE_BYTES) — except a CopyToRemote payload,
 * which goes straight into the destination tensor once the request header has
 * been checked. A request is acted on only when the session reports the
 * message complete with a good CRC (finish); a dropped message (discard) is
 * forgotten. Problems found while receiving are remembered in message[] and
 * answered with an Exception at finish, so the host always gets one reply per
 * request.
 */
#include <crt_config.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/random_fill.h>
#include <tvm/runtime/crt/rpc_server.h>
#include <tvm/runtime/crt/time_evaluator.h>

/* The request envelope: u64 packet_nbytes, i32 code. */
#define ENVELOPE_BYTES 12u
/* CopyToRemote's fixed header before the shape: envelope, u64 data, DLDevice, i32 ndim. */
#define COPY_FIXED_BYTES (ENVELOPE_BYTES + 8u + 8u + 4u)

typedef enum {
  kModeIdle = 0,     /* no message in progress */
  kModeBuffer = 1,   /* buffering a request into request[] */
  kModeCopy = 2,     /* CopyToRemote payload: writing into copy_dst */
  kModeReject = 3,   /* skipping the rest; message[] holds the Exception to send */
} Mode;

static crt_rpc_server_t* g_server;

static const DLDevice kCpu = {kDLCPU, 0};

/* ---- little-endian fields --------------------------------------------------------------------- */

static uint64_t LoadU64(const uint8_t* p) {
  uint64_t v = 0;
  int i;
  for (i = 7; i >= 0; i--) {
    v = (v << 8) | p[i];
  }
  return v;
}

static uint32_t LoadU32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static void StoreU64(uint8_t* p, uint64_t v) {
  int i;
  for (i = 0; i < 8; i++) {
    p[i] = (uint8_t)(v >> (8 * i));
  }
}

static void StoreU32(uint8_t* p, uint32_t v) {
  int i;
  for (i = 0; i < 4; i++) {
    p[i] = (uint8_t)(v >> (8 * i));
  }
}

/* ---- messages --------------------------------------------------------------------------------- */

static void AppendText(char* buf, size_t* pos, const char* text) {
  while (*text != '\0' && *pos + 1u < CRT_RPC_SERVER_MESSAGE_BYTES) {
    buf[(*pos)++] = *text++;
  }
  buf[*pos] = '\0';
}

static void AppendUnsigned(char* buf, size_t* pos, uint64_t v) {
  char digits[21];
  int n = 0;
  do {
    digits[n++] = (char)('0' + (int)(v % 10u));
    v /= 10u;
  } while (v != 0u);
  while (n > 0 && *pos + 1u < CRT_RPC_SERVER_MESSAGE_BYTES) {
    buf[(*pos)++] = digits[--n];
  }
  buf[*pos] = '\0';
}

/* message = text [+ value] [+ text2]; value printed in decimal when has_value. */
static void SetMessage(crt_rpc_server_t* s, const char* text, int has_value, uint64_t value,
                       const char* text2) {
  size_t pos = 0;
  s->message[0] = '\0';
  AppendText(s->message, &pos, text);
  if (has_value) AppendUnsigned(s->message, &pos, value);
  if (text2 != NULL) AppendText(s->message, &pos, text2);
}

/* ---- replies ---------------------------------------------------------------------------------- */

/* Opens a Normal message for a reply of `nbytes` after the u64 length, and writes that length. */
static tvm_crt_error_t BeginReply(crt_rpc_server_t* s, uint64_t nbytes) {
  uint8_t head[8];
  tvm_crt_error_t err = crt_session_start_message(&s->session, kCrtSessionNormal, 8u + nbytes);
  if (err != kTvmErrorNoError) return err;
  StoreU64(head, nbytes);
  return crt_session_send_body_chunk(&s->session, head, 8);
}

static tvm_crt_error_t Put(crt_rpc_server_t* s, const void* data, size_t n) {
  return n == 0u ? kTvmErrorNoError : crt_session_send_body_chunk(&s->session, data, n);
}

static tvm_crt_error_t PutU32(crt_rpc_server_t* s, uint32_t v) {
  uint8_t b[4];
  StoreU32(b, v);
  return Put(s, b, 4);
}

static tvm_crt_error_t PutU64(crt_rpc_server_t* s, uint64_t v) {
  uint8_t b[8];
  StoreU64(b, v);
  return Put(s, b, 8);
}

static tvm_crt_error_t SendException(crt_rpc_server_t* s, const char* msg) {
  size_t len = strlen(msg);
  tvm_crt_error_t err;
  s->counters.exceptions++;
  /* i32 kException, i32 1, i32 kTVMStr, u64 len, bytes */
  err = BeginReply(s, 4u + 4u + 4u + 8u + len);
  if (err == kTvmErrorNoError) err = PutU32(s, kCrtRpcException);
  if (err == kTvmErrorNoError) err = PutU32(s, 1u);
  if (err == kTvmErrorNoError) err = PutU32(s, kTVMStr);
  if (err == kTvmErrorNoError) err = PutU64(s, len);
  if (err == kTvmErrorNoError) err = Put(s, msg, len);
  if (err == kTvmErrorNoError) err = crt_session_finish_message(&s->session);
  return err;
}

/* Exception "<what> failed (0x<code>): <TVMGetLastError()>". */
static tvm_crt_error_t SendCallError(crt_rpc_server_t* s, const char* what, int code) {
  static const char kHex[] = "0123456789abcdef";
  char code_text[12];
  size_t pos = 0;
  int i;
  uint32_t v = (uint32_t)code;
  for (i = 0; i < 8; i++) code_text[i] = kHex[(v >> (28 - 4 * i)) & 0xfu];
  code_text[8] = '\0';
  s->message[0] = '\0';
  AppendText(s->message, &pos, what);
  AppendText(s->message, &pos, " failed (0x");
  AppendText(s->message, &pos, code_text);
  AppendText(s->message, &pos, "): ");
  AppendText(s->message, &pos, TVMGetLastError());
  return SendException(s, s->message);
}

static tvm_crt_error_t SendReturnVoid(crt_rpc_server_t* s) {
  tvm_crt_error_t err = BeginReply(s, 12u);
  if (err == kTvmErrorNoError) err = PutU32(s, kCrtRpcReturn);
  if (err == kTvmErrorNoError) err = PutU32(s, 1u);
  if (err == kTvmErrorNoError) err = PutU32(s, kTVMNullptr);
  if (err == kTvmErrorNoError) err = crt_session_finish_message(&s->session);
  return err;
}

static tvm_crt_error_t SendReturnHandle(crt_rpc_server_t* s, uint64_t handle) {
  tvm_crt_error_t err = BeginReply(s, 20u);
  if (err == kTvmErrorNoError) err = PutU32(s, kCrtRpcReturn);
  if (err == kTvmErrorNoError) err = PutU32(s, 1u);
  if (err == kTvmErrorNoError) err = PutU32(s, kTVMOpaqueHandle);
  if (err == kTvmErrorNoError) err = PutU64(s, handle);
  if (err == kTvmErrorNoError) err = crt_session_finish_message(&s->session);
  return err;
}

/*
 * CallFunc's reply: [kDLInt original type code][value] (reference 3.6).
 * Frees a kTVMBytes result. Unsupported result types become an Exception.
 */
static tvm_crt_error_t SendCallResult(crt_rpc_server_t* s, TVMValue value, int tcode) {
  uint32_t value_tcode;
  uint64_t value_bytes;
  const uint8_t* payload = NULL;
  uint64_t payload_len = 0;
  uint8_t fixed[8];
  tvm_crt_error_t err;
  TVMByteArray* bytes = NULL;

  memset(fixed, 0, sizeof(fixed));
  switch (tcode) {
    case kTVMNullptr:
      value_tcode = kTVMNullptr;
      value_bytes = 0;
      break;
    case kDLInt:
    case kDLUInt:
    case kTVMArgBool:
      value_tcode = (uint32_t)tcode;
      value_bytes = 8;
      StoreU64(fixed, (uint64_t)value.v_int64);
      break;
    case kDLFloat: {
      uint64_t bits;
      memcpy(&bits, &value.v_float64, sizeof(bits));
      value_tcode = kDLFloat;
      value_bytes = 8;
      StoreU64(fixed, bits);
      break;
    }
    case kTVMDataType:
      value_tcode = kTVMDataType;
      value_bytes = 8;
      fixed[0] = value.v_type.code;
      fixed[1] = value.v_type.bits;
      fixed[2] = (uint8_t)(value.v_type.lanes & 0xffu);
      fixed[3] = (uint8_t)(value.v_type.lanes >> 8);
      break;
    case kDLDevice:
      value_tcode = kDLDevice;
      value_bytes = 8;
      StoreU32(fixed, (uint32_t)value.v_device.device_type);
      StoreU32(fixed + 4, (uint32_t)value.v_device.device_id);
      break;
    case kTVMOpaqueHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMObjectHandle:
      value_tcode = kTVMOpaqueHandle;
      value_bytes = 8;
      StoreU64(fixed, (uint64_t)(uintptr_t)value.v_handle);
      break;
    case kTVMStr:
      value_tcode = kTVMStr;
      payload = (const uint8_t*)(value.v_str == NULL ? "" : value.v_str);
      payload_len = strlen((const char*)payload);
      value_bytes = 8u + payload_len;
      StoreU64(fixed, payload_len);
      break;
    case kTVMBytes:
      bytes = (TVMByteArray*)value.v_handle;
      value_tcode = kTVMBytes;
      payload = bytes == NULL ? NULL : (const uint8_t*)bytes->data;
      payload_len = bytes == NULL ? 0u : bytes->size;
      value_bytes = 8u + payload_len;
      StoreU64(fixed, payload_len);
      break;
    default:
      SetMessage(s, "CallFunc: the function returned type code ", 1, (uint64_t)tcode,
                 ", which cannot be sent");
      return SendException(s, s->message);
  }
  /* i32 kReturn, i32 2, i32 kDLInt, i32 value_tcode, i64 tcode, value */
  err = BeginReply(s, 4u + 4u + 8u + 8u + value_bytes);
  if (err == kTvmErrorNoError) err = PutU32(s, kCrtRpcReturn);
  if (err == kTvmErrorNoError) err = PutU32(s, 2u);
  if (err == kTvmErrorNoError) err = PutU32(s, kDLInt);
  if (err == kTvmErrorNoError) err = PutU32(s, value_tcode);
  if (err == kTvmErrorNoError) err = PutU64(s, (uint64_t)(int64_t)tcode);
  if (err == kTvmErrorNoError && value_bytes != 0u) err = Put(s, fixed, 8);
  if (err == kTvmErrorNoError && payload_len != 0u) err = Put(s, payload, (size_t)payload_len);
  if (err == kTvmErrorNoError) err = crt_session_finish_message(&s->session);
  if (bytes != NULL) (void)TVMByteArrayFree(bytes);
  return err;
}

/* ---- allocations ------------------------------------------------------------------------------ */

static crt_rpc_allocation_t* FindAllocation(crt_rpc_server_t* s, const uint8_t* data) {
  size_t i;
  for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS; i++) {
    if (s->allocations[i].data != NULL && s->allocations[i].data == data) {
      return &s->allocations[i];
    }
  }
  return NULL;
}

/*
 * True when [data + offset, + nbytes) lies inside one live allocation that
 * starts at data. Offsets and sizes are checked without overflow.
 */
static int RangeIsOwned(crt_rpc_server_t* s, uint64_t data, uint64_t offset, uint64_t nbytes) {
  const crt_rpc_allocation_t* a;
  if (data == 0u || data > (uint64_t)UINTPTR_MAX) return 0;
  a = FindAllocation(s, (const uint8_t*)(uintptr_t)data);
  return a != NULL && offset <= a->nbytes && nbytes <= a->nbytes - offset;
}

static void FreeAllAllocations(crt_rpc_server_t* s) {
  size_t i;
  for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS; i++) {
    if (s->allocations[i].data != NULL) {
      (void)TVMDeviceFreeDataSpace(kCpu, s->allocations[i].data);
      s->allocations[i].data = NULL;
      s->allocations[i].nbytes = 0;
    }
  }
}

/* ---- request parsing -------------------------------------------------------------------------- */

typedef struct {
  uint8_t* p; /* writable: strings are NUL-terminated in place */
  size_t len;
  size_t pos;
} Reader;

static int Need(const Reader* r, size_t n) { return r->len - r->pos >= n; }

/* Bytes of one element of dtype, or 0 if bits or lanes is 0. */
static uint64_t ElementBytes(DLDataType t) { return ((uint64_t)t.bits * t.lanes + 7u) / 8u; }

/* *out = prod(shape) * element bytes; 0 on success, -1 on overflow or a negative extent. */
static int TensorBytes(const DLTensor* t, uint64_t* out) {
  uint64_t n = ElementBytes(t->dtype);
  int i;
  for (i = 0; i < t->ndim; i++) {
    uint64_t extent;
    if (t->shape[i] < 0) return -1;
    extent = (uint64_t)t->shape[i];
    if (extent != 0u && n > UINT64_MAX / extent) return -1;
    n *= extent;
  }
  *out = n;
  return 0;
}

/*
 * Reads DLTensor fields (reference 3.4, no strides) into tensor/shape. The
 * data pointer is kept as a number in *data_out and not yet trusted.
 * Returns 0, or -1 with message[] set.
 */
static int ReadTensor(crt_rpc_server_t* s, Reader* r, DLTensor* t, int64_t* shape,
                      uint64_t* data_out) {
  uint32_t ndim;
  uint32_t i;
  if (!Need(r, 8u + 8u + 4u + 4u)) {
    SetMessage(s, "truncated DLTensor", 0, 0, NULL);
    return -1;
  }
  *data_out = LoadU64(r->p + r->pos);
  t->device.device_type = (DLDeviceType)(int32_t)LoadU32(r->p + r->pos + 8);
  t->device.device_id = (int32_t)LoadU32(r->p + r->pos + 12);
  ndim = LoadU32(r->p + r->pos + 16);
  t->dtype.code = r->p[r->pos + 20];
  t->dtype.bits = r->p[r->pos + 21];
  t->dtype.lanes = (uint16_t)(r->p[r->pos + 22] | (r->p[r->pos + 23] << 8));
  r->pos += 24;
  if (ndim > TVM_CRT_MAX_NDIM) {
    SetMessage(s, "DLTensor ndim ", 1, ndim, " exceeds TVM_CRT_MAX_NDIM");
    return -1;
  }
  if (!Need(r, 8u * ndim + 8u)) {
    SetMessage(s, "truncated DLTensor shape", 0, 0, NULL);
    return -1;
  }
  for (i = 0; i < ndim; i++) {
    shape[i] = (int64_t)LoadU64(r->p + r->pos);
    r->pos += 8;
  }
  t->byte_offset = LoadU64(r->p + r->pos);
  r->pos += 8;
  t->ndim = (int32_t)ndim;
  t->shape = shape;
  t->strides = NULL;
  t->data = NULL;
  return 0;
}

/*
 * A tensor argument is usable when it is a CPU tensor whose whole extent lies
 * in memory this server allocated. Returns 0, or -1 with message[] set.
 */
static int CheckTensor(crt_rpc_server_t* s, DLTensor* t, uint64_t data) {
  uint64_t nbytes;
  if (t->device.device_type != kDLCPU) {
    SetMessage(s, "DLTensor device type ", 1, (uint64_t)(uint32_t)t->device.device_type,
               " is not CPU (1)");
    return -1;
  }
  if (t->dtype.bits == 0u || t->dtype.lanes == 0u || TensorBytes(t, &nbytes) != 0) {
    SetMessage(s, "DLTensor has a bad dtype or shape", 0, 0, NULL);
    return -1;
  }
  if (!RangeIsOwned(s, data, t->byte_offset, nbytes)) {
    SetMessage(s, "DLTensor data is not inside memory allocated by this server", 0, 0, NULL);
    return -1;
  }
  t->data = (void*)(uintptr_t)data;
  return 0;
}

/*
 * Reads a packed sequence (reference 3.4) into s->values/type_codes; the
 * packet must end exactly after it. Returns the argument count, or -1 with
 * message[] set.
 */
static int ReadArgs(crt_rpc_server_t* s, Reader* r) {
  uint32_t num;
  uint32_t i;
  if (!Need(r, 4)) {
    SetMessage(s, "truncated argument count", 0, 0, NULL);
    return -1;
  }
  num = LoadU32(r->p + r->pos);
  r->pos += 4;
  if (num > TVM_CRT_MAX_ARGS) {
    SetMessage(s, "too many arguments: ", 1, num, NULL);
    return -1;
  }
  if (!Need(r, 4u * num)) {
    SetMessage(s, "truncated type codes", 0, 0, NULL);
    return -1;
  }
  for (i = 0; i < num; i++) {
    s->type_codes[i] = (int)(int32_t)LoadU32(r->p + r->pos);
    r->pos += 4;
  }
  for (i = 0; i < num; i++) {
    TVMValue* v = &s->values[i];
    int tcode = s->type_codes[i];
    switch (tcode) {
      case kDLInt:
      case kDLUInt:
      case kDLFloat:
      case kTVMArgBool:
      case kTVMOpaqueHandle:
      case kTVMModuleHandle:
      case kTVMPackedFuncHandle:
      case kTVMDataType:
      case kDLDevice: {
        uint64_t raw;
        if (!Need(r, 8)) {
          SetMessage(s, "truncated value of argument ", 1, i, NULL);
          return -1;
        }
        raw = LoadU64(r->p + r->pos);
        r->pos += 8;
        if (tcode == kDLFloat) {
          memcpy(&v->v_float64, &raw, sizeof(raw));
        } else if (tcode == kTVMDataType) {
          v->v_type.code = (uint8_t)raw;
          v->v_type.bits = (uint8_t)(raw >> 8);
          v->v_type.lanes = (uint16_t)(raw >> 16);
        } else if (tcode == kDLDevice) {
          v->v_device.device_type = (DLDeviceType)(int32_t)(uint32_t)raw;
          v->v_device.device_id = (int32_t)(uint32_t)(raw >> 32);
        } else if (tcode == kTVMOpaqueHandle || tcode == kTVMModuleHandle ||
                   tcode == kTVMPackedFuncHandle) {
          if (raw > (uint64_t)UINTPTR_MAX) {
            SetMessage(s, "handle does not fit a pointer in argument ", 1, i, NULL);
            return -1;
          }
          v->v_handle = (void*)(uintptr_t)raw;
        } else {
          v->v_int64 = (int64_t)raw;
        }
        break;
      }
      case kTVMNullptr:
        v->v_handle = NULL;
        break;
      case kTVMStr:
      case kTVMBytes: {
        uint64_t len;
        size_t start;
        if (!Need(r, 8)) {
          SetMessage(s, "truncated length of argument ", 1, i, NULL);
          return -1;
        }
        len = LoadU64(r->p + r->pos);
        r->pos += 8;
        if (len > (uint64_t)(r->len - r->pos)) {
          SetMessage(s, "string or bytes run past the packet in argument ", 1, i, NULL);
          return -1;
        }
        start = r->pos;
        r->pos += (size_t)len;
        if (tcode == kTVMStr) {
          /* Move the text over its 8-byte length field and terminate it there: the NUL
           * lands before the next field, which was already read past. */
          char* text = (char*)(r->p + start - 8u);
          memmove(text, r->p + start, (size_t)len);
          text[len] = '\0';
          if (strlen(text) != (size_t)len) {
            SetMessage(s, "string argument ", 1, i, " contains a NUL byte");
            return -1;
          }
          v->v_str = text;
        } else {
          s->byte_args[i].data = (const char*)(r->p + start);
          s->byte_args[i].size = (size_t)len;
          v->v_handle = &s->byte_args[i];
        }
        break;
      }
      case kTVMDLTensorHandle: {
        uint64_t data;
        if (ReadTensor(s, r, &s->tensors[i], s->shapes[i], &data) != 0 ||
            CheckTensor(s, &s->tensors[i], data) != 0) {
          return -1;
        }
        v->v_handle = &s->tensors[i];
        break;
      }
      case kTVMObjectHandle: {
        uint32_t type_index;
        if (!Need(r, 12)) {
          SetMessage(s, "truncated object handle in argument ", 1, i, NULL);
          return -1;
        }
        type_index = LoadU32(r->p + r->pos);
        if (type_index != 9u || LoadU64(r->p + r->pos + 4) > (uint64_t)UINTPTR_MAX) {
          SetMessage(s, "unsupported object handle in argument ", 1, i, NULL);
          return -1;
        }
        v->v_handle = (void*)(uintptr_t)LoadU64(r->p + r->pos + 4);
        r->pos += 12;
        break;
      }
      default:
        SetMessage(s, "unknown argument type code ", 1, (uint64_t)(uint32_t)tcode, NULL);
        return -1;
    }
  }
  if (r->pos != r->len) {
    SetMessage(s, "packet has ", 1, r->len - r->pos, " bytes after its arguments");
    return -1;
  }
  return (int)num;
}

/* True when the argument types are exactly `expected` (count n). */
static int ArgsAre(const crt_rpc_server_t* s, int num, const int* expected, int n) {
  int i;
  if (num != n) return 0;
  for (i = 0; i < n; i++) {
    if (s->type_codes[i] != expected[i]) return 0;
  }
  return 1;
}

/* ---- request handlers ------------------------------------------------------------------------- */

static tvm_crt_error_t HandleCallFunc(crt_rpc_server_t* s, Reader* r) {
  uint64_t handle;
  int num;
  TVMValue ret;
  int ret_tcode = kTVMNullptr;
  int err;
  if (!Need(r, 8)) return SendException(s, "CallFunc: truncated function handle");
  handle = LoadU64(r->p + r->pos);
  r->pos += 8;
  num = ReadArgs(s, r);
  if (num < 0) return SendException(s, s->message);
  if (handle > (uint64_t)UINTPTR_MAX) return SendException(s, "CallFunc: invalid function handle");
  ret.v_handle = NULL;
  err = TVMFuncCall((TVMFunctionHandle)(uintptr_t)handle, s->values, s->type_codes, num, &ret,
                    &ret_tcode);
  if (err != 0) return SendCallError(s, "CallFunc", err);
  return SendCallResult(s, ret, ret_tcode);
}

static tvm_crt_error_t HandleCopyFromRemote(crt_rpc_server_t* s, Reader* r) {
  DLTensor t;
  int64_t shape[TVM_CRT_MAX_NDIM];
  uint64_t data;
  uint64_t nbytes;
  tvm_crt_error_t err;
  if (ReadTensor(s, r, &t, shape, &data) != 0) return SendException(s, s->message);
  if (!Need(r, 8)) return SendException(s, "CopyFromRemote: truncated nbytes");
  nbytes = LoadU64(r->p + r->pos);
  r->pos += 8;
  if (r->pos != r->len) return SendException(s, "CopyFromRemote: packet longer than its fields");
  if (!RangeIsOwned(s, data, t.byte_offset, nbytes)) {
    return SendException(s,
                         "CopyFromRemote: source is not inside memory allocated by this server");
  }
  /* u64 4 + n, i32 kCopyAck, n raw bytes */
  err = BeginReply(s, 4u + nbytes);
  if (err == kTvmErrorNoError) err = PutU32(s, kCrtRpcCopyAck);
  if (err == kTvmErrorNoError) {
    err = Put(s, (const uint8_t*)(uintptr_t)data + (size_t)t.byte_offset, (size_t)nbytes);
  }
  if (err == kTvmErrorNoError) err = crt_session_finish_message(&s->session);
  return err;
}

static tvm_crt_error_t AllocForHost(crt_rpc_server_t* s, uint64_t nbytes, uint64_t alignment,
                                    DLDataType hint) {
  crt_rpc_allocation_t* slot = NULL;
  void* data = NULL;
  size_t i;
  int err;
  for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS && slot == NULL; i++) {
    if (s->allocations[i].data == NULL) slot = &s->allocations[i];
  }
  if (slot == NULL) {
    return SendException(s, "DevAllocData: TVM_CRT_MAX_RPC_ALLOCATIONS tensors already live");
  }
  if (nbytes > (uint64_t)SIZE_MAX / 2u || alignment > 4096u) {
    return SendException(s, "DevAllocData: size or alignment out of range");
  }
  /* At least one byte, so every allocation has a distinct non-NULL address. */
  err = TVMDeviceAllocDataSpace(kCpu, nbytes == 0u ? 1u : (size_t)nbytes, (size_t)alignment, hint,
                                &data);
  if (err != 0 || data == NULL) {
    SetMessage(s, "DevAllocData: out of memory for ", 1, nbytes, " bytes");
    return SendException(s, s->message);
  }
  slot->data = (uint8_t*)data;
  slot->nbytes = (size_t)nbytes;
  return SendReturnHandle(s, (uint64_t)(uintptr_t)data);
}

static tvm_crt_error_t HandleSyscall(crt_rpc_server_t* s, int32_t code, Reader* r) {
  static const int kStr[] = {kTVMStr};
  static const int kFree[] = {kTVMOpaqueHandle, kDLInt};
  static const int kAlloc[] = {kDLDevice, kDLInt, kDLInt, kTVMDataType};
  static const int kDevHandle[] = {kDLDevice, kTVMOpaqueHandle};
  static const int kAmong[] = {kTVMDLTensorHandle, kTVMDLTensorHandle, kTVMOpaqueHandle};
  static const int kScopeNull[] = {kTVMDLTensorHandle, kTVMNullptr};
  static const int kScopeStr[] = {kTVMDLTensorHandle, kTVMStr};
  static const int kDev[] = {kDLDevice};
  int num;
  int err;

  if (code == kCrtRpcDevAllocDataWithScope) {
    /* The template's data pointer is meaningless (the host has none yet): read the
     * tensor by hand rather than through ReadArgs, which checks ownership. */
    DLTensor t;
    int64_t shape[TVM_CRT_MAX_NDIM];
    uint64_t data;
    uint64_t nbytes;
    uint64_t alignment;
    uint32_t tcode1;
    if (!Need(r, 12) || LoadU32(r->p + r->pos) != 2u ||
        LoadU32(r->p + r->pos + 4) != kTVMDLTensorHandle) {
      return SendException(s, "DevAllocDataWithScope: expects (DLTensor, Nullptr or Str)");
    }
    tcode1 = LoadU32(r->p + r->pos + 8);
    r->pos += 12;
    if (ReadTensor(s, r, &t, shape, &data) != 0) return SendException(s, s->message);
    if (tcode1 == kTVMStr) {
      uint64_t len;
      if (!Need(r, 8)) return SendException(s, "DevAllocDataWithScope: truncated scope");
      len = LoadU64(r->p + r->pos);
      r->pos += 8;
      if (len != (uint64_t)(r->len - r->pos)) {
        return SendException(s, "DevAllocDataWithScope: bad scope length");
      }
      r->pos = r->len;
    } else if (tcode1 != kTVMNullptr) {
      return SendException(s, "DevAllocDataWithScope: expects (DLTensor, Nullptr or Str)");
    }
    if (r->pos != r->len) return SendException(s, "DevAllocDataWithScope: trailing bytes");
    if (t.dtype.bits == 0u || t.dtype.lanes == 0u || TensorBytes(&t, &nbytes) != 0) {
      return SendException(s, "DevAllocDataWithScope: bad dtype or shape");
    }
    alignment = (uint64_t)(t.dtype.bits / 8u) * t.dtype.lanes;
    if (alignment < 64u) alignment = 64u;
    if ((alignment & (alignment - 1u)) != 0u) alignment = 64u;
    return AllocForHost(s, nbytes, alignment, t.dtype);
  }

  num = ReadArgs(s, r);
  if (num < 0) return SendException(s, s->message);
  switch (code) {
    case kCrtRpcGetGlobalFunc: {
      TVMFunctionHandle f = NULL;
      if (!ArgsAre(s, num, kStr, 1)) return SendException(s, "GetGlobalFunc: expects (Str)");
      err = TVMFuncGetGlobal(s->values[0].v_str, &f);
      if (err != 0) return SendCallError(s, "GetGlobalFunc", err);
      return SendReturnHandle(s, (uint64_t)(uintptr_t)f);
    }
    case kCrtRpcFreeHandle: {
      int64_t tcode;
      if (!ArgsAre(s, num, kFree, 2)) return SendException(s, "FreeHandle: expects (handle, Int)");
      tcode = s->values[1].v_int64;
      if (tcode == kTVMPackedFuncHandle) {
        (void)crt_time_evaluator_free((TVMFunctionHandle)s->values[0].v_handle);
      } else if (tcode == kTVMModuleHandle) {
        err = TVMModFree((TVMModuleHandle)s->values[0].v_handle);
        if (err != 0) return SendCallError(s, "FreeHandle", err);
      } else if (tcode != kTVMObjectHandle) {
        SetMessage(s, "FreeHandle: cannot free handles of type code ", 1, (uint64_t)tcode, NULL);
        return SendException(s, s->message);
      }
      return SendReturnVoid(s);
    }
    case kCrtRpcDevSetDevice:
      return SendException(s, "SetDevice not supported");
    case kCrtRpcDevGetAttr:
      return SendException(s, "GetAttr not supported");
    case kCrtRpcDevAllocData:
      if (!ArgsAre(s, num, kAlloc, 4)) {
        return SendException(s, "DevAllocData: expects (Device, Int nbytes, Int alignment, DataType)");
      }
      if (s->values[0].v_device.device_type != kDLCPU) {
        return SendException(s, "DevAllocData: only CPU (device type 1) memory");
      }
      if (s->values[1].v_int64 < 0 || s->values[2].v_int64 < 0) {
        return SendException(s, "DevAllocData: negative size or alignment");
      }
      return AllocForHost(s, (uint64_t)s->values[1].v_int64, (uint64_t)s->values[2].v_int64,
                          s->values[3].v_type);
    case kCrtRpcDevFreeData: {
      crt_rpc_allocation_t* a;
      if (!ArgsAre(s, num, kDevHandle, 2)) return SendException(s, "DevFreeData: expects (Device, handle)");
      a = FindAllocation(s, (const uint8_t*)s->values[1].v_handle);
      if (a == NULL || s->values[1].v_handle == NULL) {
        return SendException(s, "DevFreeData: not memory allocated by this server (or freed)");
      }
      (void)TVMDeviceFreeDataSpace(kCpu, a->data);
      a->data = NULL;
      a->nbytes = 0;
      return SendReturnVoid(s);
    }
    case kCrtRpcDevStreamSync:
    case kCrtRpcDevFreeStream:
    case kCrtRpcDevSetStream:
      if (!ArgsAre(s, num, kDevHandle, 2)) return SendException(s, "stream call: expects (Device, handle)");
      return SendReturnVoid(s);
    case kCrtRpcDevCreateStream:
      if (!ArgsAre(s, num, kDev, 1)) return SendException(s, "DevCreateStream: expects (Device)");
      return SendReturnHandle(s, 0u);
    case kCrtRpcCopyAmongRemote:
      if (!ArgsAre(s, num, kAmong, 3)) {
        return SendException(s, "CopyAmongRemote: expects (DLTensor, DLTensor, handle)");
      }
      err = TVMDeviceCopyDataFromTo((DLTensor*)s->values[0].v_handle,
                                    (DLTensor*)s->values[1].v_handle, NULL);
      if (err != 0) return SendCallError(s, "CopyAmongRemote", err);
      return SendReturnVoid(s);
    default:
      (void)kScopeNull;
      (void)kScopeStr;
      return SendException(s, "Syscall not recognized");
  }
}

static tvm_crt_error_t HandleInitServer(crt_rpc_server_t* s, Reader* r) {
  uint64_t ver_len;
  int num;
  if (!Need(r, 8)) return SendException(s, "InitServer: truncated");
  ver_len = LoadU64(r->p + r->pos);
  r->pos += 8;
  if (ver_len > (uint64_t)(r->len - r->pos)) return SendException(s, "InitServer: truncated version");
  r->pos += (size_t)ver_len;
  num = ReadArgs(s, r);
  if (num < 0) return SendException(s, s->message);
  if (num != 0) return SendException(s, "InitServer: expects no arguments");
  return SendReturnVoid(s);
}

/* Acts on the complete request in request[0..request_len). */
static tvm_crt_error_t Dispatch(crt_rpc_server_t* s) {
  Reader r;
  int32_t code;
  r.p = s->request;
  r.len = s->request_len;
  r.pos = ENVELOPE_BYTES;
  code = (int32_t)LoadU32(s->request + 8);
  switch (code) {
    case kCrtRpcCallFunc:
      return HandleCallFunc(s, &r);
    case kCrtRpcCopyFromRemote:
      return HandleCopyFromRemote(s, &r);
    case kCrtRpcInitServer:
      return HandleInitServer(s, &r);
    case kCrtRpcShutdown:
      if (r.len != ENVELOPE_BYTES) return SendException(s, "Shutdown: trailing bytes");
      s->shutdown = true;
      return kTvmErrorNoError;
    default:
      if (code >= kCrtRpcGetGlobalFunc) return HandleSyscall(s, code, &r);
      SetMessage(s, "RPC code ", 1, (uint64_t)(uint32_t)code, " is not a request");
      return SendException(s, s->message);
  }
}

/* ---- the session's body sink ------------------------------------------------------------------ */

static void Reject(crt_rpc_server_t* s) { s->mode = kModeReject; }

static bool SinkBegin(void* ctx, uint32_t body_len) {
  crt_rpc_server_t* s = (crt_rpc_server_t*)ctx;
  s->body_len = body_len;
  s->request_len = 0;
  s->copy_dst = NULL;
  s->copy_remaining = 0;
  s->mode = kModeBuffer;
  if (body_len < ENVELOPE_BYTES) {
    SetMessage(s, "MinRPC packet of ", 1, body_len, " bytes is shorter than its header");
    Reject(s);
  }
  return true;
}

/*
 * Once a CopyToRemote header is buffered: checks it and switches to writing
 * the payload into the tensor.
 */
static void StartCopyToRemote(crt_rpc_server_t* s, uint32_t header_len) {
  Reader r;
  DLTensor t;
  int64_t shape[TVM_CRT_MAX_NDIM];
  uint64_t data;
  uint64_t nbytes;
  r.p = s->request;
  r.len = header_len;
  r.pos = ENVELOPE_BYTES;
  if (ReadTensor(s, &r, &t, shape, &data) != 0) {
    Reject(s);
    return;
  }
  nbytes = LoadU64(s->request + r.pos);
  if (nbytes != (uint64_t)(s->body_len - header_len)) {
    SetMessage(s, "CopyToRemote: nbytes does not match the payload (", 1,
               (uint64_t)(s->body_len - header_len), " bytes)");
    Reject(s);
    return;
  }
  if (!RangeIsOwned(s, data, t.byte_offset, nbytes)) {
    SetMessage(s, "CopyToRemote: destination is not inside memory allocated by this server", 0,
               0, NULL);
    Reject(s);
    return;
  }
  s->copy_dst = (uint8_t*)(uintptr_t)data + (size_t)t.byte_offset;
  s->copy_remaining = nbytes;
  s->mode = kModeCopy;
}

static int32_t RequestCode(const crt_rpc_server_t* s) {
  return (int32_t)LoadU32(s->request + 8);
}

/* How many bytes of the request must be buffered before the next decision. */
static uint32_t BufferTarget(const crt_rpc_server_t* s) {
  uint32_t ndim;
  if (s->request_len < ENVELOPE_BYTES) return ENVELOPE_BYTES;
  if (RequestCode(s) != kCrtRpcCopyToRemote) return s->body_len;
  if (s->request_len < COPY_FIXED_BYTES) return COPY_FIXED_BYTES;
  ndim = LoadU32(s->request + COPY_FIXED_BYTES - 4u); /* checked when it arrived */
  /* dtype, shape, byte_offset, nbytes */
  return COPY_FIXED_BYTES + 4u + 8u * ndim + 8u + 8u;
}

/* request[] just reached BufferTarget: check what arrived and move on. */
static void OnBuffered(crt_rpc_server_t* s) {
  if (s->request_len == ENVELOPE_BYTES && LoadU64(s->request) != (uint64_t)s->body_len - 8u) {
    SetMessage(s, "packet_nbytes does not match the message body (", 1, s->body_len - 8u,
               " bytes)");
    Reject(s);
    return;
  }
  if (RequestCode(s) != kCrtRpcCopyToRemote || s->request_len < COPY_FIXED_BYTES) return;
  if (s->request_len == COPY_FIXED_BYTES) {
    uint32_t ndim = LoadU32(s->request + COPY_FIXED_BYTES - 4u);
    if (ndim > TVM_CRT_MAX_NDIM) {
      SetMessage(s, "CopyToRemote: ndim ", 1, ndim, " exceeds TVM_CRT_MAX_NDIM");
      Reject(s);
    }
    return;
  }
  StartCopyToRemote(s, s->request_len);
}

static tvm_crt_error_t SinkChunk(void* ctx, const uint8_t* data, size_t n) {
  crt_rpc_server_t* s = (crt_rpc_server_t*)ctx;
  while (n > 0u && s->mode != kModeReject) {
    if (s->mode == kModeCopy) {
      /* The session never passes more than body_len bytes, so this is the rest. */
      size_t take = n < s->copy_remaining ? n : (size_t)s->copy_remaining;
      memcpy(s->copy_dst, data, take);
      s->copy_dst += take;
      s->copy_remaining -= take;
      return kTvmErrorNoError;
    }
    {
      uint32_t target = BufferTarget(s);
      size_t take;
      if (target > s->body_len) {
        SetMessage(s, "truncated CopyToRemote header", 0, 0, NULL);
        Reject(s);
        break;
      }
      if (target > sizeof(s->request)) {
        SetMessage(s, "MinRPC packet of ", 1, s->body_len,
                   " bytes exceeds the receive buffer (TVM_CRT_MAX_PACKET_SIZE_BYTES)");
        Reject(s);
        break;
      }
      take = target - s->request_len;
      if (take > n) take = n;
      memcpy(s->request + s->request_len, data, take);
      s->request_len += (uint32_t)take;
      data += take;
      n -= take;
      if (s->request_len == target) OnBuffered(s);
    }
  }
  return kTvmErrorNoError;
}

static tvm_crt_error_t SinkFinish(void* ctx) {
  crt_rpc_server_t* s = (crt_rpc_server_t*)ctx;
  uint8_t mode = s->mode;
  s->mode = kModeIdle;
  s->counters.requests++;
  if (mode == kModeReject) return SendException(s, s->message);
  if (mode == kModeCopy) {
    return s->copy_remaining == 0u ? SendReturnVoid(s)
                                   : SendException(s, "CopyToRemote: payload incomplete");
  }
  if (s->request_len != s->body_len || RequestCode(s) == kCrtRpcCopyToRemote) {
    return SendException(s, "MinRPC packet incomplete");
  }
  return Dispatch(s);
}

static void SinkDiscard(void* ctx) {
  crt_rpc_server_t* s = (crt_rpc_server_t*)ctx;
  s->mode = kModeIdle;
  s->counters.discarded++;
}

/* ---- session callback ------------------------------------------------------------------------- */

static tvm_crt_error_t OnMessage(void* ctx, crt_session_message_type_t type, const uint8_t* body,
                                 size_t body_len) {
  crt_rpc_server_t* s = (crt_rpc_server_t*)ctx;
  (void)body;
  (void)body_len;
  if (type == kCrtSessionStartSessionReply) {
    /* A new session: whatever the previous host left behind is freed. */
    s->counters.sessions++;
    FreeAllAllocations(s);
    crt_time_evaluator_free_all();
  }
  /* Logs from the host and Terminate need no action on the board. */
  return kTvmErrorNoError;
}

/* ---- globals ---------------------------------------------------------------------------------- */

static int GetCRTMaxPacketSize(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
                               int* ret_tcode, void* resource_handle) {
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  ret->v_int64 = TVM_CRT_MAX_PACKET_SIZE_BYTES - 11;
  *ret_tcode = kDLInt;
  return 0;
}

static void AppendLine(char* buf, size_t size, size_t* pos, const char* key, const char* value) {
  const char* parts[4];
  int i;
  parts[0] = key;
  parts[1] = "=";
  parts[2] = value;
  parts[3] = "\n";
  for (i = 0; i < 4; i++) {
    const char* p = parts[i];
    while (*p != '\0' && *p != '\n' && *pos + 1u < size) buf[(*pos)++] = *p++;
    if (i == 3 && *pos + 1u < size) buf[(*pos)++] = '\n';
  }
  buf[*pos] = '\0';
}

static size_t FormatTo(char* buf, size_t size, const char* fmt, ...) {
  va_list ap;
  size_t n;
  va_start(ap, fmt);
  n = TVMPlatformFormatMessage(buf, size, fmt, ap);
  va_end(ap);
  return n;
}

static int DeviceInfo(TVMValue* args, int* type_codes, int num_args, TVMValue* ret,
                      int* ret_tcode, void* resource_handle) {
  crt_rpc_server_t* s = g_server;
  char number[32];
  size_t pos = 0;
  (void)args;
  (void)type_codes;
  (void)num_args;
  (void)resource_handle;
  if (s == NULL) {
    TVMAPISetLastError("benchfarm.DeviceInfo: no RPC server");
    return kTvmErrorFunctionCallNotImplemented;
  }
  s->device_info[0] = '\0';
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "board_kind",
             s->info->board_kind != NULL ? s->info->board_kind : "unknown");
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "firmware_hash",
             s->info->firmware_hash != NULL ? s->info->firmware_hash : "unknown");
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "crt_version", CRT_RPC_SERVER_VERSION);
  (void)FormatTo(number, sizeof(number), "%d", TVM_CRT_MAX_PACKET_SIZE_BYTES - 11);
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "max_packet_size", number);
  (void)FormatTo(number, sizeof(number), "%g", s->info->timer_resolution_s);
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "timer_resolution_s", number);
  (void)FormatTo(number, sizeof(number), "%lu", (unsigned long)s->info->cpu_hz);
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "cpu_hz", number);
  AppendLine(s->device_info, sizeof(s->device_info), &pos, "timer",
             s->info->timer_source != NULL ? s->info->timer_source : "unknown");
  ret->v_str = s->device_info;
  *ret_tcode = kTVMStr;
  return 0;
}

/* ---- public API ------------------------------------------------------------------------------- */

tvm_crt_error_t crt_rpc_server_init(crt_rpc_server_t* server, crt_framer_write_fn write,
                                    void* write_ctx, const crt_board_info_t* info) {
  crt_session_body_sink_t sink;
  uint8_t seed = 0;
  tvm_crt_error_t err;
  int rc;

  memset(server, 0, sizeof(*server));
  server->info = info;
  g_server = server;
  err = TVMInitializeRuntime();
  if (err != kTvmErrorNoError) return err;
  err = crt_time_evaluator_register(); /* index 2 */
  if (err != kTvmErrorNoError) return err;
  rc = TVMCrtFuncRegisterGlobal("tvm.rpc.server.GetCRTMaxPacketSize", GetCRTMaxPacketSize, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal(TVM_CRT_RANDOM_FILL_NAME, TVMCrtRandomFill, 1);
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.DeviceInfo", DeviceInfo, 1);
  if (rc != 0) return (tvm_crt_error_t)rc;

  crt_session_init(&server->session, write, write_ctx, server->log_buffer,
                   sizeof(server->log_buffer), OnMessage, server);
  sink.begin = SinkBegin;
  sink.chunk = SinkChunk;
  sink.finish = SinkFinish;
  sink.discard = SinkDiscard;
  sink.ctx = server;
  crt_session_set_body_sink(&server->session, &sink);
  err = TVMPlatformGenerateRandom(&seed, 1);
  if (err != kTvmErrorNoError) return err;
  return crt_session_initialize(&server->session, seed);
}

tvm_crt_error_t crt_rpc_server_receive(crt_rpc_server_t* server, const uint8_t* data, size_t n) {
  while (n > 0u && !server->shutdown) {
    size_t consumed = 0;
    tvm_crt_error_t err = crt_session_receive(&server->session, data, n, &consumed);
    data += consumed;
    n -= consumed;
    if (err != kTvmErrorNoError) {
      /* A reply that could not be written is the transport's problem: report it. Framing
       * and session errors are reports only; the session already dropped the packet. */
      if ((err & kTvmErrorSystemErrorMask) != 0 || err == kTvmErrorWriteStreamShortWrite ||
          err == kTvmErrorWriteStreamLongWrite || err == kTvmErrorPlatformCheckFailure) {
        return err;
      }
      server->counters.receive_errors++;
      if (consumed == 0u && err != kTvmErrorFramingShortPacket) {
        /* Never spin: skip the byte the unframer would not take. */
        data++;
        n--;
      }
    }
  }
  return server->shutdown ? kTvmErrorPlatformShutdown : kTvmErrorNoError;
}

tvm_crt_error_t crt_rpc_server_logf(crt_rpc_server_t* server, const char* fmt, ...) {
  char text[256];
  size_t n;
  va_list ap;
  va_start(ap, fmt);
  n = TVMPlatformFormatMessage(text, sizeof(text), fmt, ap);
  va_end(ap);
  if (n >= sizeof(text)) n = sizeof(text) - 1u;
  if (n > 0u && text[n - 1u] == '\n') n--;
  return crt_session_send(&server->session, kCrtSessionLog, (const uint8_t*)text, n);
}

const crt_rpc_server_counters_t* crt_rpc_server_counters(const crt_rpc_server_t* server) {
  return &server->counters;
}

const crt_session_t* crt_rpc_server_session(const crt_rpc_server_t* server) {
  return &server->session;
}

size_t crt_rpc_server_live_allocations(const crt_rpc_server_t* server) {
  size_t i;
  size_t n = 0;
  for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS; i++) n += server->allocations[i].data != NULL;
  return n;
}
