// Tests of minrpc_codec: golden wire bytes from the reference (section 3.5/3.6 reply shapes, the
// time-evaluator result of section 4, request layouts), the CallFunc result convention, and the
// decoder's robustness: every truncation, every over-long packet and garbage input is rejected
// with a status, never a crash or an out-of-bounds read.

#include "device/minrpc_codec.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace benchfarm::device {

// gtest prints Args through this (found by ADL).
void PrintTo(const Arg& arg, std::ostream* os) { *os << arg.DebugString(); }

namespace {

// Hex digits to bytes; spaces are ignored so the groups can follow the wire fields.
std::string Hex(absl::string_view hex) {
  std::string digits;
  for (char c : hex) {
    if (c != ' ') digits.push_back(c);
  }
  EXPECT_EQ(digits.size() % 2, 0u) << hex;
  for (char c : digits) EXPECT_TRUE(std::isxdigit(static_cast<unsigned char>(c))) << hex;
  return absl::HexStringToBytes(digits);
}

std::string ToHex(absl::string_view bytes) { return absl::BytesToHexString(bytes); }

// Replaces the u64 packet_nbytes of `packet` with the number of bytes that follow it.
std::string WithFixedLength(std::string packet) {
  uint64_t n = packet.size() >= 8 ? packet.size() - 8 : 0;
  for (size_t i = 0; i < 8 && i < packet.size(); ++i) {
    packet[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  }
  return packet;
}

Reply MustDecode(absl::string_view packet) {
  absl::StatusOr<Reply> reply = DecodeReply(packet);
  EXPECT_TRUE(reply.ok()) << reply.status() << " for " << ToHex(packet);
  return reply.ok() ? *std::move(reply) : Reply{};
}

absl::StatusCode DecodeCode(absl::string_view packet) {
  return DecodeReply(packet).status().code();
}

RemoteTensor Float32Tensor(uint64_t data, std::vector<int64_t> shape) {
  RemoteTensor t;
  t.data = data;
  t.shape = std::move(shape);
  return t;
}

// The time-evaluator reply from the reference's e2e run: three 250 µs readings.
const char kTimeEvaluatorReplyHex[] =
    "3800000000000000 04000000 02000000 00000000 0c000000 0c00000000000000 1800000000000000"
    "fca9f1d24d62303f fca9f1d24d62303f fca9f1d24d62303f";

// ---------------------------------------------------------------------------------------------
// Replies: golden bytes.

TEST(MinrpcCodec, ReturnVoidGolden) {
  const std::string golden = Hex("0c00000000000000 04000000 01000000 04000000");
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Null()})), ToHex(golden));

  Reply reply = MustDecode(golden);
  EXPECT_EQ(reply.kind, Reply::Kind::kReturn);
  ASSERT_EQ(reply.values.size(), 1u);
  EXPECT_EQ(reply.values[0], Arg::Null());
  absl::StatusOr<Arg> value = DecodeReturnValue(reply);
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(value->type_code(), TypeCode::kNull);
}

TEST(MinrpcCodec, ReturnHandleGolden) {
  const std::string golden = Hex("1400000000000000 04000000 01000000 03000000 0180ffff00000000");
  EXPECT_EQ(ToHex(EncodeReturn({Arg::OpaqueHandle(0xFFFF8001u)})), ToHex(golden));

  absl::StatusOr<Arg> value = DecodeReturnValue(MustDecode(golden));
  ASSERT_TRUE(value.ok()) << value.status();
  EXPECT_EQ(*value, Arg::OpaqueHandle(0xFFFF8001u));
  EXPECT_EQ(value->handle(), 0xFFFF8001u);
}

