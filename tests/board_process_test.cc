// End to end: //crt/host:board as a child process, driven through the whole
// protocol over its stdin/stdout pipes and over its pseudo-terminal (opened
// like a USB-serial port, termios raw). A minimal host — crt's own session
// code plus //device:minrpc_codec — does the handshake, reads DeviceInfo,
// runs every sample operator on seeded inputs and checks the outputs against
// the reference kernels computed here, times each operator with the on-device
// time evaluator, round-trips a 1 MiB tensor, and shuts the board down.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "benchfarm/ops/reference.h"
#include "device/minrpc_codec.h"
#include "process/subprocess.h"
#include "tvm/runtime/crt/link/session.h"

namespace {

using benchfarm::device::Arg;
using benchfarm::device::DecodeCallResult;
using benchfarm::device::DecodeReply;
using benchfarm::device::DecodeReturnValue;
using benchfarm::device::DecodeTimeEvaluatorResult;
using benchfarm::device::DlDevice;
using benchfarm::device::RemoteTensor;
using benchfarm::device::Reply;
using benchfarm::device::TypeCode;
using benchfarm::process::StdioMode;
using benchfarm::process::Subprocess;
using benchfarm::process::SubprocessOptions;
namespace codec = benchfarm::device;
using Clock = std::chrono::steady_clock;

constexpr auto kDeadline = std::chrono::seconds(20);

std::string BoardPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") +
         "/crt/host/board";
}

std::string Fnv1a64Hex(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) return "";
  uint64_t h = 0xcbf29ce484222325ull;
  int c;
  while ((c = std::fgetc(f)) != EOF) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  std::fclose(f);
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

enum class Wire { kPipes, kPty };

// The board process and the host end of its link.
class Board {
 public:
  explicit Board(Wire wire, std::vector<std::string> extra_args = {}) : rx_(2 << 20) {
    SubprocessOptions options;
    options.argv = {BoardPath()};
    options.argv.insert(options.argv.end(), extra_args.begin(), extra_args.end());
    if (wire == Wire::kPty) options.argv.push_back("--pty");
    options.stdin_mode = StdioMode::kPipe;
    options.stdout_mode = StdioMode::kPipe;
    auto started = Subprocess::Start(options);
    EXPECT_TRUE(started.ok()) << started.status();
    if (!started.ok()) return;
    process_ = *std::move(started);
    if (wire == Wire::kPipes) {
      write_fd_ = process_->TakeStdin();
      read_fd_ = process_->TakeStdout();
    } else {
      stdin_fd_ = process_->TakeStdin();
      stdout_fd_ = process_->TakeStdout();
      std::string line = ReadLine(stdout_fd_);
      EXPECT_EQ(line.rfind("pty: ", 0), 0u) << line;
      std::string pty = line.substr(5);
      int fd = open(pty.c_str(), O_RDWR | O_NOCTTY);
      EXPECT_GE(fd, 0) << pty;
      struct termios tio;
      EXPECT_EQ(tcgetattr(fd, &tio), 0);
      cfmakeraw(&tio);
      EXPECT_EQ(tcsetattr(fd, TCSANOW, &tio), 0);
      read_fd_ = write_fd_ = fd;
    }
    crt_session_init(&session_, &Board::Write, this, rx_.data(), rx_.size(), &Board::OnMessage,
                     this);
  }

  // The board process, if still running, is killed and reaped with process_.
  ~Board() {
    for (int fd : {read_fd_, stdin_fd_, stdout_fd_}) {
      if (fd >= 0) close(fd);
    }
    if (write_fd_ != read_fd_ && write_fd_ >= 0) close(write_fd_);
  }

  void Connect() {
    ASSERT_EQ(crt_session_initialize(&session_, 0x5a), kTvmErrorNoError);
    ASSERT_EQ(crt_session_start(&session_), kTvmErrorNoError);
    auto end = Clock::now() + kDeadline;
    while (!crt_session_is_established(&session_)) {
      ASSERT_TRUE(ReadSome(end)) << "no handshake reply";
    }
  }

