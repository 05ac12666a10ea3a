// Tests of the board's MinRPC server and time evaluator, in process: a host-side
// crt session (the initiator) talks to crt_rpc_server over an in-memory loopback,
// with requests built by //device:minrpc_codec. Covers every request the server
// serves, the globals, several live time evaluators, CopyToRemote streamed past
// the receive buffer, and the robustness cases of docs/wire-protocol.md ("Fixed,
// not imitated"): each bad input is dropped or answered with an Exception, and the
// next good request still gets the right reply.

#include "tvm/runtime/crt/rpc_server.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "benchfarm/data.h"
#include "device/board_args.h"
#include "device/minrpc_codec.h"
#include "tvm/runtime/crt/link/framing.h"
#include "tvm/runtime/crt/link/session.h"
#include "tvm/runtime/crt/platform.h"
#include "tvm/runtime/crt/time_evaluator.h"

extern "C" int crt_rpc_test_c_live_evaluators(void);
extern "C" size_t crt_rpc_test_c_server_bytes(void);

namespace {

using benchfarm::device::Arg;
using benchfarm::device::DecodeCallResult;
using benchfarm::device::DecodeReply;
using benchfarm::device::DecodeReturnValue;
using benchfarm::device::DecodeTimeEvaluatorResult;
using benchfarm::device::DlDataType;
using benchfarm::device::DlDevice;
using benchfarm::device::RemoteTensor;
using benchfarm::device::Reply;
using benchfarm::device::RpcCode;
using benchfarm::device::TypeCode;
namespace codec = benchfarm::device;
namespace device = benchfarm::device;

crt_rpc_server_t g_server;  // large: static storage, as on a board

const crt_board_info_t kInfo = {"test-board", "0123456789abcdef", 1e-9, 72000000, "dwt"};

// The host end of an in-memory link to g_server.
class Link {
 public:
  Link() : host_rx_(4 << 20) {
    EXPECT_EQ(TVMPlatformInitialize(), kTvmErrorNoError);
    EXPECT_EQ(crt_rpc_server_init(&g_server, &Link::ToHost, this, &kInfo), kTvmErrorNoError);
    crt_session_init(&host_, &Link::ToBoard, this, host_rx_.data(), host_rx_.size(),
                     &Link::OnHostMessage, this);
  }

  // Boot bytes the board sent before anyone spoke to it.
  std::string TakeToHost() {
    std::string out;
    out.swap(to_host_);
    return out;
  }

  void Connect() {
    EXPECT_EQ(crt_session_initialize(&host_, 0x11), kTvmErrorNoError);
    EXPECT_EQ(crt_session_start(&host_), kTvmErrorNoError);
    Pump();
    ASSERT_TRUE(crt_session_is_established(&host_));
  }

  // Moves bytes both ways until both directions are quiet. Returns the server's last code.
  tvm_crt_error_t Pump() {
    tvm_crt_error_t last = kTvmErrorNoError;
    while (!to_board_.empty() || !to_host_.empty()) {
      if (!to_board_.empty()) {
        std::string in;
        in.swap(to_board_);
        last = crt_rpc_server_receive(&g_server, reinterpret_cast<const uint8_t*>(in.data()),
                                      in.size());
      }
      if (!to_host_.empty()) {
        std::string in;
        in.swap(to_host_);
        size_t pos = 0;
        while (pos < in.size()) {
          size_t consumed = 0;
          crt_session_receive(&host_, reinterpret_cast<const uint8_t*>(in.data()) + pos,
                              in.size() - pos, &consumed);
          pos += consumed == 0 ? 1 : consumed;
        }
      }
    }
    return last;
  }

  // Frames `packet` as a Normal message without delivering it.
  std::string Frame(const std::string& packet) {
    EXPECT_EQ(crt_session_send(&host_, kCrtSessionNormal,
                               reinterpret_cast<const uint8_t*>(packet.data()), packet.size()),
              kTvmErrorNoError);
    std::string out;
    out.swap(to_board_);
    return out;
  }

  // Delivers raw wire bytes to the board and returns the replies they caused.
  std::vector<std::string> Deliver(const std::string& wire) {
    replies_.clear();
    to_board_ += wire;
    last_code_ = Pump();
    return replies_;
  }

  // Sends one request; expects exactly one reply and decodes it.
  Reply Call(const std::string& packet) {
    std::vector<std::string> replies = Deliver(Frame(packet));
    EXPECT_EQ(replies.size(), 1u);
    if (replies.empty()) return Reply{};
    auto reply = DecodeReply(replies.back());
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : Reply{};
  }

  uint64_t Handle(const std::string& packet) {
    auto value = DecodeReturnValue(Call(packet));
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? value->handle() : 0;
  }

  Arg CallFunc(uint64_t handle, const std::vector<Arg>& args) {
    auto value = DecodeCallResult(Call(codec::EncodeCallFunc(handle, args)));
    EXPECT_TRUE(value.ok()) << value.status();
    return value.ok() ? *value : Arg();
  }

  // The Exception text of the reply to `packet` ("" if it was not an Exception).
  std::string ExceptionOf(const std::string& packet) {
    Reply reply = Call(packet);
    return reply.kind == Reply::Kind::kException ? reply.message : "";
  }

  RemoteTensor Alloc(std::vector<int64_t> shape, DlDataType dtype = DlDataType{}) {
    RemoteTensor t;
    t.shape = std::move(shape);
    t.dtype_code = dtype.code;
    t.dtype_bits = dtype.bits;
    t.dtype_lanes = dtype.lanes;
    t.data = Handle(codec::EncodeDevAllocDataWithScope(t));
    return t;
  }

  void Put(const RemoteTensor& t, const std::vector<float>& values) {
    std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * 4);
    Reply r = Call(codec::EncodeCopyToRemote(t, bytes));
    EXPECT_EQ(r.kind, Reply::Kind::kReturn) << r.message;
  }

