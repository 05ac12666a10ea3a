// Board's link_fault_file (BoardConfig, chaos testing) on the real host-process board
// (//crt/host:board over pipes): faults switched on by writing the file, off by removing it, and
// refused (the link runs clean) for a bad file — each applied at the next EnsureImage by a
// reconnect, while the board process keeps running. Plus ParseLinkFaultSpec and Validate.
//
// And Board::MeasureRound's own diagnosis on that board: a round that goes through is no
// failure; a board killed from outside (SIGKILL), crashed (SIGSEGV) or hung (SIGSTOP) is reported
// as such by the board itself, reset, and restarted by the next EnsureImage; a call lost on a
// lossy link is the link's (kLinkLost, or a link that failed), never a hang.

#include <gtest/gtest.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_stat.h"
#include "device/board.h"
#include "device/fault_injecting_transport.h"
#include "device/measure.h"
#include "device/rpc_client.h"
#include "proto/config.pb.h"

namespace benchfarm::device {
namespace {

// Generous: a lost byte costs a call its whole deadline, and nothing here is timed.
constexpr absl::Duration kConnect = absl::Seconds(30);
constexpr absl::Duration kCall = absl::Seconds(1);

std::string BoardPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") +
         "/crt/host/board";
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

// An error a bad link may cause: a reply that never came (or a client that refuses calls after
// one), a malformed reply, a link that went away. Never a wrong value, never anything else.
bool IsLinkError(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::IsFailedPrecondition(s) || absl::IsDataLoss(s) ||
         absl::IsUnavailable(s) || absl::IsAborted(s);
}

// The board process itself (in its sandbox; not the sandbox's bwrap): a descendant of this
// process started with "--kind host-process". 0 if there is none.
pid_t BoardProcess() {
  for (const base::ProcessStat& p : base::Descendants(getpid())) {
    if (p.name == "bwrap") continue;
    std::ifstream in("/proc/" + std::to_string(p.pid) + "/cmdline", std::ios::binary);
    const std::string cmdline((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
    if (cmdline.find(std::string("--kind\0host-process\0", 20)) != std::string::npos) {
      return p.pid;
    }
  }
  return 0;
}

// `add` checked against its reference on 4096 floats: one cost of one call. The data crosses the
// link (the host path: ~100 KB a round), so the faulty link has bytes to damage.
MeasureRequest Add() {
  MeasureRequest q;
  q.function = "add";
  q.reference = "add_reference";
  q.args = Float32Args({{4096}, {4096}, {4096}});
  q.check = true;
  q.data_on_host = true;
  q.options.number = 1;
  q.options.repeat = 1;
  return q;
}

class BoardLinkFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fault_file_ = TempDir() + "/link.fault";
    remove(fault_file_.c_str());
    v1::BoardConfig c;
    c.set_id("hp-fault");
    c.set_kind("host-process");
    c.mutable_host_process();
    c.set_link_fault_file(fault_file_);
    BoardOptions o;
    o.config = c;
    o.scratch_dir = TempDir();
    o.connect_timeout = kConnect;
    absl::StatusOr<std::unique_ptr<Board>> board = Board::Create(o);
    ASSERT_TRUE(board.ok()) << board.status();
    board_ = *std::move(board);
    absl::StatusOr<FirmwareImage> image = FirmwareImageFromFile(BoardPath());
    ASSERT_TRUE(image.ok()) << image.status();
    image_ = *image;
  }

  // EnsureImage until the board is up (a faulty link may fail a handshake or two).
  EnsureOutcome EnsureUp() {
    EnsureOutcome out;
    for (int i = 0; i < 20; ++i) {
      out = board_->EnsureImage(image_, absl::Now() + kConnect);
      if (!out.failure) return out;
      EXPECT_EQ(out.failure->kind, BoardFailure::kSession) << out.failure->message;
    }
    ADD_FAILURE() << "the board did not come up: " << out.failure->message;
    return out;
  }

  // Two small round trips on the board's link (RpcClient::GetMaxPacketSize without its cache):
  // the board's packet size.
  absl::StatusOr<int64_t> Call() {
    RpcClient* rpc = board_->rpc();
    if (rpc == nullptr) return absl::FailedPreconditionError("not connected");
    const absl::Time deadline = absl::Now() + kCall;
    absl::StatusOr<uint64_t> fn =
        rpc->GetGlobalFunc("tvm.rpc.server.GetCRTMaxPacketSize", deadline);
    if (!fn.ok()) return fn.status();
    absl::StatusOr<Arg> size = rpc->CallFunc(*fn, {}, deadline);
    if (!size.ok()) return size.status();
    if (size->type_code() != TypeCode::kInt) return absl::DataLossError("not an integer");
    return size->int_value();
  }

  // After a failed call: a new session on the same link, else the agent's way (reset, restart).
  void Recover() {
    if (board_->rpc() != nullptr && board_->rpc()->Reconnect(absl::Now() + kConnect).ok()) return;
    board_->Reset(Board::ResetReason::kHung);
    EnsureUp();
  }

  std::string fault_file_;
  std::unique_ptr<Board> board_;
  FirmwareImage image_;
};

TEST_F(BoardLinkFaultTest, FileSwitchesFaultsOnAndOffWhileTheBoardRuns) {
  // No file: a clean link, nothing injected; EnsureImage again changes nothing.
  EnsureOutcome out = EnsureUp();
  ASSERT_FALSE(out.failure.has_value());
  EXPECT_TRUE(out.flashed);
  EXPECT_FALSE(board_->link_faults_on());
  EXPECT_EQ(board_->link_fault_error(), "");
  absl::StatusOr<int64_t> clean = Call();
  ASSERT_TRUE(clean.ok()) << clean.status();
  const int64_t packet_size = *clean;
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<int64_t> got = Call();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, packet_size);
  }
  out = board_->EnsureImage(image_, absl::Now() + kConnect);
  ASSERT_FALSE(out.failure.has_value()) << out.failure->message;
  EXPECT_TRUE(out.skipped);
  EXPECT_EQ(out.handshake_time, absl::ZeroDuration());  // no reconnect
  EXPECT_EQ(board_->link_fault_counters().dropped, 0u);
  EXPECT_EQ(board_->link_fault_counters().flipped, 0u);

