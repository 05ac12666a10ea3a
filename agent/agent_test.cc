// The agent end to end on host-process boards against an in-process tracker: trials in, results
// out. Costs are plausible and outputs are checked; a trial that does not compile, crashes the
// board, hangs, or computes a wrong answer gets its own error code and the board serves the next
// job; 16 candidates of one operator cost one build and one flash (the agent's counters), and an
// identical batch none; the tracker can be away for 30 s mid-run and every result still arrives,
// exactly once.
#include "agent/agent.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/process_stat.h"
#include "tests/example_ops.h"
#include "tests/in_process_tracker.h"

namespace benchfarm::agent {
namespace {

constexpr char kKind[] = "host-process";

v1::Trial Matmul(std::map<std::string, std::string> knobs = {}, bool check = true) {
  v1::Trial t;
  t.set_board_kind(kKind);
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (const auto& [k, v] : knobs) (*t.mutable_op()->mutable_template_op()->mutable_knobs())[k] = v;
  t.set_check_outputs(check);
  t.mutable_measure()->set_number(5);
  t.mutable_measure()->set_repeat(3);
  t.set_seed(7);
  return t;
}

v1::Trial CSource(const std::string& entry, const std::string& source, const std::string& reference,
                  int timeout_ms = 0) {
  v1::Trial t;
  t.set_board_kind(kKind);
  t.mutable_op()->set_c_source(source);
  t.mutable_op()->set_entry_function(entry);
  t.mutable_op()->set_reference_function(reference);
  for (int i = 0; i < 3; ++i) t.add_args()->add_shape(64);
  t.set_check_outputs(!reference.empty());
  t.mutable_measure()->set_number(3);
  if (timeout_ms > 0) t.mutable_measure()->set_timeout_ms(timeout_ms);
  return t;
}

const char kPrologue[] =
    "#include <benchfarm/ops/common.h>\n"
    "#include <dlpack/dlpack.h>\n";

std::string Kernel(const std::string& name, const std::string& body) {
  return absl::StrCat(kPrologue, "BF_OPS_DECLARE_PACKED(", name, ");\n", "BF_OPS_DECLARE_PACKED(",
                      name, ") {\n", body, "\n}\n");
}

// C = A + B + 1 (add_reference computes A + B).
const char kOffByOne[] =
    "  const DLTensor* a = (const DLTensor*)args[0].v_handle;\n"
    "  const DLTensor* b = (const DLTensor*)args[1].v_handle;\n"
    "  DLTensor* c = (DLTensor*)args[2].v_handle;\n"
    "  int64_t n = a->shape[0], i;\n"
    "  for (i = 0; i < n; ++i) ((float*)c->data)[i] = ((const float*)a->data)[i] +\n"
    "      ((const float*)b->data)[i] + 1.0f;\n"
    "  return 0;";
// C = A + B, correctly.
const char kGoodAdd[] =
    "  const DLTensor* a = (const DLTensor*)args[0].v_handle;\n"
    "  const DLTensor* b = (const DLTensor*)args[1].v_handle;\n"
    "  DLTensor* c = (DLTensor*)args[2].v_handle;\n"
    "  int64_t n = a->shape[0], i;\n"
    "  for (i = 0; i < n; ++i) ((float*)c->data)[i] = ((const float*)a->data)[i] +\n"
    "      ((const float*)b->data)[i];\n"
    "  return 0;";
const char kCrash[] = "  volatile int* p = (volatile int*)0;\n  *p = 1;\n  return 0;";
const char kHang[] = "  volatile int spin = 1;\n  while (spin) {}\n  return 0;";

// The host-process board processes this test started (descendants of this process whose command
// line runs the board, inside its sandbox or not; bwrap too), with the CPU seconds each has used.
std::map<pid_t, double> BoardProcesses() {
  std::map<pid_t, double> out;
  for (const base::ProcessStat& p : base::Descendants(getpid())) {
    const std::string cmdline =
        base::ReadFile(absl::StrCat("/proc/", p.pid, "/cmdline")).value_or("");
    // The board's image (in its sandbox: /bf/image), or bwrap starting it: "--kind host-process".
    if (cmdline.find(std::string("--kind\0host-process\0", 20)) != std::string::npos) {
      out[p.pid] = p.cpu_seconds;
    }
  }
  return out;
}

// A kernel that spins on the CPU for about `iterations` loop turns (~1 s per 3e9 here).
v1::Trial Spinner(const std::string& iterations) {
  const std::string body = absl::StrCat(
      "  volatile unsigned long n = 0;\n"
      "  (void)args;\n  (void)type_codes;\n  (void)num_args;\n"
      "  while (n < ",
      iterations, "UL) n++;\n  return 0;");
  v1::Trial t = CSource("spinner", Kernel("spinner", body), "", /*timeout_ms=*/60000);
  t.mutable_measure()->set_number(1);
  return t;
}

// A board process that has used more than `cpu_s` of CPU (a trial's kernel is running), waiting
// up to a minute for one; 0 if none.
pid_t BusyBoardProcess(double cpu_s) {
  for (absl::Time until = absl::Now() + absl::Seconds(60); absl::Now() < until;) {
    for (const auto& [pid, used] : BoardProcesses()) {
      if (used > cpu_s) return pid;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return 0;
}

bool WaitBoardBusy(double cpu_s) { return BusyBoardProcess(cpu_s) != 0; }

class AgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(base::MakeDirs(dir_).ok());
    tracker::JobQueueOptions q;
    q.known_kinds = {kKind};
    TweakQueue(&q);
    tracker::ServiceOptions s;
    s.heartbeat = absl::Milliseconds(500);
    s.dispatch_period = absl::Milliseconds(50);
    tracker_ = std::make_unique<testing::InProcessTracker>(dir_ + "/tracker.db", q, s);
    ASSERT_TRUE(tracker_->Start().ok());
  }

  virtual void TweakQueue(tracker::JobQueueOptions*) {}

  void TearDown() override {
    if (agent_ != nullptr) agent_->Stop();
    tracker_->Stop();
  }

  // An agent with host-process boards: b0 over pipes, b1 (if two) over its pty; `tweak` may change
  // each board's config.
  void StartAgent(int boards = 1, std::function<void(v1::BoardConfig*)> tweak = nullptr) {
    v1::AgentConfig c = tracker_->AgentConfig("agent-1", dir_);
    c.set_metrics_address("127.0.0.1:0");
    for (int i = 0; i < boards; ++i) {
      v1::BoardConfig* b = c.add_boards();
      b->set_id(absl::StrCat("b", i));
      b->set_kind(kKind);
      b->mutable_host_process()->set_use_pty(i == 1);
      b->set_build_template("agent/templates/host-process");
      if (tweak) tweak(b);
    }
    AgentOptions o;
    o.config = c;
    o.max_backoff = absl::Seconds(1);
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    agent_->Start();
  }

  std::vector<v1::Job> Run(const std::vector<v1::Trial>& trials,
                           absl::Duration timeout = absl::Seconds(120)) {
    absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit(trials);
    EXPECT_TRUE(ids.ok()) << ids.status();
    if (!ids.ok()) return {};
    absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, timeout);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<v1::Job>{};
  }

