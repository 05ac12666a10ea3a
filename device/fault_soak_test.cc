// Fault tests of the whole board link — the acceptance criteria:
//
//   * At a 1e-3 byte error rate (drops, bit flips and duplicates in equal parts, in both
//     directions), 1,000 calls each end with the right result or a clear error within their
//     deadline: none hangs, and none returns a wrong value.
//   * A board killed mid-call is reported as gone (Unavailable, naming the signal) long before
//     the call's deadline.
//   * A board that reboots while a session is up is reported as a reset (Aborted, one
//     counters().resets), and a reconnect recovers.
//
// The first two drive the real host-process board (//crt/host:board) over ChildProcessTransport
// pipes. The third runs the board's own MinRPC server (crt/rpc) in a thread behind a loopback
// pair, because only in-process can the test make a board reboot on cue.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/types.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "base/status_macros.h"
#include "device/fault_injecting_transport.h"
#include "device/host_session.h"
#include "device/pipe_transport.h"
#include "device/rpc_client.h"
#include "device/testing/loopback_transport.h"
#include "tvm/runtime/crt/platform.h"
#include "tvm/runtime/crt/rpc_server.h"

namespace benchfarm::device {
namespace {

std::string BoardPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") +
         "/crt/host/board";
}

absl::Time Soon() { return absl::Now() + absl::Seconds(20); }

std::string Floats(const std::array<float, 4>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), sizeof(v));
}

// ---------------------------------------------------------------------------------------------
// The soak.

constexpr int kCalls = 1000;
// Every lost byte costs a call its whole deadline (nothing but the deadline tells the host a
// request or reply was lost), so the calls are shared among boards driven in parallel to keep
// the test's wall time well under a minute. Each board still sees calls one at a time.
constexpr int kBoards = 25;
constexpr double kByteErrorRate = 1e-3;
constexpr absl::Duration kCallTimeout = absl::Seconds(2);
// How late after its deadline a call may return before it counts as hung: scheduling noise only.
constexpr absl::Duration kSlack = absl::Milliseconds(250);
// Recovery (reconnect, then re-create the tensors) is not what is measured: short deadlines,
// retried, so a lost byte there costs little. A clean round trip takes well under a millisecond.
constexpr absl::Duration kRecoveryTimeout = absl::Milliseconds(500);
constexpr int kMaxRecoveryAttempts = 50;

// Names the GetGlobalFunc calls ask for, the last one absent (its right result is NotFound).
const char* const kGlobals[] = {"runtime.SystemLib",
                                "runtime.RPCTimeEvaluator",
                                "tvm.rpc.server.GetCRTMaxPacketSize",
                                "benchfarm.DeviceInfo",
                                "tvm.rpc.server.ModuleGetFunction",
                                "no.such.global"};

// The add calls accumulate in place, acc += inc, so every successful call changes the result
// and a stale or skipped add cannot pass. Small integers keep the float sums exact.
constexpr std::array<float, 4> kAccStart = {1, 2, 3, 4};
constexpr std::array<float, 4> kIncrement = {1, 10, 100, 1000};

// What a board on a clean link answers: the reference every soak result is checked against.
struct Expected {
  std::map<std::string, uint64_t> globals;  // 0: NotFound
  std::map<std::string, std::string> device_info;
};

absl::StatusOr<Expected> ReferenceAnswers() {
  ChildProcessTransport board({BoardPath()});
  RETURN_IF_ERROR(board.Open());
  SessionOptions options;
  options.board_id = "reference";
  HostSession session(&board, options);
  RETURN_IF_ERROR(session.Connect(Soon()));
  RpcClient client(&session);
  Expected expected;
  for (const char* name : kGlobals) {
    absl::StatusOr<uint64_t> handle = client.GetGlobalFunc(name, Soon());
    if (absl::IsNotFound(handle.status())) {
      expected.globals[name] = 0;
      continue;
    }
    RETURN_IF_ERROR(handle.status());
    expected.globals[name] = *handle;
  }
  ASSIGN_OR_RETURN(DeviceInfo info, client.GetDeviceInfo(Soon()));
  expected.device_info = info.fields;
  return expected;
}