  // The file appears: the next EnsureImage reconnects through the fault injector.
  WriteFile(fault_file_, "drop_rate=0.002 seed=7\n");
  out = EnsureUp();
  EXPECT_GT(out.handshake_time, absl::ZeroDuration());
  EXPECT_TRUE(board_->link_faults_on());
  EXPECT_EQ(board_->link_fault_error(), "");
  int ok = 0, failed = 0;
  for (int i = 0; i < 400 && (ok < 30 || board_->link_fault_counters().dropped == 0); ++i) {
    absl::StatusOr<int64_t> got = Call();
    if (got.ok()) {
      ++ok;
      EXPECT_EQ(*got, packet_size);  // a bad link never yields a wrong value
      continue;
    }
    ++failed;
    EXPECT_TRUE(IsLinkError(got.status())) << got.status();
    Recover();
    ASSERT_TRUE(board_->link_faults_on());  // every new link of this phase is faulty
  }
  EXPECT_GE(ok, 30);
  const FaultCounters faulty = board_->link_fault_counters();
  std::cout << "with drop_rate=0.002: " << ok << " calls ok, " << failed
            << " failed with a link error, " << faulty.dropped << " bytes dropped\n";
  EXPECT_GT(faulty.dropped, 0u);
  EXPECT_EQ(faulty.flipped, 0u);  // only drops were asked for

  // The file is removed: the next EnsureImage reconnects, cleanly, without a restart.
  remove(fault_file_.c_str());
  out = board_->EnsureImage(image_, absl::Now() + kConnect);
  ASSERT_FALSE(out.failure.has_value()) << out.failure->message;
  EXPECT_FALSE(out.flashed);
  EXPECT_TRUE(out.skipped);
  EXPECT_GT(out.handshake_time, absl::ZeroDuration());
  EXPECT_FALSE(board_->link_faults_on());
  const uint64_t dropped = board_->link_fault_counters().dropped;
  EXPECT_GE(dropped, faulty.dropped);
  for (int i = 0; i < 50; ++i) {
    absl::StatusOr<int64_t> got = Call();
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, packet_size);
  }
  EXPECT_EQ(board_->link_fault_counters().dropped, dropped);  // nothing injected any more
  out = board_->EnsureImage(image_, absl::Now() + kConnect);
  ASSERT_FALSE(out.failure.has_value()) << out.failure->message;
  EXPECT_EQ(out.handshake_time, absl::ZeroDuration());
}

