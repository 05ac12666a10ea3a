// rpc_bench: the board link end to end — transport, crt's framing and session, the MinRPC codec
// and the board's server — against the host-process board (//crt/host:board), over pipes and
// over a pseudo-terminal, beside the floor any request/reply over pipes pays.
//
//   BM_RawPipePingPong/N     N bytes to a child that echoes them (/bin/cat) and back: two pipe
//                            hops and two wake-ups, no protocol at all;
//   BM_EmptyCallPipe         one CallFunc of tvm.rpc.server.GetCRTMaxPacketSize, a function
//   BM_EmptyCallPty          that does no work: what the link adds to every call;
//   BM_CopyToRemotePipe/N    N payload bytes into a board tensor (one streamed request);
//   BM_CopyToRemotePty/N
//   BM_CopyFromRemotePipe/N  N payload bytes out of it (one reply).
// Every row is timed in wall-clock time (UseRealTime; the work happens in another process) and
// shown in microseconds: Time is the latency of one round trip, items_per_second the round trips
// per second, bytes_per_second the payload rate. Each benchmark checks its result once outside
// the timed loop and stops with an error if it is wrong.
//
//   rpc_bench [--board PATH] [benchmark flags]
//
// The board is --board PATH, else $BENCHFARM_BOARD, else the runfiles copy: <argv[0]>.runfiles/
// benchfarm/crt/host/board (what `bazel build` leaves beside the binary), or the same under
// $RUNFILES_DIR or $TEST_SRCDIR.
//
// Meaningful only with -c opt: `./farm bench rpc`.

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "device/host_session.h"
#include "device/pipe_transport.h"
#include "device/pty_transport.h"
#include "device/rpc_client.h"

namespace {

using benchfarm::device::Arg;
using benchfarm::device::ChildProcessTransport;
using benchfarm::device::DlDataType;
using benchfarm::device::HostSession;
using benchfarm::device::PtyTransport;
using benchfarm::device::RemoteTensor;
using benchfarm::device::RpcClient;
using benchfarm::device::SessionOptions;
using benchfarm::device::Transport;
using benchfarm::device::TypeCode;

// The board executable; set once by main before any benchmark runs.
std::string g_board_path;

// Generous: a deadline only turns a wedged board into an error row instead of a hung run.
absl::Time Deadline() { return absl::Now() + absl::Seconds(30); }

std::string RandomPayload(size_t n) {
  std::mt19937 rng(0x5eed);  // fixed seed: every run moves the same bytes
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(rng());
  return bytes;
}

// Reads exactly out.size() bytes.
absl::Status ReadExactly(Transport& transport, absl::Span<uint8_t> out, absl::Time deadline) {
  size_t got = 0;
  while (got < out.size()) {
    absl::StatusOr<size_t> n = transport.Read(out.subspan(got), deadline);
    if (!n.ok()) return n.status();
    got += *n;
  }
  return absl::OkStatus();
}

enum class Link { kPipe, kPty };

// A host-process board and an established session with it, over its stdin/stdout pipes or over
// the pseudo-terminal it serves with --pty. Ends the board when destroyed.
class Board {
 public:
  static absl::StatusOr<std::unique_ptr<Board>> Start(Link link) {
    std::vector<std::string> argv = {g_board_path};
    if (link == Link::kPty) argv.push_back("--pty");
    auto board = std::unique_ptr<Board>(new Board(std::move(argv)));
    absl::Status s = board->process_.Open();
    if (!s.ok()) return s;
    Transport* transport = &board->process_;
    if (link == Link::kPty) {
      // With --pty the board's first stdout line is "pty: <path>"; the link is that path.
      std::string line;
      const absl::Time deadline = Deadline();
      while (line.find('\n') == std::string::npos) {
        uint8_t buf[128];
        absl::StatusOr<size_t> n = board->process_.Read(absl::MakeSpan(buf), deadline);
        if (!n.ok()) return n.status();
        line.append(reinterpret_cast<const char*>(buf), *n);
      }
      if (!absl::StartsWith(line, "pty: ")) {
        return absl::InternalError(absl::StrCat("board --pty printed ", line));
      }
      board->pty_ = std::make_unique<PtyTransport>(line.substr(5, line.find('\n') - 5));
      s = board->pty_->Open();
      if (!s.ok()) return s;
      transport = board->pty_.get();
    }
    SessionOptions options;
    options.board_id = link == Link::kPty ? "bench-pty" : "bench-pipe";
    board->session_ = std::make_unique<HostSession>(transport, options);
    s = board->session_->Connect(Deadline());
    if (!s.ok()) return s;
    board->client_ = std::make_unique<RpcClient>(board->session_.get());
    return board;
  }

