// JobQueue's results and board health: results recorded exactly once, each attempt's log kept,
// trial failures as results, cost statistics, adaptive trials, quarantine after infrastructure
// errors (calibration too) until a health check passes, and an admin's quarantine.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <tuple>
#include <vector>

#include "catalog/trial.h"
#include "tracker/job_queue_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(JobQueueTest, ResultsAreRecordedExactlyOnce) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 2e-3)).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 9.0)).ok());  // resent: accepted, ignored
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::DONE);
  ASSERT_EQ(job->result().costs_s_size(), 1);
  EXPECT_EQ(job->result().costs_s(0), 2e-3);
  EXPECT_EQ(job->result().attempts(), 1);
}

// Each attempt's log travels with its result and is kept by attempt — a failed attempt's too —,
// bounded and valid UTF-8 whatever the agent sent; a result sent again stores nothing new.
TEST_F(JobQueueTest, EachAttemptsLogIsKeptBoundedAndValid) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto none = queue_->AttemptLogs(ids[0], 0);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(none->empty());
  v1::JobOffer first = TakeOne("a");
  v1::JobResult lost = Failed(first, v1::FLASH_ERROR);
  lost.set_log("flash: openocd: error: no device\n");
  ASSERT_TRUE(queue_->ReportResult("a", lost).ok());
  v1::JobOffer second = TakeOne("a");
  ASSERT_EQ(second.attempt(), 2);
  v1::JobResult done = Ok(second, 1e-3);
  std::string huge(1 << 20, 'x');
  huge[10] = '\0';
  done.set_log(huge);
  ASSERT_TRUE(queue_->ReportResult("a", done).ok());
  v1::JobResult again = done;
  again.set_log("sent again");
  ASSERT_TRUE(queue_->ReportResult("a", again).ok());  // ignored: the attempt is over

  auto logs = queue_->AttemptLogs(ids[0], 0);
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_EQ(logs->size(), 2u);
  EXPECT_EQ((*logs)[0].attempt(), 1);
  EXPECT_EQ((*logs)[0].board_id(), "b1");
  EXPECT_EQ((*logs)[0].text(), "flash: openocd: error: no device\n");
  const std::string& text = (*logs)[1].text();
  EXPECT_LE(text.size(), catalog::kMaxAttemptLogBytes);
  EXPECT_EQ(text.substr(0, 13), "xxxxxxxxxx\xEF\xBF\xBD");  // the NUL replaced
  EXPECT_NE(text.find("bytes cut here"), std::string::npos);
  auto second_only = queue_->AttemptLogs(ids[0], 2);
  ASSERT_TRUE(second_only.ok() && second_only->size() == 1);
  EXPECT_EQ(second_only->front().attempt(), 2);
  auto third = queue_->AttemptLogs(ids[0], 3);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(third.status().message().find("logs of attempt 1, 2"), std::string::npos)
      << third.status();
  EXPECT_EQ(queue_->AttemptLogs("no-such-job", 0).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(JobQueueTest, RepeatedInfraFailuresQuarantineUntilAHealthCheckPasses) {
  JobQueueOptions options = Defaults();
  options.health_check_trial = MakeTrial("", 0, "add");
  Restart(options);
  auto ids = Submit({MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {
    v1::JobOffer o = TakeOne("a");
    ASSERT_TRUE(queue_->ReportResult("a", Failed(o, v1::SESSION_ERROR)).ok());
  }
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  // The next offer is a health check, not user work.
  v1::JobOffer check = TakeOne("a");
  EXPECT_TRUE(check.health_check());
  EXPECT_EQ(check.trial().op().template_op().op(), "add");
  EXPECT_EQ(check.trial().board_id(), "b1");
  ASSERT_TRUE(queue_->ReportResult("a", Failed(check, v1::SESSION_ERROR)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  EXPECT_TRUE(queue_->TakeOffers("a").empty());  // backing off
  clock_.Advance(options.health_check_backoff);
  check = TakeOne("a");
  EXPECT_TRUE(check.health_check());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(check)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
  // Back to user work: the job that failed twice is still there (retry budget 3).
  v1::JobOffer o = TakeOne("a");
  EXPECT_FALSE(o.health_check());
  EXPECT_EQ(o.job_id(), ids[0]);
  EXPECT_EQ(o.attempt(), 3);
}

TEST_F(JobQueueTest, ACalibrationFailureQuarantinesWithItsReasonUntilACheckPasses) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {
    v1::JobOffer o = TakeOne("a");
    v1::JobResult bad = Failed(o, v1::CALIBRATION_ERROR);
    bad.mutable_result()->set_message("board b1: calibration: x0.5");
    ASSERT_TRUE(queue_->ReportResult("a", bad).ok());
  }
  v1::Board b = queue_->Boards("host")[0];
  EXPECT_EQ(b.state(), v1::QUARANTINED);
  EXPECT_EQ(b.quarantine_reason(), "board b1: calibration: x0.5");
  // The job was retried, not failed: calibration is the board's fault, not the trial's.
  EXPECT_EQ(queue_->GetJob(ids[0])->state(), v1::QUEUED);
  // The health check fails the same way: still quarantined, the reason says so.
  v1::JobOffer check = TakeOne("a");
  ASSERT_TRUE(check.health_check());
  v1::JobResult bad = Failed(check, v1::CALIBRATION_ERROR);
  bad.mutable_result()->set_message("board b1: calibration: x0.5");
  ASSERT_TRUE(queue_->ReportResult("a", bad).ok());
  b = queue_->Boards("host")[0];
  EXPECT_EQ(b.state(), v1::QUARANTINED);
  EXPECT_EQ(b.quarantine_reason(),
            "health check failed: CALIBRATION_ERROR: board b1: calibration: x0.5");
  clock_.Advance(Defaults().health_check_backoff);
  check = TakeOne("a");
  ASSERT_TRUE(queue_->ReportResult("a", Ok(check)).ok());
  b = queue_->Boards("host")[0];
  EXPECT_EQ(b.state(), v1::IDLE);
  EXPECT_EQ(b.quarantine_reason(), "");
}

TEST_F(JobQueueTest, StoredResultsCarryStatsComputedFromTheirCosts) {
  JobQueueOptions options = Defaults();
  options.unstable_threshold = 0.05;
  Restart(options);
  v1::Trial t = MakeTrial();
  t.mutable_measure()->set_repeat(10);
  auto ids = Submit({t, t, t});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  // Steady costs, and a lie in the agent's own stats that the tracker replaces.
  v1::JobOffer o = TakeOne("a");
  v1::JobResult r = Ok(o, 1.00e-3);
  for (double c :
       {0.99e-3, 1.01e-3, 1.00e-3, 1.00e-3, 0.99e-3, 1.01e-3, 1.00e-3, 1.00e-3, 1.00e-3}) {
    r.mutable_result()->add_costs_s(c);
  }
  r.mutable_result()->set_timer_resolution_s(1e-9);
  r.mutable_result()->mutable_stats()->set_median_s(42);
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  v1::CostStats s = queue_->GetJob(ids[0])->result().stats();
  EXPECT_EQ(s.count(), 10);
  EXPECT_DOUBLE_EQ(s.median_s(), 1.00e-3);
  EXPECT_DOUBLE_EQ(s.min_s(), 0.99e-3);
  EXPECT_NEAR(s.rel_half_width(), 0.01, 1e-9);  // [x2, x9] of the sorted costs = [0.99, 1.01]
  EXPECT_FALSE(s.unstable());
  EXPECT_EQ(s.timer_resolution_s(), 1e-9);
  // Spread costs: flagged past the configured threshold.
  o = TakeOne("a");
  r = Ok(o, 1e-3);
  for (double c : {2e-3, 0.5e-3, 1.5e-3, 0.7e-3, 1.2e-3, 0.8e-3, 1.9e-3, 0.6e-3, 1.1e-3}) {
    r.mutable_result()->add_costs_s(c);
  }
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  s = queue_->GetJob(ids[1])->result().stats();
  EXPECT_TRUE(s.unstable());
  EXPECT_EQ(s.unstable_threshold(), 0.05);
  EXPECT_GT(s.rel_half_width(), 0.05);
  EXPECT_EQ(queue_->Stats().unstable_results, 1);  // benchfarm_tracker_unstable_results_total
  // Steady costs from a board that shared its CPU while timing (issue 37 sec. 5): contended.
  o = TakeOne("a");
  r = Ok(o, 1.00e-3);
  for (double c :
       {0.99e-3, 1.01e-3, 1.00e-3, 1.00e-3, 0.99e-3, 1.01e-3, 1.00e-3, 1.00e-3, 1.00e-3}) {
    r.mutable_result()->add_costs_s(c);
  }
  r.mutable_result()->set_wall_over_cpu(1.8);
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  s = queue_->GetJob(ids[2])->result().stats();
  EXPECT_NEAR(s.rel_half_width(), 0.01, 1e-9);
  EXPECT_TRUE(s.contended());
  EXPECT_TRUE(s.unstable());
  EXPECT_EQ(queue_->Stats().unstable_results, 2);
}

TEST_F(JobQueueTest, AdaptiveTrialsMayReportUpToMaxRepeatCosts) {
  v1::Trial t = MakeTrial();
  t.mutable_measure()->set_target_rel_ci(0.01);
  t.mutable_measure()->set_max_repeat(30);
  auto ids = Submit({t, t});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  v1::JobResult r = Ok(o);
  for (int i = 1; i < 30; ++i) r.mutable_result()->add_costs_s(1e-3);
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  EXPECT_EQ(queue_->GetJob(ids[0])->result().costs_s_size(), 30);
  o = TakeOne("a");
  r = Ok(o);
  for (int i = 1; i < 31; ++i) r.mutable_result()->add_costs_s(1e-3);
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->ReportResult("a", r)));
  // Adaptive options are checked at the door.
  for (auto [target, budget, max_repeat] : {std::tuple<double, int, int>{1.5, 0, 0},
                                            {-0.1, 0, 0},
                                            {NAN, 0, 0},
                                            {0.01, -1, 0},
                                            {0.01, 0, 5000}}) {
    v1::Trial bad = MakeTrial();
    bad.mutable_measure()->set_target_rel_ci(target);
    bad.mutable_measure()->set_budget_ms(budget);
    bad.mutable_measure()->set_max_repeat(max_repeat);
    EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("c1", "bad", {bad}).status()))
        << target << " " << budget << " " << max_repeat;
  }
}