  std::vector<float> Get(const RemoteTensor& t) {
    Reply r = Call(codec::EncodeCopyFromRemote(t, t.NumBytes()));
    EXPECT_EQ(r.kind, Reply::Kind::kCopyAck) << r.message;
    std::vector<float> out(r.data.size() / 4);
    std::memcpy(out.data(), r.data.data(), out.size() * 4);
    return out;
  }

  crt_session_t* host() { return &host_; }
  tvm_crt_error_t last_code() const { return last_code_; }
  const std::vector<std::string>& logs() const { return logs_; }

 private:
  static tvm_crt_error_t ToHost(void* ctx, const uint8_t* data, size_t n) {
    static_cast<Link*>(ctx)->to_host_.append(reinterpret_cast<const char*>(data), n);
    return kTvmErrorNoError;
  }
  static tvm_crt_error_t ToBoard(void* ctx, const uint8_t* data, size_t n) {
    static_cast<Link*>(ctx)->to_board_.append(reinterpret_cast<const char*>(data), n);
    return kTvmErrorNoError;
  }
  static tvm_crt_error_t OnHostMessage(void* ctx, crt_session_message_type_t type,
                                       const uint8_t* body, size_t n) {
    Link* link = static_cast<Link*>(ctx);
    std::string text(reinterpret_cast<const char*>(body), body == nullptr ? 0 : n);
    if (type == kCrtSessionNormal) link->replies_.push_back(text);
    if (type == kCrtSessionLog) link->logs_.push_back(text);
    return kTvmErrorNoError;
  }

  crt_session_t host_;
  std::vector<uint8_t> host_rx_;
  std::string to_board_;
  std::string to_host_;
  std::vector<std::string> replies_;
  std::vector<std::string> logs_;
  tvm_crt_error_t last_code_ = kTvmErrorNoError;
};

class RpcServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    boot_ = link_.TakeToHost();
    link_.Connect();
  }

  uint64_t Global(const std::string& name) {
    return link_.Handle(codec::EncodeGetGlobalFunc(name));
  }

  uint64_t SystemLib() {
    Arg lib = link_.CallFunc(Global("runtime.SystemLib"), {});
    EXPECT_EQ(lib.type_code(), TypeCode::kModuleHandle);
    return lib.handle();
  }

  // A good request after a bad one: the server still answers correctly.
  void ExpectStillServing() {
    Arg max = link_.CallFunc(Global("tvm.rpc.server.GetCRTMaxPacketSize"), {});
    EXPECT_EQ(max.int_value(), TVM_CRT_MAX_PACKET_SIZE_BYTES - 11);
  }

  Link link_;
  std::string boot_;
};

TEST_F(RpcServerTest, BootsWithTheTerminateSignature) {
  const uint8_t kBoot[] = {0xFE, 0xFF, 0xFD, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x66, 0x77};
  EXPECT_EQ(boot_, std::string(reinterpret_cast<const char*>(kBoot), sizeof(kBoot)));
  EXPECT_EQ(crt_rpc_server_counters(&g_server)->sessions, 1u);
}

TEST_F(RpcServerTest, GlobalsHaveTvmsHandles) {
  EXPECT_EQ(Global("runtime.SystemLib"), 0x80028000u);
  EXPECT_EQ(Global("tvm.rpc.server.ModuleGetFunction"), 0x80028001u);
  EXPECT_EQ(Global("runtime.RPCTimeEvaluator"), 0x80028002u);
  EXPECT_EQ(Global("tvm.rpc.server.GetCRTMaxPacketSize"), 0x80028003u);
  EXPECT_EQ(Global("tvm.contrib.random.random_fill"), 0x80028004u);
  EXPECT_EQ(Global("benchfarm.DeviceInfo"), 0x80028005u);
  EXPECT_EQ(Global("no.such.function"), 0u);  // TVM: not found is a null handle, not an error
  EXPECT_EQ(SystemLib(), 0x8000u);
  ExpectStillServing();
}

TEST_F(RpcServerTest, DeviceInfoListsIdentity) {
  Arg info = link_.CallFunc(Global("benchfarm.DeviceInfo"), {});
  ASSERT_EQ(info.type_code(), TypeCode::kStr);
  EXPECT_EQ(
      info.str(),
      "board_kind=test-board\nfirmware_hash=0123456789abcdef\ncrt_version=" CRT_RPC_SERVER_VERSION
      "\nmax_packet_size=2037\ntimer_resolution_s=1e-09\ncpu_hz=72000000\ntimer=dwt\n");
}

TEST_F(RpcServerTest, ModuleGetFunctionFindsSampleOperators) {
  uint64_t get = Global("tvm.rpc.server.ModuleGetFunction");
  uint64_t lib = SystemLib();
  Arg add = link_.CallFunc(get, {Arg::ModuleHandle(lib), Arg::Str("add"), Arg::Bool(true)});
  EXPECT_EQ(add.type_code(), TypeCode::kPackedFuncHandle);
  EXPECT_EQ(add.handle(), 0x80008000u);
  Arg missing = link_.CallFunc(get, {Arg::ModuleHandle(lib), Arg::Str("nope"), Arg::Int(0)});
  EXPECT_EQ(missing.type_code(), TypeCode::kNull);
}

