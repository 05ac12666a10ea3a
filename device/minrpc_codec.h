// MinRPC packet codec: the host side's encoder of requests and decoder of replies.
//
// A MinRPC packet is the body of one session Normal message (docs/microtvm-reference.md section 3,
// "reference" below; benchfarm's decisions on top of it: docs/wire-protocol.md). This library
// builds and parses those packets byte-compatibly with Apache TVM v0.18's MinRPC and with
// benchfarm's crt/ server; it knows nothing about transports, framing, sessions or gRPC.
//
// Wire rules it implements (reference sections 3.1-3.6):
//   * A packet is `u64 packet_nbytes` (the number of bytes after it), `i32 RpcCode`, then
//     code-specific content. Every integer is little-endian and is written and read byte by byte,
//     so the host's own byte order and struct layout never matter.
//   * Argument lists are packed sequences: `i32 num_args`, `i32 type_code[num_args]`, then each
//     value in the layout its type code dictates (see `Arg`).
//
// Thread-safety: every function is a pure function of its arguments; `Arg`, `RemoteTensor` and
// `Reply` are plain values (safe to share const between threads, not to mutate concurrently).

#ifndef BENCHFARM_DEVICE_MINRPC_CODEC_H_
#define BENCHFARM_DEVICE_MINRPC_CODEC_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace benchfarm::device {

// TVM's `RPCCode`, sent as an i32 right after packet_nbytes (reference section 3.2). Codes >= 9
// (kGetGlobalFunc onwards) are syscalls.
enum class RpcCode : int32_t {
  kNone = 0,
  kShutdown = 1,
  kInitServer = 2,
  kCallFunc = 3,
  kReturn = 4,
  kException = 5,
  kCopyFromRemote = 6,
  kCopyToRemote = 7,
  kCopyAck = 8,
  kGetGlobalFunc = 9,  // == kSyscallCodeStart
  kFreeHandle = 10,
  kDevSetDevice = 11,
  kDevGetAttr = 12,
  kDevAllocData = 13,
  kDevFreeData = 14,
  kDevStreamSync = 15,
  kCopyAmongRemote = 16,
  kDevAllocDataWithScope = 17,
  kDevCreateStream = 18,
  kDevFreeStream = 19,
  kDevSetStream = 20,
  kDevGetCurrentStream = 21,
};

// TVM's `TVMArgTypeCode` as used on the wire (reference section 3.3). 14
// (kTVMObjectRValueRefArg) and the extension range 16..127 never travel and are rejected.
enum class TypeCode : int32_t {
  kInt = 0,
  kUInt = 1,
  kFloat = 2,
  kOpaqueHandle = 3,
  kNull = 4,
  kDataType = 5,
  kDevice = 6,
  kDLTensorHandle = 7,
  kObjectHandle = 8,
  kModuleHandle = 9,
  kPackedFuncHandle = 10,
  kStr = 11,
  kBytes = 12,
  kNDArrayHandle = 13,
  kBool = 15,
};

// The name of a code ("kCallFunc", "kStr"), or "unknown" for a value outside the enum.
const char* RpcCodeName(RpcCode code);
const char* TypeCodeName(TypeCode code);

// DLPack's DLDataType: `code` is kDLInt=0, kDLUInt=1 or kDLFloat=2.
struct DlDataType {
  uint8_t code = 2;
  uint8_t bits = 32;
  uint16_t lanes = 1;
};
bool operator==(const DlDataType& a, const DlDataType& b);
bool operator!=(const DlDataType& a, const DlDataType& b);

// DLPack's DLDevice: `device_type` kDLCPU=1, ..., kDLMicroDev=35.
struct DlDevice {
  int32_t device_type = 1;
  int32_t device_id = 0;
};
bool operator==(const DlDevice& a, const DlDevice& b);
bool operator!=(const DlDevice& a, const DlDevice& b);

// A DLTensor that lives on the device, as MinRPC carries it: `data` is a raw device address, the
// shape is dense (MinRPC has no strides field; receivers assume compact row-major).
struct RemoteTensor {
  uint64_t data = 0;
  int32_t device_type = 1;
  int32_t device_id = 0;
  std::vector<int64_t> shape;
  uint8_t dtype_code = 2;
  uint8_t dtype_bits = 32;
  uint16_t dtype_lanes = 1;
  uint64_t byte_offset = 0;

