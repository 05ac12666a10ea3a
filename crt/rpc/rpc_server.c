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
 *
 * A complete request goes to the handler of its code (kRequestHandlers), which
 * reads its fields with a wire.h reader over request[] and answers with one
 * reply composed by a wire.h writer.
 */
#include <crt_config.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/board_data.h>
#include <tvm/runtime/crt/crt.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/random_fill.h>
#include <tvm/runtime/crt/rpc_server.h>
#include <tvm/runtime/crt/time_evaluator.h>
#include <tvm/runtime/crt/wire.h>

/* The request envelope: u64 packet_nbytes, i32 code. */
#define ENVELOPE_BYTES 12u
/* CopyToRemote's fixed header before the shape: envelope, u64 data, DLDevice, i32 ndim. */
#define COPY_FIXED_BYTES (ENVELOPE_BYTES + 8u + 8u + 4u)
/* The longest fixed part of a reply (CallFunc's): u64 packet_nbytes, i32 kReturn, i32 2,
 * i32 kDLInt, i32 type code, i64 type code, the 8-byte value. */
#define REPLY_HEAD_BYTES 40u

typedef enum {
  kModeIdle = 0,   /* no message in progress */
  kModeBuffer = 1, /* buffering a request into request[] */
  kModeCopy = 2,   /* CopyToRemote payload: writing into copy_dst */
  kModeReject = 3, /* skipping the rest; message[] holds the Exception to send */
} Mode;

static crt_rpc_server_t* g_server;

static const DLDevice kCpu = {kDLCPU, 0};

/* ---- messages -------------------------------------------------------------------------------- */

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

/* Sets message[] to text and returns -1: the failure of a parse step. */
static int Fail(crt_rpc_server_t* s, const char* text) {
  SetMessage(s, text, 0, 0, NULL);
  return -1;
}

/* Sets message[] to text followed by the argument index and returns -1. */
static int FailAt(crt_rpc_server_t* s, const char* text, uint32_t index) {
  SetMessage(s, text, 1, index, NULL);
  return -1;
}

/* ---- replies --------------------------------------------------------------------------------- */

/* Starts a reply's fixed part in head[REPLY_HEAD_BYTES]: packet_nbytes (SendReply fills it in),
 * then the reply code. */
static void StartReply(crt_wire_writer_t* w, uint8_t* head, int32_t code) {
  crt_wire_writer_init(w, head, REPLY_HEAD_BYTES);
  crt_wire_write_u64(w, 0u);
  crt_wire_write_i32(w, code);
}

/* Sends one Normal message: head[0..head_len) with its packet_nbytes set, then payload[0..n). */
static tvm_crt_error_t SendReply(crt_rpc_server_t* s, uint8_t* head, size_t head_len,
                                 const void* payload, size_t n) {
  tvm_crt_error_t err;
  crt_wire_store_u64(head, (uint64_t)(head_len - 8u) + n);
  err = crt_session_start_message(&s->session, kCrtSessionNormal, head_len + n);
  if (err == kTvmErrorNoError) err = crt_session_send_body_chunk(&s->session, head, head_len);
  if (err == kTvmErrorNoError && n != 0u) {
    err = crt_session_send_body_chunk(&s->session, (const uint8_t*)payload, n);
  }
  if (err == kTvmErrorNoError) err = crt_session_finish_message(&s->session);
  return err;
}

static tvm_crt_error_t SendException(crt_rpc_server_t* s, const char* msg) {
  uint8_t head[REPLY_HEAD_BYTES];
  crt_wire_writer_t w;
  size_t len = strlen(msg);
  s->counters.exceptions++;
  /* i32 kException, i32 1, i32 kTVMStr, u64 len, bytes */
  StartReply(&w, head, kCrtRpcException);
  crt_wire_write_i32(&w, 1);
  crt_wire_write_i32(&w, kTVMStr);
  crt_wire_write_u64(&w, len);
  return SendReply(s, head, crt_wire_writer_len(&w), msg, len);
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
  uint8_t head[REPLY_HEAD_BYTES];
  crt_wire_writer_t w;
  StartReply(&w, head, kCrtRpcReturn);
  crt_wire_write_i32(&w, 1);
  crt_wire_write_i32(&w, kTVMNullptr);
  return SendReply(s, head, crt_wire_writer_len(&w), NULL, 0);
}