TEST(MinrpcCodec, ExceptionGolden) {
  const std::string golden = Hex("2b00000000000000 05000000 01000000 0b000000 1700000000000000") +
                             "SetDevice not supported";
  EXPECT_EQ(ToHex(EncodeException("SetDevice not supported")), ToHex(golden));

  Reply reply = MustDecode(golden);
  EXPECT_EQ(reply.kind, Reply::Kind::kException);
  EXPECT_EQ(reply.message, "SetDevice not supported");

  absl::StatusOr<Arg> result = DecodeCallResult(reply);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(result.status().message(), "SetDevice not supported");
  absl::StatusOr<Arg> value = DecodeReturnValue(reply);
  EXPECT_EQ(value.status().code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(value.status().message(), "SetDevice not supported");
}

TEST(MinrpcCodec, CopyAckGolden) {
  const std::string golden = Hex("0700000000000000 08000000 01ff00");
  EXPECT_EQ(ToHex(EncodeCopyAck(Hex("01ff00"))), ToHex(golden));

  Reply reply = MustDecode(golden);
  EXPECT_EQ(reply.kind, Reply::Kind::kCopyAck);
  EXPECT_EQ(ToHex(reply.data), "01ff00");
  // An empty CopyAck (a zero-byte read) is valid too.
  EXPECT_EQ(MustDecode(Hex("0400000000000000 08000000")).data, "");

  EXPECT_EQ(DecodeCallResult(reply).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeReturnValue(reply).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MinrpcCodec, TimeEvaluatorResultDecodesToDoubles) {
  const std::string golden = Hex(kTimeEvaluatorReplyHex);
  const std::string doubles = Hex("fca9f1d24d62303f fca9f1d24d62303f fca9f1d24d62303f");
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Int(12), Arg::Bytes(doubles)})), ToHex(golden));

  Reply reply = MustDecode(golden);
  ASSERT_EQ(reply.values.size(), 2u);
  EXPECT_EQ(reply.values[0], Arg::Int(12));
  EXPECT_EQ(reply.values[1], Arg::Bytes(doubles));

  absl::StatusOr<Arg> result = DecodeCallResult(reply);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->type_code(), TypeCode::kBytes);
  EXPECT_EQ(result->bytes(), doubles);

  absl::StatusOr<std::vector<double>> seconds = DecodeTimeEvaluatorResult(*result);
  ASSERT_TRUE(seconds.ok()) << seconds.status();
  EXPECT_EQ(*seconds, std::vector<double>({0.00025, 0.00025, 0.00025}));
}