  std::string dir_;
  std::unique_ptr<testing::InProcessTracker> tracker_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(AgentTest, MeasuresATrialOnTheBoardWithCheckedOutputs) {
  StartAgent();
  std::vector<v1::Job> jobs = Run({Matmul()});
  ASSERT_EQ(jobs.size(), 1u);
  const v1::Result& r = jobs[0].result();
  EXPECT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
  ASSERT_EQ(r.costs_s_size(), 3);
  for (double c : r.costs_s()) {
    // A 32x32x32 matmul on this host: microseconds, certainly between 10 ns and 100 ms.
    EXPECT_GT(c, 1e-8);
    EXPECT_LT(c, 0.1);
  }
  EXPECT_EQ(r.board_id(), "b0");
  EXPECT_EQ(r.firmware_hash().size(), 16u);
  EXPECT_GT(r.timer_resolution_s(), 0);
  EXPECT_GT(r.stages().build_s(), 0);
  EXPECT_GT(r.stages().flash_s(), 0);
  EXPECT_GT(r.stages().handshake_s(), 0);
  EXPECT_GT(r.stages().measure_s(), 0);
  EXPECT_EQ(r.attempts(), 1);
  EXPECT_TRUE(r.has_started_at());
  // The job is DONE at the tracker before the agent has read the tracker's ack of its result.
  const absl::Time acked = absl::Now() + absl::Seconds(10);
  while (agent_->counters().results_acked < 1 && absl::Now() < acked) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  AgentCounters c = agent_->counters();
  EXPECT_EQ(c.builds, 1);
  EXPECT_EQ(c.boards.flashes, 1);
  EXPECT_GE(c.results_acked, 1);
  EXPECT_EQ(agent_->spooled(), 0u);
}

TEST_F(AgentTest, EachFailureGetsItsOwnCodeAndTheBoardServesTheNextJob) {
  StartAgent(/*boards=*/1);
  std::vector<v1::Trial> trials = {
      CSource("broken", std::string(kPrologue) + "int broken(void) { return undeclared_name; }\n",
              ""),
      Matmul(),  // fine in between
      CSource("crasher", Kernel("crasher", kCrash), ""),
      Matmul({{"tile_m", "4"}}),
      CSource("hanger", Kernel("hanger", kHang), "", /*timeout_ms=*/1500),
      Matmul({{"tile_m", "2"}}),
      CSource("off_by_one", Kernel("off_by_one", kOffByOne), "add_reference"),
      CSource("good_add", Kernel("good_add", kGoodAdd), "add_reference"),
      // Its own reference in the same file (wrong by one): compared against, found wrong.
      CSource("mine", Kernel("mine", kGoodAdd) + Kernel("mine_ref", kOffByOne), "mine_ref"),
      // 17 MiB of padding: over the default max_image_bytes (16 MiB), the trial's fault.
      CSource("huge",
              Kernel("huge", kGoodAdd) +
                  "__asm__(\".section .rodata\\n.fill 17825792, 1, 0\\n.previous\");\n",
              "add_reference"),
  };
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), trials.size());
  auto code = [&](int i) { return jobs[i].result().error_code(); };
  auto message = [&](int i) { return jobs[i].result().message(); };
  EXPECT_EQ(code(0), v1::COMPILE_DEVICE) << message(0);
  EXPECT_TRUE(absl::StrContains(message(0), "undeclared_name")) << message(0);
  EXPECT_EQ(code(1), v1::NO_ERROR) << message(1);
  EXPECT_EQ(code(2), v1::RUNTIME_DEVICE) << message(2);
  EXPECT_TRUE(absl::StrContains(message(2), "signal 11")) << message(2);
  // The board's fault line, its addresses named from the image's debug information: the store of
  // line 6 of the trial's source.
  EXPECT_TRUE(
      absl::StrContains(message(2), "its last log: fault: SIGSEGV (address not mapped) pc=0x"))
      << message(2);
  EXPECT_TRUE(absl::StrContains(message(2), " in crasher (trial.c:6)")) << message(2);
  EXPECT_EQ(code(3), v1::NO_ERROR) << message(3);
  EXPECT_EQ(code(4), v1::RUN_TIMEOUT) << message(4);
  EXPECT_EQ(code(5), v1::NO_ERROR) << message(5);
  EXPECT_EQ(code(6), v1::WRONG_ANSWER) << message(6);
  EXPECT_TRUE(jobs[6].result().costs_s().empty());
  EXPECT_EQ(code(7), v1::NO_ERROR) << message(7);
  EXPECT_EQ(code(8), v1::WRONG_ANSWER) << message(8);
  EXPECT_EQ(code(9), v1::COMPILE_DEVICE) << message(9);
  EXPECT_TRUE(absl::StrContains(message(9), "over the agent's max_image_bytes of 16777216"))
      << message(9);
  for (const v1::Job& j : jobs) {
    EXPECT_EQ(j.result().attempts(), 1) << j.job_id();  // trial faults are not retried
    EXPECT_EQ(j.result().autotvm_error_no(), static_cast<int>(j.result().error_code()) < 100
                                                 ? static_cast<int>(j.result().error_code())
                                                 : j.result().autotvm_error_no());
  }
  EXPECT_GE(agent_->counters().boards.resets, 2);  // after the crash and after the hang