static tvm_crt_error_t SendReturnHandle(crt_rpc_server_t* s, uint64_t handle) {
  uint8_t head[REPLY_HEAD_BYTES];
  crt_wire_writer_t w;
  StartReply(&w, head, kCrtRpcReturn);
  crt_wire_write_i32(&w, 1);
  crt_wire_write_i32(&w, kTVMOpaqueHandle);
  crt_wire_write_u64(&w, handle);
  return SendReply(s, head, crt_wire_writer_len(&w), NULL, 0);
}

/*
 * Writes a CallFunc result's value field into w: 8 bytes, nothing for kTVMNullptr, or for a
 * string or bytes the u64 length (the bytes themselves become *payload, *payload_len). Returns
 * the type code the value is sent with, or -1 when a result of type tcode cannot be sent.
 */
static int EncodeResultValue(crt_wire_writer_t* w, TVMValue value, int tcode, const void** payload,
                             size_t* payload_len) {
  const TVMByteArray* bytes;
  switch (tcode) {
    case kTVMNullptr:
      return kTVMNullptr;
    case kDLInt:
    case kDLUInt:
    case kTVMArgBool:
      crt_wire_write_i64(w, value.v_int64);
      return tcode;
    case kDLFloat:
      crt_wire_write_f64(w, value.v_float64);
      return kDLFloat;
    case kTVMDataType:
      crt_wire_write_dtype(w, value.v_type);
      crt_wire_write_u32(w, 0u);
      return kTVMDataType;
    case kDLDevice:
      crt_wire_write_device(w, value.v_device);
      return kDLDevice;
    case kTVMOpaqueHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
    case kTVMObjectHandle:
      crt_wire_write_u64(w, (uint64_t)(uintptr_t)value.v_handle);
      return kTVMOpaqueHandle;
    case kTVMStr:
      *payload = value.v_str == NULL ? "" : value.v_str;
      *payload_len = strlen((const char*)*payload);
      crt_wire_write_u64(w, *payload_len);
      return kTVMStr;
    case kTVMBytes:
      bytes = (const TVMByteArray*)value.v_handle;
      *payload = bytes == NULL ? NULL : bytes->data;
      *payload_len = bytes == NULL ? 0u : bytes->size;
      crt_wire_write_u64(w, *payload_len);
      return kTVMBytes;
    default:
      return -1;
  }
}

/*
 * CallFunc's reply: [kDLInt original type code][value] (reference 3.6).
 * Frees a kTVMBytes result. Unsupported result types become an Exception.
 */
static tvm_crt_error_t SendCallResult(crt_rpc_server_t* s, TVMValue value, int tcode) {
  uint8_t value_field[8];
  uint8_t head[REPLY_HEAD_BYTES];
  crt_wire_writer_t v;
  crt_wire_writer_t w;
  const void* payload = NULL;
  size_t payload_len = 0;
  int value_tcode;
  tvm_crt_error_t err;

  crt_wire_writer_init(&v, value_field, sizeof(value_field));
  value_tcode = EncodeResultValue(&v, value, tcode, &payload, &payload_len);
  if (value_tcode < 0) {
    SetMessage(s, "CallFunc: the function returned type code ", 1, (uint64_t)tcode,
               ", which cannot be sent");
    return SendException(s, s->message);
  }
  /* i32 kReturn, i32 2, i32 kDLInt, i32 value_tcode, i64 tcode, value */
  StartReply(&w, head, kCrtRpcReturn);
  crt_wire_write_i32(&w, 2);
  crt_wire_write_i32(&w, kDLInt);
  crt_wire_write_i32(&w, value_tcode);
  crt_wire_write_i64(&w, tcode);
  crt_wire_write_bytes(&w, value_field, crt_wire_writer_len(&v));
  err = SendReply(s, head, crt_wire_writer_len(&w), payload, payload_len);
  if (tcode == kTVMBytes && value.v_handle != NULL) {
    (void)TVMByteArrayFree((TVMByteArray*)value.v_handle);
  }
  return err;
}

/* ---- allocations ----------------------------------------------------------------------------- */

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

/* Takes a live allocation out of the table and frees it (the kept data first forgets it). */
static void Release(crt_rpc_allocation_t* a) {
  uint8_t* data = a->data;
  size_t nbytes = (size_t)a->nbytes;
  a->data = NULL;
  a->nbytes = 0;
  crt_board_data_forget(data, nbytes);
  (void)TVMDeviceFreeDataSpace(kCpu, data);
}