TEST_F(BoardLinkFaultTest, BadFileIsRefusedAndTheLinkRunsClean) {
  ASSERT_FALSE(EnsureUp().failure.has_value());
  WriteFile(fault_file_, "drop_rate=lots\n");
  EnsureOutcome out = board_->EnsureImage(image_, absl::Now() + kConnect);
  ASSERT_FALSE(out.failure.has_value()) << out.failure->message;
  EXPECT_GT(out.handshake_time, absl::ZeroDuration());  // the file changed: reconnected
  EXPECT_FALSE(board_->link_faults_on());
  EXPECT_TRUE(absl::StrContains(board_->link_fault_error(), "drop_rate=lots"))
      << board_->link_fault_error();
  EXPECT_TRUE(absl::StrContains(board_->link_fault_error(), "the link runs clean"))
      << board_->link_fault_error();
  for (int i = 0; i < 20; ++i) {
    absl::StatusOr<int64_t> got = Call();
    ASSERT_TRUE(got.ok()) << got.status();
  }
  // Unchanged: no reconnect, the same verdict.
  out = board_->EnsureImage(image_, absl::Now() + kConnect);
  ASSERT_FALSE(out.failure.has_value()) << out.failure->message;
  EXPECT_EQ(out.handshake_time, absl::ZeroDuration());
  EXPECT_EQ(board_->link_fault_counters().dropped, 0u);
}

// Board::MeasureRound's own diagnosis of a failed round (BoardFailure), on the same board.
class BoardDiagnosisTest : public BoardLinkFaultTest {
 protected:
  // One round of Add() from its start.
  Board::CallOutcome Round() {
    MeasureOutcome measured;
    return board_->MeasureRound(Add(), 1, &measured, absl::Now() + kCall);
  }

  // Sends `sig` to the board process, then runs a round: the board's diagnosis. The board is
  // continued (after SIGSTOP) once the round is over.
  Board::CallOutcome RoundAfter(int sig) {
    const pid_t pid = BoardProcess();
    EXPECT_NE(pid, 0) << "no board process";
    EXPECT_EQ(kill(pid, sig), 0);
    if (sig != SIGSTOP) {
      // Dead (a zombie until reaped) before the round starts.
      for (absl::Time until = absl::Now() + absl::Seconds(10); absl::Now() < until;) {
        std::optional<base::ProcessStat> p = base::ReadProcessStat(pid);
        if (!p || p->state == 'Z') break;
        absl::SleepFor(absl::Milliseconds(10));
      }
    }
    Board::CallOutcome out = Round();
    if (sig == SIGSTOP) kill(pid, SIGCONT);
    return out;
  }

  // After a reset: the next EnsureImage restarts the board, and a round goes through.
  void ExpectRestarted() {
    EXPECT_TRUE(EnsureUp().flashed);
    const Board::CallOutcome out = Round();
    EXPECT_FALSE(out.failure.has_value()) << out.failure->message;
  }
};

TEST_F(BoardDiagnosisTest, ARoundThatGoesThroughIsNoFailure) {
  ASSERT_FALSE(EnsureUp().failure.has_value());
  MeasureOutcome measured;
  const Board::CallOutcome out = board_->MeasureRound(Add(), 1, &measured, absl::Now() + kCall);
  ASSERT_FALSE(out.failure.has_value()) << out.failure->message;
  EXPECT_FALSE(out.reset);
  EXPECT_EQ(out.leftovers.ToString(), "");
  EXPECT_GT(out.link.messages_received, 0u);
  EXPECT_TRUE(measured.done);
  EXPECT_TRUE(measured.matches);
  EXPECT_EQ(measured.costs.size(), 1u);
  EXPECT_TRUE(board_->connected());
  EXPECT_FALSE(board_->EnsureImage(image_, absl::Now() + kConnect).flashed);
}

TEST_F(BoardDiagnosisTest, ABoardKilledFromOutsideSaysSoAndIsRestarted) {
  ASSERT_FALSE(EnsureUp().failure.has_value());
  const Board::CallOutcome out = RoundAfter(SIGKILL);
  ASSERT_TRUE(out.failure.has_value());
  EXPECT_EQ(out.failure->kind, BoardFailure::kKilledFromOutside) << out.failure->message;
  EXPECT_TRUE(absl::StrContains(out.failure->message, "signal 9")) << out.failure->message;
  EXPECT_TRUE(out.reset);
  EXPECT_FALSE(board_->connected());
  ExpectRestarted();
}

TEST_F(BoardDiagnosisTest, ACrashedBoardSaysHowAndIsRestarted) {
  ASSERT_FALSE(EnsureUp().failure.has_value());
  const Board::CallOutcome out = RoundAfter(SIGSEGV);
  ASSERT_TRUE(out.failure.has_value());
  EXPECT_EQ(out.failure->kind, BoardFailure::kCrashed) << out.failure->message;
  EXPECT_TRUE(absl::StrContains(out.failure->message, "signal 11")) << out.failure->message;
  EXPECT_TRUE(out.reset);
  ExpectRestarted();
}