TEST_F(RpcServerTest, AddRoundTripThroughDeviceMemory) {
  RemoteTensor a = link_.Alloc({8}), b = link_.Alloc({8}), c = link_.Alloc({8});
  std::vector<float> va, vb;
  for (int i = 0; i < 8; ++i) {
    va.push_back(i);
    vb.push_back(10.0f * i);
  }
  link_.Put(a, va);
  link_.Put(b, vb);
  uint64_t get = Global("tvm.rpc.server.ModuleGetFunction");
  Arg add = link_.CallFunc(get, {Arg::ModuleHandle(SystemLib()), Arg::Str("add"), Arg::Int(1)});
  Arg ret = link_.CallFunc(add.handle(), {Arg::Tensor(a), Arg::Tensor(b), Arg::Tensor(c)});
  EXPECT_EQ(ret.type_code(), TypeCode::kNull);
  std::vector<float> out = link_.Get(c);
  ASSERT_EQ(out.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], 11.0f * i);
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 3u);
  for (const RemoteTensor* t : {&a, &b, &c}) {
    EXPECT_EQ(link_.Call(codec::EncodeDevFreeData(DlDevice{}, t->data)).kind, Reply::Kind::kReturn);
  }
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u);
}

TEST_F(RpcServerTest, CopyToRemoteStreamsPastTheReceiveBuffer) {
  const int n = 3 * TVM_CRT_MAX_PACKET_SIZE_BYTES;  // bytes, in one message
  RemoteTensor t = link_.Alloc({n / 4});
  std::vector<float> values(n / 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * i;
  link_.Put(t, values);
  EXPECT_EQ(link_.Get(t), values);
}

TEST_F(RpcServerTest, ChunkedCopiesWithByteOffsetAsTvmSendsThem) {
  RemoteTensor t = link_.Alloc({64});
  std::vector<float> values(64);
  for (int i = 0; i < 64; ++i) values[i] = 1.5f * i;
  const size_t block = 40;  // bytes per chunk, as TVM's client splits by max packet size
  for (size_t off = 0; off < values.size() * 4; off += block) {
    RemoteTensor chunk = t;
    chunk.byte_offset = off;
    size_t len = std::min(block, values.size() * 4 - off);
    std::string bytes(reinterpret_cast<const char*>(values.data()) + off, len);
    EXPECT_EQ(link_.Call(codec::EncodeCopyToRemote(chunk, bytes)).kind, Reply::Kind::kReturn);
  }
  RemoteTensor tail = t;
  tail.byte_offset = 200;
  Reply r = link_.Call(codec::EncodeCopyFromRemote(tail, 56));
  ASSERT_EQ(r.kind, Reply::Kind::kCopyAck);
  EXPECT_EQ(r.data, std::string(reinterpret_cast<const char*>(values.data()) + 200, 56));
}

TEST_F(RpcServerTest, CopyAmongRemoteAndStreamsNoOps) {
  RemoteTensor a = link_.Alloc({4}), b = link_.Alloc({4});
  link_.Put(a, {1, 2, 3, 4});
  EXPECT_EQ(link_.Call(codec::EncodeCopyAmongRemote(a, b)).kind, Reply::Kind::kReturn);
  EXPECT_EQ(link_.Get(b), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(
      link_.Handle(codec::EncodeSyscall(RpcCode::kDevCreateStream, {Arg::Device(DlDevice{})})), 0u);
  for (RpcCode code : {RpcCode::kDevStreamSync, RpcCode::kDevSetStream, RpcCode::kDevFreeStream}) {
    Reply r =
        link_.Call(codec::EncodeSyscall(code, {Arg::Device(DlDevice{}), Arg::OpaqueHandle(0)}));
    EXPECT_EQ(r.kind, Reply::Kind::kReturn);
  }
  EXPECT_EQ(link_.ExceptionOf(codec::EncodeSyscall(RpcCode::kDevSetDevice, {})),
            "SetDevice not supported");
  EXPECT_EQ(link_.ExceptionOf(codec::EncodeSyscall(RpcCode::kDevGetAttr, {})),
            "GetAttr not supported");
}

TEST_F(RpcServerTest, DevAllocDataRoundsAndTracks) {
  uint64_t p = link_.Handle(codec::EncodeDevAllocData(DlDevice{}, 10, 16, DlDataType{}));
  EXPECT_NE(p, 0u);
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 1u);
  EXPECT_EQ(link_.Call(codec::EncodeDevFreeData(DlDevice{}, p)).kind, Reply::Kind::kReturn);
  // A second free of the same pointer is refused, not a double free.
  EXPECT_NE(link_.ExceptionOf(codec::EncodeDevFreeData(DlDevice{}, p)), "");
  ExpectStillServing();
}

std::vector<Arg> EvaluatorArgs(uint64_t lib, const std::string& name, int number, int repeat,
                               int min_repeat_ms) {
  return {Arg::ModuleHandle(lib),
          Arg::Str(name),
          Arg::Int(1),
          Arg::Int(0),
          Arg::Int(number),
          Arg::Int(repeat),
          Arg::Int(min_repeat_ms),
          Arg::Int(100),
          Arg::Int(0),
          Arg::Int(1),
          Arg::Int(0),
          Arg::Str("")};
}

TEST_F(RpcServerTest, TimeEvaluatorTimesEverySampleOperator) {
  uint64_t te = Global("runtime.RPCTimeEvaluator");
  uint64_t lib = SystemLib();
  struct Op {
    std::string name;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Op> ops = {{"add", {{16}, {16}, {16}}},
                               {"matmul", {{8, 4}, {4, 6}, {8, 6}}},
                               {"conv2d", {{1, 2, 6, 6}, {3, 2, 3, 3}, {1, 3, 4, 4}}}};
  for (const Op& op : ops) {
    std::vector<Arg> args;
    for (const auto& shape : op.shapes) args.push_back(Arg::Tensor(link_.Alloc(shape)));
    Arg f = link_.CallFunc(te, EvaluatorArgs(lib, op.name, 2, 3, 1));
    ASSERT_EQ(f.type_code(), TypeCode::kPackedFuncHandle) << op.name;
    EXPECT_EQ(f.handle() & 0xffff8000u, 0xffff8000u);
    Arg result = link_.CallFunc(f.handle(), args);
    auto costs = DecodeTimeEvaluatorResult(result);
    ASSERT_TRUE(costs.ok()) << costs.status();
    ASSERT_EQ(costs->size(), 3u) << op.name;
    for (double c : *costs) {
      EXPECT_GT(c, 0.0) << op.name;
      EXPECT_LT(c, 0.01) << op.name;  // a few hundred flops, far below 10 ms
    }
    for (const Arg& a : args) {
      EXPECT_EQ(link_.Call(codec::EncodeDevFreeData(DlDevice{}, a.tensor().data)).kind,
                Reply::Kind::kReturn);
    }
  }
}

TEST_F(RpcServerTest, SeveralEvaluatorsLiveAtOnceAndTheOldestRetires) {
  uint64_t te = Global("runtime.RPCTimeEvaluator");
  uint64_t lib = SystemLib();
  std::vector<Arg> args;
  for (int i = 0; i < 3; ++i) args.push_back(Arg::Tensor(link_.Alloc({4})));
  std::vector<uint64_t> handles;
  for (int i = 0; i < TVM_CRT_MAX_TIME_EVALUATORS; ++i) {
    handles.push_back(link_.CallFunc(te, EvaluatorArgs(lib, "add", 1, 1 + i, 0)).handle());
  }
  EXPECT_EQ(crt_rpc_test_c_live_evaluators(), TVM_CRT_MAX_TIME_EVALUATORS);
  for (int i = 0; i < TVM_CRT_MAX_TIME_EVALUATORS; ++i) {
    auto costs = DecodeTimeEvaluatorResult(link_.CallFunc(handles[i], args));
    ASSERT_TRUE(costs.ok());
    EXPECT_EQ(costs->size(), static_cast<size_t>(1 + i));  // each keeps its own repeat
  }
  uint64_t newest = link_.CallFunc(te, EvaluatorArgs(lib, "add", 1, 2, 0)).handle();
  EXPECT_NE(newest, handles[0]);
  std::string error = link_.ExceptionOf(codec::EncodeCallFunc(handles[0], args));
  EXPECT_NE(error.find("0x00000900"), std::string::npos) << error;
  // FreeHandle retires an evaluator.
  EXPECT_EQ(link_.Call(codec::EncodeFreeHandle(newest, TypeCode::kPackedFuncHandle)).kind,
            Reply::Kind::kReturn);
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCallFunc(newest, args)), "");
}