enum class Op { kGetGlobalFunc, kAdd, kDeviceInfo };

const char* OpName(Op op) {
  switch (op) {
    case Op::kGetGlobalFunc:
      return "GetGlobalFunc";
    case Op::kAdd:
      return "add+read-back";
    case Op::kDeviceInfo:
      return "DeviceInfo";
  }
  return "?";
}

// How one call ended: its status, and for an OK call whose value was wrong, what was wrong.
struct CallResult {
  absl::Status status;
  std::string wrong_value;
};

// What the calls of one or more boards did.
struct Outcomes {
  int calls = 0;
  int ok = 0;
  // Expected errors by code: DeadlineExceeded, Aborted, Unknown, DataLoss.
  std::map<absl::StatusCode, int> errors;
  // Each of these fails the test: an OK call with a wrong value, an error of an unexpected code,
  // a call or recovery step that returned after its deadline + kSlack, a board that could not be
  // recovered.
  std::vector<std::string> wrong;
  std::vector<std::string> unexpected;
  std::vector<std::string> late;
  std::vector<std::string> fatal;
  // Per kind of call: calls, successes, and the link bytes (both ways) of the successful ones.
  std::map<Op, std::array<uint64_t, 3>> per_op;
  int recoveries = 0;
  int recovery_attempts = 0;
  absl::Duration worst_lateness = -absl::InfiniteDuration();  // return time - deadline
  FaultCounters faults;
  LinkCounters link;

  void Merge(const Outcomes& o) {
    calls += o.calls;
    ok += o.ok;
    for (const auto& [code, n] : o.errors) errors[code] += n;
    wrong.insert(wrong.end(), o.wrong.begin(), o.wrong.end());
    unexpected.insert(unexpected.end(), o.unexpected.begin(), o.unexpected.end());
    late.insert(late.end(), o.late.begin(), o.late.end());
    fatal.insert(fatal.end(), o.fatal.begin(), o.fatal.end());
    for (const auto& [op, v] : o.per_op) {
      for (size_t k = 0; k < v.size(); ++k) per_op[op][k] += v[k];
    }
    recoveries += o.recoveries;
    recovery_attempts += o.recovery_attempts;
    worst_lateness = std::max(worst_lateness, o.worst_lateness);
    faults.dropped += o.faults.dropped;
    faults.flipped += o.faults.flipped;
    faults.duplicated += o.faults.duplicated;
    link.bytes_sent += o.link.bytes_sent;
    link.bytes_received += o.link.bytes_received;
    link.crc_failures += o.link.crc_failures;
    link.packets_dropped += o.link.packets_dropped;
    link.handshakes += o.link.handshakes;
    link.resets += o.link.resets;
  }
};

bool IsExpectedError(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::IsAborted(s) || absl::IsUnknown(s) ||
         absl::IsDataLoss(s);
}

// One host-process board behind a FaultInjectingTransport, driven through `calls` calls by one
// thread (Run). Not thread-safe; Outcomes are read after Run returns.
class SoakBoard {
 public:
  SoakBoard(int index, int calls, const Expected& expected)
      : index_(index),
        calls_(calls),
        expected_(expected),
        board_({BoardPath()}),
        faulty_(&board_, Faults(index)) {}