static void FreeAllAllocations(crt_rpc_server_t* s) {
  size_t i;
  for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS; i++) {
    if (s->allocations[i].data != NULL) Release(&s->allocations[i]);
  }
}

/* ---- request parsing ------------------------------------------------------------------------- */

static int32_t RequestCode(const crt_rpc_server_t* s) {
  return (int32_t)crt_wire_load_u32(s->request + 8);
}

/* A reader over request[0..len), past the envelope (which was checked as it arrived). */
static void OpenRequest(crt_wire_reader_t* r, crt_rpc_server_t* s, size_t len) {
  crt_wire_reader_init(r, s->request, len);
  (void)crt_wire_read_bytes(r, ENVELOPE_BYTES);
}

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
static int ReadTensor(crt_rpc_server_t* s, crt_wire_reader_t* r, DLTensor* t, int64_t* shape,
                      uint64_t* data_out) {
  uint32_t ndim;
  uint32_t i;
  *data_out = crt_wire_read_u64(r);
  t->device = crt_wire_read_device(r);
  ndim = crt_wire_read_u32(r);
  t->dtype = crt_wire_read_dtype(r);
  if (!crt_wire_reader_ok(r)) return Fail(s, "truncated DLTensor");
  if (ndim > TVM_CRT_MAX_NDIM) {
    SetMessage(s, "DLTensor ndim ", 1, ndim, " exceeds TVM_CRT_MAX_NDIM");
    return -1;
  }
  for (i = 0; i < ndim; i++) shape[i] = crt_wire_read_i64(r);
  t->byte_offset = crt_wire_read_u64(r);
  if (!crt_wire_reader_ok(r)) return Fail(s, "truncated DLTensor shape");
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
    return Fail(s, "DLTensor has a bad dtype or shape");
  }
  if (!RangeIsOwned(s, data, t->byte_offset, nbytes)) {
    return Fail(s, "DLTensor data is not inside memory allocated by this server");
  }
  t->data = (void*)(uintptr_t)data;
  return 0;
}

/*
 * Argument i of type kTVMStr or kTVMBytes: u64 length, then the bytes, which
 * stay in request[] (r reads request[]). Returns 0, or -1 with message[] set.
 */
static int ReadTextArg(crt_rpc_server_t* s, crt_wire_reader_t* r, uint32_t i) {
  uint64_t len = crt_wire_read_u64(r);
  const uint8_t* bytes;
  char* text;
  if (!crt_wire_reader_ok(r)) return FailAt(s, "truncated length of argument ", i);
  bytes = crt_wire_read_bytes(r, len);
  if (bytes == NULL) return FailAt(s, "string or bytes run past the packet in argument ", i);
  if (s->type_codes[i] == kTVMBytes) {
    s->byte_args[i].data = (const char*)bytes;
    s->byte_args[i].size = (size_t)len;
    s->values[i].v_handle = &s->byte_args[i];
    return 0;
  }
  /* Move the text over its 8-byte length field and terminate it there: the NUL lands before
   * the next field, which was already read past. request[] is the server's own, so writable. */
  text = (char*)s->request + (bytes - s->request) - 8;
  memmove(text, bytes, (size_t)len);
  text[len] = '\0';
  if (strlen(text) != (size_t)len) {
    SetMessage(s, "string argument ", 1, i, " contains a NUL byte");
    return -1;
  }
  s->values[i].v_str = text;
  return 0;
}

/* Argument i of type kTVMObjectHandle: only an RPCObjectRef (type index 9) and its handle. */
static int ReadObjectArg(crt_rpc_server_t* s, crt_wire_reader_t* r, uint32_t i) {
  uint32_t type_index = crt_wire_read_u32(r);
  uint64_t handle = crt_wire_read_u64(r);
  if (!crt_wire_reader_ok(r)) return FailAt(s, "truncated object handle in argument ", i);
  if (type_index != 9u || handle > (uint64_t)UINTPTR_MAX) {
    return FailAt(s, "unsupported object handle in argument ", i);
  }
  s->values[i].v_handle = (void*)(uintptr_t)handle;
  return 0;
}

/*
 * Reads the value of argument i (reference 3.4) into s->values[i]; its type
 * code is s->type_codes[i]. Returns 0, or -1 with message[] set.
 */