  RpcClient& client() { return *client_; }

 private:
  explicit Board(std::vector<std::string> argv) : process_(std::move(argv)) {}

  ChildProcessTransport process_;
  std::unique_ptr<PtyTransport> pty_;
  std::unique_ptr<HostSession> session_;
  std::unique_ptr<RpcClient> client_;
};

// Starts a board for one benchmark run, or marks the run failed and returns null.
std::unique_ptr<Board> StartOrSkip(benchmark::State& state, Link link) {
  absl::StatusOr<std::unique_ptr<Board>> board = Board::Start(link);
  if (!board.ok()) {
    state.SkipWithError(absl::StrCat("board start: ", board.status().ToString()).c_str());
    return nullptr;
  }
  return *std::move(board);
}

void SkipOnError(benchmark::State& state, absl::string_view what, const absl::Status& status) {
  state.SkipWithError(absl::StrCat(what, ": ", status.ToString()).c_str());
}

void BM_RawPipePingPong(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  ChildProcessTransport cat({"/bin/cat"});
  absl::Status s = cat.Open();
  if (!s.ok()) return SkipOnError(state, "start /bin/cat", s);
  const std::string ping = RandomPayload(n);
  std::vector<uint8_t> pong(n);
  for (auto _ : state) {
    const absl::Time deadline = Deadline();
    s = cat.Write(ping, deadline);
    if (s.ok()) s = ReadExactly(cat, absl::MakeSpan(pong), deadline);
    if (!s.ok()) return SkipOnError(state, "ping-pong", s);
  }
  if (std::string(pong.begin(), pong.end()) != ping) {
    return state.SkipWithError("the echo differs from what was sent");
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void EmptyCall(benchmark::State& state, Link link) {
  std::unique_ptr<Board> board = StartOrSkip(state, link);
  if (board == nullptr) return;
  RpcClient& client = board->client();
  absl::StatusOr<uint64_t> fn =
      client.GetGlobalFunc("tvm.rpc.server.GetCRTMaxPacketSize", Deadline());
  if (!fn.ok()) return SkipOnError(state, "GetGlobalFunc", fn.status());
  absl::StatusOr<Arg> first = client.CallFunc(*fn, {}, Deadline());
  if (!first.ok()) return SkipOnError(state, "CallFunc", first.status());
  if (first->type_code() != TypeCode::kInt || first->int_value() <= 0) {
    return state.SkipWithError("GetCRTMaxPacketSize returned no packet size");
  }
  for (auto _ : state) {
    absl::StatusOr<Arg> r = client.CallFunc(*fn, {}, Deadline());
    if (!r.ok()) return SkipOnError(state, "CallFunc", r.status());
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_EmptyCallPipe(benchmark::State& state) { EmptyCall(state, Link::kPipe); }
void BM_EmptyCallPty(benchmark::State& state) { EmptyCall(state, Link::kPty); }

// A float tensor of n bytes on the board.
absl::StatusOr<RemoteTensor> AllocBytes(RpcClient& client, size_t n) {
  return client.AllocTensor({static_cast<int64_t>(n / sizeof(float))}, DlDataType{}, Deadline());
}

void CopyToRemote(benchmark::State& state, Link link) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::unique_ptr<Board> board = StartOrSkip(state, link);
  if (board == nullptr) return;
  RpcClient& client = board->client();
  absl::StatusOr<RemoteTensor> t = AllocBytes(client, n);
  if (!t.ok()) return SkipOnError(state, "AllocTensor", t.status());
  const std::string payload = RandomPayload(n);
  for (auto _ : state) {
    absl::Status s = client.CopyToRemote(*t, payload, Deadline());
    if (!s.ok()) return SkipOnError(state, "CopyToRemote", s);
  }
  absl::StatusOr<std::string> back = client.CopyFromRemote(*t, n, Deadline());
  if (!back.ok()) return SkipOnError(state, "CopyFromRemote", back.status());
  if (*back != payload) return state.SkipWithError("the tensor differs from what was copied");
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_CopyToRemotePipe(benchmark::State& state) { CopyToRemote(state, Link::kPipe); }
void BM_CopyToRemotePty(benchmark::State& state) { CopyToRemote(state, Link::kPty); }

void BM_CopyFromRemotePipe(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  std::unique_ptr<Board> board = StartOrSkip(state, Link::kPipe);
  if (board == nullptr) return;
  RpcClient& client = board->client();
  absl::StatusOr<RemoteTensor> t = AllocBytes(client, n);
  if (!t.ok()) return SkipOnError(state, "AllocTensor", t.status());
  const std::string payload = RandomPayload(n);
  absl::Status s = client.CopyToRemote(*t, payload, Deadline());
  if (!s.ok()) return SkipOnError(state, "CopyToRemote", s);
  std::string back;
  for (auto _ : state) {
    absl::StatusOr<std::string> r = client.CopyFromRemote(*t, n, Deadline());
    if (!r.ok()) return SkipOnError(state, "CopyFromRemote", r.status());
    back = *std::move(r);
  }
  if (back != payload) return state.SkipWithError("the read-back differs from the tensor");
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

BENCHMARK(BM_RawPipePingPong)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EmptyCallPipe)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EmptyCallPty)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CopyToRemotePipe)
    ->Arg(4 * kKiB)
    ->Arg(64 * kKiB)
    ->Arg(kMiB)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CopyToRemotePty)->Arg(kMiB)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CopyFromRemotePipe)->Arg(kMiB)->UseRealTime()->Unit(benchmark::kMicrosecond);

bool IsExecutable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

// The board to use (see the file comment), or an error naming what was tried.
absl::StatusOr<std::string> FindBoard(const std::string& flag, const char* argv0) {
  if (!flag.empty()) {
    if (IsExecutable(flag)) return flag;
    return absl::NotFoundError(absl::StrCat("--board ", flag, " is not an executable"));
  }
  if (const char* env = std::getenv("BENCHFARM_BOARD"); env != nullptr && *env != '\0') {
    if (IsExecutable(env)) return std::string(env);
    return absl::NotFoundError(absl::StrCat("BENCHFARM_BOARD=", env, " is not an executable"));
  }
  const std::string in_runfiles = "/benchfarm/crt/host/board";
  std::vector<std::string> tried = {absl::StrCat(argv0, ".runfiles", in_runfiles)};
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(var); dir != nullptr && *dir != '\0') {
      tried.push_back(absl::StrCat(dir, in_runfiles));
    }
  }
  for (const std::string& path : tried) {
    if (IsExecutable(path)) return path;
  }
  std::string message = "no board: pass --board PATH or set BENCHFARM_BOARD (tried";
  for (const std::string& path : tried) absl::StrAppend(&message, " ", path);
  return absl::NotFoundError(absl::StrCat(message, ")"));
}

}  // namespace

int main(int argc, char** argv) {
  // --board is ours; everything else goes to Google Benchmark.
  std::string board_flag;
  std::vector<char*> args = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "--board" && i + 1 < argc) {
      board_flag = argv[++i];
    } else if (absl::ConsumePrefix(&arg, "--board=")) {
      board_flag = std::string(arg);
    } else {
      args.push_back(argv[i]);
    }
  }
  absl::StatusOr<std::string> board = FindBoard(board_flag, argv[0]);
  if (!board.ok()) {
    std::fprintf(stderr, "rpc_bench: %s\n", std::string(board.status().message()).c_str());
    return 2;
  }
  g_board_path = *board;
  int bench_argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&bench_argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(bench_argc, args.data())) return 1;
  benchmark::AddCustomContext("board", g_board_path);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