  void Run() {
    absl::Status s = board_.Open();
    if (!s.ok()) {
      outcomes_.fatal.push_back(absl::StrCat(Id(), ": ", s.ToString()));
      return;
    }
    SessionOptions options;
    options.board_id = Id();
    options.retry_timeout = absl::Milliseconds(100);
    options.start_timeout = kRecoveryTimeout;
    session_ = std::make_unique<HostSession>(&faulty_, options);
    client_ = std::make_unique<RpcClient>(session_.get());
    if (!Recover()) return;
    for (int i = 0; i < calls_; ++i) {
      const Op op = static_cast<Op>(i % 3);
      const LinkCounters before = session_->counters();
      const absl::Time deadline = absl::Now() + kCallTimeout;
      CallResult r = Call(op, i, deadline);
      const absl::Duration lateness = absl::Now() - deadline;
      const LinkCounters after = session_->counters();
      std::array<uint64_t, 3>& per_op = outcomes_.per_op[op];
      per_op[0]++;
      outcomes_.calls++;
      outcomes_.worst_lateness = std::max(outcomes_.worst_lateness, lateness);
      const std::string what = absl::StrCat(Id(), " call ", i, " (", OpName(op), ")");
      if (lateness > kSlack) {
        outcomes_.late.push_back(absl::StrCat(what, " returned ", absl::FormatDuration(lateness),
                                              " after its deadline: ", r.status.ToString()));
      }
      if (r.status.ok()) {
        if (r.wrong_value.empty()) {
          outcomes_.ok++;
          per_op[1]++;
          per_op[2] +=
              after.bytes_sent + after.bytes_received - before.bytes_sent - before.bytes_received;
        } else {
          outcomes_.wrong.push_back(absl::StrCat(what, ": ", r.wrong_value));
        }
        continue;
      }
      if (IsExpectedError(r.status)) {
        outcomes_.errors[r.status.code()]++;
      } else {
        outcomes_.unexpected.push_back(absl::StrCat(what, ": ", r.status.ToString()));
      }
      if (!Recover()) return;
    }
    outcomes_.faults = faulty_.counters();
    outcomes_.link = session_->counters();
  }

  const Outcomes& outcomes() const { return outcomes_; }

 private:
  static FaultOptions Faults(int index) {
    FaultOptions f;
    f.drop_rate = kByteErrorRate / 3;
    f.flip_rate = kByteErrorRate / 3;
    f.duplicate_rate = kByteErrorRate / 3;
    f.seed = 0x50a6'0000u + static_cast<uint64_t>(index);
    return f;
  }

  std::string Id() const { return absl::StrCat("soak", index_); }

  CallResult Call(Op op, int i, absl::Time deadline) {
    switch (op) {
      case Op::kGetGlobalFunc:
        return CallGetGlobalFunc(kGlobals[(i / 3 + index_) % std::size(kGlobals)], deadline);
      case Op::kAdd:
        return CallAdd(deadline);
      case Op::kDeviceInfo:
        return CallDeviceInfo(deadline);
    }
    return {absl::InternalError("unknown op"), ""};
  }

  CallResult CallGetGlobalFunc(const std::string& name, absl::Time deadline) {
    const uint64_t want = expected_.globals.at(name);
    absl::StatusOr<uint64_t> got = client_->GetGlobalFunc(name, deadline);
    if (absl::IsNotFound(got.status())) {
      // NotFound is the right answer for an absent name only.
      if (want == 0) return {absl::OkStatus(), ""};
      return {absl::OkStatus(), absl::StrCat("GetGlobalFunc(", name, ") said NotFound")};
    }
    if (!got.ok()) return {got.status(), ""};
    if (*got != want) {
      return {absl::OkStatus(),
              absl::StrFormat("GetGlobalFunc(%s) = %#x, want %#x", name, *got, want)};
    }
    return {absl::OkStatus(), ""};
  }

