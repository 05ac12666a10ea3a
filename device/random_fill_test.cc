// tvm.contrib.random.random_fill on the real host-process board (//crt/host:board over
// ChildProcessTransport pipes), driven the way AutoTVM's RPCRunner drives it before a
// measurement: GetGlobalFunc("tvm.contrib.random.random_fill") over MinRPC, a tensor allocated
// on the board (DevAllocDataWithScope, as tvm.nd.empty on a remote device does), CallFunc with
// the tensor, CopyFromRemote. The values must have changed, be finite, not all equal, and two
// fills must differ. Bad calls come back as typed errors and the board keeps serving.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "device/host_session.h"
#include "device/pipe_transport.h"
#include "device/rpc_client.h"

namespace benchfarm::device {
namespace {

std::string BoardPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") +
         "/crt/host/board";
}

absl::Time Soon() { return absl::Now() + absl::Seconds(20); }

std::vector<float> ToFloats(const std::string& s) {
  std::vector<float> v(s.size() / sizeof(float));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(float));
  return v;
}

class RandomFillTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(board_.Open().ok());
    SessionOptions options;
    options.board_id = "hp0";
    session_ = std::make_unique<HostSession>(&board_, options);
    absl::Status s = session_->Connect(Soon());
    ASSERT_TRUE(s.ok()) << s;
    client_ = std::make_unique<RpcClient>(session_.get());
  }

  // remote.get_function("tvm.contrib.random.random_fill")
  uint64_t RandomFill() {
    absl::StatusOr<uint64_t> f = client_->GetGlobalFunc("tvm.contrib.random.random_fill", Soon());
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? *f : 0;
  }

  // random_fill(tensor), then the tensor's bytes.
  std::string FillAndRead(uint64_t fill, const RemoteTensor& t) {
    absl::StatusOr<Arg> r = client_->CallFunc(fill, {Arg::Tensor(t)}, Soon());
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) {
      EXPECT_EQ(r->type_code(), TypeCode::kNull);
    }
    absl::StatusOr<std::string> bytes = client_->CopyFromRemote(t, t.NumBytes(), Soon());
    EXPECT_TRUE(bytes.ok()) << bytes.status();
    return bytes.ok() ? *bytes : std::string();
  }

  ChildProcessTransport board_{{BoardPath()}};
  std::unique_ptr<HostSession> session_;
  std::unique_ptr<RpcClient> client_;
};

TEST_F(RandomFillTest, FillsAFloat32TensorAsAutoTvmDoes) {
  uint64_t fill = RandomFill();
  EXPECT_EQ(fill, 0x80028004u);  // TVM v0.18's CRT index 4
  absl::StatusOr<RemoteTensor> t = client_->AllocTensor({16, 16}, DlDataType{}, Soon());
  ASSERT_TRUE(t.ok()) << t.status();
  const std::string zeros(t->NumBytes(), '\0');
  ASSERT_TRUE(client_->CopyToRemote(*t, zeros, Soon()).ok());

  std::vector<float> first = ToFloats(FillAndRead(fill, *t));
  ASSERT_EQ(first.size(), 256u);
  size_t changed = 0;
  for (float v : first) {
    ASSERT_TRUE(std::isfinite(v)) << v;
    EXPECT_GE(v, 1.0f);  // uniform in [1, 2)
    EXPECT_LT(v, 2.0f);
    changed += v != 0.0f;
  }
  EXPECT_EQ(changed, first.size()) << "every value differs from what was there";
  EXPECT_GT(std::set<float>(first.begin(), first.end()).size(), 200u) << "not all equal";

  std::vector<float> second = ToFloats(FillAndRead(fill, *t));
  ASSERT_EQ(second.size(), first.size());
  EXPECT_NE(second, first) << "two fills differ";
  size_t same = 0;
  for (size_t i = 0; i < first.size(); ++i) same += first[i] == second[i];
  EXPECT_LT(same, 8u);
  EXPECT_TRUE(client_->FreeTensor(*t, Soon()).ok());
}

