// MinRPC packet codec. Integers are assembled byte by byte (never memcpy'd from host structs) so
// the wire stays little-endian and padding-free whatever the host; only doubles go through memcpy,
// to get their IEEE-754 bit pattern into an integer.
//
// The decoder treats every reply as untrusted: each read is bounds-checked against the packet,
// and every count is checked against the bytes left before anything is allocated for it, so a
// corrupt length can neither read out of bounds nor make us allocate more than the packet size.

#include "device/minrpc_codec.h"

#include <cassert>
#include <cstring>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

// RPCObjectRef's type index: the only object an RPC peer may send (reference section 3.4).
constexpr uint32_t kRpcObjectRefTypeIndex = 9;
constexpr size_t kPacketLengthBytes = 8;

uint64_t DoubleBits(double v) {
  uint64_t bits;
  static_assert(sizeof(bits) == sizeof(v), "IEEE-754 double expected");
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

double DoubleFromBits(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

// The type codes a packed sequence may carry, as a decoder sees them. kNDArrayHandle is never
// sent (senders turn it into a kDLTensorHandle); 14 and the extension range never travel.
bool IsWireTypeCode(int32_t code) {
  switch (static_cast<TypeCode>(code)) {
    case TypeCode::kInt:
    case TypeCode::kUInt:
    case TypeCode::kFloat:
    case TypeCode::kOpaqueHandle:
    case TypeCode::kNull:
    case TypeCode::kDataType:
    case TypeCode::kDevice:
    case TypeCode::kDLTensorHandle:
    case TypeCode::kObjectHandle:
    case TypeCode::kModuleHandle:
    case TypeCode::kPackedFuncHandle:
    case TypeCode::kStr:
    case TypeCode::kBytes:
    case TypeCode::kBool:
      return true;
    case TypeCode::kNDArrayHandle:
      return false;
  }
  return false;
}

// The name of a raw i32 type code for error messages: "kStr (11)", "14".
std::string TypeCodeLabel(int64_t code) {
  if (code >= INT32_MIN && code <= INT32_MAX) {
    const char* name = TypeCodeName(static_cast<TypeCode>(code));
    if (std::strcmp(name, "unknown") != 0) return absl::StrCat(name, " (", code, ")");
  }
  return absl::StrCat("unknown type code ", code);
}

// ---------------------------------------------------------------------------------------------
// Encoding.

// Builds one packet: reserves the u64 length, writes the code, and patches the length in Finish.
class PacketWriter {
 public:
  explicit PacketWriter(RpcCode code) {
    out_.append(kPacketLengthBytes, '\0');
    PutI32(static_cast<int32_t>(code));
  }

  void PutU8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void PutU16(uint16_t v) { PutLittleEndian(v, 2); }
  void PutU32(uint32_t v) { PutLittleEndian(v, 4); }
  void PutU64(uint64_t v) { PutLittleEndian(v, 8); }
  void PutI32(int32_t v) { PutU32(static_cast<uint32_t>(v)); }
  void PutI64(int64_t v) { PutU64(static_cast<uint64_t>(v)); }
  void PutF64(double v) { PutU64(DoubleBits(v)); }
  void PutRaw(absl::string_view bytes) { out_.append(bytes.data(), bytes.size()); }

  // DLDataType as it sits inside a DLTensor: 4 bytes, no padding.
  void PutDataType(uint8_t code, uint8_t bits, uint16_t lanes) {
    PutU8(code);
    PutU8(bits);
    PutU16(lanes);
  }

  // The DLTensor fields shared by kDLTensorHandle values and the copy requests.
  void PutTensorFields(const RemoteTensor& t) {
    PutU64(t.data);
    PutI32(t.device_type);
    PutI32(t.device_id);
    PutI32(static_cast<int32_t>(t.shape.size()));
    PutDataType(t.dtype_code, t.dtype_bits, t.dtype_lanes);
    for (int64_t dim : t.shape) PutI64(dim);
    PutU64(t.byte_offset);
  }

  void PutPackedSeq(absl::Span<const Arg> args) {
    PutI32(static_cast<int32_t>(args.size()));
    for (const Arg& arg : args) PutI32(static_cast<int32_t>(WireTypeCode(arg)));
    for (const Arg& arg : args) PutValue(arg);
  }

  std::string Finish() && {
    uint64_t nbytes = out_.size() - kPacketLengthBytes;
    for (size_t i = 0; i < kPacketLengthBytes; ++i) {
      out_[i] = static_cast<char>((nbytes >> (8 * i)) & 0xff);
    }
    return std::move(out_);
  }

 private:
  // TVM's client sends an NDArray as the DLTensor it wraps; so do we.
  static TypeCode WireTypeCode(const Arg& arg) {
    return arg.type_code() == TypeCode::kNDArrayHandle ? TypeCode::kDLTensorHandle
                                                       : arg.type_code();
  }

  void PutValue(const Arg& arg) {
    switch (arg.type_code()) {
      case TypeCode::kInt:
      case TypeCode::kBool:
        PutI64(arg.int_value());
        return;
      case TypeCode::kUInt:
        PutU64(arg.uint_value());
        return;
      case TypeCode::kFloat:
        PutF64(arg.float_value());
        return;
      case TypeCode::kOpaqueHandle:
      case TypeCode::kModuleHandle:
      case TypeCode::kPackedFuncHandle:
        PutU64(arg.handle());
        return;
      case TypeCode::kObjectHandle:
        PutU32(kRpcObjectRefTypeIndex);
        PutU64(arg.handle());
        return;
      case TypeCode::kNull:
        return;
      case TypeCode::kStr:
      case TypeCode::kBytes:
        PutU64(arg.str().size());
        PutRaw(arg.str());
        return;
      case TypeCode::kDataType: {
        DlDataType dtype = arg.data_type();
        PutDataType(dtype.code, dtype.bits, dtype.lanes);
        PutU32(0);  // a TVMValue is 8 bytes; MinRPC sends the whole union
        return;
      }
      case TypeCode::kDevice:
        PutI32(arg.device().device_type);
        PutI32(arg.device().device_id);
        return;
      case TypeCode::kDLTensorHandle:
      case TypeCode::kNDArrayHandle:
        PutTensorFields(arg.tensor());
        return;
    }
  }

  void PutLittleEndian(uint64_t v, int nbytes) {
    for (int i = 0; i < nbytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }

  std::string out_;
};

// ---------------------------------------------------------------------------------------------
// Decoding.

// Reads fields of one packet; offsets in messages are from the start of the packet (the u64
// length is bytes 0..7), so they match a hex dump of the session body.
class PacketReader {
 public:
  PacketReader(absl::string_view packet, size_t pos) : packet_(packet), pos_(pos) {}

  size_t offset() const { return pos_; }
  size_t remaining() const { return packet_.size() - pos_; }

  absl::Status ReadU8(absl::string_view what, uint8_t* out) {
    uint64_t v;
    RETURN_IF_ERROR(ReadLittleEndian(what, 1, &v));
    *out = static_cast<uint8_t>(v);
    return absl::OkStatus();
  }
  absl::Status ReadU16(absl::string_view what, uint16_t* out) {
    uint64_t v;
    RETURN_IF_ERROR(ReadLittleEndian(what, 2, &v));
    *out = static_cast<uint16_t>(v);
    return absl::OkStatus();
  }
  absl::Status ReadU32(absl::string_view what, uint32_t* out) {
    uint64_t v;
    RETURN_IF_ERROR(ReadLittleEndian(what, 4, &v));
    *out = static_cast<uint32_t>(v);
    return absl::OkStatus();
  }
  absl::Status ReadI32(absl::string_view what, int32_t* out) {
    uint32_t v;
    RETURN_IF_ERROR(ReadU32(what, &v));
    *out = static_cast<int32_t>(v);
    return absl::OkStatus();
  }
  absl::Status ReadU64(absl::string_view what, uint64_t* out) {
    return ReadLittleEndian(what, 8, out);
  }
  absl::Status ReadI64(absl::string_view what, int64_t* out) {
    uint64_t v;
    RETURN_IF_ERROR(ReadU64(what, &v));
    *out = static_cast<int64_t>(v);
    return absl::OkStatus();
  }

  // `n` raw bytes; fails before allocating if they are not all there.
  absl::Status ReadRaw(absl::string_view what, uint64_t n, std::string* out) {
    RETURN_IF_ERROR(Need(what, n));
    out->assign(packet_.data() + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return absl::OkStatus();
  }

  // DataLoss unless `n` more bytes are available for `what`.
  absl::Status Need(absl::string_view what, uint64_t n) const {
    if (n <= remaining()) return absl::OkStatus();
    return absl::DataLossError(
        absl::StrFormat("MinRPC reply truncated: %s needs %u bytes at offset %u, only %u remain",
                        what, n, pos_, remaining()));
  }

 private:
  absl::Status ReadLittleEndian(absl::string_view what, int nbytes, uint64_t* out) {
    RETURN_IF_ERROR(Need(what, static_cast<uint64_t>(nbytes)));
    uint64_t v = 0;
    for (int i = 0; i < nbytes; ++i) {
      v |= static_cast<uint64_t>(static_cast<uint8_t>(packet_[pos_ + i])) << (8 * i);
    }
    pos_ += static_cast<size_t>(nbytes);
    *out = v;
    return absl::OkStatus();
  }

  absl::string_view packet_;
  size_t pos_;
};

absl::Status ReadTensorFields(PacketReader& r, absl::string_view what, RemoteTensor* t) {
  RETURN_IF_ERROR(r.ReadU64(absl::StrCat(what, " data"), &t->data));
  RETURN_IF_ERROR(r.ReadI32(absl::StrCat(what, " device_type"), &t->device_type));
  RETURN_IF_ERROR(r.ReadI32(absl::StrCat(what, " device_id"), &t->device_id));
  size_t ndim_offset = r.offset();
  int32_t ndim;
  RETURN_IF_ERROR(r.ReadI32(absl::StrCat(what, " ndim"), &ndim));
  if (ndim < 0 || ndim > kMaxDecodedNdim) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MinRPC reply invalid: %s ndim %d at offset %u is outside 0..%d", what,
                        ndim, ndim_offset, kMaxDecodedNdim));
  }
  RETURN_IF_ERROR(r.ReadU8(absl::StrCat(what, " dtype code"), &t->dtype_code));
  RETURN_IF_ERROR(r.ReadU8(absl::StrCat(what, " dtype bits"), &t->dtype_bits));
  RETURN_IF_ERROR(r.ReadU16(absl::StrCat(what, " dtype lanes"), &t->dtype_lanes));
  RETURN_IF_ERROR(r.Need(absl::StrCat(what, " shape"), 8 * static_cast<uint64_t>(ndim)));
  t->shape.assign(static_cast<size_t>(ndim), 0);
  for (int64_t& dim : t->shape) RETURN_IF_ERROR(r.ReadI64(absl::StrCat(what, " shape"), &dim));
  RETURN_IF_ERROR(r.ReadU64(absl::StrCat(what, " byte_offset"), &t->byte_offset));
  return absl::OkStatus();
}

// One value of type `code`, already validated by IsWireTypeCode.
absl::StatusOr<Arg> ReadValue(PacketReader& r, TypeCode code, int32_t index) {
  const std::string what = absl::StrFormat("argument %d (%s)", index, TypeCodeName(code));
  switch (code) {
    case TypeCode::kInt:
    case TypeCode::kBool: {
      int64_t v;
      RETURN_IF_ERROR(r.ReadI64(what, &v));
      return code == TypeCode::kInt ? Arg::Int(v) : Arg::Bool(v != 0);
    }
    case TypeCode::kUInt: {
      uint64_t v;
      RETURN_IF_ERROR(r.ReadU64(what, &v));
      return Arg::UInt(v);
    }
    case TypeCode::kFloat: {
      uint64_t bits;
      RETURN_IF_ERROR(r.ReadU64(what, &bits));
      return Arg::Float(DoubleFromBits(bits));
    }
    case TypeCode::kOpaqueHandle:
    case TypeCode::kModuleHandle:
    case TypeCode::kPackedFuncHandle: {
      uint64_t h;
      RETURN_IF_ERROR(r.ReadU64(what, &h));
      if (code == TypeCode::kOpaqueHandle) return Arg::OpaqueHandle(h);
      if (code == TypeCode::kModuleHandle) return Arg::ModuleHandle(h);
      return Arg::PackedFuncHandle(h);
    }
    case TypeCode::kObjectHandle: {
      size_t type_index_offset = r.offset();
      uint32_t type_index;
      RETURN_IF_ERROR(r.ReadU32(absl::StrCat(what, " type_index"), &type_index));
      if (type_index != kRpcObjectRefTypeIndex) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "MinRPC reply invalid: %s type_index %u at offset %u is not %u (RPCObjectRef)", what,
            type_index, type_index_offset, kRpcObjectRefTypeIndex));
      }
      uint64_t h;
      RETURN_IF_ERROR(r.ReadU64(what, &h));
      return Arg::ObjectHandle(h);
    }
    case TypeCode::kNull:
      return Arg::Null();
    case TypeCode::kStr:
    case TypeCode::kBytes: {
      uint64_t len;
      RETURN_IF_ERROR(r.ReadU64(absl::StrCat(what, " length"), &len));
      std::string bytes;
      RETURN_IF_ERROR(r.ReadRaw(absl::StrCat(what, " bytes"), len, &bytes));
      return code == TypeCode::kStr ? Arg::Str(bytes) : Arg::Bytes(bytes);
    }
    case TypeCode::kDataType: {
      DlDataType dtype;
      uint32_t padding;
      RETURN_IF_ERROR(r.ReadU8(what, &dtype.code));
      RETURN_IF_ERROR(r.ReadU8(what, &dtype.bits));
      RETURN_IF_ERROR(r.ReadU16(what, &dtype.lanes));
      // The padding is the rest of a TVMValue union; TVM ignores its contents, so do we.
      RETURN_IF_ERROR(r.ReadU32(absl::StrCat(what, " padding"), &padding));
      return Arg::DataType(dtype);
    }
    case TypeCode::kDevice: {
      DlDevice device;
      RETURN_IF_ERROR(r.ReadI32(what, &device.device_type));
      RETURN_IF_ERROR(r.ReadI32(what, &device.device_id));
      return Arg::Device(device);
    }
    case TypeCode::kDLTensorHandle: {
      RemoteTensor t;
      RETURN_IF_ERROR(ReadTensorFields(r, what, &t));
      return Arg::Tensor(std::move(t));
    }
    case TypeCode::kNDArrayHandle:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("MinRPC reply invalid: %s cannot be decoded", what));
}