  CallResult CallAdd(absl::Time deadline) {
    absl::StatusOr<Arg> r = client_->CallFunc(
        add_, {Arg::Tensor(acc_), Arg::Tensor(inc_), Arg::Tensor(acc_)}, deadline);
    if (!r.ok()) return {r.status(), ""};
    if (r->type_code() != TypeCode::kNull) {
      return {absl::OkStatus(), absl::StrCat("add returned ", r->DebugString())};
    }
    // The board ran the add: the model follows it even if the read-back below fails (recovery
    // re-creates the tensors anyway).
    for (size_t k = 0; k < acc_expected_.size(); ++k) acc_expected_[k] += kIncrement[k];
    absl::StatusOr<std::string> back =
        client_->CopyFromRemote(acc_, sizeof(acc_expected_), deadline);
    if (!back.ok()) return {back.status(), ""};
    if (*back != Floats(acc_expected_)) {
      std::array<float, 4> got{};
      std::memcpy(got.data(), back->data(), std::min(back->size(), sizeof(got)));
      return {absl::OkStatus(), absl::StrCat("add gave {", absl::StrJoin(got, ", "), "}, want {",
                                             absl::StrJoin(acc_expected_, ", "), "}")};
    }
    return {absl::OkStatus(), ""};
  }

  CallResult CallDeviceInfo(absl::Time deadline) {
    absl::StatusOr<DeviceInfo> info = client_->GetDeviceInfo(deadline);
    // A garbled DeviceInfo text that still parsed badly would be InvalidArgument: a wrong value.
    if (absl::IsInvalidArgument(info.status())) {
      return {absl::OkStatus(), info.status().ToString()};
    }
    if (!info.ok()) return {info.status(), ""};
    if (info->fields != expected_.device_info) {
      std::vector<std::string> lines;
      for (const auto& [k, v] : info->fields) lines.push_back(absl::StrCat(k, "=", v));
      return {absl::OkStatus(), absl::StrCat("DeviceInfo {", absl::StrJoin(lines, " "), "}")};
    }
    return {absl::OkStatus(), ""};
  }

  // The tensors and the add handle of a fresh session.
  absl::Status Setup(absl::Time deadline) {
    ASSIGN_OR_RETURN(add_, client_->GetFunction("add", deadline));
    ASSIGN_OR_RETURN(acc_, client_->AllocTensor({4}, DlDataType{}, deadline));
    ASSIGN_OR_RETURN(inc_, client_->AllocTensor({4}, DlDataType{}, deadline));
    RETURN_IF_ERROR(client_->CopyToRemote(acc_, Floats(kAccStart), deadline));
    RETURN_IF_ERROR(client_->CopyToRemote(inc_, Floats(kIncrement), deadline));
    acc_expected_ = kAccStart;
    return absl::OkStatus();
  }

  // Reconnects (a new session: the board frees the old session's tensors) and re-creates the
  // tensors, retrying until both succeed. False (and a fatal outcome) if it never does.
  bool Recover() {
    outcomes_.recoveries++;
    absl::Status last;
    for (int attempt = 0; attempt < kMaxRecoveryAttempts; ++attempt) {
      outcomes_.recovery_attempts++;
      absl::Time deadline = absl::Now() + kRecoveryTimeout;
      last = client_->Reconnect(deadline);
      CheckOnTime("Reconnect", deadline, last);
      if (!last.ok()) continue;
      deadline = absl::Now() + kRecoveryTimeout;
      last = Setup(deadline);
      CheckOnTime("Setup", deadline, last);
      if (last.ok()) return true;
    }
    outcomes_.fatal.push_back(absl::StrCat(Id(), ": no recovery after ", kMaxRecoveryAttempts,
                                           " attempts; last: ", last.ToString()));
    return false;
  }

  void CheckOnTime(absl::string_view step, absl::Time deadline, const absl::Status& status) {
    const absl::Duration lateness = absl::Now() - deadline;
    if (lateness > kSlack) {
      outcomes_.late.push_back(absl::StrCat(Id(), " ", step, " returned ",
                                            absl::FormatDuration(lateness),
                                            " after its deadline: ", status.ToString()));
    }
  }

  const int index_;
  const int calls_;
  const Expected& expected_;
  ChildProcessTransport board_;
  FaultInjectingTransport faulty_;
  std::unique_ptr<HostSession> session_;
  std::unique_ptr<RpcClient> client_;
  uint64_t add_ = 0;
  RemoteTensor acc_;
  RemoteTensor inc_;
  std::array<float, 4> acc_expected_ = kAccStart;
  Outcomes outcomes_;
};