  // Each attempt's log came with its result: the build's command and the compiler's error, the
  // fault line, the timeout and the resets, the result.
  auto log = [&](int i) {
    absl::StatusOr<std::vector<v1::AttemptLog>> logs =
        tracker_->queue()->AttemptLogs(jobs[i].job_id(), 0);
    EXPECT_TRUE(logs.ok()) << logs.status();
    EXPECT_TRUE(logs.ok() && logs->size() == 1u) << jobs[i].job_id();
    return logs.ok() && !logs->empty() ? logs->front().text() : std::string();
  };
  const std::string broken = log(0);
  EXPECT_TRUE(absl::StrContains(broken, "$ /bf/template/build /bf/work")) << broken;
  EXPECT_TRUE(absl::StrContains(broken, "error: 'undeclared_name' undeclared")) << broken;
  EXPECT_TRUE(absl::StrContains(broken, "result: COMPILE_DEVICE")) << broken;
  const std::string fine = log(1);
  EXPECT_TRUE(absl::StrContains(fine, "build: ")) << fine;
  EXPECT_TRUE(absl::StrContains(fine, "result: NO_ERROR: 3 cost(s)")) << fine;
  const std::string crash = log(2);
  EXPECT_TRUE(absl::StrContains(crash, "fault: SIGSEGV (address not mapped) pc=0x")) << crash;
  EXPECT_TRUE(absl::StrContains(crash, "reset: the board is restarted")) << crash;
  const std::string hang = log(4);
  EXPECT_TRUE(absl::StrContains(hang, "RUN_TIMEOUT")) << hang;
  EXPECT_TRUE(absl::StrContains(hang, "reset: ")) << hang;
  int flashed = 0;  // the first image, and each restart after the crash and the hang
  for (int i = 0; i < static_cast<int>(jobs.size()); ++i) {
    flashed += absl::StrContains(log(i), "flash: image ");
  }
  EXPECT_GE(flashed, 3);
  EXPECT_TRUE(absl::StrContains(log(9), "max_image_bytes")) << log(9);
}

TEST_F(AgentTest, EveryResultSaysHowItWasMeasured) {
  StartAgent();
  std::vector<v1::Job> jobs = Run({Matmul()});
  ASSERT_EQ(jobs.size(), 1u);
  const v1::Result& r = jobs[0].result();
  ASSERT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
  // The host-process board times with its thread's CPU clock and says so, with the wall/CPU ratio.
  EXPECT_EQ(r.timer(), "thread-cputime");
  EXPECT_GE(r.wall_over_cpu(), 0.99);
  // Its clock is measured (on /metrics) but not declared: results do not claim cycles.
  EXPECT_EQ(r.cpu_hz(), 0);
  EXPECT_EQ(r.measured().stop(), "fixed");
  EXPECT_EQ(r.measured().repeats(), 3);
  EXPECT_EQ(r.measured().number(), 5);
  // The tracker's stats agree with the costs.
  EXPECT_EQ(r.stats().count(), 3);
  EXPECT_GE(r.stats().median_s(), r.stats().min_s());
  EXPECT_LE(r.stats().median_s(), r.stats().max_s());
  EXPECT_GT(r.stats().ci_level(), 0.7);  // 3 costs: [min, max] at 75 %
}

v1::Trial Adaptive(double target, int budget_ms, int max_repeat) {
  v1::Trial t = Matmul({}, /*check=*/false);
  t.mutable_measure()->set_target_rel_ci(target);
  t.mutable_measure()->set_budget_ms(budget_ms);
  t.mutable_measure()->set_max_repeat(max_repeat);
  t.mutable_measure()->set_min_repeat_ms(2);
  return t;
}

TEST_F(AgentTest, AdaptiveTrialsStopAtTheTargetTheBudgetOrMaxRepeatAndSayWhich) {
  StartAgent();
  std::vector<v1::Job> jobs = Run({
      Adaptive(0.5, 10000, 200),  // +-50 %: reached within a few rounds
      Adaptive(1e-9, 10000, 17),  // never reached: max_repeat first
      Adaptive(1e-9, 300, 1000),  // never reached: the budget first
  });
  ASSERT_EQ(jobs.size(), 3u);
  for (const v1::Job& j : jobs) {
    const v1::Result& r = j.result();
    ASSERT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
    EXPECT_EQ(r.measured().repeats(), r.costs_s_size());
    EXPECT_EQ(r.stats().count(), r.costs_s_size());
    EXPECT_GE(r.measured().number(), 1);
    // number is calibrated so one repeat lasts min_repeat_ms (2 ms): a cost of ~us needs many
    // calls; the repeat lasts about that — host time may stretch it, and this VM's cores change
    // speed by up to 2x between the calibration and the repeats (README "Benchmarks"), so the
    // bound is a quarter of it.
    EXPECT_GT(r.measured().number() * r.stats().median_s(), 5e-4) << r.ShortDebugString();
  }
  EXPECT_EQ(jobs[0].result().measured().stop(), "target");
  // From kAdaptiveMinRepeats on, judged with the spread between its rounds (of 5, interleaved):
  // two rounds may not say enough (t with 1 degree of freedom), a few more do.
  EXPECT_GE(jobs[0].result().costs_s_size(), device::kAdaptiveMinRepeats);
  EXPECT_EQ(jobs[0].result().measured().round_sizes_size(), jobs[0].result().measured().rounds());
  EXPECT_EQ(jobs[0].result().stats().rounds(), jobs[0].result().measured().rounds());
  // The stop judged the interval the tracker states (with the batch's pooled spread between
  // rounds, MeasureReport.batch_round_log_sd): a result that stopped on the target is within it.
  EXPECT_LE(jobs[0].result().stats().rel_half_width(), 0.5 + 1e-12)
      << jobs[0].result().measured().ShortDebugString();
  EXPECT_EQ(jobs[1].result().measured().stop(), "max_repeat");
  EXPECT_EQ(jobs[1].result().costs_s_size(), 17);
  EXPECT_EQ(jobs[2].result().measured().stop(), "budget");
  EXPECT_LT(jobs[2].result().costs_s_size(), 1000);
  EXPECT_GE(jobs[2].result().stages().measure_s(), 0.3);
}