TEST(MinrpcCodec, TimeEvaluatorResultRejectsWrongShapes) {
  EXPECT_EQ(DecodeTimeEvaluatorResult(Arg::Bytes("1234567")).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeTimeEvaluatorResult(Arg::Str("12345678")).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<double>> none = DecodeTimeEvaluatorResult(Arg::Bytes(""));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

// ---------------------------------------------------------------------------------------------
// Requests: golden bytes.

TEST(MinrpcCodec, GetGlobalFuncLayout) {
  EXPECT_EQ(ToHex(EncodeGetGlobalFunc("runtime.SystemLib")),
            ToHex(Hex("2500000000000000 09000000 01000000 0b000000 1100000000000000") +
                  "runtime.SystemLib"));
}

TEST(MinrpcCodec, ShutdownLayout) {
  EXPECT_EQ(ToHex(EncodeShutdown()), "040000000000000001000000");
}

TEST(MinrpcCodec, CallFuncLayout) {
  // tvm.rpc.server.ModuleGetFunction(system lib, "add", query_imports=true), as TVM's host sends.
  const Arg args[] = {Arg::ModuleHandle(0x8000), Arg::Str("add"), Arg::Bool(true)};
  EXPECT_EQ(ToHex(EncodeCallFunc(0x80028001u, args)),
            ToHex(Hex("3700000000000000 03000000 0180028000000000"
                      "03000000 09000000 0b000000 0f000000"
                      "0080000000000000 0300000000000000 616464 0100000000000000")));
  EXPECT_EQ(ToHex(EncodeCallFunc(0x80008000u, {})),
            ToHex(Hex("1000000000000000 03000000 0080008000000000 00000000")));
}

TEST(MinrpcCodec, CopyToRemoteHeaderLayout) {
  RemoteTensor dst = Float32Tensor(0x20001000u, {2, 3});
  dst.byte_offset = 0x40;
  const std::string packet = EncodeCopyToRemote(dst, "ABCDEFGH");
  EXPECT_EQ(ToHex(packet), ToHex(Hex("4400000000000000 07000000"
                                     "0010002000000000 01000000 00000000 02000000 02200100"
                                     "0200000000000000 0300000000000000 4000000000000000"
                                     "0800000000000000") +
                                 "ABCDEFGH"));
  EXPECT_EQ(packet.size(), 8 + CopyToRemoteOverhead(2) + 8);
  EXPECT_EQ(CopyToRemoteOverhead(0), 44u);
  EXPECT_EQ(CopyToRemoteOverhead(1), 52u);
  EXPECT_EQ(CopyToRemoteOverhead(2), 60u);
  for (int ndim = 0; ndim <= 4; ++ndim) {
    RemoteTensor t = Float32Tensor(0, std::vector<int64_t>(static_cast<size_t>(ndim), 1));
    EXPECT_EQ(EncodeCopyToRemote(t, std::string(100, 'x')).size(),
              8 + CopyToRemoteOverhead(ndim) + 100)
        << "ndim " << ndim;
  }
}

TEST(MinrpcCodec, CopyFromRemoteLayout) {
  RemoteTensor src = Float32Tensor(0x20001000u, {4});
  src.device_type = 35;  // kDLMicroDev
  src.device_id = 1;
  EXPECT_EQ(ToHex(EncodeCopyFromRemote(src, 16)),
            ToHex(Hex("3400000000000000 06000000"
                      "0010002000000000 23000000 01000000 01000000 02200100"
                      "0400000000000000 0000000000000000 1000000000000000")));
}

TEST(MinrpcCodec, DataTypePadding) {
  // In a packed sequence a DLDataType fills a whole 8-byte TVMValue: 4 bytes, 4 zero bytes.
  EXPECT_EQ(ToHex(EncodeDevAllocData({1, 0}, 256, 64, {2, 32, 1})),
            ToHex(Hex("3800000000000000 0d000000 04000000 06000000 00000000 00000000 05000000"
                      "01000000 00000000 0001000000000000 4000000000000000 0220010000000000")));
  EXPECT_EQ(ToHex(EncodeReturn({Arg::DataType({1, 8, 4})})),
            ToHex(Hex("1400000000000000 04000000 01000000 05000000 0108040000000000")));
  // The padding's content is ignored when decoding, as TVM does.
  Reply reply = MustDecode(Hex("1400000000000000 04000000 01000000 05000000 01080400deadbeef"));
  ASSERT_EQ(reply.values.size(), 1u);
  EXPECT_EQ(reply.values[0], Arg::DataType({1, 8, 4}));
}

TEST(MinrpcCodec, FreeHandleLayout) {
  EXPECT_EQ(ToHex(EncodeFreeHandle(0x80008000u, TypeCode::kPackedFuncHandle)),
            ToHex(Hex("2000000000000000 0a000000 02000000 03000000 00000000"
                      "0080008000000000 0a00000000000000")));
}

TEST(MinrpcCodec, DevAllocDataWithScopeLayout) {
  // The tensor in a packed sequence has no strides; the scope is a kNull with no bytes.
  EXPECT_EQ(ToHex(EncodeDevAllocDataWithScope(Float32Tensor(0, {4}))),
            ToHex(Hex("3800000000000000 11000000 02000000 07000000 04000000"
                      "0000000000000000 01000000 00000000 01000000 02200100"
                      "0400000000000000 0000000000000000")));
}

TEST(MinrpcCodec, DevFreeDataLayout) {
  EXPECT_EQ(ToHex(EncodeDevFreeData({1, 0}, 0x20000040u)),
            ToHex(Hex("2000000000000000 0e000000 02000000 06000000 03000000"
                      "01000000 00000000 4000002000000000")));
}

TEST(MinrpcCodec, CopyAmongRemoteLayout) {
  const std::string tensor_a =
      Hex("0010000000000000 01000000 00000000 01000000 02200100 0200000000000000 0000000000000000");
  const std::string tensor_b =
      Hex("0020000000000000 01000000 00000000 01000000 02200100 0200000000000000 0000000000000000");
  EXPECT_EQ(ToHex(EncodeCopyAmongRemote(Float32Tensor(0x1000, {2}), Float32Tensor(0x2000, {2}))),
            ToHex(Hex("6c00000000000000 10000000 03000000 07000000 07000000 03000000") + tensor_a +
                  tensor_b + Hex("0000000000000000")));
}

TEST(MinrpcCodec, ScalarValueLayouts) {
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Float(1.5)})),
            ToHex(Hex("1400000000000000 04000000 01000000 02000000 000000000000f83f")));
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Int(-2)})),
            ToHex(Hex("1400000000000000 04000000 01000000 00000000 feffffffffffffff")));
  EXPECT_EQ(ToHex(EncodeReturn({Arg::UInt(0x0102030405060708u)})),
            ToHex(Hex("1400000000000000 04000000 01000000 01000000 0807060504030201")));
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Bool(false)})),
            ToHex(Hex("1400000000000000 04000000 01000000 0f000000 0000000000000000")));
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Device({35, -1})})),
            ToHex(Hex("1400000000000000 04000000 01000000 06000000 23000000 ffffffff")));
  // An object handle is preceded by RPCObjectRef's type index, 9.
  EXPECT_EQ(ToHex(EncodeReturn({Arg::ObjectHandle(0x1234)})),
            ToHex(Hex("1800000000000000 04000000 01000000 08000000 09000000 3412000000000000")));
  // Strings carry their length, no NUL, and may contain NULs.
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Str(std::string("a\0b", 3))})),
            ToHex(Hex("1700000000000000 04000000 01000000 0b000000 0300000000000000 610062")));
}