  Reply Call(const std::string& packet) {
    replies_.clear();
    EXPECT_EQ(crt_session_send(&session_, kCrtSessionNormal,
                               reinterpret_cast<const uint8_t*>(packet.data()), packet.size()),
              kTvmErrorNoError);
    auto end = Clock::now() + kDeadline;
    while (replies_.empty()) {
      if (!ReadSome(end)) {
        ADD_FAILURE() << "no reply before the deadline";
        return Reply{};
      }
    }
    auto reply = DecodeReply(replies_.front());
    EXPECT_TRUE(reply.ok()) << reply.status();
    return reply.ok() ? *reply : Reply{};
  }

  void Send(const std::string& packet) {
    EXPECT_EQ(crt_session_send(&session_, kCrtSessionNormal,
                               reinterpret_cast<const uint8_t*>(packet.data()), packet.size()),
              kTvmErrorNoError);
  }

  uint64_t Handle(const std::string& packet) {
    auto v = DecodeReturnValue(Call(packet));
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? v->handle() : 0;
  }

  Arg CallFunc(uint64_t f, const std::vector<Arg>& args) {
    auto v = DecodeCallResult(Call(codec::EncodeCallFunc(f, args)));
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() ? *v : Arg();
  }

  RemoteTensor Alloc(std::vector<int64_t> shape) {
    RemoteTensor t;
    t.shape = std::move(shape);
    t.data = Handle(codec::EncodeDevAllocDataWithScope(t));
    return t;
  }

  void Put(const RemoteTensor& t, const std::string& bytes) {
    Reply r = Call(codec::EncodeCopyToRemote(t, bytes));
    EXPECT_EQ(r.kind, Reply::Kind::kReturn) << r.message;
  }

  std::string Get(const RemoteTensor& t) {
    Reply r = Call(codec::EncodeCopyFromRemote(t, t.NumBytes()));
    EXPECT_EQ(r.kind, Reply::Kind::kCopyAck) << r.message;
    return r.data;
  }

  pid_t pid() const { return process_ == nullptr ? -1 : process_->pid(); }

  // Waits for the board to exit; DeadlineExceeded if it still runs after kDeadline.
  absl::StatusOr<benchfarm::base::ProcessExit> WaitExit() {
    if (process_ == nullptr) return absl::FailedPreconditionError("the board did not start");
    return process_->WaitExit(absl::Now() + absl::FromChrono(kDeadline));
  }

  void WriteRaw(const std::string& bytes) {
    EXPECT_EQ(Write(this, reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()),
              kTvmErrorNoError);
  }

  // Closes the host's write side (end of input for a stdin board).
  void CloseInput() {
    close(write_fd_);
    if (read_fd_ == write_fd_) read_fd_ = -1;
    write_fd_ = -1;
  }

 private:
  static std::string ReadLine(int fd) {
    std::string line;
    char c;
    while (read(fd, &c, 1) == 1 && c != '\n') line += c;
    return line;
  }

  bool ReadSome(Clock::time_point end) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count();
    if (left <= 0) return false;
    struct pollfd p = {read_fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    uint8_t buf[65536];
    ssize_t n = read(read_fd_, buf, sizeof(buf));
    if (n <= 0) return false;
    size_t pos = 0;
    while (pos < static_cast<size_t>(n)) {
      size_t consumed = 0;
      crt_session_receive(&session_, buf + pos, n - pos, &consumed);
      pos += consumed == 0 ? 1 : consumed;
    }
    return true;
  }

  static tvm_crt_error_t Write(void* ctx, const uint8_t* data, size_t n) {
    Board* b = static_cast<Board*>(ctx);
    while (n > 0) {
      ssize_t w = write(b->write_fd_, data, n);
      if (w <= 0) return kTvmErrorWriteStreamShortWrite;
      data += w;
      n -= w;
    }
    return kTvmErrorNoError;
  }