TEST_F(AgentTest, CandidatesOfABatchAreMeasuredInInterleavedRounds) {
  StartAgent();
  std::vector<v1::Trial> trials;
  for (const char* tm : {"1", "2", "4"}) {
    v1::Trial t = Matmul({{"tile_m", tm}});
    t.mutable_measure()->set_repeat(8);
    trials.push_back(t);
  }
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 3u);
  for (const v1::Job& j : jobs) {
    const v1::Result& r = j.result();
    ASSERT_EQ(r.error_code(), v1::NO_ERROR) << r.message();
    EXPECT_EQ(r.costs_s_size(), 8);
    EXPECT_TRUE(r.measured().interleaved()) << r.measured().ShortDebugString();
    EXPECT_EQ(r.measured().rounds(), 4);  // 8 repeats over 4 rounds of 2
  }
  // Each trial's measurement spans the others': they overlap in time, none ends before the next
  // one starts.
  for (size_t i = 0; i + 1 < jobs.size(); ++i) {
    EXPECT_GT(absl::FromUnixSeconds(jobs[i].result().finished_at().seconds()) +
                  absl::Nanoseconds(jobs[i].result().finished_at().nanos()),
              absl::FromUnixSeconds(jobs[i + 1].result().started_at().seconds()) +
                  absl::Nanoseconds(jobs[i + 1].result().started_at().nanos()));
  }
}

// Two infrastructure failures quarantine a board, so a job that met the lying board twice still
// has its third attempt for the honest one.
class CalibrationTest : public AgentTest {
 protected:
  void TweakQueue(tracker::JobQueueOptions* q) override { q->quarantine_threshold = 2; }
};

TEST_F(CalibrationTest, ABoardWhoseTimerDisagreesWithItsClockIsQuarantinedWithThatReason) {
  // b0 declares a 1 MHz clock: its calibration kernel then "should" take thousands of times
  // longer than its timer says. b1 is honest and does the work.
  StartAgent(2, [](v1::BoardConfig* b) {
    if (b->id() == "b0") b->set_cpu_hz(1e6);
  });
  // (An honest declared clock would be checked the same way and carried by results as cpu_hz;
  // this VM's host clock moves too much between calibrations to declare one in a test.)
  std::vector<v1::Trial> trials;
  for (const char* tm : {"1", "2", "4", "8"}) trials.push_back(Matmul({{"tile_m", tm}}));
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 4u);
  for (const v1::Job& j : jobs) {
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
    EXPECT_EQ(j.result().board_id(), "b1");
  }
  // The tracker quarantined b0 (its health check calibrates again and fails the same way).
  absl::Time until = absl::Now() + absl::Seconds(60);
  v1::Board b0;
  while (absl::Now() < until) {
    grpc::ClientContext ctx;
    v1::ListBoardsRequest req;
    v1::ListBoardsResponse resp;
    ASSERT_TRUE(tracker_->client()->ListBoards(&ctx, req, &resp).ok());
    for (const v1::Board& b : resp.boards()) {
      if (b.board_id() == "b0") b0 = b;
    }
    if (b0.state() == v1::QUARANTINED) break;
    // Work for b0 to fail on, should the first jobs all have gone to b1.
    Run({Matmul({{"tile_m", "16"}})});
  }
  EXPECT_EQ(b0.state(), v1::QUARANTINED);
  EXPECT_TRUE(absl::StrContains(b0.quarantine_reason(), "calibration")) << b0.quarantine_reason();
  EXPECT_TRUE(absl::StrContains(b0.quarantine_reason(), "1 MHz")) << b0.quarantine_reason();
}

// The OOM killer or an operator kills the board process while it runs a trial: not the trial's
// fault. The attempt ends BOARD_LOST naming the signal, the board restarts, and the retry
// measures it.
TEST_F(AgentTest, ABoardKilledFromOutsideIsRetriedNotChargedToTheTrial) {
  StartAgent();
  absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit({Spinner("3000000000")});
  ASSERT_TRUE(ids.ok()) << ids.status();
  // Wait until a board process is busy on the CPU (the kernel spinning), then SIGKILL it.
  const pid_t busy = BusyBoardProcess(0.3);
  ASSERT_NE(busy, 0) << "no board process got busy";
  ASSERT_EQ(kill(busy, SIGKILL), 0);
  absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(120));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const v1::Job& job = (*jobs)[0];
  EXPECT_EQ(job.result().error_code(), v1::NO_ERROR) << job.result().message();
  ASSERT_EQ(job.attempts_size(), 2) << job.ShortDebugString();
  EXPECT_EQ(job.attempts(0).error_code(), v1::BOARD_LOST);
  EXPECT_TRUE(absl::StrContains(job.attempts(0).message(), "killed by signal 9"))
      << job.attempts(0).message();
  EXPECT_TRUE(absl::StrContains(job.attempts(0).message(), "from outside"))
      << job.attempts(0).message();
}

// Issue 16: an agent silent past its lease (paused, as the tracker sees it) got attempt N+1 of a
// job while it still measured attempt N, dropped it (same job id), and the job stayed RUNNING
// forever. Now the new attempt supersedes the old one on the board: measured once, reported
// under the new attempt.
class LeaseAgentTest : public AgentTest {
  void TweakQueue(tracker::JobQueueOptions* q) override {
    q->lease = absl::Seconds(5);
    q->quarantine_threshold = 100;
  }
};

TEST_F(LeaseAgentTest, AnAttemptSupersededWhileItRunsIsMeasuredOnceUnderTheNewAttempt) {
  StartAgent();
  absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit({Spinner("6000000000")});
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_TRUE(WaitBoardBusy(0.3)) << "no board process got busy";
  // The tracker's clock jumps past the lease: attempt 1 is lost, attempt 2 goes to the same board
  // while attempt 1's measurement is still under way there.
  tracker_->AdvanceClock(absl::Seconds(30));
  absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(120));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const v1::Job& job = (*jobs)[0];
  EXPECT_EQ(job.result().error_code(), v1::NO_ERROR) << job.result().message();
  ASSERT_EQ(job.attempts_size(), 2) << job.ShortDebugString();
  EXPECT_EQ(job.attempts(0).error_code(), v1::BOARD_LOST);
  // (The jump makes the agent look silent for 30 s: its next heartbeat brings its board back.)
  EXPECT_TRUE(absl::StartsWith(job.attempts(0).message(), "the lease expired"))
      << job.attempts(0).message();
  EXPECT_EQ(agent_->counters().boards.results, 1) << "the job was measured more than once";
  // Heartbeats name what the agent holds: nothing is held now, nothing stays RUNNING.
  EXPECT_EQ(agent_->workers()[0]->HeldJobs().size(), 0u);
}

