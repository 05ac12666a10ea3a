// The agent with emulated Cortex-M3 boards (qemu-mps2-an385: crt/boards/mps2-an385 firmware
// cross-built by the board kind's project template, "flashed" by starting QEMU, reached over the
// UART on QEMU's pty through the serial code path) in each timing mode — host time, -icount
// instructions, the cycle model — beside a host-process board, against an in-process tracker.
//
// A candidate that faults on the chip (a NULL write caught by the MPU, TVMPlatformAbort) gets
// DEVICE_RESET with the fault named in the message (the faulting function, file and line from the
// image's debug information), and the next trial on the board succeeds; a hang gets RUN_TIMEOUT
// and a reset; each attempt's log has QEMU's start (its command line and output) and says when a
// flash follows a reset of the board; an image too big for the part's flash is COMPILE_DEVICE
// with the linker's numbers;
// a C source trial's own compile options build; a tuning batch of 16 candidates is one build and
// one flash, and its costs say they are emulated. The host-process board keeps serving its own jobs
// meanwhile; a board whose QEMU is missing (FLASH_ERROR) or that never answers (SESSION_ERROR) gets
// an error naming the cause and is quarantined.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/agent.h"
#include "agent/firmware.h"
#include "base/files.h"
#include "tests/example_ops.h"
#include "tests/in_process_tracker.h"