TEST(MinrpcCodec, NDArrayArgumentTravelsAsDLTensor) {
  RemoteTensor t = Float32Tensor(0x1000, {2});
  EXPECT_EQ(EncodeCallFunc(7, {Arg::NDArray({t, 0x99})}), EncodeCallFunc(7, {Arg::Tensor(t)}));
}

// ---------------------------------------------------------------------------------------------
// Round trips and the CallFunc result convention.

std::vector<Arg> EveryKind() {
  RemoteTensor t = Float32Tensor(0x20000000u, {1, 2, 3});
  t.device_type = 35;
  t.dtype_code = 0;
  t.dtype_bits = 8;
  t.dtype_lanes = 4;
  t.byte_offset = 12;
  return {Arg::Int(INT64_MIN),
          Arg::UInt(UINT64_MAX),
          Arg::Bool(true),
          Arg::Float(-0.0),
          Arg::OpaqueHandle(1),
          Arg::ModuleHandle(0x8000),
          Arg::PackedFuncHandle(0x80008001u),
          Arg::ObjectHandle(3),
          Arg::Null(),
          Arg::Str(""),
          Arg::Str("hello"),
          Arg::Bytes(std::string("\0\xff", 2)),
          Arg::DataType({2, 16, 1}),
          Arg::Device({1, 2}),
          Arg::Tensor(t),
          Arg::Tensor(Float32Tensor(0, {}))};
}

TEST(MinrpcCodec, EveryKindRoundTrips) {
  const std::vector<Arg> args = EveryKind();
  Reply reply = MustDecode(EncodeReturn(args));
  EXPECT_EQ(reply.kind, Reply::Kind::kReturn);
  EXPECT_EQ(reply.values, args);
  // And an empty sequence.
  EXPECT_TRUE(MustDecode(EncodeReturn({})).values.empty());
}