TEST(FaultSoak, ThousandCallsAtAByteErrorRateOfOnePerMille) {
  absl::StatusOr<Expected> expected = ReferenceAnswers();
  ASSERT_TRUE(expected.ok()) << expected.status();

  std::vector<std::unique_ptr<SoakBoard>> boards;
  for (int b = 0; b < kBoards; ++b) {
    const int calls = kCalls / kBoards + (b < kCalls % kBoards ? 1 : 0);
    boards.push_back(std::make_unique<SoakBoard>(b, calls, *expected));
  }
  const absl::Time start = absl::Now();
  std::vector<std::thread> threads;
  for (auto& board : boards) threads.emplace_back([&board] { board->Run(); });
  for (std::thread& t : threads) t.join();
  const absl::Duration took = absl::Now() - start;

  Outcomes all;
  for (const auto& board : boards) all.Merge(board->outcomes());
  std::vector<std::string> errors;
  for (const auto& [code, n] : all.errors) {
    errors.push_back(absl::StrCat(absl::StatusCodeToString(code), "=", n));
  }
  const std::string summary = absl::StrFormat(
      "%d calls on %d boards in %s: ok=%d %s wrong=%d unexpected=%d late=%d | worst return "
      "%s after the deadline | %d recoveries (%d attempts) | faults: %d dropped, %d flipped, %d "
      "duplicated in %d bytes; host saw %d CRC failures, %d dropped packets, %d handshakes",
      all.calls, kBoards, absl::FormatDuration(took), all.ok, absl::StrJoin(errors, " "),
      all.wrong.size(), all.unexpected.size(), all.late.size(),
      absl::FormatDuration(all.worst_lateness), all.recoveries, all.recovery_attempts,
      all.faults.dropped, all.faults.flipped, all.faults.duplicated,
      all.link.bytes_sent + all.link.bytes_received, all.link.crc_failures,
      all.link.packets_dropped, all.link.handshakes);
  std::printf("fault soak: %s\n", summary.c_str());
  for (const auto& [op, v] : all.per_op) {
    std::printf("fault soak: %-14s %4d calls, %4d ok (%.1f%%), %.0f link bytes per clean call\n",
                OpName(op), static_cast<int>(v[0]), static_cast<int>(v[1]),
                100.0 * static_cast<double>(v[1]) / static_cast<double>(v[0]),
                v[1] == 0 ? 0.0 : static_cast<double>(v[2]) / static_cast<double>(v[1]));
  }
  ::testing::Test::RecordProperty("soak_summary", summary);
  ::testing::Test::RecordProperty("soak_ok", all.ok);
  for (const auto& [code, n] : all.errors) {
    ::testing::Test::RecordProperty(absl::StrCat("soak_", absl::StatusCodeToString(code)), n);
  }

  EXPECT_TRUE(all.fatal.empty()) << absl::StrJoin(all.fatal, "\n");
  EXPECT_EQ(all.calls, kCalls);
  // A corrupted reply must never pass as a right result.
  EXPECT_TRUE(all.wrong.empty()) << absl::StrJoin(all.wrong, "\n");
  EXPECT_TRUE(all.unexpected.empty()) << absl::StrJoin(all.unexpected, "\n");
  EXPECT_TRUE(all.late.empty()) << absl::StrJoin(all.late, "\n");
  // The link really was bad: about one byte in a thousand was hit.
  const uint64_t bytes = all.link.bytes_sent + all.link.bytes_received;
  const uint64_t hit = all.faults.dropped + all.faults.flipped + all.faults.duplicated;
  EXPECT_GT(hit, bytes / 2000);
  EXPECT_LT(hit, bytes / 500);
  EXPECT_GT(all.link.crc_failures, 0u);
  // Most calls still succeed. A clean GetGlobalFunc moves ~100 link bytes, an add with its
  // read-back or a DeviceInfo ~320, so at 1e-3 per byte 0.999^bytes of them see no fault: 90% and
  // 73%, about 79% of the mix (a standard deviation of ~1.3 points over 1,000 calls). Any fault
  // costs its call, so 70% is the floor that holds without flaking.
  EXPECT_GE(all.ok, kCalls * 70 / 100);
}