  static tvm_crt_error_t OnMessage(void* ctx, crt_session_message_type_t type, const uint8_t* body,
                                   size_t n) {
    if (type == kCrtSessionNormal) {
      static_cast<Board*>(ctx)->replies_.emplace_back(reinterpret_cast<const char*>(body), n);
    }
    return kTvmErrorNoError;
  }

  std::unique_ptr<Subprocess> process_;
  int read_fd_ = -1, write_fd_ = -1, stdin_fd_ = -1, stdout_fd_ = -1;
  crt_session_t session_;
  std::vector<uint8_t> rx_;
  std::vector<std::string> replies_;
};

std::string Floats(const std::vector<float>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float));
}

std::vector<float> ToFloats(const std::string& s) {
  std::vector<float> v(s.size() / sizeof(float));
  std::memcpy(v.data(), s.data(), v.size() * sizeof(float));
  return v;
}

std::vector<float> Random(size_t n, std::mt19937* rng) {
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(*rng);
  return v;
}

class BoardProcessTest : public ::testing::TestWithParam<Wire> {};

TEST_P(BoardProcessTest, WholeProtocol) {
  Board board(GetParam());
  board.Connect();

  // Identity: the firmware hash is the hash of the very binary that runs.
  uint64_t info_fn = board.Handle(codec::EncodeGetGlobalFunc("benchfarm.DeviceInfo"));
  Arg info = board.CallFunc(info_fn, {});
  ASSERT_EQ(info.type_code(), TypeCode::kStr);
  EXPECT_NE(info.str().find("board_kind=host-process\n"), std::string::npos) << info.str();
  EXPECT_NE(info.str().find("firmware_hash=" + Fnv1a64Hex(BoardPath()) + "\n"), std::string::npos)
      << info.str();
  EXPECT_NE(info.str().find("max_packet_size=2037\n"), std::string::npos);
  // It times with its thread's CPU clock, and describes its calibration kernel.
  EXPECT_NE(info.str().find("timer=thread-cputime\n"), std::string::npos) << info.str();
  EXPECT_NE(info.str().find("calibration_instructions_per_iteration="), std::string::npos);
  EXPECT_NE(info.str().find("calibration_cycles_per_iteration="), std::string::npos);
#if defined(__x86_64__)
  EXPECT_NE(info.str().find("calibration_instructions_per_iteration=2\n"), std::string::npos);
  EXPECT_NE(info.str().find("calibration_cycles_per_iteration=1\n"), std::string::npos);
#endif
  // benchfarm.Calibrate: a float64 of seconds, as AutoTVM's RPC would decode it.
  uint64_t calibrate = board.Handle(codec::EncodeGetGlobalFunc("benchfarm.Calibrate"));
  EXPECT_EQ(calibrate, 0x8002800au);
  Arg seconds = board.CallFunc(calibrate, {Arg::Int(1000000)});
  ASSERT_EQ(seconds.type_code(), TypeCode::kFloat);
  EXPECT_GT(seconds.float_value(), 0.0);
  EXPECT_LT(seconds.float_value(), 1.0);
  uint64_t totals = board.Handle(codec::EncodeGetGlobalFunc("benchfarm.TimerTotals"));
  Arg text = board.CallFunc(totals, {});
  ASSERT_EQ(text.type_code(), TypeCode::kStr);
  EXPECT_EQ(text.str().rfind("cpu_s=", 0), 0u) << text.str();
  EXPECT_NE(text.str().find("\nwall_s="), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("\nintervals=1\n"), std::string::npos) << text.str();

  Arg lib = board.CallFunc(board.Handle(codec::EncodeGetGlobalFunc("runtime.SystemLib")), {});
  ASSERT_EQ(lib.type_code(), TypeCode::kModuleHandle);
  uint64_t get = board.Handle(codec::EncodeGetGlobalFunc("tvm.rpc.server.ModuleGetFunction"));
  uint64_t te = board.Handle(codec::EncodeGetGlobalFunc("runtime.RPCTimeEvaluator"));

  std::mt19937 rng(1234);
  struct Case {
    std::string op;
    std::vector<std::vector<int64_t>> shapes;
  };
  const std::vector<Case> cases = {
      {"add", {{1024}, {1024}, {1024}}},
      {"matmul", {{32, 32}, {32, 32}, {32, 32}}},
      {"conv2d", {{1, 4, 12, 12}, {8, 4, 3, 3}, {1, 8, 10, 10}}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.op);
    std::vector<RemoteTensor> t;
    std::vector<std::vector<float>> host;
    for (const auto& shape : c.shapes) {
      t.push_back(board.Alloc(shape));
      size_t n = t.back().NumBytes() / 4;
      host.push_back(Random(n, &rng));
    }
    board.Put(t[0], Floats(host[0]));
    board.Put(t[1], Floats(host[1]));
    Arg f = board.CallFunc(get, {Arg::ModuleHandle(lib.handle()), Arg::Str(c.op), Arg::Bool(true)});
    ASSERT_EQ(f.type_code(), TypeCode::kPackedFuncHandle);
    std::vector<Arg> args = {Arg::Tensor(t[0]), Arg::Tensor(t[1]), Arg::Tensor(t[2])};
    board.CallFunc(f.handle(), args);
    std::vector<float> out = ToFloats(board.Get(t[2]));
    std::vector<float> want(out.size());
    if (c.op == "add") {
      bf_ops_reference_add(host[0].data(), host[1].data(), want.data(), 1024);
    } else if (c.op == "matmul") {
      bf_ops_reference_matmul(host[0].data(), host[1].data(), want.data(), 32, 32, 32);
    } else {
      bf_ops_conv2d_dims_t dims = {};
      dims.n = 1, dims.c = 4, dims.h = 12, dims.w = 12, dims.o = 8, dims.kh = 3, dims.kw = 3;
      bf_ops_reference_conv2d(host[0].data(), host[1].data(), want.data(), &dims);
    }
    ASSERT_EQ(out.size(), want.size());
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], want[i], 1e-4f * (1.0f + std::abs(want[i]))) << "element " << i;
    }

    // On-device timing: number 5, repeat 3, at least 1 ms per repeat.
    Arg timer =
        board.CallFunc(te, {Arg::ModuleHandle(lib.handle()), Arg::Str(c.op), Arg::Int(1),
                            Arg::Int(0), Arg::Int(5), Arg::Int(3), Arg::Int(1), Arg::Int(100),
                            Arg::Int(0), Arg::Int(1), Arg::Int(0), Arg::Str("")});
    ASSERT_EQ(timer.type_code(), TypeCode::kPackedFuncHandle);
    auto costs = DecodeTimeEvaluatorResult(board.CallFunc(timer.handle(), args));
    ASSERT_TRUE(costs.ok()) << costs.status();
    ASSERT_EQ(costs->size(), 3u);
    for (double cost : *costs) {
      EXPECT_GT(cost, 0.0);
      EXPECT_LT(cost, 0.1);
    }
    for (const RemoteTensor& x : t) {
      EXPECT_EQ(board.Call(codec::EncodeDevFreeData(DlDevice{}, x.data)).kind,
                Reply::Kind::kReturn);
    }
  }

  // A 1 MiB tensor in one CopyToRemote (streamed into the tensor) and back.
  RemoteTensor big = board.Alloc({256 * 1024});
  std::string payload = Floats(Random(256 * 1024, &rng));
  ASSERT_EQ(payload.size(), 1u << 20);
  board.Put(big, payload);
  EXPECT_TRUE(board.Get(big) == payload);

  board.Send(codec::EncodeShutdown());
  auto exit = board.WaitExit();
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 0) << exit->ToString();
}