TEST(MinrpcCodec, ArgAccessors) {
  EXPECT_EQ(Arg::Int(-5).int_value(), -5);
  EXPECT_EQ(Arg::UInt(5).uint_value(), 5u);
  EXPECT_TRUE(Arg::Bool(true).bool_value());
  EXPECT_EQ(Arg::Bool(true).int_value(), 1);
  EXPECT_EQ(Arg::Float(2.5).float_value(), 2.5);
  EXPECT_EQ(Arg::ModuleHandle(9).handle(), 9u);
  EXPECT_EQ(Arg::Str("s").str(), "s");
  EXPECT_EQ(Arg::Bytes("b").bytes(), "b");
  EXPECT_EQ(Arg::DataType({1, 2, 3}).data_type(), (DlDataType{1, 2, 3}));
  EXPECT_EQ(Arg::Device({4, 5}).device(), (DlDevice{4, 5}));
  RemoteTensor t = Float32Tensor(1, {2});
  EXPECT_EQ(Arg::Tensor(t).tensor(), t);
  Arg array = Arg::NDArray({t, 77});
  EXPECT_EQ(array.type_code(), TypeCode::kNDArrayHandle);
  EXPECT_EQ(array.tensor(), t);
  EXPECT_EQ(array.handle(), 77u);
  EXPECT_EQ(Arg().type_code(), TypeCode::kNull);
  EXPECT_NE(Arg::OpaqueHandle(1), Arg::ModuleHandle(1));
  EXPECT_NE(Arg::Str("x"), Arg::Bytes("x"));
  EXPECT_EQ(Arg::Int(42).DebugString(), "kInt 42");
  EXPECT_EQ(Arg::Str("a\n").DebugString(), "kStr[2] \"a\\n\"");
}

TEST(MinrpcCodec, RemoteTensorNumBytes) {
  EXPECT_EQ(Float32Tensor(0, {2, 3}).NumBytes(), 24u);
  EXPECT_EQ(Float32Tensor(0, {}).NumBytes(), 4u);
  RemoteTensor t = Float32Tensor(0, {5});
  t.dtype_bits = 8;
  t.dtype_lanes = 4;
  EXPECT_EQ(t.NumBytes(), 20u);
  t.dtype_bits = 1;
  t.dtype_lanes = 1;
  EXPECT_EQ(t.NumBytes(), 5u);  // ceil(1/8) = 1 byte per element
  t.shape = {4, -1};
  EXPECT_EQ(t.NumBytes(), 0u);
  t.shape = {0};
  EXPECT_EQ(t.NumBytes(), 0u);
}

absl::StatusOr<Arg> CallResultOf(std::vector<Arg> values) {
  absl::StatusOr<Reply> reply = DecodeReply(EncodeReturn(values));
  EXPECT_TRUE(reply.ok()) << reply.status();
  if (!reply.ok()) return reply.status();
  return DecodeCallResult(*reply);
}

TEST(MinrpcCodec, CallResultVoidGolden) {
  // [kInt 4][kNull]: 8 bytes of value, then nothing.
  const std::string golden =
      Hex("1800000000000000 04000000 02000000 00000000 04000000 0400000000000000");
  EXPECT_EQ(ToHex(EncodeReturn({Arg::Int(4), Arg::Null()})), ToHex(golden));
  absl::StatusOr<Arg> result = DecodeCallResult(MustDecode(golden));
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, Arg::Null());
}

TEST(MinrpcCodec, CallResultHandlesAreRetyped) {
  const std::string golden =
      Hex("2000000000000000 04000000 02000000 00000000 03000000 0a00000000000000 0180ffff00000000");
  absl::StatusOr<Arg> func = DecodeCallResult(MustDecode(golden));
  ASSERT_TRUE(func.ok()) << func.status();
  EXPECT_EQ(*func, Arg::PackedFuncHandle(0xFFFF8001u));

  absl::StatusOr<Arg> module = CallResultOf({Arg::Int(9), Arg::OpaqueHandle(0x8000)});
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(*module, Arg::ModuleHandle(0x8000));

  absl::StatusOr<Arg> object = CallResultOf({Arg::Int(8), Arg::OpaqueHandle(5)});
  ASSERT_TRUE(object.ok()) << object.status();
  EXPECT_EQ(*object, Arg::ObjectHandle(5));
}