// A measurement the tracker has recorded but cannot store yet (its disk is full) is not lost to
// the lease: the job is not queued again, the agent keeps sending the result, and once the disk
// has room it is stored with its one attempt — measured once.
TEST_F(LeaseAgentTest, ARecordedButUnstoredResultOutlivesTheLeaseAndIsStoredOnce) {
  StartAgent();
  absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit({Spinner("3000000000")});
  ASSERT_TRUE(ids.ok()) << ids.status();
  const std::string id = (*ids)[0];
  ASSERT_TRUE(WaitBoardBusy(0.2)) << "no board process got busy";
  tracker_->FailStoreWrites(absl::InternalError("database or disk is full"));
  // Until the tracker has recorded the result (sent is not enough: a lease that ran out before
  // the tracker read it would rightly end the attempt).
  absl::Time until = absl::Now() + absl::Seconds(60);
  for (;;) {
    absl::StatusOr<v1::Job> job = tracker_->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    if (job->state() == v1::DONE || absl::Now() >= until) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  ASSERT_GE(agent_->counters().results_sent, 1);
  ASSERT_EQ(agent_->spooled(), 1u);
  // Leases run out many times over: the recorded result keeps the job from running again.
  for (int i = 0; i < 3; ++i) {
    tracker_->AdvanceClock(absl::Seconds(30));
    absl::SleepFor(absl::Milliseconds(300));
    absl::StatusOr<v1::Job> job = tracker_->GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_EQ(job->state(), v1::DONE);
    EXPECT_EQ(job->attempts_size(), 1);
  }
  EXPECT_EQ(agent_->spooled(), 1u);  // not acknowledged: not stored
  tracker_->FailStoreWrites(absl::OkStatus());
  absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(60));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const v1::Job& job = (*jobs)[0];
  EXPECT_EQ(job.result().error_code(), v1::NO_ERROR) << job.result().message();
  EXPECT_EQ(job.attempts_size(), 1) << job.ShortDebugString();
  EXPECT_EQ(agent_->counters().boards.results, 1) << "the job was measured again";
  for (until = absl::Now() + absl::Seconds(30); absl::Now() < until && agent_->spooled() > 0;) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(agent_->spooled(), 0u);
}

// A call or reply lost on the board's link (bytes dropped: BoardConfig.link_fault_file) is the
// link's failure, retried — not RUN_TIMEOUT, which says the trial's kernel hung. (At this drop
// rate every attempt here loses bytes somewhere: the jobs end BOARD_LOST once out of attempts.)
class LossyLinkAgentTest : public AgentTest {
  void TweakQueue(tracker::JobQueueOptions* q) override {
    q->retry_budget = 2;
    q->quarantine_threshold = 1000;
  }
};

TEST_F(LossyLinkAgentTest, ACallLostOnTheLinkIsASessionErrorAndRetried) {
  const std::string faults = dir_ + "/link.fault";
  {
    std::ofstream f(faults);
    f << "drop_rate=0.0005 seed=11\n";
  }
  StartAgent(1, [&](v1::BoardConfig* b) { b->set_link_fault_file(faults); });
  std::vector<v1::Trial> trials;
  for (int i = 0; i < 3; ++i) {
    v1::Trial t = CSource("good_add", Kernel("good_add", kGoodAdd), "add_reference",
                          /*timeout_ms=*/1500);
    t.set_seed(i + 1);
    trials.push_back(t);
  }
  std::vector<v1::Job> jobs = Run(trials, absl::Seconds(150));
  ASSERT_EQ(jobs.size(), trials.size());
  int lost_calls = 0;
  for (const v1::Job& job : jobs) {
    EXPECT_NE(job.result().error_code(), v1::RUN_TIMEOUT) << job.result().message();
    for (const v1::Attempt& a : job.attempts()) {
      EXPECT_NE(a.error_code(), v1::RUN_TIMEOUT) << a.message();
      lost_calls += a.error_code() == v1::SESSION_ERROR &&
                    absl::StrContains(a.message(), "but the board is alive");
    }
  }
  EXPECT_GT(lost_calls, 0) << "no call was lost: the link dropped nothing?";
}

// Issue 16: with the tracker's disk full, results were neither stored nor retried (only after a
// re-register). Now the tracker records the result, answers ResultRetry until it is stored, and
// the agent sends it again with backoff on the same connection; no new work is offered meanwhile.
TEST_F(AgentTest, AResultTheTrackerCannotStoreIsSentAgainWhileConnected) {
  StartAgent();
  absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit({Spinner("3000000000")});
  ASSERT_TRUE(ids.ok()) << ids.status();
  ASSERT_TRUE(WaitBoardBusy(0.2)) << "no board process got busy";
  tracker_->FailStoreWrites(absl::InternalError("database or disk is full"));
  // The result comes back and is refused; the agent keeps it and sends it again.
  absl::Time until = absl::Now() + absl::Seconds(60);
  while (absl::Now() < until && agent_->counters().results_sent < 3) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_GE(agent_->counters().results_sent, 3) << "the agent did not resend the result";
  EXPECT_EQ(agent_->spooled(), 1u);
  EXPECT_EQ(agent_->counters().results_acked, 0);
  tracker::QueueStats stats = tracker_->queue()->Stats();
  EXPECT_GE(stats.store_failures, 1);
  EXPECT_NE(stats.store_problem.find("disk is full"), std::string::npos) << stats.store_problem;
  // Recorded by the tracker, not in its database; its board gets no new work meanwhile.
  absl::StatusOr<std::vector<std::string>> more = tracker_->Submit({Spinner("1000")});
  EXPECT_TRUE(absl::IsUnavailable(more.status())) << more.status();
  EXPECT_EQ(tracker_->queue()->Stats().jobs_by_state[v1::RUNNING], 0);
  // Space again: the next resend is stored, on the same connection.
  tracker_->FailStoreWrites(absl::OkStatus());
  absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(60));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  const v1::Job& job = (*jobs)[0];
  EXPECT_EQ(job.result().error_code(), v1::NO_ERROR) << job.result().message();
  EXPECT_EQ(job.attempts_size(), 1);
  EXPECT_EQ(agent_->counters().connects, 1);  // never re-registered
  for (until = absl::Now() + absl::Seconds(30); absl::Now() < until && agent_->spooled() > 0;) {
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(agent_->spooled(), 0u);
}