INSTANTIATE_TEST_SUITE_P(Wires, BoardProcessTest, ::testing::Values(Wire::kPipes, Wire::kPty),
                         [](const ::testing::TestParamInfo<Wire>& info) {
                           return info.param == Wire::kPipes ? "Pipes" : "Pty";
                         });

TEST(BoardProcess, ExitsCleanlyAtEndOfInput) {
  Board board(Wire::kPipes);
  board.Connect();
  board.CloseInput();
  auto exit = board.WaitExit();
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 0) << exit->ToString();
}

// Cpus_allowed_list from /proc/<pid>/status.
std::string CpusAllowed(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      size_t start = line.find_first_not_of(" \t", 18);
      return start == std::string::npos ? "" : line.substr(start);
    }
  }
  return "";
}

// The CPUs this test may run on.
std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

TEST(BoardProcess, CpuPinsItBeforeItServes) {
  const std::vector<int> cpus = AllowedCpus();
  ASSERT_FALSE(cpus.empty());
  for (int cpu : {cpus.front(), cpus.back()}) {
    SCOPED_TRACE(cpu);
    Board board(Wire::kPipes, {"--cpu", std::to_string(cpu)});
    board.Connect();  // it serves...
    EXPECT_EQ(board.Handle(codec::EncodeGetGlobalFunc("runtime.SystemLib")), 0x80028000u);
    EXPECT_EQ(CpusAllowed(board.pid()), std::to_string(cpu));  // ...on that CPU alone
    board.CloseInput();
    auto exit = board.WaitExit();
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(exit->exit_code, 0);
  }
}