TEST_F(BoardDiagnosisTest, AHungBoardAnswersNoHandshakeAndIsRestarted) {
  ASSERT_FALSE(EnsureUp().failure.has_value());
  const Board::CallOutcome out = RoundAfter(SIGSTOP);
  ASSERT_TRUE(out.failure.has_value());
  EXPECT_EQ(out.failure->kind, BoardFailure::kHung) << out.failure->message;
  EXPECT_EQ(out.failure->damaged_packets, 0u);
  EXPECT_TRUE(out.reset);
  EXPECT_FALSE(board_->connected());
  ExpectRestarted();
}

TEST_F(BoardDiagnosisTest, ACallLostOnALossyLinkIsTheLinksNeverAHang) {
  WriteFile(fault_file_, "drop_rate=0.00002 seed=5\n");
  int lost = 0, failed = 0, ok = 0;
  for (int i = 0; i < 60 && lost < 2; ++i) {
    if (EnsureUp().failure) return;
    ASSERT_TRUE(board_->link_faults_on());
    const Board::CallOutcome out = Round();
    if (!out.failure) {
      ++ok;
      continue;
    }
    ++failed;
    const BoardFailure& f = *out.failure;
    EXPECT_TRUE(f.kind == BoardFailure::kLinkLost || f.kind == BoardFailure::kLinkFailed)
        << f.kind << ": " << f.message;
    if (f.kind == BoardFailure::kLinkLost) {
      ++lost;
      // Damaged packets make the board reconnect (a reset); a clean loss leaves the new link up.
      EXPECT_EQ(out.reset, f.damaged_packets > 0);
      EXPECT_EQ(board_->connected(), f.damaged_packets == 0);
    }
  }
  std::cout << ok << " rounds ok, " << failed << " failed, " << lost << " lost on the link\n";
  EXPECT_GT(lost, 0) << "no call was lost: the link dropped nothing?";
}

TEST(ParseLinkFaultSpec, ReadsEveryKey) {
  absl::StatusOr<FaultOptions> o = ParseLinkFaultSpec(
      " drop_rate=0.001 flip_rate=1e-4\tduplicate_rate=0 delay_rate=0.5 max_delay_ms=20 "
      "seed=42\n");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_DOUBLE_EQ(o->drop_rate, 0.001);
  EXPECT_DOUBLE_EQ(o->flip_rate, 1e-4);
  EXPECT_DOUBLE_EQ(o->duplicate_rate, 0);
  EXPECT_DOUBLE_EQ(o->delay_rate, 0.5);
  EXPECT_EQ(o->max_delay, absl::Milliseconds(20));
  EXPECT_EQ(o->seed, 42u);
  EXPECT_TRUE(o->on_read);
  EXPECT_TRUE(o->on_write);
}

TEST(ParseLinkFaultSpec, EmptyMeansNoFaults) {
  absl::StatusOr<FaultOptions> o = ParseLinkFaultSpec("\n");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->drop_rate, 0);
  EXPECT_EQ(o->flip_rate, 0);
  EXPECT_EQ(o->duplicate_rate, 0);
  EXPECT_EQ(o->delay_rate, 0);
}

TEST(ParseLinkFaultSpec, RefusesWhatItDoesNotKnow) {
  for (const char* bad :
       {"drop=0.1", "drop_rate", "drop_rate=", "drop_rate=1.5", "drop_rate=-0.1", "drop_rate=nan",
        "drop_rate=0.1 drop_rate=0.2", "max_delay_ms=-1", "seed=-3", "seed=1.5", "flip_rate=x"}) {
    absl::StatusOr<FaultOptions> o = ParseLinkFaultSpec(bad);
    EXPECT_TRUE(absl::IsInvalidArgument(o.status())) << bad << ": " << o.status();
  }
}

TEST(BoardValidate, LinkFaultFileMustBeAbsolute) {
  v1::BoardConfig c;
  c.set_id("b");
  c.mutable_host_process();
  c.set_link_fault_file("relative/link.fault");
  absl::Status s = Board::Validate(c);
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), "link_fault_file:")) << s;
  c.set_link_fault_file("/tmp/link.fault");
  EXPECT_TRUE(Board::Validate(c).ok());
}

}  // namespace
}  // namespace benchfarm::device