namespace benchfarm::agent {
namespace {

constexpr char kQemuKind[] = "qemu-mps2-an385";
constexpr char kHostKind[] = "host-process";
constexpr char kMissingKind[] = "qemu-missing";  // a board whose QEMU is not installed
constexpr char kSilentKind[] = "qemu-silent";    // a board that never answers (QEMU's CPU halted)
constexpr char kIcountKind[] = "qemu-icount";    // timing INSTRUCTIONS: -icount shift=2 (4 ns each)
constexpr char kCyclesKind[] = "qemu-cycles";    // timing CYCLES: the cycle model at 25 MHz
constexpr char kMuteModelKind[] = "qemu-mute-model";  // a cycle model that reports no interval

v1::Trial Matmul(const std::string& kind, std::map<std::string, std::string> knobs = {}) {
  v1::Trial t;
  t.set_board_kind(kind);
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (const auto& [k, v] : knobs) (*t.mutable_op()->mutable_template_op()->mutable_knobs())[k] = v;
  t.set_check_outputs(true);
  t.mutable_measure()->set_number(3);
  t.mutable_measure()->set_repeat(2);
  t.set_seed(3);
  return t;
}

// A C source trial on the QEMU board: `body` is the packed function's body.
v1::Trial CSource(const std::string& entry, const std::string& body, int timeout_ms = 0,
                  const std::string& extra = "", const std::vector<std::string>& cflags = {}) {
  v1::Trial t;
  t.set_board_kind(kQemuKind);
  t.mutable_op()->set_c_source(
      absl::StrCat("#include <benchfarm/ops/common.h>\n#include <dlpack/dlpack.h>\n"
                   "#include <tvm/runtime/crt/platform.h>\n",
                   extra, "BF_OPS_DECLARE_PACKED(", entry, ");\nBF_OPS_DECLARE_PACKED(", entry,
                   ") {\n", body, "\n}\n"));
  t.mutable_op()->set_entry_function(entry);
  for (const std::string& flag : cflags) t.mutable_op()->add_cflags(flag);
  for (int i = 0; i < 3; ++i) t.add_args()->add_shape(64);
  t.mutable_measure()->set_number(2);
  if (timeout_ms > 0) t.mutable_measure()->set_timeout_ms(timeout_ms);
  return t;
}

const char kNullWrite[] = "  volatile float* p = (volatile float*)0;\n  *p = 1.0f;\n  return 0;";
const char kAbort[] = "  TVMPlatformAbort(kTvmErrorPlatformCheckFailure);";
const char kHang[] = "  volatile int spin = 1;\n  while (spin) {}\n  return 0;";
const char kNothing[] = "  (void)args;\n  return 0;";

class QemuAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(base::MakeDirs(dir_).ok());
    tracker::JobQueueOptions q;
    q.known_kinds = {kQemuKind,   kHostKind,   kMissingKind,  kSilentKind,
                     kIcountKind, kCyclesKind, kMuteModelKind};
    // As a deployed tracker has (deploy/examples/tracker.textproto): a quarantined board must pass
    // this before it gets work again.
    q.health_check_trial.mutable_op()->mutable_template_op()->set_op("add");
    q.health_check_trial.set_check_outputs(true);
    tracker::ServiceOptions s;
    s.heartbeat = absl::Milliseconds(500);
    s.dispatch_period = absl::Milliseconds(50);
    tracker_ = std::make_unique<testing::InProcessTracker>(dir_ + "/tracker.db", q, s);
    ASSERT_TRUE(tracker_->Start().ok());
    v1::AgentConfig c = tracker_->AgentConfig("agent-qemu", dir_);
    v1::BoardConfig* m3 = c.add_boards();
    m3->set_id("m3-0");
    m3->set_kind(kQemuKind);
    m3->mutable_serial();
    m3->mutable_qemu()->set_machine("mps2-an385");
    m3->mutable_qemu()->set_timing(v1::QemuMachine::HOST);
    m3->set_build_template("agent/templates/qemu-mps2-an385");
    m3->set_build_time_limit_seconds(300);
    v1::BoardConfig* hp = c.add_boards();
    hp->set_id("hp-0");
    hp->set_kind(kHostKind);
    hp->mutable_host_process();
    hp->set_build_template("agent/templates/host-process");
    v1::BoardConfig* ghost = c.add_boards();
    ghost->set_id("ghost-0");
    ghost->set_kind(kMissingKind);
    ghost->mutable_serial();
    ghost->mutable_qemu()->set_machine("mps2-an385");
    ghost->mutable_qemu()->set_binary("/nonexistent/qemu-system-arm");
    ghost->set_build_template("agent/templates/qemu-mps2-an385");
    v1::BoardConfig* mute = c.add_boards();
    mute->set_id("mute-0");
    mute->set_kind(kSilentKind);
    mute->mutable_serial();
    mute->mutable_qemu()->set_machine("mps2-an385");
    mute->mutable_qemu()->add_extra_args("-S");  // QEMU starts with the CPU stopped: no answer
    mute->set_build_template("agent/templates/qemu-mps2-an385");
    v1::BoardConfig* icount = c.add_boards();
    icount->set_id("icount-0");
    icount->set_kind(kIcountKind);
    icount->mutable_serial();
    icount->mutable_qemu()->set_machine("mps2-an385");
    icount->mutable_qemu()->set_deterministic(true);  // the older spelling of INSTRUCTIONS
    icount->mutable_qemu()->set_icount_shift(2);
    icount->set_build_template("agent/templates/qemu-mps2-an385");
    icount->set_build_time_limit_seconds(300);
    v1::BoardConfig* cycles = c.add_boards();
    cycles->set_id("cycles-0");
    cycles->set_kind(kCyclesKind);
    cycles->mutable_serial();
    cycles->mutable_qemu()->set_machine("mps2-an385");
    cycles->mutable_qemu()->set_timing(v1::QemuMachine::CYCLES);
    cycles->set_build_template("agent/templates/qemu-mps2-an385");
    cycles->set_build_time_limit_seconds(300);
    v1::BoardConfig* mute_model = c.add_boards();
    mute_model->set_id("mute-model-0");
    mute_model->set_kind(kMuteModelKind);
    mute_model->mutable_serial();
    mute_model->mutable_qemu()->set_machine("mps2-an385");
    mute_model->mutable_qemu()->set_timing(v1::QemuMachine::CYCLES);
    mute_model->mutable_qemu()->set_cycle_model_plugin(
        absl::StrCat(std::getenv("TEST_SRCDIR"), "/", std::getenv("TEST_WORKSPACE"),
                     "/cyclemodel/testing/libfaulty_mute.so"));
    mute_model->set_build_template("agent/templates/qemu-mps2-an385");
    AgentOptions o;
    o.config = c;
    o.max_backoff = absl::Seconds(1);
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    agent_->Start();
  }

  void TearDown() override {
    if (agent_ != nullptr) agent_->Stop();
    tracker_->Stop();
  }

 public:
  testing::InProcessTracker* tracker() { return tracker_.get(); }