  // prod(shape) * ceil(dtype_bits * dtype_lanes / 8): the bytes the tensor's elements occupy,
  // computed as the CRT's kDevAllocDataWithScope does. An empty shape (a scalar) gives one
  // element. Negative dimensions are treated as 0; the product wraps modulo 2^64 on overflow
  // (callers that size buffers from device-supplied tensors must bound the result themselves).
  uint64_t NumBytes() const;
};
bool operator==(const RemoteTensor& a, const RemoteTensor& b);
bool operator!=(const RemoteTensor& a, const RemoteTensor& b);

// A remote NDArray returned by a CallFunc: the DLTensor view and the opaque handle that keeps
// the array alive on the device (free it with kFreeHandle, type code kNDArrayHandle).
struct RemoteNDArray {
  RemoteTensor tensor;
  uint64_t handle = 0;
};
bool operator==(const RemoteNDArray& a, const RemoteNDArray& b);
bool operator!=(const RemoteNDArray& a, const RemoteNDArray& b);

// One value of a packed sequence, tagged with its type code. Wire layout of each kind
// (reference section 3.4), after the type code in the type-code array:
//   kInt, kBool          8 bytes: i64 (a bool is 0 or 1 when encoded; any non-zero reads true)
//   kUInt                8 bytes: u64
//   kFloat               8 bytes: IEEE-754 double bits
//   kOpaqueHandle, kModuleHandle, kPackedFuncHandle
//                        8 bytes: u64 handle
//   kObjectHandle        u32 type_index (always 9, RPCObjectRef), then u64 handle
//   kNull                nothing
//   kStr, kBytes         u64 length, then the bytes (no NUL; embedded NULs allowed)
//   kDataType            u8 code, u8 bits, u16 lanes, then 4 zero bytes
//   kDevice              i32 device_type, i32 device_id
//   kDLTensorHandle      u64 data, i32 device_type, i32 device_id, i32 ndim, u8 dtype code,
//                        u8 dtype bits, u16 dtype lanes, i64 shape[ndim], u64 byte_offset
//   kNDArrayHandle       never on the wire as such: encoding sends the tensor as a
//                        kDLTensorHandle (as TVM's client does); decoding rejects code 13. Such
//                        values come only from DecodeCallResult.
//
// Accessors have a precondition on type_code(), listed with each; on a mismatch they return a
// zero / empty value (and assert in debug builds). They never throw.
class Arg {
 public:
  // A kNull value.
  Arg();

  static Arg Int(int64_t v);
  static Arg UInt(uint64_t v);
  static Arg Bool(bool v);
  static Arg Float(double v);
  static Arg OpaqueHandle(uint64_t handle);
  static Arg ModuleHandle(uint64_t handle);
  static Arg PackedFuncHandle(uint64_t handle);
  static Arg ObjectHandle(uint64_t handle);
  static Arg Null();
  static Arg Str(absl::string_view s);
  static Arg Bytes(absl::string_view b);
  static Arg DataType(DlDataType dtype);
  static Arg Device(DlDevice device);
  static Arg Tensor(RemoteTensor tensor);
  static Arg NDArray(RemoteNDArray array);

  TypeCode type_code() const { return type_code_; }

  // kInt or kBool (a bool reads as 0 or 1).
  int64_t int_value() const;
  // kUInt.
  uint64_t uint_value() const;
  // kBool or kInt (non-zero is true).
  bool bool_value() const;
  // kFloat.
  double float_value() const;
  // kOpaqueHandle, kModuleHandle, kPackedFuncHandle, kObjectHandle or kNDArrayHandle.
  uint64_t handle() const;
  // kStr or kBytes: the raw bytes. The reference is valid as long as this Arg is alive and
  // unmodified.
  const std::string& str() const;
  const std::string& bytes() const { return str(); }
  // kDataType.
  DlDataType data_type() const;
  // kDevice.
  DlDevice device() const;
  // kDLTensorHandle or kNDArrayHandle (the array's tensor). Reference lifetime as for str().
  const RemoteTensor& tensor() const;