TEST(MinrpcCodec, CallResultNDArray) {
  RemoteTensor t = Float32Tensor(0x20000100u, {8});
  absl::StatusOr<Arg> result =
      CallResultOf({Arg::Int(13), Arg::Tensor(t), Arg::OpaqueHandle(0xabc)});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, Arg::NDArray({t, 0xabc}));
}

TEST(MinrpcCodec, CallResultPlainValues) {
  const std::vector<Arg> values = {Arg::Int(42),         Arg::UInt(7),        Arg::Float(0.5),
                                   Arg::Bool(true),      Arg::Str("ok"),      Arg::Bytes("b"),
                                   Arg::OpaqueHandle(3), Arg::Device({1, 0}), Arg::DataType({})};
  for (const Arg& value : values) {
    absl::StatusOr<Arg> result =
        CallResultOf({Arg::Int(static_cast<int64_t>(value.type_code())), value});
    ASSERT_TRUE(result.ok()) << result.status() << " for " << value.DebugString();
    EXPECT_EQ(*result, value);
  }
}

TEST(MinrpcCodec, CallResultRejectsBrokenConvention) {
  const std::vector<std::vector<Arg>> broken = {
      {},                                                     // no values
      {Arg::Int(4)},                                          // type code without a value
      {Arg::Null(), Arg::Null()},                             // first value not a kInt
      {Arg::UInt(4), Arg::Null()},                            // first value not a kInt
      {Arg::Int(10), Arg::Int(5)},                            // handle not sent as kOpaqueHandle
      {Arg::Int(9), Arg::ModuleHandle(0x8000)},               // ditto
      {Arg::Int(0), Arg::Float(1)},                           // announced kInt, sent kFloat
      {Arg::Int(4), Arg::Null(), Arg::Null()},                // too many values
      {Arg::Int(13), Arg::Tensor({})},                        // NDArray without its handle
      {Arg::Int(13), Arg::OpaqueHandle(1), Arg::Tensor({})},  // NDArray parts swapped
      {Arg::Int(14), Arg::Null()},                            // a code that never travels
      {Arg::Int(int64_t{1} << 40), Arg::Null()},              // not even an i32
  };
  for (const std::vector<Arg>& values : broken) {
    absl::StatusOr<Arg> result = CallResultOf(values);
    std::string shown;
    for (const Arg& v : values) absl::StrAppend(&shown, "[", v.DebugString(), "]");
    EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument) << shown;
  }
}