  std::vector<v1::Job> Run(const std::vector<v1::Trial>& trials) {
    absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit(trials);
    EXPECT_TRUE(ids.ok()) << ids.status();
    if (!ids.ok()) return {};
    absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(400));
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<v1::Job>{};
  }

  // Every attempt's log of the job, one after another.
  std::string Logs(const std::string& job_id) {
    v1::GetJobLogRequest req;
    req.set_job_id(job_id);
    v1::GetJobLogResponse resp;
    grpc::ClientContext context;
    const grpc::Status s = tracker_->client()->GetJobLog(&context, req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    std::string text;
    for (const v1::AttemptLog& log : resp.logs()) text += log.text();
    return text;
  }

 protected:
  std::string dir_;
  std::unique_ptr<testing::InProcessTracker> tracker_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(QemuAgentTest, FaultsAreNamedHangsAreResetAndTheBoardServesTheNextTrial) {
  std::vector<v1::Trial> trials = {
      CSource("null_write", kNullWrite), Matmul(kQemuKind), CSource("aborter", kAbort),
      Matmul(kQemuKind, {{"tile_m", "4"}}), CSource("hanger", kHang, /*timeout_ms=*/2000),
      Matmul(kQemuKind, {{"tile_m", "2"}}),
      // 8 MiB of constants: more than the part's flash.
      CSource("too_big", "  (void)args;\n  return (int)bf_too_big[5];", 0,
              "static const volatile unsigned char bf_too_big[8u << 20] = {1};\n"),
      CSource("nothing", kNothing, 0, "", {"-O3", "-funroll-loops"}),  // its own options
      Matmul(kHostKind),  // the host-process board beside it
  };
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), trials.size());
  auto code = [&](int i) { return jobs[i].result().error_code(); };
  auto message = [&](int i) { return jobs[i].result().message(); };
  EXPECT_EQ(code(0), v1::DEVICE_RESET) << message(0);
  EXPECT_TRUE(absl::StrContains(message(0), "fault")) << message(0);
  EXPECT_TRUE(absl::StrContains(message(0), "pc=0x")) << message(0);
  // The faulting store named from the image's debug information (line 7 of the trial's source),
  // and the call it returns to.
  EXPECT_TRUE(absl::StrContains(message(0), " in null_write (trial.c:7) lr=0x")) << message(0);
  EXPECT_TRUE(absl::StrContains(message(0), "lr=0x") &&
              absl::StrContains(message(0).substr(message(0).find("lr=0x")), " in "))
      << message(0);
  EXPECT_EQ(code(1), v1::NO_ERROR) << message(1);
  EXPECT_EQ(code(2), v1::DEVICE_RESET) << message(2);
  EXPECT_TRUE(absl::StrContains(message(2), "TVMPlatformAbort")) << message(2);
  EXPECT_EQ(code(3), v1::NO_ERROR) << message(3);
  EXPECT_EQ(code(4), v1::RUN_TIMEOUT) << message(4);
  EXPECT_EQ(code(5), v1::NO_ERROR) << message(5);
  EXPECT_EQ(code(6), v1::COMPILE_DEVICE) << message(6);
  EXPECT_TRUE(absl::StrContains(message(6), "overflowed")) << message(6);
  EXPECT_EQ(code(7), v1::NO_ERROR) << message(7);
  EXPECT_EQ(code(8), v1::NO_ERROR) << message(8);
  EXPECT_EQ(jobs[8].result().board_id(), "hp-0");
  EXPECT_EQ(jobs[8].result().emulation(), "");
  for (int i : {1, 3, 5}) {
    EXPECT_EQ(jobs[i].result().board_id(), "m3-0");
    EXPECT_EQ(jobs[i].result().emulation(), "qemu");
    EXPECT_EQ(jobs[i].result().timer(), "systick");
    EXPECT_EQ(jobs[i].result().costs_s_size(), 2);
  }
  for (const v1::Job& j : jobs) EXPECT_EQ(j.result().attempts(), 1) << j.DebugString();
  // A job whose trial started QEMU has QEMU's start in its log (the command line, what QEMU
  // printed); a flash after the faults' and the hang's resets says it follows a reset.
  int flashed = 0, restarted = 0;
  for (int i = 0; i < 6; ++i) {
    const std::string log = Logs(jobs[i].job_id());
    if (!absl::StrContains(log, "flash: image ")) continue;
    ++flashed;
    EXPECT_TRUE(absl::StrContains(log, " $ qemu-system-arm -M mps2-an385 ")) << log;
    EXPECT_TRUE(absl::StrContains(log, "char device redirected to /dev/pts/")) << log;
    restarted += absl::StrContains(log, "(after the board's reset)");
  }
  EXPECT_GE(flashed, 2);
  EXPECT_GE(restarted, 1);
}