TEST(BoardProcess, ABadCpuIsAClearErrorAndExitOne) {
  const std::string log =
      std::string(std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp") +
      "/bad-cpu.log";
  struct Case {
    std::string cpu;
    std::string says;
  };
  for (const Case& c : std::vector<Case>{
           {"4095", "--cpu 4095: not a CPU number (0 to 1023)"},
           {"-1", "--cpu -1: not a CPU number"},
           {"one", "--cpu one: not a CPU number"},
           {"", "--cpu : not a CPU number"},
           {"1023",
            "--cpu 1023: cannot run on CPU 1023: Invalid argument (this process may use "
            "CPUs "}}) {
    SCOPED_TRACE(c.cpu);
    std::remove(log.c_str());
    SubprocessOptions options;
    options.argv = {BoardPath(), "--cpu", c.cpu};
    options.stdin_mode = StdioMode::kPipe;  // it must not wait for input
    options.stdout_mode = StdioMode::kPipe;
    options.stderr_path = log;
    auto started = Subprocess::Start(options);
    ASSERT_TRUE(started.ok()) << started.status();
    auto exit = (*started)->WaitExit(absl::Now() + absl::FromChrono(kDeadline));
    ASSERT_TRUE(exit.ok()) << exit.status();
    EXPECT_EQ(exit->exit_code, 1) << exit->ToString();
    std::ifstream in(log);
    std::string err((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(err.find("board: " + c.says), std::string::npos) << err;
    // Nothing on the link: it failed before its boot signature.
    uint8_t buf[16];
    EXPECT_EQ(read((*started)->TakeStdout(), buf, sizeof(buf)), 0);
  }
}

TEST(BoardProcess, GarbageOnTheLinkDoesNotStopIt) {
  Board board(Wire::kPipes);
  board.Connect();
  std::mt19937 rng(7);
  std::string junk(4096, '\0');
  for (char& c : junk) c = static_cast<char>(rng());
  junk.back() = 0;  // no dangling FF to swallow the next packet's start
  board.WriteRaw(junk);
  board.Send(std::string());  // an empty Normal body: a MinRPC protocol violation
  Reply r = board.Call(codec::EncodeGetGlobalFunc("runtime.SystemLib"));
  EXPECT_EQ(r.kind, Reply::Kind::kException) << "the empty request is answered first";
  EXPECT_EQ(board.Handle(codec::EncodeGetGlobalFunc("runtime.SystemLib")), 0x80028000u);
}

}  // namespace