  // A short human-readable form for logs and test failures, e.g. `kInt 42`, `kStr "abc"`.
  std::string DebugString() const;

  // Same type code and same value; doubles compare by bit pattern (so NaN == the same NaN).
  friend bool operator==(const Arg& a, const Arg& b);
  friend bool operator!=(const Arg& a, const Arg& b) { return !(a == b); }

 private:
  using Value = std::variant<std::monostate, int64_t, uint64_t, double, std::string, DlDataType,
                             DlDevice, RemoteTensor, RemoteNDArray>;
  Arg(TypeCode type_code, Value value);

  TypeCode type_code_;
  Value value_;
};

// ---------------------------------------------------------------------------------------------
// Request encoders (client -> device). Each returns one complete MinRPC packet, starting with
// its u64 packet_nbytes. They cannot fail. Preconditions: fewer than 2^31 args and tensor
// dimensions (the wire counts are i32).

// kCallFunc: `i32 3`, `u64 function_handle`, packed sequence of `args`.
std::string EncodeCallFunc(uint64_t function_handle, absl::Span<const Arg> args);

// A syscall: `i32 code`, packed sequence of `args`. `code` should be >= kGetGlobalFunc; it is
// written as given. The CRT server checks argument counts and type codes per syscall (reference
// section 3.5); the convenience encoders below produce exactly what it expects.
std::string EncodeSyscall(RpcCode code, absl::Span<const Arg> args);

// kCopyToRemote: `i32 7`, the tensor fields of `dst` (the kDLTensorHandle layout, without a type
// code), `u64 payload.size()`, the payload. The device writes the payload at
// dst.data + dst.byte_offset. Chunking is the caller's job (see CopyToRemoteOverhead).
std::string EncodeCopyToRemote(const RemoteTensor& dst, absl::string_view payload);

// kCopyFromRemote: `i32 6`, the tensor fields of `src`, `u64 nbytes`. The device answers with a
// CopyAck carrying `nbytes` bytes read from src.data + src.byte_offset.
std::string EncodeCopyFromRemote(const RemoteTensor& src, uint64_t nbytes);

// kShutdown: `u64 4`, `i32 1`. The device sends no reply.
std::string EncodeShutdown();

// kGetGlobalFunc(kStr name). Reply: a handle (0 when the function does not exist).
std::string EncodeGetGlobalFunc(absl::string_view name);

// kFreeHandle(kOpaqueHandle handle, kInt type_code), type_code being kNDArrayHandle,
// kPackedFuncHandle, kObjectHandle or kModuleHandle. Reply: void.
std::string EncodeFreeHandle(uint64_t handle, TypeCode type_code);

// kDevAllocData(kDevice, kInt nbytes, kInt alignment, kDataType type_hint). Reply: the device
// pointer as a handle.
std::string EncodeDevAllocData(DlDevice device, int64_t nbytes, int64_t alignment,
                               DlDataType type_hint);

// kDevAllocDataWithScope(kDLTensorHandle tensor_template, kNull scope): what TVM's C++ host uses
// for NDArray::Empty on the device. Reply: the device pointer as a handle.
std::string EncodeDevAllocDataWithScope(const RemoteTensor& tensor_template);

// kDevFreeData(kDevice, kOpaqueHandle ptr). Reply: void.
std::string EncodeDevFreeData(DlDevice device, uint64_t ptr);

// kCopyAmongRemote(kDLTensorHandle from, kDLTensorHandle to, kOpaqueHandle stream = 0).
// Reply: void.
std::string EncodeCopyAmongRemote(const RemoteTensor& from, const RemoteTensor& to);

// The bytes of a kCopyToRemote packet other than the payload and the leading u64 packet_nbytes,
// for a tensor of `ndim` dimensions (reference section 3.8):
//   4 (code) + 8 (data) + 8 (device) + 4 (ndim) + 4 (dtype) + 8·ndim (shape) + 8 (byte_offset)
//   + 8 (nbytes) = 44 + 8·ndim.
// So EncodeCopyToRemote(t, p).size() == 8 + CopyToRemoteOverhead(t.shape.size()) + p.size().
// TVM's client sends blocks of `max_transfer - overhead` payload bytes, max_transfer being what
// tvm.rpc.server.GetCRTMaxPacketSize returns, and sizes kCopyFromRemote blocks the same way.
// Precondition: ndim >= 0.
size_t CopyToRemoteOverhead(int ndim);