TEST_F(RpcServerTest, TimeEvaluatorArgumentErrorsAreExceptions) {
  uint64_t te = Global("runtime.RPCTimeEvaluator");
  uint64_t lib = SystemLib();
  std::vector<Arg> few = EvaluatorArgs(lib, "add", 1, 1, 0);
  few.pop_back();
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCallFunc(te, few)).find("0x00000800"),
            std::string::npos);
  std::vector<Arg> wrong = EvaluatorArgs(lib, "add", 1, 1, 0);
  wrong[0] = Arg::Null();  // TVM's C++ host sends this for a module without a handle
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCallFunc(te, wrong)).find("0x00000801"),
            std::string::npos);
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCallFunc(te, EvaluatorArgs(lib, "nope", 1, 1, 0))), "");
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCallFunc(te, EvaluatorArgs(lib, "add", 0, 1, 0))), "");
  ExpectStillServing();
}

TEST_F(RpcServerTest, OperatorErrorsComeBackAsExceptionsWithTheMessage) {
  uint64_t get = Global("tvm.rpc.server.ModuleGetFunction");
  Arg matmul =
      link_.CallFunc(get, {Arg::ModuleHandle(SystemLib()), Arg::Str("matmul"), Arg::Int(0)});
  RemoteTensor a = link_.Alloc({2, 3}), b = link_.Alloc({4, 2}), c = link_.Alloc({2, 2});
  std::string error = link_.ExceptionOf(
      codec::EncodeCallFunc(matmul.handle(), {Arg::Tensor(a), Arg::Tensor(b), Arg::Tensor(c)}));
  EXPECT_NE(error.find("bf_ops_matmul"), std::string::npos) << error;
  ExpectStillServing();
}

TEST_F(RpcServerTest, RandomFillFillsATensorAsAutoTvmCallsIt) {
  uint64_t fill = Global("tvm.contrib.random.random_fill");
  RemoteTensor t = link_.Alloc({2, 50});
  std::vector<float> zeros(100, 0.0f);
  link_.Put(t, zeros);
  EXPECT_EQ(link_.CallFunc(fill, {Arg::Tensor(t)}).type_code(), TypeCode::kNull);
  std::vector<float> first = link_.Get(t);
  ASSERT_EQ(first.size(), 100u);
  for (float v : first) {
    EXPECT_GE(v, 1.0f);
    EXPECT_LT(v, 2.0f);
  }
  link_.CallFunc(fill, {Arg::Tensor(t)});
  EXPECT_NE(link_.Get(t), first);
  // Errors: each an Exception naming the error code; the board keeps serving.
  RemoteTensor stray = t;
  stray.data = 0x1000;
  RemoteTensor gpu = t;
  gpu.device_type = 2;
  std::vector<std::pair<std::vector<Arg>, std::string>> bad = {
      {{}, "0x00000800"},
      {{Arg::Tensor(t), Arg::Tensor(t)}, "0x00000800"},
      {{Arg::Int(3)}, "0x00000801"},
      {{Arg::Null()}, "0x00000801"},
      {{Arg::Tensor(stray)}, "not inside memory allocated by this server"},
      {{Arg::Tensor(gpu)}, "is not CPU"},
  };
  for (const auto& [args, expected] : bad) {
    std::string error = link_.ExceptionOf(codec::EncodeCallFunc(fill, args));
    EXPECT_NE(error.find(expected), std::string::npos) << error;
    ExpectStillServing();
  }
  EXPECT_EQ(link_.Get(t).size(), 100u);
}