TEST_F(JobQueueTest, WithoutAConfiguredCheckTheBuiltinOneRuns) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(queue_->ReportResult("a", Failed(TakeOne("a"), v1::FLASH_ERROR)).ok());
  }
  ASSERT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  // No health_check_trial configured: the built-in add, outputs checked, still gates the board.
  v1::JobOffer check = TakeOne("a");
  ASSERT_TRUE(check.health_check());
  EXPECT_EQ(check.trial().op().template_op().op(), "add");
  EXPECT_TRUE(check.trial().check_outputs());
  EXPECT_EQ(check.trial().board_kind(), "host");
  ASSERT_TRUE(queue_->ReportResult("a", Failed(check, v1::WRONG_ANSWER)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
}

TEST_F(JobQueueTest, AnAdminsQuarantineHoldsUntilReleased) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  EXPECT_TRUE(absl::IsNotFound(queue_->SetQuarantine("b9", true, "").status()));
  absl::StatusOr<v1::Board> held = queue_->SetQuarantine("b1", true, "fan noise");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->state(), v1::QUARANTINED);
  EXPECT_TRUE(held->held());
  auto ids = Submit({MakeTrial()});
  // No work and no health check, however long it waits, and across a restart.
  clock_.Advance(absl::Hours(1));
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  Restart();
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  EXPECT_EQ(queue_->Boards("host")[0].held_reason(), "fan noise");
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  absl::StatusOr<v1::Board> released = queue_->SetQuarantine("b1", false, "");
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->state(), v1::IDLE);
  EXPECT_FALSE(released->held());
  EXPECT_EQ(TakeOne("a").job_id(), ids[0]);
}

TEST_F(JobQueueTest, TrialFailuresAreResultsNotRetries) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  ASSERT_TRUE(queue_->ReportResult("a", Failed(o, v1::COMPILE_DEVICE)).ok());
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::DONE);
  EXPECT_EQ(job->result().error_code(), v1::COMPILE_DEVICE);
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
}

}  // namespace
}  // namespace benchfarm::tracker