static int ReadArg(crt_rpc_server_t* s, crt_wire_reader_t* r, uint32_t i) {
  TVMValue* v = &s->values[i];
  uint64_t raw; /* a handle or a tensor's data pointer, as sent */
  switch (s->type_codes[i]) {
    case kDLInt:
    case kDLUInt:
    case kTVMArgBool:
      v->v_int64 = crt_wire_read_i64(r);
      break;
    case kDLFloat:
      v->v_float64 = crt_wire_read_f64(r);
      break;
    case kTVMDataType:
      v->v_type = crt_wire_read_dtype(r);
      (void)crt_wire_read_bytes(r, 4u); /* the rest of the 8-byte value */
      break;
    case kDLDevice:
      v->v_device = crt_wire_read_device(r);
      break;
    case kTVMOpaqueHandle:
    case kTVMModuleHandle:
    case kTVMPackedFuncHandle:
      raw = crt_wire_read_u64(r);
      if (crt_wire_reader_ok(r) && raw > (uint64_t)UINTPTR_MAX) {
        return FailAt(s, "handle does not fit a pointer in argument ", i);
      }
      v->v_handle = (void*)(uintptr_t)raw;
      break;
    case kTVMNullptr:
      v->v_handle = NULL;
      return 0;
    case kTVMStr:
    case kTVMBytes:
      return ReadTextArg(s, r, i);
    case kTVMDLTensorHandle:
      if (ReadTensor(s, r, &s->tensors[i], s->shapes[i], &raw) != 0 ||
          CheckTensor(s, &s->tensors[i], raw) != 0) {
        return -1;
      }
      v->v_handle = &s->tensors[i];
      return 0;
    case kTVMObjectHandle:
      return ReadObjectArg(s, r, i);
    default:
      SetMessage(s, "unknown argument type code ", 1, (uint64_t)(uint32_t)s->type_codes[i], NULL);
      return -1;
  }
  return crt_wire_reader_ok(r) ? 0 : FailAt(s, "truncated value of argument ", i);
}

/*
 * Reads a packed sequence (reference 3.4) into s->values/type_codes; the
 * packet must end exactly after it. r reads request[]. Returns the argument
 * count, or -1 with message[] set.
 */