// A broken board of `kind` (`board_id`) beside working ones: its trial ends in `code` with a
// message containing every one of `causes`, after the tracker retried it up to the retry budget
// (3); the board is quarantined (no user work, only failing health checks) and the agent's other
// boards serve their trials meanwhile.
void ExpectQuarantinedWhileOthersServe(QemuAgentTest* t, const std::string& kind,
                                       const std::string& board_id, v1::ErrorCode code,
                                       const std::vector<std::string>& causes) {
  std::vector<v1::Job> jobs = t->Run({Matmul(kind), Matmul(kQemuKind), Matmul(kHostKind)});
  ASSERT_EQ(jobs.size(), 3u);
  const v1::Result& r = jobs[0].result();
  EXPECT_EQ(r.error_code(), code) << r.message();
  EXPECT_EQ(r.board_id(), board_id);
  for (const std::string& cause : causes) {
    EXPECT_TRUE(absl::StrContains(r.message(), cause)) << cause << " not in: " << r.message();
  }
  EXPECT_EQ(jobs[0].attempts_size(), 3) << "retried up to the retry budget";
  EXPECT_EQ(jobs[1].result().error_code(), v1::NO_ERROR) << jobs[1].result().message();
  EXPECT_EQ(jobs[2].result().error_code(), v1::NO_ERROR) << jobs[2].result().message();
  v1::ListBoardsRequest req;
  v1::ListBoardsResponse resp;
  grpc::ClientContext context;
  ASSERT_TRUE(t->tracker()->client()->ListBoards(&context, req, &resp).ok());
  bool seen = false;
  for (const v1::Board& b : resp.boards()) {
    if (b.board_id() != board_id) continue;
    seen = true;
    EXPECT_TRUE(b.state() == v1::QUARANTINED || b.state() == v1::HEALTH_CHECK) << b.DebugString();
  }
  EXPECT_TRUE(seen);
}

// Each board registers its core, read from its template's package data: the Cortex-M3 boards
// (agent/templates/qemu-mps2-an385 -> crt/boards/mps2-an385/board.conf -mcpu=cortex-m3) and none
// for the host-process board — what AutoTVM records name in their target.
TEST_F(QemuAgentTest, EachBoardRegistersItsPackagesCore) {
  std::map<std::string, std::string> cores;
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (cores.size() < 7 && absl::Now() < deadline) {
    cores.clear();
    for (const v1::Board& b : tracker()->queue()->Boards("")) cores[b.board_id()] = b.cpu();
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(cores, (std::map<std::string, std::string>{{"m3-0", "cortex-m3"},
                                                       {"hp-0", ""},
                                                       {"ghost-0", "cortex-m3"},
                                                       {"mute-0", "cortex-m3"},
                                                       {"icount-0", "cortex-m3"},
                                                       {"cycles-0", "cortex-m3"},
                                                       {"mute-model-0", "cortex-m3"}}));
}

// QEMU cannot start: FLASH_ERROR naming the binary and how to install it.
TEST_F(QemuAgentTest, ABoardWhoseQemuIsMissingIsQuarantinedAndTheOthersServe) {
  ExpectQuarantinedWhileOthersServe(
      this, kMissingKind, "ghost-0", v1::FLASH_ERROR,
      {"/nonexistent/qemu-system-arm", "apt install qemu-system-arm"});
}

// The board never answers (QEMU's CPU halted): SESSION_ERROR naming the board and the handshake.
TEST_F(QemuAgentTest, ABoardThatNeverAnswersIsQuarantinedAndTheOthersServe) {
  ExpectQuarantinedWhileOthersServe(this, kSilentKind, "mute-0", v1::SESSION_ERROR,
                                    {"mute-0", "handshake"});
}

TEST_F(QemuAgentTest, SixteenCandidatesAreOneBuildAndOneFlash) {
  std::vector<v1::Trial> trials;
  for (const char* tm : {"1", "2", "4", "8"}) {
    for (const char* tn : {"4", "8"}) {
      for (const char* order : {"ijk", "ikj"}) {
        trials.push_back(Matmul(kQemuKind, {{"tile_m", tm}, {"tile_n", tn}, {"order", order}}));
      }
    }
  }
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 16u);
  for (const v1::Job& j : jobs) {
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
    EXPECT_EQ(j.result().costs_s_size(), 2);
    EXPECT_EQ(j.result().emulation(), "qemu");
    EXPECT_EQ(j.result().board_id(), "m3-0");
    EXPECT_EQ(j.result().cpu_hz(), 0);  // QEMU in host time: no clock to calibrate against
  }
  AgentCounters c = agent_->counters();
  EXPECT_EQ(c.builds, 1);
  EXPECT_EQ(c.boards.flashes, 1);
  EXPECT_GE(c.boards.flash_skips, 15);
}