absl::Status ReadPackedSeq(PacketReader& r, std::vector<Arg>* out) {
  size_t num_args_offset = r.offset();
  int32_t num_args;
  RETURN_IF_ERROR(r.ReadI32("num_args", &num_args));
  if (num_args < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MinRPC reply invalid: num_args %d at offset %u is negative", num_args, num_args_offset));
  }
  RETURN_IF_ERROR(r.Need(absl::StrFormat("the type codes of %d arguments", num_args),
                         4 * static_cast<uint64_t>(num_args)));
  std::vector<TypeCode> codes;
  codes.reserve(static_cast<size_t>(num_args));
  for (int32_t i = 0; i < num_args; ++i) {
    size_t code_offset = r.offset();
    int32_t code;
    RETURN_IF_ERROR(r.ReadI32("type code", &code));
    if (!IsWireTypeCode(code)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "MinRPC reply invalid: argument %d has %s at offset %u, which cannot travel in MinRPC", i,
          TypeCodeLabel(code), code_offset));
    }
    codes.push_back(static_cast<TypeCode>(code));
  }
  out->clear();
  out->reserve(codes.size());  // bounded by the packet size: each code took 4 bytes
  for (int32_t i = 0; i < num_args; ++i) {
    ASSIGN_OR_RETURN(Arg value, ReadValue(r, codes[static_cast<size_t>(i)], i));
    out->push_back(std::move(value));
  }
  return absl::OkStatus();
}