// ---------------------------------------------------------------------------------------------
// A board killed mid-call.

TEST(FaultSoak, BoardKilledMidCallIsReportedLongBeforeTheDeadline) {
  ChildProcessTransport board({BoardPath()});
  ASSERT_TRUE(board.Open().ok());
  SessionOptions options;
  options.board_id = "victim";
  HostSession session(&board, options);
  ASSERT_TRUE(session.Connect(Soon()).ok());
  RpcClient client(&session);
  absl::StatusOr<RemoteTensor> t = client.AllocTensor({4}, DlDataType{}, Soon());
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE(client.SystemLib(Soon()).ok());  // so the slow call starts at once

  // The time evaluator repeats `add` until 3 s have passed: the board is busy inside one call
  // when the kill lands 200 ms in.
  TimeEvaluatorOptions slow;
  slow.number = 1;
  slow.repeat = 1;
  slow.min_repeat_ms = 3000;
  const pid_t pid = board.pid();
  ASSERT_GT(pid, 0);
  const absl::Time start = absl::Now();
  std::thread killer([pid] {
    absl::SleepFor(absl::Milliseconds(200));  // places the kill mid-call; waits for nothing
    kill(pid, SIGKILL);
  });
  absl::StatusOr<std::vector<double>> r = client.TimeFunction(
      "add", {Arg::Tensor(*t), Arg::Tensor(*t), Arg::Tensor(*t)}, slow, start + absl::Seconds(10));
  const absl::Duration took = absl::Now() - start;
  killer.join();

  std::printf("killed board: %s after %s\n", r.status().ToString().c_str(),
              absl::FormatDuration(took).c_str());
  ASSERT_FALSE(r.ok()) << "the slow call finished before the kill";
  EXPECT_TRUE(absl::IsUnavailable(r.status()) || absl::IsAborted(r.status())) << r.status();
  EXPECT_GE(took, absl::Milliseconds(190));  // it really was cut short mid-call
  EXPECT_LT(took, absl::Seconds(2));
  if (absl::IsUnavailable(r.status())) {
    EXPECT_NE(r.status().message().find("signal 9"), absl::string_view::npos) << r.status();
  }
  absl::StatusOr<base::ProcessExit> exit = board.WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGKILL);
}

// ---------------------------------------------------------------------------------------------
// A board that reboots.

crt_rpc_server_t g_server;  // large: static storage, as on a board
const crt_board_info_t kInProcessInfo = {"in-process", "0123456789abcdef", 1e-9, 0, "monotonic"};

// The board's firmware (crt's MinRPC server on the host platform) in a thread, its link the
// `link` end of a loopback pair. Only that thread touches the server; Reboot() asks it to boot
// again (crt_rpc_server_init: a fresh server that sends its boot Terminate, as after a reset).
class InProcessBoard {
 public:
  // `link` is borrowed and must outlive this object.
  explicit InProcessBoard(Transport* link) : link_(link), thread_([this] { Loop(); }) {}

  ~InProcessBoard() {
    {
      absl::MutexLock lock(&mu_);
      stop_ = true;
    }
    thread_.join();
  }