// Deterministic emulation: the calibration kernel costs exactly what -icount says (the board's
// clock is 1e9 / 2^2 instructions per second), every cost of a candidate is the same, interleaved
// or not, and adaptive mode stops at its target with the fewest costs.
TEST_F(QemuAgentTest, UnderIcountCostsAreIdenticalAndTheClockIsExact) {
  std::vector<v1::Trial> trials;
  for (const char* tm : {"1", "4"}) {
    v1::Trial t = Matmul(kIcountKind, {{"tile_m", tm}});
    t.mutable_measure()->set_repeat(6);
    trials.push_back(t);
  }
  v1::Trial adaptive = Matmul(kIcountKind, {{"tile_m", "8"}});
  adaptive.mutable_measure()->set_target_rel_ci(0.001);
  adaptive.mutable_measure()->set_min_repeat_ms(1);
  trials.push_back(adaptive);
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 3u);
  for (const v1::Job& j : jobs) {
    const v1::Result& r = j.result();
    ASSERT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
    EXPECT_EQ(r.emulation(), "qemu-icount");
    EXPECT_EQ(r.cpu_hz(), 250e6);  // calibrated: agreed with -icount shift=2
    ASSERT_GE(r.costs_s_size(), 6);
    for (double c : r.costs_s()) EXPECT_EQ(c, r.costs_s(0)) << r.ShortDebugString();
    EXPECT_EQ(r.stats().cv(), 0);
    EXPECT_EQ(r.stats().rel_half_width(), 0);
    EXPECT_FALSE(r.stats().unstable());
  }
  EXPECT_TRUE(jobs[0].result().measured().interleaved());
  EXPECT_EQ(jobs[2].result().measured().stop(), "target");
  EXPECT_EQ(jobs[2].result().costs_s_size(), device::kAdaptiveMinRepeats);
  // Costs differ between candidates: identical costs are not a stuck timer.
  EXPECT_NE(jobs[0].result().costs_s(0), jobs[1].result().costs_s(0));
}