v1::Trial Gemv(const std::string& unroll, const std::string& acc, int64_t k = 0) {
  v1::Trial t;
  t.set_board_kind(kKind);
  t.mutable_op()->mutable_template_op()->set_op("gemv");
  (*t.mutable_op()->mutable_template_op()->mutable_knobs())["unroll"] = unroll;
  (*t.mutable_op()->mutable_template_op()->mutable_knobs())["acc"] = acc;
  if (k > 0) {
    for (std::vector<int64_t> shape : {std::vector<int64_t>{64, k}, {k}, {64}}) {
      v1::ArgSpec* a = t.add_args();
      for (int64_t d : shape) a->add_shape(d);
    }
  }
  t.set_check_outputs(true);
  t.set_seed(3);
  t.mutable_measure()->set_number(3);
  return t;
}

TEST_F(AgentTest, UserOperatorCandidatesShareOneImageAndItsReferenceCatchesABug) {
  StartAgent();
  absl::StatusOr<v1::Operator> gemv = testing::ExampleGemv();
  ASSERT_TRUE(gemv.ok()) << gemv.status();
  absl::StatusOr<v1::Operator> added = tracker_->AddOperator(*gemv);
  ASSERT_TRUE(added.ok()) << added.status();
  // The whole space: 4 unroll x 2 acc values, one batch.
  std::vector<v1::Trial> trials;
  for (const char* unroll : {"1", "2", "4", "8"}) {
    for (const char* acc : {"1", "2"}) trials.push_back(Gemv(unroll, acc));
  }
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 8u);
  for (const v1::Job& j : jobs) {
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
    EXPECT_EQ(j.result().costs_s_size(), 1);
    EXPECT_EQ(j.trial().op().template_op().version(), added->version());
  }
  EXPECT_EQ(agent_->counters().builds, 1);
  EXPECT_EQ(agent_->counters().boards.flashes, 1);

  // A planted bug: the remainder loop dropped. With K = 100, unroll 8 leaves 4 products out;
  // unroll 4 divides K and stays right. The new source is a new version.
  gemv = testing::ExampleGemv([](std::string s) {
    const std::string remainder = "for (; j < k; ++j) s0 += row[j] * x[j];";
    size_t at = s.find(remainder);
    EXPECT_NE(at, std::string::npos);
    return at == std::string::npos ? s : s.erase(at, remainder.size());
  });
  ASSERT_TRUE(gemv.ok()) << gemv.status();
  absl::StatusOr<v1::Operator> buggy = tracker_->AddOperator(*gemv);
  ASSERT_TRUE(buggy.ok()) << buggy.status();
  EXPECT_NE(buggy->version(), added->version());
  jobs = Run({Gemv("8", "1", 100), Gemv("4", "2", 100)});
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0].result().error_code(), v1::WRONG_ANSWER) << jobs[0].result().message();
  EXPECT_EQ(jobs[1].result().error_code(), v1::NO_ERROR) << jobs[1].result().message();
  EXPECT_EQ(jobs[0].trial().op().template_op().version(), buggy->version());
  EXPECT_EQ(agent_->counters().builds, 2);

  // Candidates of a batch share their arguments on the board (inputs uploaded once): one that
  // writes nothing must still be caught after a good one left its output there.
  gemv = testing::ExampleGemv([](std::string s) {
    const std::string unpacked =
        "if (unpack(args, type_codes, num_args, &a, &x, &y, &m, &k) != 0) return -1;";
    size_t at = s.find(unpacked);
    EXPECT_NE(at, std::string::npos);
    return at == std::string::npos
               ? s
               : s.insert(at + unpacked.size(), "\n  if (BF_KNOB(unroll) == 8) return 0;");
  });
  ASSERT_TRUE(gemv.ok()) << gemv.status();
  ASSERT_TRUE(tracker_->AddOperator(*gemv).ok());
  jobs = Run({Gemv("1", "1"), Gemv("8", "1"), Gemv("2", "1")});
  ASSERT_EQ(jobs.size(), 3u);
  EXPECT_EQ(jobs[0].result().error_code(), v1::NO_ERROR) << jobs[0].result().message();
  EXPECT_EQ(jobs[1].result().error_code(), v1::WRONG_ANSWER) << jobs[1].result().message();
  EXPECT_EQ(jobs[2].result().error_code(), v1::NO_ERROR) << jobs[2].result().message();
}

TEST_F(AgentTest, SixteenCandidatesCostOneBuildAndOneFlash) {
  StartAgent();
  std::vector<v1::Trial> trials;
  for (const char* tm : {"1", "2", "4", "8"}) {
    for (const char* tn : {"4", "8"}) {
      for (const char* order : {"ijk", "ikj"}) {
        trials.push_back(Matmul({{"tile_m", tm}, {"tile_n", tn}, {"order", order}}));
      }
    }
  }
  ASSERT_EQ(trials.size(), 16u);
  std::vector<v1::Job> jobs = Run(trials);
  ASSERT_EQ(jobs.size(), 16u);
  for (const v1::Job& j : jobs) {
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
    EXPECT_EQ(j.result().costs_s_size(), 3);
  }
  AgentCounters c = agent_->counters();
  EXPECT_EQ(c.builds, 1);
  EXPECT_EQ(c.boards.flashes, 1);
  EXPECT_EQ(c.boards.images, 1);
  // The same batch again: the image is in the cache and already on the board.
  jobs = Run(trials);
  for (const v1::Job& j : jobs) EXPECT_EQ(j.result().error_code(), v1::NO_ERROR);
  c = agent_->counters();
  EXPECT_EQ(c.builds, 1);
  EXPECT_EQ(c.cache_hits, 1);
  EXPECT_EQ(c.boards.flashes, 1);
  EXPECT_GE(c.boards.flash_skips, 16);
}