absl::Status NotAReturn(const Reply& reply, absl::string_view expected) {
  if (reply.kind == Reply::Kind::kException) return absl::UnknownError(reply.message);
  return absl::InvalidArgumentError(
      absl::StrCat("MinRPC reply invalid: expected a Return carrying ", expected,
                   ", got a CopyAck of ", reply.data.size(), " bytes"));
}

}  // namespace

// ---------------------------------------------------------------------------------------------

const char* RpcCodeName(RpcCode code) {
  switch (code) {
    case RpcCode::kNone:
      return "kNone";
    case RpcCode::kShutdown:
      return "kShutdown";
    case RpcCode::kInitServer:
      return "kInitServer";
    case RpcCode::kCallFunc:
      return "kCallFunc";
    case RpcCode::kReturn:
      return "kReturn";
    case RpcCode::kException:
      return "kException";
    case RpcCode::kCopyFromRemote:
      return "kCopyFromRemote";
    case RpcCode::kCopyToRemote:
      return "kCopyToRemote";
    case RpcCode::kCopyAck:
      return "kCopyAck";
    case RpcCode::kGetGlobalFunc:
      return "kGetGlobalFunc";
    case RpcCode::kFreeHandle:
      return "kFreeHandle";
    case RpcCode::kDevSetDevice:
      return "kDevSetDevice";
    case RpcCode::kDevGetAttr:
      return "kDevGetAttr";
    case RpcCode::kDevAllocData:
      return "kDevAllocData";
    case RpcCode::kDevFreeData:
      return "kDevFreeData";
    case RpcCode::kDevStreamSync:
      return "kDevStreamSync";
    case RpcCode::kCopyAmongRemote:
      return "kCopyAmongRemote";
    case RpcCode::kDevAllocDataWithScope:
      return "kDevAllocDataWithScope";
    case RpcCode::kDevCreateStream:
      return "kDevCreateStream";
    case RpcCode::kDevFreeStream:
      return "kDevFreeStream";
    case RpcCode::kDevSetStream:
      return "kDevSetStream";
    case RpcCode::kDevGetCurrentStream:
      return "kDevGetCurrentStream";
  }
  return "unknown";
}