TEST(MinrpcCodec, ReturnValueNeedsExactlyOneValue) {
  absl::StatusOr<Reply> two = DecodeReply(EncodeReturn({Arg::Int(4), Arg::Null()}));
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(DecodeReturnValue(*two).status().code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Reply> none = DecodeReply(EncodeReturn({}));
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(DecodeReturnValue(*none).status().code(), absl::StatusCode::kInvalidArgument);
}

// ---------------------------------------------------------------------------------------------
// Malformed replies.

std::vector<std::string> ValidReplies() {
  RemoteTensor t = Float32Tensor(0x20000100u, {8, 2});
  return {
      Hex("0c00000000000000 04000000 01000000 04000000"),
      Hex("1400000000000000 04000000 01000000 03000000 0180ffff00000000"),
      EncodeException("SetDevice not supported"),
      EncodeCopyAck("abc"),
      Hex(kTimeEvaluatorReplyHex),
      EncodeReturn({Arg::Int(13), Arg::Tensor(t), Arg::OpaqueHandle(0xabc)}),
      EncodeReturn(EveryKind()),
  };
}

TEST(MinrpcCodec, EveryTruncationIsRejected) {
  for (const std::string& packet : ValidReplies()) {
    ASSERT_TRUE(DecodeReply(packet).ok()) << ToHex(packet);
    for (size_t n = 0; n < packet.size(); ++n) {
      const std::string prefix = packet.substr(0, n);
      EXPECT_EQ(DecodeCode(prefix), absl::StatusCode::kDataLoss)
          << "prefix of " << n << " bytes of " << ToHex(packet);
    }
  }
}

TEST(MinrpcCodec, TruncatedBodyWithConsistentLengthIsRejected) {
  // packet_nbytes rewritten to match the cut: the packed sequence itself runs past the end.
  for (const std::string& packet : ValidReplies()) {
    const bool is_copy_ack = packet[8] == 8;
    for (size_t n = 8; n < packet.size(); ++n) {
      const std::string cut = WithFixedLength(packet.substr(0, n));
      absl::StatusCode code = DecodeCode(cut);
      if (is_copy_ack && n >= 12) {
        EXPECT_EQ(code, absl::StatusCode::kOk) << ToHex(cut);  // a shorter CopyAck is still one
      } else {
        EXPECT_EQ(code, absl::StatusCode::kDataLoss) << ToHex(cut);
      }
    }
  }
}

TEST(MinrpcCodec, OverLongPacketsAreRejected) {
  for (const std::string& packet : ValidReplies()) {
    const std::string longer = packet + '\0';
    EXPECT_EQ(DecodeCode(longer), absl::StatusCode::kDataLoss) << ToHex(longer);
    if (packet[8] != 8) {  // a CopyAck just grows; anything else has bytes left over
      EXPECT_EQ(DecodeCode(WithFixedLength(longer)), absl::StatusCode::kInvalidArgument)
          << ToHex(longer);
    }
  }
  // packet_nbytes larger than anything addressable.
  EXPECT_EQ(DecodeCode(Hex("ffffffffffffffff 04000000 01000000 04000000")),
            absl::StatusCode::kDataLoss);
}

TEST(MinrpcCodec, GarbageIsRejectedWithAReason) {
  struct Case {
    const char* name;
    std::string body;  // after packet_nbytes, which is filled in
    absl::StatusCode code;
  };
  const Case cases[] = {
      {"code only, no sequence", Hex("04000000"), absl::StatusCode::kDataLoss},
      {"request code in a reply", Hex("03000000 0000000000000000 00000000"),
       absl::StatusCode::kInvalidArgument},
      {"kNone", Hex("00000000"), absl::StatusCode::kInvalidArgument},
      {"unknown code", Hex("63000000"), absl::StatusCode::kInvalidArgument},
      {"negative code", Hex("ffffffff"), absl::StatusCode::kInvalidArgument},
      {"negative num_args", Hex("04000000 ffffffff"), absl::StatusCode::kInvalidArgument},
      {"huge num_args", Hex("04000000 ffffff7f 04000000"), absl::StatusCode::kDataLoss},
      {"type code 14", Hex("04000000 01000000 0e000000 0000000000000000"),
       absl::StatusCode::kInvalidArgument},
      {"type code 16", Hex("04000000 01000000 10000000 0000000000000000"),
       absl::StatusCode::kInvalidArgument},
      {"negative type code", Hex("04000000 01000000 ffffffff"), absl::StatusCode::kInvalidArgument},
      {"NDArray handle", Hex("04000000 01000000 0d000000 0000000000000000"),
       absl::StatusCode::kInvalidArgument},
      {"string longer than the packet", Hex("04000000 01000000 0b000000 0a00000000000000 6162"),
       absl::StatusCode::kDataLoss},
      {"string length 2^64-1", Hex("04000000 01000000 0c000000 ffffffffffffffff 6162"),
       absl::StatusCode::kDataLoss},
      {"ndim 33",
       Hex("04000000 01000000 07000000 0000000000000000 01000000 00000000 21000000 02200100") +
           std::string(33 * 8 + 8, '\0'),
       absl::StatusCode::kInvalidArgument},
      {"ndim -1",
       Hex("04000000 01000000 07000000 0000000000000000 01000000 00000000 ffffffff 02200100"
           "0000000000000000"),
       absl::StatusCode::kInvalidArgument},
      {"shape past the end",
       Hex("04000000 01000000 07000000 0000000000000000 01000000 00000000 20000000 02200100"
           "0100000000000000"),
       absl::StatusCode::kDataLoss},
      {"object type index not 9", Hex("04000000 01000000 08000000 07000000 0100000000000000"),
       absl::StatusCode::kInvalidArgument},
      {"exception without values", Hex("05000000 00000000"), absl::StatusCode::kInvalidArgument},
      {"exception carrying an int", Hex("05000000 01000000 00000000 0500000000000000"),
       absl::StatusCode::kInvalidArgument},
      {"exception with two strings",
       Hex("05000000 02000000 0b000000 0b000000 0100000000000000 61 0100000000000000 62"),
       absl::StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Reply> reply = DecodeReply(WithFixedLength(std::string(8, '\0') + c.body));
    EXPECT_EQ(reply.status().code(), c.code) << c.name << ": " << reply.status();
    EXPECT_FALSE(reply.status().message().empty()) << c.name;
  }
}

TEST(MinrpcCodec, MaxNdimIsAccepted) {
  RemoteTensor t = Float32Tensor(0, std::vector<int64_t>(kMaxDecodedNdim, 1));
  Reply reply = MustDecode(EncodeReturn({Arg::Tensor(t)}));
  ASSERT_EQ(reply.values.size(), 1u);
  EXPECT_EQ(reply.values[0].tensor(), t);
}

TEST(MinrpcCodec, ErrorMessagesNameTheProblem) {
  absl::Status s = DecodeReply(Hex("0c00000000000000 04000000 01000000 0e000000")).status();
  EXPECT_NE(s.message().find("argument 0"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("offset 16"), absl::string_view::npos) << s;

  s = DecodeReply(Hex("0d00000000000000 04000000 01000000 04000000")).status();
  EXPECT_NE(s.message().find("packet_nbytes"), absl::string_view::npos) << s;
}

TEST(MinrpcCodec, RandomGarbageNeverCrashes) {
  std::mt19937 rng(20240611);
  std::uniform_int_distribution<int> byte(0, 255);
  // Random bodies with a consistent length and a reply code, so parsing gets past the envelope.
  for (int i = 0; i < 20000; ++i) {
    std::string body(static_cast<size_t>(4 + rng() % 60), '\0');
    for (char& c : body) c = static_cast<char>(byte(rng));
    const char reply_codes[] = {4, 5, 8};
    body[0] = reply_codes[rng() % 3];
    body[1] = body[2] = body[3] = 0;
    if (rng() % 2) {  // a plausible small num_args
      body[4] = static_cast<char>(rng() % 4);
      if (body.size() > 7) body[5] = body[6] = body[7] = 0;
    }
    absl::StatusOr<Reply> reply = DecodeReply(WithFixedLength(std::string(8, '\0') + body));
    if (reply.ok()) {
      absl::StatusOr<Arg> result = DecodeCallResult(*reply);  // must not crash either
      if (result.ok()) {
        EXPECT_FALSE(result->DebugString().empty());
      }
    }
  }
  // Single-byte corruptions of valid replies.
  for (const std::string& packet : ValidReplies()) {
    for (size_t pos = 0; pos < packet.size(); ++pos) {
      for (int value : {0x00, 0x01, 0x7f, 0x80, 0xff}) {
        std::string corrupt = packet;
        corrupt[pos] = static_cast<char>(value);
        absl::StatusOr<Reply> reply = DecodeReply(corrupt);
        if (reply.ok()) (void)DecodeCallResult(*reply);
      }
    }
  }
}

TEST(MinrpcCodec, CodeNames) {
  EXPECT_STREQ(RpcCodeName(RpcCode::kDevGetCurrentStream), "kDevGetCurrentStream");
  EXPECT_STREQ(RpcCodeName(static_cast<RpcCode>(99)), "unknown");
  EXPECT_STREQ(TypeCodeName(TypeCode::kBool), "kBool");
  EXPECT_STREQ(TypeCodeName(static_cast<TypeCode>(14)), "unknown");
  EXPECT_EQ(static_cast<int32_t>(RpcCode::kGetGlobalFunc), 9);
  EXPECT_EQ(static_cast<int32_t>(TypeCode::kNDArrayHandle), 13);
}

}  // namespace
}  // namespace benchfarm::device