// ---- data on the board (board_data.h) ---------------------------------------------------------

uint64_t Function(Link& link, uint64_t get, uint64_t lib, const std::string& name) {
  return link.CallFunc(get, {Arg::ModuleHandle(lib), Arg::Str(name), Arg::Int(0)}).handle();
}

bf_data_report_t DecodeReport(const Arg& bytes) {
  bf_data_report_t r{};
  EXPECT_EQ(bytes.type_code(), TypeCode::kBytes);
  EXPECT_EQ(bytes.bytes().size(), size_t{BF_DATA_REPORT_BYTES});
  if (bytes.bytes().size() != BF_DATA_REPORT_BYTES) return r;
  std::memcpy(&r.mismatches, bytes.bytes().data(), 8);
  std::memcpy(&r.first_index, bytes.bytes().data() + 8, 8);
  std::memcpy(&r.got, bytes.bytes().data() + 16, 8);
  std::memcpy(&r.want, bytes.bytes().data() + 24, 8);
  std::memcpy(&r.max_abs_error, bytes.bytes().data() + 32, 8);
  return r;
}

// A tensor at `address` as PrepareArgs made it.
RemoteTensor At(const std::string& addresses, size_t i, std::vector<int64_t> shape,
                DlDataType dtype = DlDataType{}) {
  RemoteTensor t;
  EXPECT_GE(addresses.size(), 8 * (i + 1));
  if (addresses.size() >= 8 * (i + 1)) std::memcpy(&t.data, addresses.data() + 8 * i, 8);
  t.shape = std::move(shape);
  t.dtype_code = dtype.code;
  t.dtype_bits = dtype.bits;
  t.dtype_lanes = dtype.lanes;
  return t;
}

device::TensorArg ArgOf(std::vector<int64_t> shape, DlDataType dtype, double lo, double hi) {
  device::TensorArg a;
  a.shape = std::move(shape);
  a.dtype = dtype;
  a.lo = lo;
  a.hi = hi;
  return a;
}

TEST_F(RpcServerTest, PrepareArgsFillsInputsWithTheGeneratorsBytesAndPoisonsTheOutput) {
  const DlDataType i8{kDLInt, 8, 1}, f32{};
  const std::string spec = device::EncodePrepareSpec(
      {ArgOf({3, 7}, i8, -5, 5), ArgOf({2}, f32, -1, 1), ArgOf({4}, f32, 0, 0)});
  const size_t before = crt_rpc_server_live_allocations(&g_server);
  Arg addresses =
      link_.CallFunc(Global("benchfarm.PrepareArgs"),
                     {Arg::Int(42), Arg::Float(0), Arg::Float(0), Arg::Str(""), Arg::Bytes(spec)});
  ASSERT_EQ(addresses.type_code(), TypeCode::kBytes);
  ASSERT_EQ(addresses.bytes().size(), 24u);  // two inputs and out: no reference
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), before + 3);
  // The host reads them as its own allocations.
  Reply r = link_.Call(codec::EncodeCopyFromRemote(At(addresses.bytes(), 0, {3, 7}, i8), 21));
  std::string want(21, '\0');
  ASSERT_EQ(bf_data_fill(want.data(), 21, DLDataType{kDLInt, 8, 1}, 42, 0, -5, 5), 0);
  EXPECT_EQ(r.data, want);
  std::vector<float> b = link_.Get(At(addresses.bytes(), 1, {2}));
  std::vector<float> want_b(2);
  ASSERT_EQ(bf_data_fill(want_b.data(), 2, DLDataType{kDLFloat, 32, 1}, 42, 1, -1, 1), 0);
  EXPECT_EQ(b, want_b);
  for (float v : link_.Get(At(addresses.bytes(), 2, {4}))) EXPECT_TRUE(std::isnan(v));
  // The next set replaces it; ReleaseArgs frees it.
  link_.CallFunc(Global("benchfarm.PrepareArgs"),
                 {Arg::Int(1), Arg::Float(0), Arg::Float(0), Arg::Str(""), Arg::Bytes(spec)});
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), before + 3);
  EXPECT_EQ(link_.CallFunc(Global("benchfarm.ReleaseArgs"), {}).type_code(), TypeCode::kNull);
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), before);
  ExpectStillServing();
}