  // Waits until the board has booted `boots` times in all; false if a boot failed or the wait
  // took more than 10 s.
  bool WaitForBoot(int boots) {
    absl::MutexLock lock(&mu_);
    auto booted = [this, boots]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return boots_ >= boots; };
    return mu_.AwaitWithTimeout(absl::Condition(&booted), absl::Seconds(10)) && boot_ok_;
  }

  // Makes the board boot again and waits until it has (its boot Terminate is on the wire).
  // False if the boot failed or took more than 10 s.
  bool Reboot() {
    int boots;
    {
      absl::MutexLock lock(&mu_);
      boots = boots_ + 1;
      reboot_requested_ = true;
    }
    return WaitForBoot(boots);
  }

 private:
  static tvm_crt_error_t Write(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<InProcessBoard*>(ctx);
    absl::Status s = self->link_->Write(absl::string_view(reinterpret_cast<const char*>(data), n),
                                        absl::Now() + absl::Seconds(5));
    return s.ok() ? kTvmErrorNoError : kTvmErrorWriteStreamShortWrite;
  }

  void Boot() {
    const bool ok = TVMPlatformInitialize() == kTvmErrorNoError &&
                    crt_rpc_server_init(&g_server, &InProcessBoard::Write, this, &kInProcessInfo) ==
                        kTvmErrorNoError;
    absl::MutexLock lock(&mu_);
    boot_ok_ = ok;
    boots_++;
    reboot_requested_ = false;
  }

  void Loop() {
    Boot();
    uint8_t buf[4096];
    for (;;) {
      bool reboot;
      {
        absl::MutexLock lock(&mu_);
        if (stop_) return;
        reboot = reboot_requested_;
      }
      if (reboot) Boot();
      // A short read deadline keeps the loop responsive to Reboot() and the destructor.
      absl::StatusOr<size_t> n =
          link_->Read(absl::MakeSpan(buf), absl::Now() + absl::Milliseconds(5));
      if (absl::IsDeadlineExceeded(n.status())) continue;
      if (!n.ok()) return;
      if (crt_rpc_server_receive(&g_server, buf, *n) != kTvmErrorNoError) return;
    }
  }

  Transport* const link_;
  absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool reboot_requested_ ABSL_GUARDED_BY(mu_) = false;
  int boots_ ABSL_GUARDED_BY(mu_) = 0;
  bool boot_ok_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: starts after the fields it uses
};

TEST(FaultSoak, BoardRebootIsReportedAsAResetAndReconnectRecovers) {
  auto [host_end, board_end] = MakeLoopbackPair("reboot");
  InProcessBoard board(board_end.get());
  ASSERT_TRUE(board.WaitForBoot(1));
  SessionOptions options;
  options.board_id = "rebooter";
  options.retry_timeout = absl::Milliseconds(100);
  options.start_timeout = absl::Seconds(5);
  HostSession session(host_end.get(), options);
  ASSERT_TRUE(session.Connect(Soon()).ok());
  RpcClient client(&session);
  absl::StatusOr<uint64_t> before = client.GetGlobalFunc("runtime.SystemLib", Soon());
  ASSERT_TRUE(before.ok()) << before.status();
  EXPECT_EQ(session.counters().resets, 0u);  // the first boot's Terminate is no reset

  ASSERT_TRUE(board.Reboot());
  // The next request meets the board's boot Terminate: Aborted, at once, not at the deadline.
  const absl::Time start = absl::Now();
  absl::StatusOr<uint64_t> during =
      client.GetGlobalFunc("runtime.SystemLib", start + absl::Seconds(5));
  EXPECT_TRUE(absl::IsAborted(during.status())) << during.status();
  EXPECT_NE(during.status().message().find("reset"), absl::string_view::npos) << during.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_EQ(session.counters().resets, 1u);
  // It stays reported until the host reconnects.
  EXPECT_TRUE(absl::IsAborted(session.Receive(absl::Now() + absl::Seconds(1)).status()));

  ASSERT_TRUE(client.Reconnect(Soon()).ok());
  absl::StatusOr<uint64_t> after = client.GetGlobalFunc("runtime.SystemLib", Soon());
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(*after, *before);
  absl::StatusOr<DeviceInfo> info = client.GetDeviceInfo(Soon());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->board_kind, "in-process");
  EXPECT_EQ(session.counters().resets, 1u);
  EXPECT_EQ(session.counters().handshakes, 2u);
}

}  // namespace
}  // namespace benchfarm::device