// The cycle model: costs are modeled cycles at the package's 25 MHz, identical repeat to repeat
// and candidate to candidate measured again, with the instructions beside them; the calibration
// kernel costs what the firmware says (3 cycles an iteration); the timer says "cycle-model". The
// same candidates on the -icount board cost instructions, and rank differently where cycles per
// instruction differ.
TEST_F(QemuAgentTest, UnderTheCycleModelCostsAreCyclesAtTheBoardsOwnClock) {
  std::vector<v1::Trial> trials;
  for (const char* kind : {kCyclesKind, kIcountKind}) {
    for (const char* tm : {"1", "4", "1"}) {
      v1::Trial t = Matmul(kind, {{"tile_m", tm}});
      t.mutable_measure()->set_repeat(4);
      trials.push_back(t);
    }
  }
  v1::Trial adaptive = Matmul(kCyclesKind, {{"tile_m", "8"}});
  adaptive.mutable_measure()->set_target_rel_ci(0.001);
  adaptive.mutable_measure()->set_min_repeat_ms(1);
  trials.push_back(adaptive);
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 7u);
  for (int i : {0, 1, 2, 6}) {
    const v1::Result& r = jobs[i].result();
    ASSERT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
    EXPECT_EQ(r.board_id(), "cycles-0");
    EXPECT_EQ(r.emulation(), "qemu-cycles");
    EXPECT_EQ(r.timer(), "cycle-model");
    EXPECT_EQ(r.cpu_hz(), 25e6);  // calibrated against the model: the package's own clock
    ASSERT_GE(r.costs_s_size(), 4);
    ASSERT_EQ(r.model_cycles_size(), r.costs_s_size());
    ASSERT_EQ(r.model_instructions_size(), r.costs_s_size());
    for (int k = 0; k < r.costs_s_size(); ++k) {
      EXPECT_EQ(r.costs_s(k), r.costs_s(0)) << r.ShortDebugString();
      EXPECT_DOUBLE_EQ(r.costs_s(k), r.model_cycles(k) / 25e6);
      EXPECT_GT(r.model_cycles(k), r.model_instructions(k));  // a Cortex-M3: CPI above 1
    }
    EXPECT_EQ(r.stats().cv(), 0);
  }
  // Measured again (another submission's batch), the same candidate costs the same.
  EXPECT_EQ(jobs[0].result().costs_s(0), jobs[2].result().costs_s(0));
  EXPECT_NE(jobs[0].result().costs_s(0), jobs[1].result().costs_s(0));
  EXPECT_EQ(jobs[6].result().measured().stop(), "target");
  for (int i : {3, 4, 5}) {
    const v1::Result& r = jobs[i].result();
    ASSERT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
    EXPECT_EQ(r.emulation(), "qemu-icount");
    EXPECT_EQ(r.model_cycles_size(), 0);
    // The -icount board counts the instructions the model saw (4 ns each).
    EXPECT_NEAR(r.costs_s(0) / 4e-9, jobs[i - 3].result().model_instructions(0),
                jobs[i - 3].result().model_instructions(0) * 0.01);
  }
  // The tracker lists each emulated board with its timing mode.
  v1::ListBoardsRequest req;
  v1::ListBoardsResponse resp;
  grpc::ClientContext context;
  ASSERT_TRUE(tracker_->client()->ListBoards(&context, req, &resp).ok());
  std::map<std::string, std::string> timing;
  for (const v1::Board& b : resp.boards()) timing[b.board_id()] = b.timing();
  EXPECT_EQ(timing["cycles-0"], "cycles");
  EXPECT_EQ(timing["icount-0"], "instructions");
  EXPECT_EQ(timing["m3-0"], "host");
  EXPECT_EQ(timing["hp-0"], "");
}

// A cycle model whose plugin reports no interval: the trial is not given a cost it cannot vouch
// for — SESSION_ERROR naming the board and the cause, retried elsewhere, the board quarantined;
// the other boards serve meanwhile.
TEST_F(QemuAgentTest, ACycleModelThatReportsNothingIsQuarantinedAndTheOthersServe) {
  ExpectQuarantinedWhileOthersServe(this, kMuteModelKind, "mute-model-0", v1::SESSION_ERROR,
                                    {"mute-model-0", "timed intervals"});
}

// A user's operator from the catalog on the microcontroller: its whole space (8 configs) as one
// batch, one image (each candidate its own function), one flash, outputs checked on the board.
TEST_F(QemuAgentTest, UserOperatorCandidatesShareOneImageOnTheCortexM3) {
  absl::StatusOr<v1::Operator> gemv = testing::ExampleGemv();
  ASSERT_TRUE(gemv.ok()) << gemv.status();
  absl::StatusOr<v1::Operator> added = tracker_->AddOperator(*gemv);
  ASSERT_TRUE(added.ok()) << added.status();
  std::vector<v1::Trial> trials;
  for (const char* unroll : {"1", "2", "4", "8"}) {
    for (const char* acc : {"1", "2"}) {
      v1::Trial t;
      t.set_board_kind(kQemuKind);
      t.mutable_op()->mutable_template_op()->set_op("gemv");
      (*t.mutable_op()->mutable_template_op()->mutable_knobs())["unroll"] = unroll;
      (*t.mutable_op()->mutable_template_op()->mutable_knobs())["acc"] = acc;
      t.set_check_outputs(true);
      t.mutable_measure()->set_number(2);
      trials.push_back(t);
    }
  }
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 8u);
  for (const v1::Job& j : jobs) {
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
    EXPECT_EQ(j.result().board_id(), "m3-0");
    EXPECT_EQ(j.result().timer(), "systick");
    EXPECT_EQ(j.trial().op().template_op().version(), added->version());
  }
  AgentCounters c = agent_->counters();
  EXPECT_EQ(c.builds, 1);
  EXPECT_EQ(c.boards.flashes, 1);
}

}  // namespace
}  // namespace benchfarm::agent