TEST_F(RpcServerTest, CheckCallPoisonsCallsAndComparesOnTheBoard) {
  const uint64_t get = Global("tvm.rpc.server.ModuleGetFunction"), lib = SystemLib();
  const uint64_t prepare = Global("benchfarm.PrepareArgs"), check = Global("benchfarm.CheckCall");
  const DlDataType f32{};
  Arg addresses = link_.CallFunc(
      prepare, {Arg::Int(7), Arg::Float(1e-4), Arg::Float(1e-4), Arg::Str("add_reference"),
                Arg::Bytes(device::EncodePrepareSpec(
                    {ArgOf({16}, f32, -1, 1), ArgOf({16}, f32, -1, 1), ArgOf({16}, f32, 0, 0)}))});
  ASSERT_EQ(addresses.bytes().size(), 32u);  // a, b, c and the reference's r
  const RemoteTensor a = At(addresses.bytes(), 0, {16}), b = At(addresses.bytes(), 1, {16}),
                     c = At(addresses.bytes(), 2, {16}), r = At(addresses.bytes(), 3, {16});
  std::vector<float> sum = link_.Get(a), bv = link_.Get(b);
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += bv[i];
  EXPECT_EQ(link_.Get(r), sum);                             // the reference ran on the board
  for (float v : link_.Get(c)) EXPECT_TRUE(std::isnan(v));  // poisoned
  const uint64_t add = Function(link_, get, lib, "add");
  bf_data_report_t report = DecodeReport(link_.CallFunc(check, {Arg::PackedFuncHandle(add)}));
  EXPECT_EQ(report.mismatches, 0u);
  EXPECT_EQ(report.first_index, -1);
  // A wrong reference output: every element differs, the first is named with both values.
  std::vector<float> wrong = link_.Get(r);
  wrong[0] += 1.0f;
  link_.Put(r, wrong);
  report = DecodeReport(link_.CallFunc(check, {Arg::PackedFuncHandle(add)}));
  EXPECT_EQ(report.mismatches, 1u);
  EXPECT_EQ(report.first_index, 0);
  EXPECT_EQ(report.want, wrong[0]);
  EXPECT_NEAR(report.max_abs_error, 1.0, 1e-6);
  // Bytes after the output that changed (as a kernel writing past its end changes them): an error
  // saying so, and the guard is watched again for the next call.
  RemoteTensor guard = c;
  guard.byte_offset = 16 * 4;
  guard.shape = {4};
  guard.dtype_code = kDLUInt;
  guard.dtype_bits = 8;
  ASSERT_EQ(link_.Call(codec::EncodeCopyToRemote(guard, std::string(4, '\x11'))).kind,
            Reply::Kind::kReturn);
  std::string past = link_.ExceptionOf(codec::EncodeCallFunc(check, {Arg::PackedFuncHandle(add)}));
  EXPECT_NE(past.find("the candidate wrote past the end of its output"), std::string::npos) << past;
  EXPECT_EQ(DecodeReport(link_.CallFunc(check, {Arg::PackedFuncHandle(add)})).first_index, 0);
  // A candidate that fails returns its error.
  const uint64_t matmul = Function(link_, get, lib, "matmul");
  std::string error =
      link_.ExceptionOf(codec::EncodeCallFunc(check, {Arg::PackedFuncHandle(matmul)}));
  EXPECT_NE(error.find("bf_ops_matmul"), std::string::npos) << error;
  // TimeArgs times a function with the set: the evaluator's result, one cost per repeat.
  Arg costs = link_.CallFunc(Global("benchfarm.TimeArgs"),
                             {Arg::Str("add"), Arg::Int(2), Arg::Int(3), Arg::Int(0), Arg::Int(100),
                              Arg::Int(0), Arg::Int(1)});
  ASSERT_EQ(costs.type_code(), TypeCode::kBytes);
  EXPECT_EQ(costs.bytes().size(), 3u * 8);
  // Freeing a tensor of the set drops it: CheckCall and TimeArgs never touch freed memory.
  ASSERT_EQ(link_.Call(codec::EncodeDevFreeData(DlDevice{}, c.data)).kind, Reply::Kind::kReturn);
  error = link_.ExceptionOf(codec::EncodeCallFunc(check, {Arg::PackedFuncHandle(add)}));
  EXPECT_NE(error.find("no benchfarm.PrepareArgs"), std::string::npos) << error;
  error = link_.ExceptionOf(codec::EncodeCallFunc(
      Global("benchfarm.TimeArgs"), {Arg::Str("add"), Arg::Int(1), Arg::Int(1), Arg::Int(0),
                                     Arg::Int(100), Arg::Int(0), Arg::Int(1)}));
  EXPECT_NE(error.find("no benchfarm.PrepareArgs"), std::string::npos) << error;
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u);  // the rest went with it
  ExpectStillServing();
}

TEST_F(RpcServerTest, AReferenceThatFailsOrWritesPastItsOutputLeavesNoSet) {
  const uint64_t prepare = Global("benchfarm.PrepareArgs");
  const DlDataType f32{};
  // matmul's reference on add's shapes fails with its own message, named.
  std::string error = link_.ExceptionOf(codec::EncodeCallFunc(
      prepare, {Arg::Int(7), Arg::Float(0), Arg::Float(0), Arg::Str("matmul_reference"),
                Arg::Bytes(device::EncodePrepareSpec(
                    {ArgOf({16}, f32, -1, 1), ArgOf({16}, f32, -1, 1), ArgOf({16}, f32, 0, 0)}))}));
  EXPECT_NE(error.find("the reference matmul_reference: "), std::string::npos) << error;
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u);
  // add_reference into an output shorter than its inputs writes past its end.
  error = link_.ExceptionOf(codec::EncodeCallFunc(
      prepare, {Arg::Int(7), Arg::Float(0), Arg::Float(0), Arg::Str("add_reference"),
                Arg::Bytes(device::EncodePrepareSpec(
                    {ArgOf({64}, f32, -1, 1), ArgOf({64}, f32, -1, 1), ArgOf({8}, f32, 0, 0)}))}));
  EXPECT_TRUE(error.find("the reference add_reference wrote past the end of its output") !=
                  std::string::npos ||
              error.find("the reference add_reference: ") != std::string::npos)
      << error;
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u);
  error = link_.ExceptionOf(codec::EncodeCallFunc(
      prepare,
      {Arg::Int(7), Arg::Float(0), Arg::Float(0), Arg::Str("nope"),
       Arg::Bytes(device::EncodePrepareSpec({ArgOf({4}, f32, -1, 1), ArgOf({4}, f32, 0, 0)}))}));
  EXPECT_NE(error.find("the reference nope is not in the system library"), std::string::npos)
      << error;
  ExpectStillServing();
}