const char* TypeCodeName(TypeCode code) {
  switch (code) {
    case TypeCode::kInt:
      return "kInt";
    case TypeCode::kUInt:
      return "kUInt";
    case TypeCode::kFloat:
      return "kFloat";
    case TypeCode::kOpaqueHandle:
      return "kOpaqueHandle";
    case TypeCode::kNull:
      return "kNull";
    case TypeCode::kDataType:
      return "kDataType";
    case TypeCode::kDevice:
      return "kDevice";
    case TypeCode::kDLTensorHandle:
      return "kDLTensorHandle";
    case TypeCode::kObjectHandle:
      return "kObjectHandle";
    case TypeCode::kModuleHandle:
      return "kModuleHandle";
    case TypeCode::kPackedFuncHandle:
      return "kPackedFuncHandle";
    case TypeCode::kStr:
      return "kStr";
    case TypeCode::kBytes:
      return "kBytes";
    case TypeCode::kNDArrayHandle:
      return "kNDArrayHandle";
    case TypeCode::kBool:
      return "kBool";
  }
  return "unknown";
}

bool operator==(const DlDataType& a, const DlDataType& b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
bool operator!=(const DlDataType& a, const DlDataType& b) { return !(a == b); }

bool operator==(const DlDevice& a, const DlDevice& b) {
  return a.device_type == b.device_type && a.device_id == b.device_id;
}
bool operator!=(const DlDevice& a, const DlDevice& b) { return !(a == b); }

uint64_t RemoteTensor::NumBytes() const {
  uint64_t elements = 1;
  for (int64_t dim : shape) elements *= dim < 0 ? 0 : static_cast<uint64_t>(dim);
  uint64_t element_bytes = (static_cast<uint64_t>(dtype_bits) * dtype_lanes + 7) / 8;
  return elements * element_bytes;
}

bool operator==(const RemoteTensor& a, const RemoteTensor& b) {
  return a.data == b.data && a.device_type == b.device_type && a.device_id == b.device_id &&
         a.shape == b.shape && a.dtype_code == b.dtype_code && a.dtype_bits == b.dtype_bits &&
         a.dtype_lanes == b.dtype_lanes && a.byte_offset == b.byte_offset;
}
bool operator!=(const RemoteTensor& a, const RemoteTensor& b) { return !(a == b); }

bool operator==(const RemoteNDArray& a, const RemoteNDArray& b) {
  return a.tensor == b.tensor && a.handle == b.handle;
}
bool operator!=(const RemoteNDArray& a, const RemoteNDArray& b) { return !(a == b); }

// ---------------------------------------------------------------------------------------------
// Arg

Arg::Arg() : Arg(TypeCode::kNull, std::monostate()) {}
Arg::Arg(TypeCode type_code, Value value) : type_code_(type_code), value_(std::move(value)) {}

Arg Arg::Int(int64_t v) { return Arg(TypeCode::kInt, v); }
Arg Arg::UInt(uint64_t v) { return Arg(TypeCode::kUInt, v); }
Arg Arg::Bool(bool v) { return Arg(TypeCode::kBool, int64_t{v ? 1 : 0}); }
Arg Arg::Float(double v) { return Arg(TypeCode::kFloat, v); }
Arg Arg::OpaqueHandle(uint64_t handle) { return Arg(TypeCode::kOpaqueHandle, handle); }
Arg Arg::ModuleHandle(uint64_t handle) { return Arg(TypeCode::kModuleHandle, handle); }
Arg Arg::PackedFuncHandle(uint64_t handle) { return Arg(TypeCode::kPackedFuncHandle, handle); }
Arg Arg::ObjectHandle(uint64_t handle) { return Arg(TypeCode::kObjectHandle, handle); }
Arg Arg::Null() { return Arg(); }
Arg Arg::Str(absl::string_view s) { return Arg(TypeCode::kStr, std::string(s)); }
Arg Arg::Bytes(absl::string_view b) { return Arg(TypeCode::kBytes, std::string(b)); }
Arg Arg::DataType(DlDataType dtype) { return Arg(TypeCode::kDataType, dtype); }
Arg Arg::Device(DlDevice device) { return Arg(TypeCode::kDevice, device); }
Arg Arg::Tensor(RemoteTensor tensor) { return Arg(TypeCode::kDLTensorHandle, std::move(tensor)); }
Arg Arg::NDArray(RemoteNDArray array) { return Arg(TypeCode::kNDArrayHandle, std::move(array)); }

int64_t Arg::int_value() const {
  assert(type_code_ == TypeCode::kInt || type_code_ == TypeCode::kBool);
  const int64_t* v = std::get_if<int64_t>(&value_);
  return v != nullptr ? *v : 0;
}

uint64_t Arg::uint_value() const {
  assert(type_code_ == TypeCode::kUInt);
  const uint64_t* v = std::get_if<uint64_t>(&value_);
  return type_code_ == TypeCode::kUInt && v != nullptr ? *v : 0;
}

bool Arg::bool_value() const {
  assert(type_code_ == TypeCode::kBool || type_code_ == TypeCode::kInt);
  const int64_t* v = std::get_if<int64_t>(&value_);
  return v != nullptr && *v != 0;
}

double Arg::float_value() const {
  assert(type_code_ == TypeCode::kFloat);
  const double* v = std::get_if<double>(&value_);
  return v != nullptr ? *v : 0.0;
}

uint64_t Arg::handle() const {
  if (const RemoteNDArray* array = std::get_if<RemoteNDArray>(&value_)) return array->handle;
  bool is_handle = type_code_ == TypeCode::kOpaqueHandle || type_code_ == TypeCode::kModuleHandle ||
                   type_code_ == TypeCode::kPackedFuncHandle ||
                   type_code_ == TypeCode::kObjectHandle;
  assert(is_handle);
  const uint64_t* v = std::get_if<uint64_t>(&value_);
  return is_handle && v != nullptr ? *v : 0;
}

const std::string& Arg::str() const {
  assert(type_code_ == TypeCode::kStr || type_code_ == TypeCode::kBytes);
  static const std::string* const kEmpty = new std::string();
  const std::string* v = std::get_if<std::string>(&value_);
  return v != nullptr ? *v : *kEmpty;
}

DlDataType Arg::data_type() const {
  assert(type_code_ == TypeCode::kDataType);
  const DlDataType* v = std::get_if<DlDataType>(&value_);
  return v != nullptr ? *v : DlDataType{0, 0, 0};
}

DlDevice Arg::device() const {
  assert(type_code_ == TypeCode::kDevice);
  const DlDevice* v = std::get_if<DlDevice>(&value_);
  return v != nullptr ? *v : DlDevice{0, 0};
}

const RemoteTensor& Arg::tensor() const {
  if (const RemoteNDArray* array = std::get_if<RemoteNDArray>(&value_)) return array->tensor;
  assert(type_code_ == TypeCode::kDLTensorHandle);
  static const RemoteTensor* const kEmpty = new RemoteTensor();
  const RemoteTensor* v = std::get_if<RemoteTensor>(&value_);
  return v != nullptr ? *v : *kEmpty;
}

std::string Arg::DebugString() const {
  constexpr size_t kMaxShown = 64;
  auto tensor_string = [](const RemoteTensor& t) {
    return absl::StrFormat("{data=0x%x dev=(%d,%d) shape=[%s] dtype=(%u,%u,%u) offset=%u}", t.data,
                           t.device_type, t.device_id, absl::StrJoin(t.shape, ","), t.dtype_code,
                           t.dtype_bits, t.dtype_lanes, t.byte_offset);
  };
  std::string name = TypeCodeName(type_code_);
  switch (type_code_) {
    case TypeCode::kInt:
      return absl::StrCat(name, " ", int_value());
    case TypeCode::kBool:
      return absl::StrCat(name, " ", bool_value() ? "true" : "false");
    case TypeCode::kUInt:
      return absl::StrCat(name, " ", uint_value());
    case TypeCode::kFloat:
      return absl::StrFormat("%s %.17g", name, float_value());
    case TypeCode::kOpaqueHandle:
    case TypeCode::kModuleHandle:
    case TypeCode::kPackedFuncHandle:
    case TypeCode::kObjectHandle:
      return absl::StrFormat("%s 0x%x", name, handle());
    case TypeCode::kNull:
      return name;
    case TypeCode::kStr:
    case TypeCode::kBytes: {
      absl::string_view shown = absl::string_view(str()).substr(0, kMaxShown);
      return absl::StrFormat("%s[%u] \"%s\"%s", name, str().size(), absl::CHexEscape(shown),
                             shown.size() < str().size() ? "..." : "");
    }
    case TypeCode::kDataType:
      return absl::StrFormat("%s (%u,%u,%u)", name, data_type().code, data_type().bits,
                             data_type().lanes);
    case TypeCode::kDevice:
      return absl::StrFormat("%s (%d,%d)", name, device().device_type, device().device_id);
    case TypeCode::kDLTensorHandle:
      return absl::StrCat(name, " ", tensor_string(tensor()));
    case TypeCode::kNDArrayHandle:
      return absl::StrFormat("%s 0x%x %s", name, handle(), tensor_string(tensor()));
  }
  return absl::StrCat("type code ", static_cast<int32_t>(type_code_));
}

bool operator==(const Arg& a, const Arg& b) {
  if (a.type_code_ != b.type_code_) return false;
  if (a.type_code_ == TypeCode::kFloat) {
    return DoubleBits(a.float_value()) == DoubleBits(b.float_value());
  }
  return a.value_ == b.value_;
}

// ---------------------------------------------------------------------------------------------
// Encoders

std::string EncodeCallFunc(uint64_t function_handle, absl::Span<const Arg> args) {
  PacketWriter w(RpcCode::kCallFunc);
  w.PutU64(function_handle);
  w.PutPackedSeq(args);
  return std::move(w).Finish();
}

std::string EncodeSyscall(RpcCode code, absl::Span<const Arg> args) {
  PacketWriter w(code);
  w.PutPackedSeq(args);
  return std::move(w).Finish();
}

std::string EncodeCopyToRemote(const RemoteTensor& dst, absl::string_view payload) {
  PacketWriter w(RpcCode::kCopyToRemote);
  w.PutTensorFields(dst);
  w.PutU64(payload.size());
  w.PutRaw(payload);
  return std::move(w).Finish();
}

std::string EncodeCopyFromRemote(const RemoteTensor& src, uint64_t nbytes) {
  PacketWriter w(RpcCode::kCopyFromRemote);
  w.PutTensorFields(src);
  w.PutU64(nbytes);
  return std::move(w).Finish();
}

std::string EncodeShutdown() { return PacketWriter(RpcCode::kShutdown).Finish(); }

std::string EncodeGetGlobalFunc(absl::string_view name) {
  return EncodeSyscall(RpcCode::kGetGlobalFunc, {Arg::Str(name)});
}

std::string EncodeFreeHandle(uint64_t handle, TypeCode type_code) {
  return EncodeSyscall(RpcCode::kFreeHandle,
                       {Arg::OpaqueHandle(handle), Arg::Int(static_cast<int64_t>(type_code))});
}

std::string EncodeDevAllocData(DlDevice device, int64_t nbytes, int64_t alignment,
                               DlDataType type_hint) {
  return EncodeSyscall(RpcCode::kDevAllocData, {Arg::Device(device), Arg::Int(nbytes),
                                                Arg::Int(alignment), Arg::DataType(type_hint)});
}

std::string EncodeDevAllocDataWithScope(const RemoteTensor& tensor_template) {
  return EncodeSyscall(RpcCode::kDevAllocDataWithScope,
                       {Arg::Tensor(tensor_template), Arg::Null()});
}

std::string EncodeDevFreeData(DlDevice device, uint64_t ptr) {
  return EncodeSyscall(RpcCode::kDevFreeData, {Arg::Device(device), Arg::OpaqueHandle(ptr)});
}

std::string EncodeCopyAmongRemote(const RemoteTensor& from, const RemoteTensor& to) {
  return EncodeSyscall(RpcCode::kCopyAmongRemote,
                       {Arg::Tensor(from), Arg::Tensor(to), Arg::OpaqueHandle(0)});
}

size_t CopyToRemoteOverhead(int ndim) {
  assert(ndim >= 0);
  return 44 + 8 * static_cast<size_t>(ndim < 0 ? 0 : ndim);
}

std::string EncodeReturn(absl::Span<const Arg> values) {
  return EncodeSyscall(RpcCode::kReturn, values);
}

std::string EncodeException(absl::string_view message) {
  return EncodeSyscall(RpcCode::kException, {Arg::Str(message)});
}

std::string EncodeCopyAck(absl::string_view data) {
  PacketWriter w(RpcCode::kCopyAck);
  w.PutRaw(data);
  return std::move(w).Finish();
}

// ---------------------------------------------------------------------------------------------
// Decoders

absl::StatusOr<Reply> DecodeReply(absl::string_view packet) {
  PacketReader r(packet, 0);
  uint64_t packet_nbytes;
  RETURN_IF_ERROR(r.ReadU64("packet_nbytes", &packet_nbytes));
  if (packet_nbytes != r.remaining()) {
    return absl::DataLossError(
        absl::StrFormat("MinRPC reply truncated or over-long: packet_nbytes says %u bytes "
                        "follow, but %u do",
                        packet_nbytes, r.remaining()));
  }
  int32_t code;
  RETURN_IF_ERROR(r.ReadI32("RPC code", &code));

  Reply reply;
  switch (static_cast<RpcCode>(code)) {
    case RpcCode::kReturn:
      reply.kind = Reply::Kind::kReturn;
      RETURN_IF_ERROR(ReadPackedSeq(r, &reply.values));
      break;
    case RpcCode::kException: {
      reply.kind = Reply::Kind::kException;
      std::vector<Arg> values;
      RETURN_IF_ERROR(ReadPackedSeq(r, &values));
      if (values.size() != 1 || values[0].type_code() != TypeCode::kStr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "MinRPC reply invalid: an Exception must carry exactly one kStr, got %u values%s",
            values.size(),
            values.empty() ? "" : absl::StrCat(", the first ", values[0].DebugString())));
      }
      reply.message = values[0].str();
      break;
    }
    case RpcCode::kCopyAck:
      reply.kind = Reply::Kind::kCopyAck;
      RETURN_IF_ERROR(r.ReadRaw("CopyAck data", r.remaining(), &reply.data));
      break;
    default:
      return absl::InvalidArgumentError(absl::StrFormat(
          "MinRPC reply invalid: RPC code %d (%s) at offset 8 is not a reply (kReturn, "
          "kException or kCopyAck)",
          code, RpcCodeName(static_cast<RpcCode>(code))));
  }
  if (r.remaining() != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MinRPC reply invalid: %u bytes left over at offset %u after the %s",
                        r.remaining(), r.offset(), RpcCodeName(static_cast<RpcCode>(code))));
  }
  return reply;
}