TEST_F(RandomFillTest, OtherDtypesAndABiggerTensor) {
  uint64_t fill = RandomFill();
  DlDataType i8;
  i8.code = 0;
  i8.bits = 8;
  absl::StatusOr<RemoteTensor> bytes = client_->AllocTensor({1024}, i8, Soon());
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  ASSERT_TRUE(client_->CopyToRemote(*bytes, std::string(1024, '\0'), Soon()).ok());
  std::string got = FillAndRead(fill, *bytes);
  ASSERT_EQ(got.size(), 1024u);
  EXPECT_GT(std::set<char>(got.begin(), got.end()).size(), 200u) << "raw random bytes";

  DlDataType f64;
  f64.bits = 64;
  absl::StatusOr<RemoteTensor> doubles = client_->AllocTensor({3, 5}, f64, Soon());
  ASSERT_TRUE(doubles.ok()) << doubles.status();
  std::string raw = FillAndRead(fill, *doubles);
  ASSERT_EQ(raw.size(), 15 * sizeof(double));
  for (size_t i = 0; i < 15; ++i) {
    double v;
    std::memcpy(&v, raw.data() + i * sizeof(double), sizeof(v));
    EXPECT_GE(v, 1.0);
    EXPECT_LT(v, 2.0);
  }

  // Larger than one packet: the fill happens on the board, only the read is chunked.
  absl::StatusOr<RemoteTensor> big = client_->AllocTensor({64, 64}, DlDataType{}, Soon());
  ASSERT_TRUE(big.ok()) << big.status();
  std::vector<float> values = ToFloats(FillAndRead(fill, *big));
  ASSERT_EQ(values.size(), 4096u);
  for (float v : values) ASSERT_TRUE(std::isfinite(v) && v >= 1.0f && v < 2.0f) << v;
}

TEST_F(RandomFillTest, BadCallsAreErrorsAndTheBoardKeepsServing) {
  uint64_t fill = RandomFill();
  absl::StatusOr<RemoteTensor> t = client_->AllocTensor({8}, DlDataType{}, Soon());
  ASSERT_TRUE(t.ok()) << t.status();
  const std::string sentinel(32, '\x7f');
  ASSERT_TRUE(client_->CopyToRemote(*t, sentinel, Soon()).ok());

  RemoteTensor stray = *t;
  stray.data = 0x1000;  // not memory the board handed out
  RemoteTensor gpu = *t;
  gpu.device_type = 2;  // kDLCUDA
  struct Case {
    const char* what;
    std::vector<Arg> args;
    const char* expect;  // in the board's message
  };
  for (const Case& c : std::vector<Case>{
           {"no arguments", {}, "0x00000800"},
           {"two tensors", {Arg::Tensor(*t), Arg::Tensor(*t)}, "0x00000800"},
           {"an int", {Arg::Int(7)}, "0x00000801"},
           {"None", {Arg::Null()}, "0x00000801"},
           {"a foreign pointer", {Arg::Tensor(stray)}, "not inside memory allocated"},
           {"a GPU tensor", {Arg::Tensor(gpu)}, "is not CPU"},
       }) {
    absl::StatusOr<Arg> r = client_->CallFunc(fill, c.args, Soon());
    ASSERT_FALSE(r.ok()) << c.what;
    EXPECT_TRUE(absl::IsUnknown(r.status())) << c.what << ": " << r.status();
    EXPECT_NE(r.status().message().find(c.expect), absl::string_view::npos)
        << c.what << ": " << r.status();
    // The board is still there and answers.
    absl::StatusOr<DeviceInfo> info = client_->GetDeviceInfo(Soon());
    ASSERT_TRUE(info.ok()) << c.what << ": " << info.status();
  }
  // No failed call touched the tensor, and a good call still works.
  absl::StatusOr<std::string> untouched = client_->CopyFromRemote(*t, 32, Soon());
  ASSERT_TRUE(untouched.ok()) << untouched.status();
  EXPECT_EQ(*untouched, sentinel);
  for (float v : ToFloats(FillAndRead(fill, *t))) EXPECT_GE(v, 1.0f);
  // A freed tensor is no longer the board's to fill.
  ASSERT_TRUE(client_->FreeTensor(*t, Soon()).ok());
  absl::StatusOr<Arg> freed = client_->CallFunc(fill, {Arg::Tensor(*t)}, Soon());
  EXPECT_TRUE(absl::IsUnknown(freed.status())) << freed.status();
  EXPECT_TRUE(client_->GetMaxPacketSize(Soon()).ok());
}

}  // namespace
}  // namespace benchfarm::device