TEST_F(RpcServerTest, PrepareArgsRefusesBadArgumentsAndANewSessionDropsIt) {
  const uint64_t prepare = Global("benchfarm.PrepareArgs"), check = Global("benchfarm.CheckCall");
  const DlDataType f32{}, i8{kDLInt, 8, 1};
  const std::string good =
      device::EncodePrepareSpec({ArgOf({4}, f32, -1, 1), ArgOf({4}, f32, 0, 0)});
  auto with = [](Arg seed, Arg atol, Arg ref, Arg spec) {
    return std::vector<Arg>{seed, atol, Arg::Float(0), ref, spec};
  };
  std::string three_dims =
      device::EncodePrepareSpec({ArgOf({4}, f32, -1, 1), ArgOf({4}, f32, 0, 0)});
  three_dims[5] = 9;  // ndim of the first argument
  std::string huge = device::EncodePrepareSpec(
      {ArgOf({int64_t{1} << 40, int64_t{1} << 40}, f32, -1, 1), ArgOf({4}, f32, 0, 0)});
  std::vector<std::pair<std::vector<Arg>, std::string>> bad = {
      {{Arg::Int(1)}, "expects (seed, atol, rtol, reference, spec)"},
      {with(Arg::Float(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(good)),
       "expects (Int, Float, Float, Str, Bytes)"},
      {with(Arg::Int(1), Arg::Float(-1), Arg::Str(""), Arg::Bytes(good)), "must be >= 0"},
      {with(Arg::Int(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(good.substr(0, 10))), "cut short"},
      {with(Arg::Int(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(good + "x")),
       "bytes after the last argument"},
      {with(Arg::Int(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(std::string(1, '\x01'))),
       "count must be"},
      {with(Arg::Int(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(three_dims)), "ndim"},
      {with(Arg::Int(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(huge)), "too large"},
      {with(
           Arg::Int(1), Arg::Float(0), Arg::Str(""),
           Arg::Bytes(device::EncodePrepareSpec({ArgOf({4}, i8, -200, 0), ArgOf({4}, f32, 0, 0)}))),
       "not a range of its dtype"},
      {with(Arg::Int(1), Arg::Float(0), Arg::Str(""),
            Arg::Bytes(device::EncodePrepareSpec(
                {ArgOf({4}, DlDataType{kDLFloat, 8, 1}, -1, 1), ArgOf({4}, f32, 0, 0)}))),
       "a dtype benchfarm cannot fill or check"},
  };
  for (const auto& [args, expected] : bad) {
    std::string error = link_.ExceptionOf(codec::EncodeCallFunc(prepare, args));
    EXPECT_NE(error.find(expected), std::string::npos) << error;
    EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u) << expected;
  }
  std::string error = link_.ExceptionOf(codec::EncodeCallFunc(check, {Arg::Int(1)}));
  EXPECT_NE(error.find("expects (function)"), std::string::npos) << error;
  // Without a reference there is nothing to check against.
  link_.CallFunc(prepare, with(Arg::Int(1), Arg::Float(0), Arg::Str(""), Arg::Bytes(good)));
  error = link_.ExceptionOf(codec::EncodeCallFunc(check, {Arg::PackedFuncHandle(0x80008000u)}));
  EXPECT_NE(error.find("no benchfarm.PrepareArgs with a reference"), std::string::npos) << error;
  link_.Connect();  // a new session frees the set
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u);
  error = link_.ExceptionOf(codec::EncodeCallFunc(
      Global("benchfarm.TimeArgs"), {Arg::Str("add"), Arg::Int(1), Arg::Int(1), Arg::Int(0),
                                     Arg::Int(100), Arg::Int(0), Arg::Int(1)}));
  EXPECT_NE(error.find("no benchfarm.PrepareArgs"), std::string::npos) << error;
  error = link_.ExceptionOf(codec::EncodeCallFunc(
      Global("benchfarm.TimeArgs"), {Arg::Str("add"), Arg::Int(0), Arg::Int(1), Arg::Int(0),
                                     Arg::Int(100), Arg::Int(0), Arg::Int(1)}));
  EXPECT_NE(error.find("need number >= 1"), std::string::npos) << error;
  error = link_.ExceptionOf(codec::EncodeCallFunc(Global("benchfarm.TimeArgs"), {Arg::Str("add")}));
  EXPECT_NE(error.find("expects (name, number"), std::string::npos) << error;
  ExpectStillServing();
}

// ---- robustness ------------------------------------------------------------------------------

TEST_F(RpcServerTest, BadCrcIsDroppedAndTheNextRequestIsAnswered) {
  std::string wire = link_.Frame(codec::EncodeGetGlobalFunc("runtime.SystemLib"));
  wire[wire.size() - 4] ^= 0x01;  // a payload byte (the last two are the CRC)
  EXPECT_TRUE(link_.Deliver(wire).empty());
  EXPECT_EQ(crt_rpc_server_counters(&g_server)->discarded, 1u);
  ExpectStillServing();
}

TEST_F(RpcServerTest, WrongSessionIdIsDroppedCleanly) {
  // A Normal message framed by hand with a foreign session id.
  std::string packet = codec::EncodeGetGlobalFunc("runtime.SystemLib");
  std::string body = std::string("\x12\x34\x10", 3) + packet;
  std::string wire;
  crt_framer_t framer;
  crt_framer_init(
      &framer,
      [](void* ctx, const uint8_t* d, size_t n) -> tvm_crt_error_t {
        static_cast<std::string*>(ctx)->append(reinterpret_cast<const char*>(d), n);
        return kTvmErrorNoError;
      },
      &wire);
  ASSERT_EQ(
      crt_framer_write_packet(&framer, reinterpret_cast<const uint8_t*>(body.data()), body.size()),
      kTvmErrorNoError);
  EXPECT_TRUE(link_.Deliver(wire).empty());
  ExpectStillServing();
}

TEST_F(RpcServerTest, GarbageBetweenPacketsIsSkipped) {
  std::string good = link_.Frame(codec::EncodeGetGlobalFunc("runtime.SystemLib"));
  std::string wire = std::string("garbage\xff\x01\xfe junk", 16) + good + "\x00\x42trailing";
  std::vector<std::string> replies = link_.Deliver(wire);
  ASSERT_EQ(replies.size(), 1u);
  auto value = DecodeReturnValue(*DecodeReply(replies[0]));
  ASSERT_TRUE(value.ok());
  EXPECT_EQ(value->handle(), 0x80028000u);
}

TEST_F(RpcServerTest, ProtocolViolationsGetExceptions) {
  std::string get = codec::EncodeGetGlobalFunc("runtime.SystemLib");
  std::string truncated = get.substr(0, get.size() - 3);  // packet_nbytes now too large
  std::string overlong = get + "xyz";                     // packet_nbytes now too small
  std::string trailing = get + "xyz";
  trailing[0] = static_cast<char>(trailing[0] + 3);  // consistent length, bytes after the args
  std::string short_header("\x02\x00\x00", 3);
  std::vector<std::string> bad = {
      truncated,
      overlong,
      trailing,
      short_header,
      codec::EncodeSyscall(static_cast<RpcCode>(99), {}),
      codec::EncodeSyscall(RpcCode::kNone, {}),
      codec::EncodeSyscall(RpcCode::kReturn, {}),
      codec::EncodeSyscall(RpcCode::kException, {}),
      codec::EncodeSyscall(RpcCode::kCopyAck, {}),
      codec::EncodeSyscall(RpcCode::kDevGetCurrentStream, {}),
      codec::EncodeSyscall(RpcCode::kGetGlobalFunc, {Arg::Int(3)}),  // wrong type
      codec::EncodeSyscall(RpcCode::kGetGlobalFunc, {}),             // wrong count
      codec::EncodeCallFunc(0x80028003u, {Arg::NDArray({})}),        // NDArray arg
      codec::EncodeFreeHandle(0x1234, TypeCode::kNDArrayHandle),
      codec::EncodeCallFunc(0, {}),                  // NULL handle
      codec::EncodeCallFunc(0x80018000u, {}),        // no module 1
      codec::EncodeCallFunc(0x80028000u + 100, {}),  // index too big
  };
  // An unknown type code, patched into a valid CallFunc.
  std::string bad_tcode = codec::EncodeCallFunc(0x80028003u, {Arg::Int(1)});
  bad_tcode[8 + 4 + 8 + 4] = 77;
  bad.push_back(bad_tcode);
  for (size_t i = 0; i < bad.size(); ++i) {
    std::string message = link_.ExceptionOf(bad[i]);
    EXPECT_NE(message, "") << "case " << i;
    ExpectStillServing();
  }
}

TEST_F(RpcServerTest, OversizedRequestIsAnsweredNotBuffered) {
  std::string big = codec::EncodeCallFunc(0x80028003u, {Arg::Str(std::string(4096, 'x'))});
  EXPECT_NE(link_.ExceptionOf(big).find("exceeds the receive buffer"), std::string::npos);
  ExpectStillServing();
}

TEST_F(RpcServerTest, PointersFromTheWireAreNeverTrusted) {
  RemoteTensor t = link_.Alloc({4});
  RemoteTensor stray = t;
  stray.data = 0x1000;  // not ours
  RemoteTensor past = t;
  past.byte_offset = 8;  // 8 + 16 bytes > the 16 allocated
  RemoteTensor big = t;
  big.shape = {1000};
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCopyToRemote(stray, std::string(16, 'a'))), "");
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCopyToRemote(past, std::string(16, 'a'))), "");
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCopyFromRemote(stray, 16)), "");
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCopyFromRemote(t, 17)), "");
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCopyAmongRemote(t, stray)), "");
  EXPECT_NE(link_.ExceptionOf(codec::EncodeDevFreeData(DlDevice{}, 0x1000)), "");
  uint64_t get = Global("tvm.rpc.server.ModuleGetFunction");
  Arg add = link_.CallFunc(get, {Arg::ModuleHandle(SystemLib()), Arg::Str("add"), Arg::Int(0)});
  EXPECT_NE(link_.ExceptionOf(codec::EncodeCallFunc(
                add.handle(), {Arg::Tensor(big), Arg::Tensor(t), Arg::Tensor(t)})),
            "");
  // CopyToRemote whose nbytes disagrees with the payload it carries.
  std::string lie = codec::EncodeCopyToRemote(t, std::string(16, 'a'));
  lie[lie.size() - 16 - 8] = 8;
  EXPECT_NE(link_.ExceptionOf(lie), "");
  link_.Put(t, {1, 2, 3, 4});
  EXPECT_EQ(link_.Get(t), (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(RpcServerTest, NewSessionFreesWhatThePreviousHostLeft) {
  link_.Alloc({16});
  link_.Alloc({16});
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 2u);
  link_.Connect();  // the host restarted
  EXPECT_EQ(crt_rpc_server_live_allocations(&g_server), 0u);
  EXPECT_EQ(crt_rpc_server_counters(&g_server)->sessions, 2u);
  ExpectStillServing();
}

TEST_F(RpcServerTest, ShutdownStopsTheServerWithoutAReply) {
  EXPECT_TRUE(link_.Deliver(link_.Frame(codec::EncodeShutdown())).empty());
  EXPECT_EQ(link_.last_code(), kTvmErrorPlatformShutdown);
  const uint8_t more[] = {0xFF, 0xFD};
  EXPECT_EQ(crt_rpc_server_receive(&g_server, more, sizeof(more)), kTvmErrorPlatformShutdown);
}

TEST_F(RpcServerTest, LogsReachTheHost) {
  EXPECT_EQ(crt_rpc_server_logf(&g_server, "board says %d\n", 42), kTvmErrorNoError);
  link_.Pump();
  ASSERT_EQ(link_.logs().size(), 1u);
  EXPECT_EQ(link_.logs()[0], "board says 42");
}

TEST(RpcServerHeaders, CompileAsC) { EXPECT_GT(crt_rpc_test_c_server_bytes(), 2048u); }

}  // namespace