TEST_F(AgentTest, SurvivesTheTrackerBeingDownForThirtySeconds) {
  StartAgent(/*boards=*/2);
  std::vector<v1::Trial> trials;
  for (const char* u : {"1", "2", "4", "8"}) {
    for (const char* tk : {"1", "2", "4", "8", "16"}) {
      v1::Trial t = Matmul({{"unroll", u}, {"tile_k", tk}});
      t.mutable_measure()->set_min_repeat_ms(
          40);  // ~0.12 s each: the run outlasts the outage start
      trials.push_back(t);
    }
  }
  absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit(trials);
  ASSERT_TRUE(ids.ok()) << ids.status();
  // Wait until the agent holds the jobs, then take the tracker away mid-run.
  const absl::Time until = absl::Now() + absl::Seconds(30);
  while (absl::Now() < until) {
    absl::StatusOr<v1::Job> last = tracker_->GetJob(ids->back());
    if (last.ok() && last->state() == v1::RUNNING) break;
    absl::SleepFor(absl::Milliseconds(20));
  }
  tracker_->Stop();
  absl::SleepFor(absl::Seconds(5));
  EXPECT_FALSE(agent_->connected());
  absl::SleepFor(absl::Seconds(25));
  // The boards went on measuring; what they finished waits in the spool.
  EXPECT_GT(agent_->spooled(), 0u);
  const int64_t sent_before = agent_->counters().results_sent;
  const int64_t messages_before = agent_->counters().result_messages;
  const size_t spooled_before = agent_->spooled();
  ASSERT_TRUE(tracker_->Start().ok());
  absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(120));
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  for (const v1::Job& j : *jobs) {
    EXPECT_EQ(j.state(), v1::DONE);
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
    // Held across the outage: never re-queued, so measured once.
    EXPECT_EQ(j.attempts_size(), 1) << j.DebugString();
  }
  const absl::Time drained = absl::Now() + absl::Seconds(10);
  while (agent_->spooled() > 0 && absl::Now() < drained) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_EQ(agent_->spooled(), 0u);
  AgentCounters c = agent_->counters();
  EXPECT_GT(c.results_sent, sent_before);
  // The spooled results went together (the tracker reads batched results): fewer messages than
  // results since the restart.
  if (spooled_before >= 2) {
    EXPECT_LT(c.result_messages - messages_before, c.results_sent - sent_before);
  }
  EXPECT_GE(c.connects, 2);
  EXPECT_EQ(c.boards.results, static_cast<int64_t>(trials.size()));  // each measured once
  // Exactly one result per job in the store.
  v1::ListResultsRequest req;
  req.set_limit(1000);
  v1::ListResultsResponse resp;
  grpc::ClientContext context;
  ASSERT_TRUE(tracker_->client()->ListResults(&context, req, &resp).ok());
  EXPECT_EQ(resp.jobs_size(), static_cast<int>(trials.size()));
}

// A board on a "serial port" — a pty behind a by-id-style symlink — flashed by a command, as a
// real board is: the flash script starts the image (the host-process board) in its own session
// and points the link at its pty. The board survives the agent, as hardware does.
class SerialBoardTest : public AgentTest {
 protected:
  void TearDown() override {
    AgentTest::TearDown();
    KillBoard();
  }

  void KillBoard() {
    std::ifstream in(dir_ + "/board.pid");
    int pid = 0;
    if (in >> pid && pid > 0) kill(pid, SIGKILL);
    std::remove((dir_ + "/board-link").c_str());
  }

  void StartSerialAgent() {
    const std::string script = dir_ + "/flash.sh";
    {
      std::ofstream out(script);
      out << "#!/bin/sh\n"
             "# flash.sh IMAGE LINK PIDFILE: 'flashes' IMAGE by starting it behind LINK\n"
             "if [ -f \"$3\" ]; then kill -9 \"$(cat \"$3\")\" 2>/dev/null; sleep 0.1; fi\n"
             "rm -f \"$2\" \"$2.out\"\n"
             "echo \"flash.sh: starting $1\"\n"
             "setsid \"$1\" --pty </dev/null >\"$2.out\" 2>/dev/null &\n"
             "echo $! >\"$3\"\n"
             "for i in $(seq 200); do\n"
             "  p=$(sed -n 's/^pty: //p' \"$2.out\")\n"
             "  if [ -n \"$p\" ]; then ln -sf \"$p\" \"$2\"; exit 0; fi\n"
             "  sleep 0.05\n"
             "done\n"
             "exit 1\n";
    }
    chmod(script.c_str(), 0755);
    v1::AgentConfig c = tracker_->AgentConfig("agent-serial", dir_);
    v1::BoardConfig* b = c.add_boards();
    b->set_id("serial-0");
    b->set_kind(kKind);
    b->mutable_serial()->set_port(dir_ + "/board-link");
    b->mutable_serial()->set_baud(115200);
    for (const std::string& a :
         {script, std::string("{image}"), dir_ + "/board-link", dir_ + "/board.pid"}) {
      b->mutable_flasher()->add_argv(a);
    }
    b->mutable_flasher()->set_time_limit_seconds(30);
    b->set_build_template("agent/templates/host-process");
    AgentOptions o;
    o.config = c;
    o.max_backoff = absl::Seconds(1);
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    agent_->Start();
  }
};