absl::StatusOr<Arg> DecodeCallResult(const Reply& reply) {
  if (reply.kind != Reply::Kind::kReturn) return NotAReturn(reply, "a CallFunc result");
  const std::vector<Arg>& v = reply.values;
  if (v.empty() || v[0].type_code() != TypeCode::kInt) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MinRPC CallFunc result invalid: the first value must be a kInt return type code, got ",
        v.empty() ? "no values" : v[0].DebugString()));
  }
  const int64_t rc = v[0].int_value();
  const size_t expected_count = rc == static_cast<int64_t>(TypeCode::kNDArrayHandle) ? 3 : 2;
  if (v.size() != expected_count) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MinRPC CallFunc result invalid: return type %s needs %u values, got %u",
                        TypeCodeLabel(rc), expected_count, v.size()));
  }
  auto mismatch = [&](absl::string_view expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MinRPC CallFunc result invalid: return type %s must be carried as %s, got %s",
        TypeCodeLabel(rc), expected, v[1].DebugString()));
  };
  switch (rc) {
    case static_cast<int64_t>(TypeCode::kNDArrayHandle):
      if (v[1].type_code() != TypeCode::kDLTensorHandle ||
          v[2].type_code() != TypeCode::kOpaqueHandle) {
        return mismatch("[kDLTensorHandle][kOpaqueHandle]");
      }
      return Arg::NDArray(RemoteNDArray{v[1].tensor(), v[2].handle()});
    case static_cast<int64_t>(TypeCode::kPackedFuncHandle):
    case static_cast<int64_t>(TypeCode::kModuleHandle):
    case static_cast<int64_t>(TypeCode::kObjectHandle):
      if (v[1].type_code() != TypeCode::kOpaqueHandle) return mismatch("kOpaqueHandle");
      if (rc == static_cast<int64_t>(TypeCode::kPackedFuncHandle)) {
        return Arg::PackedFuncHandle(v[1].handle());
      }
      if (rc == static_cast<int64_t>(TypeCode::kModuleHandle)) {
        return Arg::ModuleHandle(v[1].handle());
      }
      return Arg::ObjectHandle(v[1].handle());
    default:
      // kNull (void), kBytes and plain values travel under their own type code.
      if (static_cast<int64_t>(v[1].type_code()) != rc) return mismatch(TypeCodeLabel(rc));
      return v[1];
  }
}

absl::StatusOr<Arg> DecodeReturnValue(const Reply& reply) {
  if (reply.kind != Reply::Kind::kReturn) return NotAReturn(reply, "one value");
  if (reply.values.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MinRPC reply invalid: expected a Return carrying one value, got %u values",
                        reply.values.size()));
  }
  return reply.values[0];
}

absl::StatusOr<std::vector<double>> DecodeTimeEvaluatorResult(const Arg& result) {
  if (result.type_code() != TypeCode::kBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("time evaluator result invalid: expected kBytes, got ", result.DebugString()));
  }
  const std::string& bytes = result.bytes();
  if (bytes.size() % 8 != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "time evaluator result invalid: %u bytes is not a whole number of doubles", bytes.size()));
  }
  std::vector<double> seconds;
  seconds.reserve(bytes.size() / 8);
  for (size_t i = 0; i < bytes.size(); i += 8) {
    uint64_t bits = 0;
    for (size_t b = 0; b < 8; ++b) {
      bits |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[i + b])) << (8 * b);
    }
    seconds.push_back(DoubleFromBits(bits));
  }
  return seconds;
}

}  // namespace benchfarm::device