// ---------------------------------------------------------------------------------------------
// Reply encoders (device -> client), for fake boards and tests. Each returns a full packet.

// kReturn: `i32 4`, packed sequence of `values`. ReturnVoid is EncodeReturn({Arg::Null()});
// ReturnHandle is EncodeReturn({Arg::OpaqueHandle(h)}).
std::string EncodeReturn(absl::Span<const Arg> values);
// kException: `i32 5`, packed sequence of one kStr `message`.
std::string EncodeException(absl::string_view message);
// kCopyAck: `i32 8`, then `data` raw (no length field; the packet length delimits it).
std::string EncodeCopyAck(absl::string_view data);

// ---------------------------------------------------------------------------------------------
// Reply decoding (device -> client).

// The largest tensor rank the decoder accepts; a larger ndim is treated as corruption.
inline constexpr int32_t kMaxDecodedNdim = 32;

struct Reply {
  enum class Kind { kReturn, kException, kCopyAck };
  Kind kind = Kind::kReturn;
  // kReturn: the packed sequence, in order.
  std::vector<Arg> values;
  // kException: the device's message, verbatim.
  std::string message;
  // kCopyAck: the bytes after the code.
  std::string data;
};

// Parses one complete reply packet (starting with its u64 packet_nbytes). The input must be
// exactly one packet; nothing is read outside `packet`, and no allocation exceeds its size.
// Errors:
//   DataLossError        - shorter than 12 bytes; packet_nbytes differs from the number of bytes
//                          that follow it (a truncated or over-long body); a count or length
//                          (num_args, type codes, string/bytes length, shape) runs past the end.
//   InvalidArgumentError - an RPC code that is not a reply (anything but kReturn, kException,
//                          kCopyAck); a negative num_args; a type code that cannot travel
//                          (kNDArrayHandle, 14, unknown values); an object handle whose
//                          type_index is not 9; a tensor ndim < 0 or > kMaxDecodedNdim; an
//                          Exception that is not exactly one kStr; bytes left over after the
//                          packed sequence.
// Each message says what was wrong and at which byte offset of the packet.
absl::StatusOr<Reply> DecodeReply(absl::string_view packet);

// The value a CallFunc returned, by the MinRPC server's convention (reference section 3.6): the
// reply's first value is a kInt holding the callee's return type code, the rest is the value:
//   [kInt 13][kDLTensorHandle t][kOpaqueHandle h]  -> Arg::NDArray({t, h})
//   [kInt 12][kBytes b]                            -> Arg::Bytes(b)
//   [kInt 10 | 9 | 8][kOpaqueHandle h]             -> PackedFuncHandle / ModuleHandle /
//                                                     ObjectHandle h
//   [kInt 4][kNull]                                -> Arg::Null() (a void function)
//   [kInt c][value of type code c]                 -> that value (kInt, kFloat, kStr, ...)
// Errors:
//   UnknownError         - the reply is an Exception; the message is the device's text, verbatim.
//   InvalidArgumentError - a CopyAck reply; a Return not following the convention (empty, first
//                          value not kInt, wrong count, or a value whose type does not match the
//                          announced code).
absl::StatusOr<Arg> DecodeCallResult(const Reply& reply);

// The value of a Return carrying exactly one value: the replies to syscalls (ReturnHandle gives
// kOpaqueHandle, ReturnVoid gives kNull) and to kCopyToRemote (kNull).
// Errors: UnknownError for an Exception (the device's text, verbatim); InvalidArgumentError for a
// CopyAck or a Return with other than one value.
absl::StatusOr<Arg> DecodeReturnValue(const Reply& reply);

// The time evaluator's result (reference section 4): a kBytes of `repeat` little-endian doubles,
// seconds per call. Errors: InvalidArgumentError if `result` is not kBytes or its length is not a
// multiple of 8.
absl::StatusOr<std::vector<double>> DecodeTimeEvaluatorResult(const Arg& result);

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_MINRPC_CODEC_H_