TEST_F(SerialBoardTest,
       FlashedByItsCommandComesBackAfterItsPortVanishesAndIsNotReflashedNeedlessly) {
  StartSerialAgent();
  std::vector<v1::Job> jobs = Run({Matmul(), Matmul({{"tile_m", "4"}})});
  ASSERT_EQ(jobs.size(), 2u);
  for (const v1::Job& j : jobs)
    EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.result().message();
  EXPECT_EQ(agent_->counters().boards.flashes, 1);
  // The flash command's line and output are in the log of the attempt that flashed.
  absl::StatusOr<std::vector<v1::AttemptLog>> logs =
      tracker_->queue()->AttemptLogs(jobs[0].job_id(), 0);
  ASSERT_TRUE(logs.ok() && logs->size() == 1) << logs.status();
  EXPECT_TRUE(absl::StrContains(logs->front().text(), "$ " + dir_ + "/flash.sh "))
      << logs->front().text();
  EXPECT_TRUE(absl::StrContains(logs->front().text(), "flash.sh: starting "))
      << logs->front().text();

  // The board goes away under the agent (unplugged). The same two trials again need the same
  // image, which the agent believes is on the board: the first trial meets the dead link and ends
  // its attempt with SESSION_ERROR; the agent flashes the board again for the second; the tracker
  // retries the first (now a batch of one: another image, flashed too). No agent restart.
  KillBoard();
  jobs = Run({Matmul(), Matmul({{"tile_m", "4"}})});
  ASSERT_EQ(jobs.size(), 2u);
  for (const v1::Job& j : jobs) EXPECT_EQ(j.result().error_code(), v1::NO_ERROR) << j.DebugString();
  ASSERT_EQ(jobs[0].attempts_size(), 2) << jobs[0].DebugString();
  EXPECT_EQ(jobs[0].attempts(0).error_code(), v1::SESSION_ERROR) << jobs[0].DebugString();
  EXPECT_EQ(jobs[1].attempts_size(), 1) << jobs[1].DebugString();
  EXPECT_EQ(agent_->counters().boards.flashes, 3);

  // A new agent finds the board already running the image the trial needs: no flash.
  agent_->Stop();
  agent_.reset();
  StartSerialAgent();
  jobs = Run({Matmul()});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].result().error_code(), v1::NO_ERROR) << jobs[0].result().message();
  AgentCounters c = agent_->counters();
  EXPECT_EQ(c.boards.flashes, 0);
  EXPECT_EQ(c.boards.flash_skips, 1);
  EXPECT_EQ(c.builds, 0);  // and the image came from the cache
  EXPECT_EQ(c.cache_hits, 1);
}

TEST_F(AgentTest, RejectsABadConfigNamingTheField) {
  v1::AgentConfig c;
  c.set_agent_id("a");
  c.set_tracker_address("127.0.0.1:1");
  c.mutable_credentials()->set_insecure(true);
  v1::BoardConfig* b = c.add_boards();
  b->set_id("b0");
  b->set_kind(kKind);
  b->mutable_host_process();
  b->set_build_template("agent/templates/no-such-kind");
  AgentOptions o;
  o.config = c;
  absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
  ASSERT_FALSE(agent.ok());
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "boards[0].build_template"))
      << agent.status();
  c.mutable_boards(0)->set_build_template("agent/templates/host-process");
  c.mutable_boards(0)->clear_host_process();
  o.config = c;
  agent = Agent::Create(o);
  ASSERT_FALSE(agent.ok());
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "transport")) << agent.status();
  // Pinning: a CPU number or "auto", on host-process boards only.
  c.mutable_boards(0)->mutable_host_process();
  c.mutable_boards(0)->set_cpu_affinity("first");
  o.config = c;
  agent = Agent::Create(o);
  ASSERT_FALSE(agent.ok());
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "cpu_affinity: \"first\""))
      << agent.status();
  // The image cache's limits: not negative, and one image fits in the cache.
  c.mutable_boards(0)->clear_cpu_affinity();
  for (const auto& [set, want] :
       std::vector<std::pair<std::function<void(v1::AgentConfig*)>, std::string>>{
           {[](v1::AgentConfig* a) { a->set_image_cache_max_bytes(-1); },
            "image_cache_max_bytes: must not be negative"},
           {[](v1::AgentConfig* a) { a->set_max_image_bytes(-1); },
            "max_image_bytes: must not be negative"},
           {[](v1::AgentConfig* a) { a->set_image_cache_max_bytes(1 << 20); },
            "max_image_bytes: 16777216 is more than the image cache holds "
            "(image_cache_max_bytes 1048576)"},
           {[](v1::AgentConfig* a) { a->set_max_image_bytes(int64_t{3} << 30); },
            "max_image_bytes: 3221225472 is more than the image cache holds "
            "(image_cache_max_bytes 2147483648)"}}) {
    v1::AgentConfig bad = c;
    set(&bad);
    o.config = bad;
    agent = Agent::Create(o);
    ASSERT_FALSE(agent.ok()) << want;
    EXPECT_TRUE(absl::IsInvalidArgument(agent.status())) << agent.status();
    EXPECT_EQ(agent.status().message(), want);
  }
}

// A board's core comes from its template's package (agent/templates/<kind>/package, the package's
// board.conf): two boards of one kind whose packages are different cores, or a template naming a
// package that is not there, are refused naming the field.
TEST_F(AgentTest, ABoardsCoreComesFromItsPackageAndAKindIsOneCore) {
  v1::AgentConfig c;
  c.set_agent_id("a");
  c.set_tracker_address("127.0.0.1:1");
  c.mutable_credentials()->set_insecure(true);
  for (const char* tmpl :
       {"agent/templates/qemu-mps2-an385", "agent/templates/qemu-netduinoplus2"}) {
    v1::BoardConfig* b = c.add_boards();
    b->set_id(absl::StrCat("b", c.boards_size() - 1));
    b->set_kind("mixed");
    b->mutable_serial();
    b->mutable_qemu()->set_machine("mps2-an385");
    b->set_build_template(tmpl);
  }
  AgentOptions o;
  o.config = c;
  absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
  ASSERT_FALSE(agent.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(agent.status())) << agent.status();
  EXPECT_EQ(agent.status().message(),
            "boards[1].build_template: its package makes board b1 a cortex-m4, but board b0 of "
            "the same kind mixed is a cortex-m3; a kind is one core (give one of them another "
            "kind)");

  // A template whose package file names no package of the crt tree.
  const std::string tmpl = absl::StrCat(dir_, "/broken-template");
  ASSERT_TRUE(base::MakeDirs(tmpl).ok());
  ASSERT_TRUE(base::WriteFile(tmpl + "/build", "#!/bin/sh\nexit 1\n").ok());
  ASSERT_TRUE(base::WriteFile(tmpl + "/package", "no-such-package\n").ok());
  c.mutable_boards()->DeleteSubrange(1, 1);
  c.mutable_boards(0)->set_build_template(tmpl);
  o.config = c;
  agent = Agent::Create(o);
  ASSERT_FALSE(agent.ok());
  EXPECT_TRUE(absl::StrContains(
      agent.status().message(),
      "boards[0].build_template: " + tmpl + "/package: no board package \"no-such-package\""))
      << agent.status();
}

}  // namespace
}  // namespace benchfarm::agent