static int ReadArgs(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  uint32_t num = crt_wire_read_u32(r);
  uint32_t i;
  if (!crt_wire_reader_ok(r)) return Fail(s, "truncated argument count");
  if (num > TVM_CRT_MAX_ARGS) {
    SetMessage(s, "too many arguments: ", 1, num, NULL);
    return -1;
  }
  for (i = 0; i < num; i++) s->type_codes[i] = crt_wire_read_i32(r);
  if (!crt_wire_reader_ok(r)) return Fail(s, "truncated type codes");
  for (i = 0; i < num; i++) {
    if (ReadArg(s, r, i) != 0) return -1;
  }
  if (crt_wire_reader_remaining(r) != 0u) {
    SetMessage(s, "packet has ", 1, crt_wire_reader_remaining(r), " bytes after its arguments");
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

/*
 * Reads a syscall's arguments and checks their types are exactly expected[0..n).
 * Returns NULL, or the Exception text: message[] (a bad packet) or usage (other types).
 */
static const char* ReadArgsOf(crt_rpc_server_t* s, crt_wire_reader_t* r, const int* expected, int n,
                              const char* usage) {
  int num = ReadArgs(s, r);
  if (num < 0) return s->message;
  return ArgsAre(s, num, expected, n) ? NULL : usage;
}

/* ---- request handlers: one per code, each given a reader past the envelope ------------------- */

typedef tvm_crt_error_t (*RequestHandler)(crt_rpc_server_t* s, crt_wire_reader_t* r);

/* A syscall this server refuses: its arguments are still read, so a bad packet says why. */
static tvm_crt_error_t RefuseSyscall(crt_rpc_server_t* s, crt_wire_reader_t* r, const char* text) {
  return SendException(s, ReadArgs(s, r) < 0 ? s->message : text);
}

static tvm_crt_error_t HandleShutdown(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  if (crt_wire_reader_remaining(r) != 0u) return SendException(s, "Shutdown: trailing bytes");
  s->shutdown = true;
  return kTvmErrorNoError;
}

static tvm_crt_error_t HandleInitServer(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  uint64_t ver_len = crt_wire_read_u64(r);
  int num;
  if (!crt_wire_reader_ok(r)) return SendException(s, "InitServer: truncated");
  if (crt_wire_read_bytes(r, ver_len) == NULL) {
    return SendException(s, "InitServer: truncated version");
  }
  num = ReadArgs(s, r);
  if (num < 0) return SendException(s, s->message);
  if (num != 0) return SendException(s, "InitServer: expects no arguments");
  return SendReturnVoid(s);
}

static tvm_crt_error_t HandleCallFunc(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  uint64_t handle = crt_wire_read_u64(r);
  int num;
  TVMValue ret;
  int ret_tcode = kTVMNullptr;
  int err;
  if (!crt_wire_reader_ok(r)) return SendException(s, "CallFunc: truncated function handle");
  num = ReadArgs(s, r);
  if (num < 0) return SendException(s, s->message);
  if (handle > (uint64_t)UINTPTR_MAX) return SendException(s, "CallFunc: invalid function handle");
  ret.v_handle = NULL;
  err = TVMFuncCall((TVMFunctionHandle)(uintptr_t)handle, s->values, s->type_codes, num, &ret,
                    &ret_tcode);
  if (err != 0) return SendCallError(s, "CallFunc", err);
  return SendCallResult(s, ret, ret_tcode);
}

static tvm_crt_error_t HandleCopyFromRemote(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  DLTensor t;
  int64_t shape[TVM_CRT_MAX_NDIM];
  uint64_t data;
  uint64_t nbytes;
  uint8_t head[REPLY_HEAD_BYTES];
  crt_wire_writer_t w;
  if (ReadTensor(s, r, &t, shape, &data) != 0) return SendException(s, s->message);
  nbytes = crt_wire_read_u64(r);
  if (!crt_wire_reader_ok(r)) return SendException(s, "CopyFromRemote: truncated nbytes");
  if (crt_wire_reader_remaining(r) != 0u) {
    return SendException(s, "CopyFromRemote: packet longer than its fields");
  }
  if (!RangeIsOwned(s, data, t.byte_offset, nbytes)) {
    return SendException(s, "CopyFromRemote: source is not inside memory allocated by this server");
  }
  /* u64 4 + n, i32 kCopyAck, n raw bytes */
  StartReply(&w, head, kCrtRpcCopyAck);
  return SendReply(s, head, crt_wire_writer_len(&w),
                   (const uint8_t*)(uintptr_t)data + (size_t)t.byte_offset, (size_t)nbytes);
}

static tvm_crt_error_t HandleGetGlobalFunc(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kStr[] = {kTVMStr};
  TVMFunctionHandle f = NULL;
  int err;
  const char* bad = ReadArgsOf(s, r, kStr, 1, "GetGlobalFunc: expects (Str)");
  if (bad != NULL) return SendException(s, bad);
  err = TVMFuncGetGlobal(s->values[0].v_str, &f);
  if (err != 0) return SendCallError(s, "GetGlobalFunc", err);
  return SendReturnHandle(s, (uint64_t)(uintptr_t)f);
}

static tvm_crt_error_t HandleFreeHandle(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kFree[] = {kTVMOpaqueHandle, kDLInt};
  int64_t tcode;
  int err;
  const char* bad = ReadArgsOf(s, r, kFree, 2, "FreeHandle: expects (handle, Int)");
  if (bad != NULL) return SendException(s, bad);
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

static tvm_crt_error_t HandleDevSetDevice(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  return RefuseSyscall(s, r, "SetDevice not supported");
}

static tvm_crt_error_t HandleDevGetAttr(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  return RefuseSyscall(s, r, "GetAttr not supported");
}

/*
 * A live allocation of nbytes (at least one byte, so every allocation has a
 * distinct non-NULL address) in the server's table; NULL with *why set when
 * the table is full or the pool is out of memory.
 */
static const char kOutOfMemory[] = "out of memory";

static uint8_t* Allocate(crt_rpc_server_t* s, uint64_t nbytes, uint64_t alignment, DLDataType hint,
                         const char** why) {
  crt_rpc_allocation_t* slot = NULL;
  void* data = NULL;
  size_t i;
  int err;
  for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS && slot == NULL; i++) {
    if (s->allocations[i].data == NULL) slot = &s->allocations[i];
  }
  if (slot == NULL) {
    *why = "TVM_CRT_MAX_RPC_ALLOCATIONS tensors already live";
    return NULL;
  }
  if (nbytes > (uint64_t)SIZE_MAX / 2u || alignment > 4096u) {
    *why = "size or alignment out of range";
    return NULL;
  }
  err = TVMDeviceAllocDataSpace(kCpu, nbytes == 0u ? 1u : (size_t)nbytes, (size_t)alignment, hint,
                                &data);
  if (err != 0 || data == NULL) {
    *why = kOutOfMemory;
    return NULL;
  }
  slot->data = (uint8_t*)data;
  slot->nbytes = (size_t)nbytes;
  return slot->data;
}

static tvm_crt_error_t AllocForHost(crt_rpc_server_t* s, uint64_t nbytes, uint64_t alignment,
                                    DLDataType hint) {
  const char* why = NULL;
  uint8_t* data = Allocate(s, nbytes, alignment, hint, &why);
  if (data == NULL && why == kOutOfMemory) {
    SetMessage(s, "DevAllocData: out of memory for ", 1, nbytes, " bytes");
  } else if (data == NULL) {
    SetMessage(s, "DevAllocData: ", 0, 0, why);
  }
  if (data == NULL) return SendException(s, s->message);
  return SendReturnHandle(s, (uint64_t)(uintptr_t)data);
}

static tvm_crt_error_t HandleDevAllocData(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kAlloc[] = {kDLDevice, kDLInt, kDLInt, kTVMDataType};
  const char* bad = ReadArgsOf(
      s, r, kAlloc, 4, "DevAllocData: expects (Device, Int nbytes, Int alignment, DataType)");
  if (bad != NULL) return SendException(s, bad);
  if (s->values[0].v_device.device_type != kDLCPU) {
    return SendException(s, "DevAllocData: only CPU (device type 1) memory");
  }
  if (s->values[1].v_int64 < 0 || s->values[2].v_int64 < 0) {
    return SendException(s, "DevAllocData: negative size or alignment");
  }
  return AllocForHost(s, (uint64_t)s->values[1].v_int64, (uint64_t)s->values[2].v_int64,
                      s->values[3].v_type);
}

/*
 * DevAllocDataWithScope(DLTensor, Nullptr or Str scope). The template's data
 * pointer is meaningless (the host has none yet): the tensor is read here
 * rather than through ReadArgs, which checks ownership. The scope is ignored.
 */
static tvm_crt_error_t HandleDevAllocDataWithScope(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const char kUsage[] = "DevAllocDataWithScope: expects (DLTensor, Nullptr or Str)";
  DLTensor t;
  int64_t shape[TVM_CRT_MAX_NDIM];
  uint64_t data;
  uint64_t nbytes;
  uint64_t alignment;
  uint32_t num = crt_wire_read_u32(r);
  uint32_t tcode0 = crt_wire_read_u32(r);
  uint32_t tcode1 = crt_wire_read_u32(r);
  if (!crt_wire_reader_ok(r) || num != 2u || tcode0 != kTVMDLTensorHandle) {
    return SendException(s, kUsage);
  }
  if (ReadTensor(s, r, &t, shape, &data) != 0) return SendException(s, s->message);
  if (tcode1 == kTVMStr) {
    uint64_t len = crt_wire_read_u64(r);
    if (!crt_wire_reader_ok(r)) return SendException(s, "DevAllocDataWithScope: truncated scope");
    if (crt_wire_read_bytes(r, len) == NULL || crt_wire_reader_remaining(r) != 0u) {
      return SendException(s, "DevAllocDataWithScope: bad scope length");
    }
  } else if (tcode1 != kTVMNullptr) {
    return SendException(s, kUsage);
  }
  if (crt_wire_reader_remaining(r) != 0u) {
    return SendException(s, "DevAllocDataWithScope: trailing bytes");
  }
  if (t.dtype.bits == 0u || t.dtype.lanes == 0u || TensorBytes(&t, &nbytes) != 0) {
    return SendException(s, "DevAllocDataWithScope: bad dtype or shape");
  }
  alignment = (uint64_t)(t.dtype.bits / 8u) * t.dtype.lanes;
  if (alignment < 64u) alignment = 64u;
  if ((alignment & (alignment - 1u)) != 0u) alignment = 64u;
  return AllocForHost(s, nbytes, alignment, t.dtype);
}

static tvm_crt_error_t HandleDevFreeData(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kDevHandle[] = {kDLDevice, kTVMOpaqueHandle};
  crt_rpc_allocation_t* a;
  const char* bad = ReadArgsOf(s, r, kDevHandle, 2, "DevFreeData: expects (Device, handle)");
  if (bad != NULL) return SendException(s, bad);
  a = FindAllocation(s, (const uint8_t*)s->values[1].v_handle);
  if (a == NULL || s->values[1].v_handle == NULL) {
    return SendException(s, "DevFreeData: not memory allocated by this server (or freed)");
  }
  Release(a);
  return SendReturnVoid(s);
}

/* DevStreamSync, DevFreeStream, DevSetStream: the CPU has no streams, so these are no-ops. */
static tvm_crt_error_t HandleStreamCall(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kDevHandle[] = {kDLDevice, kTVMOpaqueHandle};
  const char* bad = ReadArgsOf(s, r, kDevHandle, 2, "stream call: expects (Device, handle)");
  return bad != NULL ? SendException(s, bad) : SendReturnVoid(s);
}

static tvm_crt_error_t HandleDevCreateStream(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kDev[] = {kDLDevice};
  const char* bad = ReadArgsOf(s, r, kDev, 1, "DevCreateStream: expects (Device)");
  return bad != NULL ? SendException(s, bad) : SendReturnHandle(s, 0u);
}

static tvm_crt_error_t HandleCopyAmongRemote(crt_rpc_server_t* s, crt_wire_reader_t* r) {
  static const int kAmong[] = {kTVMDLTensorHandle, kTVMDLTensorHandle, kTVMOpaqueHandle};
  int err;
  const char* bad =
      ReadArgsOf(s, r, kAmong, 3, "CopyAmongRemote: expects (DLTensor, DLTensor, handle)");
  if (bad != NULL) return SendException(s, bad);
  err = TVMDeviceCopyDataFromTo((DLTensor*)s->values[0].v_handle, (DLTensor*)s->values[1].v_handle,
                                NULL);
  if (err != 0) return SendCallError(s, "CopyAmongRemote", err);
  return SendReturnVoid(s);
}

/* Requests this server acts on, by code. CopyToRemote is served while it arrives (SinkChunk);
 * codes without a handler are refused by Dispatch. */
static const RequestHandler kRequestHandlers[] = {
    [kCrtRpcShutdown] = HandleShutdown,
    [kCrtRpcInitServer] = HandleInitServer,
    [kCrtRpcCallFunc] = HandleCallFunc,
    [kCrtRpcCopyFromRemote] = HandleCopyFromRemote,
    [kCrtRpcGetGlobalFunc] = HandleGetGlobalFunc,
    [kCrtRpcFreeHandle] = HandleFreeHandle,
    [kCrtRpcDevSetDevice] = HandleDevSetDevice,
    [kCrtRpcDevGetAttr] = HandleDevGetAttr,
    [kCrtRpcDevAllocData] = HandleDevAllocData,
    [kCrtRpcDevFreeData] = HandleDevFreeData,
    [kCrtRpcDevStreamSync] = HandleStreamCall,
    [kCrtRpcCopyAmongRemote] = HandleCopyAmongRemote,
    [kCrtRpcDevAllocDataWithScope] = HandleDevAllocDataWithScope,
    [kCrtRpcDevCreateStream] = HandleDevCreateStream,
    [kCrtRpcDevFreeStream] = HandleStreamCall,
    [kCrtRpcDevSetStream] = HandleStreamCall,
};

/* Acts on the complete request in request[0..request_len). */
static tvm_crt_error_t Dispatch(crt_rpc_server_t* s) {
  crt_wire_reader_t r;
  int32_t code = RequestCode(s);
  OpenRequest(&r, s, s->request_len);
  if (code >= 0 && (size_t)code < sizeof(kRequestHandlers) / sizeof(kRequestHandlers[0]) &&
      kRequestHandlers[code] != NULL) {
    return kRequestHandlers[code](s, &r);
  }
  if (code >= kCrtRpcGetGlobalFunc) return RefuseSyscall(s, &r, "Syscall not recognized");
  SetMessage(s, "RPC code ", 1, (uint64_t)(uint32_t)code, " is not a request");
  return SendException(s, s->message);
}

/* ---- the session's body sink ----------------------------------------------------------------- */

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
  crt_wire_reader_t r;
  DLTensor t;
  int64_t shape[TVM_CRT_MAX_NDIM];
  uint64_t data;
  uint64_t nbytes;
  OpenRequest(&r, s, header_len);
  if (ReadTensor(s, &r, &t, shape, &data) != 0) {
    Reject(s);
    return;
  }
  nbytes = crt_wire_read_u64(&r); /* header_len ends right after it */
  if (nbytes != (uint64_t)(s->body_len - header_len)) {
    SetMessage(s, "CopyToRemote: nbytes does not match the payload (", 1,
               (uint64_t)(s->body_len - header_len), " bytes)");
    Reject(s);
    return;
  }
  if (!RangeIsOwned(s, data, t.byte_offset, nbytes)) {
    SetMessage(s, "CopyToRemote: destination is not inside memory allocated by this server", 0, 0,
               NULL);
    Reject(s);
    return;
  }
  s->copy_dst = (uint8_t*)(uintptr_t)data + (size_t)t.byte_offset;
  s->copy_remaining = nbytes;
  s->mode = kModeCopy;
}

/* How many bytes of the request must be buffered before the next decision. */
static uint32_t BufferTarget(const crt_rpc_server_t* s) {
  uint32_t ndim;
  if (s->request_len < ENVELOPE_BYTES) return ENVELOPE_BYTES;
  if (RequestCode(s) != kCrtRpcCopyToRemote) return s->body_len;
  if (s->request_len < COPY_FIXED_BYTES) return COPY_FIXED_BYTES;
  ndim = crt_wire_load_u32(s->request + COPY_FIXED_BYTES - 4u); /* checked when it arrived */
  /* dtype, shape, byte_offset, nbytes */
  return COPY_FIXED_BYTES + 4u + 8u * ndim + 8u + 8u;
}

/* request[] just reached BufferTarget: check what arrived and move on. */
static void OnBuffered(crt_rpc_server_t* s) {
  if (s->request_len == ENVELOPE_BYTES &&
      crt_wire_load_u64(s->request) != (uint64_t)s->body_len - 8u) {
    SetMessage(s, "packet_nbytes does not match the message body (", 1, s->body_len - 8u,
               " bytes)");
    Reject(s);
    return;
  }
  if (RequestCode(s) != kCrtRpcCopyToRemote || s->request_len < COPY_FIXED_BYTES) return;
  if (s->request_len == COPY_FIXED_BYTES) {
    uint32_t ndim = crt_wire_load_u32(s->request + COPY_FIXED_BYTES - 4u);
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

/* ---- session callback ------------------------------------------------------------------------ */

static tvm_crt_error_t OnMessage(void* ctx, crt_session_message_type_t type, const uint8_t* body,
                                 size_t body_len) {
  crt_rpc_server_t* s = (crt_rpc_server_t*)ctx;
  (void)body;
  (void)body_len;
  if (type == kCrtSessionStartSessionReply) {
    /* A new session: whatever the previous host left behind is freed. */
    s->counters.sessions++;
    crt_board_data_clear();
    FreeAllAllocations(s);
    crt_time_evaluator_free_all();
  }
  /* Logs from the host and Terminate need no action on the board. */
  return kTvmErrorNoError;
}

/* ---- globals --------------------------------------------------------------------------------- */

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

#ifndef CRT_RPC_TVM_ONLY
/* benchfarm.DeviceInfo. A build with CRT_RPC_TVM_ONLY defined serves TVM v0.18's globals alone
 * (no benchfarm.DeviceInfo, no benchfarm.PrepareArgs/CheckCall/TimeArgs/ReleaseArgs): a board as
 * TVM's own CRT is, for the tests of hosts that must talk to one. */
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

static int DeviceInfo(TVMValue* args, int* type_codes, int num_args, TVMValue* ret, int* ret_tcode,
                      void* resource_handle) {
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
#endif /* CRT_RPC_TVM_ONLY */

/* ---- public API ------------------------------------------------------------------------------ */

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
#ifndef CRT_RPC_TVM_ONLY
  if (rc == 0) rc = TVMCrtFuncRegisterGlobal("benchfarm.DeviceInfo", DeviceInfo, 1);
  if (rc != 0) return (tvm_crt_error_t)rc;
  err = crt_board_data_register();
  if (err != kTvmErrorNoError) return err;
#else
  if (rc != 0) return (tvm_crt_error_t)rc;
#endif

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

void* crt_rpc_server_allocate(size_t nbytes, DLDataType dtype) {
  const char* why = NULL;
  if (g_server == NULL) return NULL;
  return Allocate(g_server, (uint64_t)nbytes, 64u, dtype, &why);
}

void crt_rpc_server_release(void* data) {
  crt_rpc_allocation_t* a;
  if (g_server == NULL || data == NULL) return;
  a = FindAllocation(g_server, (const uint8_t*)data);
  if (a != NULL && a->data == (uint8_t*)data) Release(a);
}
