// The tracker's leases through gRPC, with fake agents: heartbeats keep a lease and silence loses
// it, expired leases and lost agents re-queue with their attempt history up to the retry budget,
// an agent that reconnects, infrastructure errors, and quarantine until a health check passes.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "tracker/service_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(ServiceTest, HeartbeatsKeepALeaseAndSilenceLosesIt) {
  // Real time: the heartbeats themselves are what keeps the job. The lease is 3 s and the agent
  // beats every 100 ms for more than two lease periods.
  JobQueueOptions options = HostOptions();
  options.lease = absl::Seconds(3);
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  std::vector<std::string> ids = Submit(1, "r1");
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  EXPECT_EQ(agent->registered().lease_ms(), 3000);
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->attempt(), 1);
  const absl::Time started = absl::Now();
  while (absl::Now() - started < absl::Milliseconds(6500)) {
    ASSERT_TRUE(agent->Heartbeat({{offer->job_id(), offer->attempt()}}));
    absl::SleepFor(absl::Milliseconds(100));
  }
  v1::Job kept = Get(ids[0]);
  EXPECT_EQ(kept.state(), v1::RUNNING);
  EXPECT_EQ(kept.attempts_size(), 1);  // never lost, so never re-queued

  // Silence (a paused agent): the lease expires, the job is queued again, and the silent agent's
  // board goes OFFLINE — not QUARANTINED: the agent failed, not the board.
  ASSERT_TRUE(WaitFor([&] { return Get(ids[0]).state() == v1::QUEUED; }));
  EXPECT_EQ(ListedBoard("b1").state(), v1::OFFLINE);
  EXPECT_EQ(ListedBoard("b1").consecutive_infra_failures(), 0);
  // Its next heartbeat brings the board back, and the job comes to it as a second attempt.
  ASSERT_TRUE(agent->Heartbeat({}));
  std::optional<v1::JobOffer> again = agent->NextOffer();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->job_id(), ids[0]);
  EXPECT_EQ(again->attempt(), 2);
  v1::Job job = Get(ids[0]);
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(0).error_code(), v1::BOARD_LOST);
  EXPECT_TRUE(absl::StartsWith(job.attempts(0).message(),
                               "the lease expired: agent agent-1 has said nothing for 3s"))
      << job.attempts(0).message();
}

TEST_F(ServiceTest, AnExpiredLeaseRequeuesWithHistoryThenFailsWithBoardLost) {
  JobQueueOptions options = HostOptions();
  options.lease = absl::Seconds(10);
  options.retry_budget = 2;
  options.quarantine_threshold = 100;
  ASSERT_NO_FATAL_FAILURE(StartServer(options, &fake_clock_));
  std::vector<std::string> ids = Submit(1, "r1");
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> first = agent->NextOffer();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->attempt(), 1);

  fake_clock_.Advance(absl::Seconds(11));
  ASSERT_TRUE(agent->Heartbeat({}));  // (its heartbeats name no attempt)
  std::optional<v1::JobOffer> second = agent->NextOffer();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job_id(), ids[0]);
  EXPECT_EQ(second->attempt(), 2);
  v1::Job job = Get(ids[0]);
  EXPECT_EQ(job.state(), v1::RUNNING);
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(0).error_code(), v1::BOARD_LOST);
  EXPECT_TRUE(absl::StartsWith(job.attempts(0).message(), "the lease expired"))
      << job.attempts(0).message();
  EXPECT_TRUE(job.attempts(0).has_ended_at());
  EXPECT_FALSE(job.attempts(1).has_ended_at());

  // A late result of the expired attempt is acknowledged and ignored.
  ASSERT_NO_FATAL_FAILURE(agent->Report(*first));
  job = Get(ids[0]);
  EXPECT_EQ(job.state(), v1::RUNNING);
  EXPECT_EQ(job.attempts_size(), 2);

  // The second lease expires too: the retry budget (2) is spent.
  fake_clock_.Advance(absl::Seconds(11));
  ASSERT_TRUE(agent->Heartbeat({}));
  ASSERT_TRUE(WaitFor([&] { return Get(ids[0]).state() == v1::DONE; }));
  ASSERT_TRUE(WaitFor([&] { return ListedBoard("b1").state() == v1::IDLE; }));
  job = Get(ids[0]);
  EXPECT_EQ(job.result().error_code(), v1::BOARD_LOST);
  EXPECT_EQ(job.result().attempts(), 2);
  EXPECT_EQ(job.result().autotvm_error_no(), 7);  // RUN_TIMEOUT
  EXPECT_TRUE(absl::StrContains(job.result().message(), "no result after 2 attempts"))
      << job.result().message();
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(1).error_code(), v1::BOARD_LOST);
  v1::Board board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::IDLE);
  EXPECT_EQ(board.running_jobs(), 0);
}

TEST_F(ServiceTest, ALostAgentsJobIsRequeuedWhenItReturnsWithoutIt) {
  JobQueueOptions options = HostOptions();
  options.retry_budget = 2;
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  std::vector<std::string> ids = Submit(1, "r1");
  const std::string job_id = ids[0];

  auto first = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = first->NextOffer();
  ASSERT_TRUE(offer.has_value());
  first->Hangup();
  ASSERT_TRUE(WaitFor([&] { return ListedBoard("b1").state() == v1::OFFLINE; }));
  // The agent may come back holding the job: it keeps its lease meanwhile.
  EXPECT_EQ(Get(job_id).state(), v1::RUNNING);

  // It comes back holding the job: nothing changes.
  auto holding = Agent(Registration("agent-1", {Board("b1")}, {job_id}));
  v1::Job job = Get(job_id);
  EXPECT_EQ(job.state(), v1::RUNNING);
  EXPECT_EQ(job.attempts_size(), 1);
  v1::Board board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::BUSY);
  EXPECT_EQ(board.running_jobs(), 1);
  EXPECT_EQ(board.current_job_id(), job_id);
  holding->Hangup();
  ASSERT_TRUE(WaitFor([&] { return ListedBoard("b1").state() == v1::OFFLINE; }));

  // It comes back without the job: that attempt is lost and the job runs again.
  auto forgetful = Agent(Registration("agent-1", {Board("b1")}));
  offer = forgetful->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->job_id(), job_id);
  EXPECT_EQ(offer->attempt(), 2);
  job = Get(job_id);
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(0).error_code(), v1::BOARD_LOST);
  EXPECT_TRUE(absl::StrContains(job.attempts(0).message(), "reconnected without"));
  forgetful->Hangup();
  ASSERT_TRUE(WaitFor([&] { return ListedBoard("b1").state() == v1::OFFLINE; }));

  // Once more: the retry budget (2) is spent and the job fails with BOARD_LOST.
  auto again = Agent(Registration("agent-1", {Board("b1")}));
  job = Get(job_id);
  EXPECT_EQ(job.state(), v1::DONE);
  EXPECT_EQ(job.result().error_code(), v1::BOARD_LOST);
  EXPECT_EQ(job.result().attempts(), 2);
  EXPECT_EQ(ListedBoard("b1").state(), v1::IDLE);
}

TEST_F(ServiceTest, AnAgentThatReconnectsBeforeItsOldStreamEndsStaysConnected) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto old_stream = Agent(Registration("agent-1", {Board("b1")}));
  auto new_stream = Agent(Registration("agent-1", {Board("b1")}));
  // The old stream (say its connection lingered) is ended by the tracker, told why — not left
  // open and deaf — and its end does not disconnect the agent.
  grpc::Status old_end = old_stream->Close();
  EXPECT_EQ(old_end.error_code(), grpc::ABORTED);
  EXPECT_TRUE(absl::StrContains(old_end.error_message(), "registered again on a newer stream"))
      << old_end.error_message();
  ASSERT_FALSE(
      WaitFor([&] { return ListedBoard("b1").state() != v1::IDLE; }, absl::Milliseconds(500)))
      << "the old stream's end took the board offline";
  std::vector<std::string> ids = Submit(1, "r1");
  std::optional<v1::JobOffer> offer = new_stream->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->job_id(), ids[0]);
}

TEST_F(ServiceTest, InfrastructureErrorsRetryUpToTheBudget) {
  JobQueueOptions options = HostOptions();
  options.retry_budget = 2;
  options.quarantine_threshold = 100;
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  std::vector<std::string> ids = Submit(1, "r1");
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, v1::FLASH_ERROR));
  offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->job_id(), ids[0]);
  EXPECT_EQ(offer->attempt(), 2);
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, v1::SESSION_ERROR));
  v1::Job job = Get(ids[0]);
  EXPECT_EQ(job.state(), v1::DONE);
  EXPECT_EQ(job.result().error_code(), v1::SESSION_ERROR);
  EXPECT_EQ(job.result().attempts(), 2);
  EXPECT_EQ(job.result().autotvm_error_no(), 4);  // RUNTIME_DEVICE
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(0).error_code(), v1::FLASH_ERROR);
  EXPECT_EQ(job.attempts(1).error_code(), v1::SESSION_ERROR);
}

TEST_F(ServiceTest, AFailingBoardIsQuarantinedUntilItPassesAHealthCheck) {
  JobQueueOptions options = HostOptions();
  options.quarantine_threshold = 2;
  options.retry_budget = 5;
  options.health_check_trial = MakeTrial();
  options.health_check_trial.set_seed(777);
  options.health_check_backoff = absl::Seconds(30);
  ASSERT_NO_FATAL_FAILURE(StartServer(options, &fake_clock_));
  std::vector<std::string> ids = Submit(1, "r1");
  const std::string job_id = ids[0];
  auto agent = Agent(Registration("agent-1", {Board("b1")}));

  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, v1::FLASH_ERROR));
  offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->job_id(), job_id);
  EXPECT_EQ(offer->attempt(), 2);
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, v1::SESSION_ERROR));

  // Two infrastructure errors in a row: quarantined; the board is offered the health check and
  // not the job.
  std::optional<v1::JobOffer> check = agent->NextOffer();
  ASSERT_TRUE(check.has_value());
  EXPECT_TRUE(check->health_check());
  EXPECT_NE(check->job_id(), job_id);
  EXPECT_EQ(check->board_id(), "b1");
  EXPECT_EQ(check->trial().board_id(), "b1");
  EXPECT_EQ(check->trial().board_kind(), "host");
  EXPECT_EQ(check->trial().seed(), 777u);
  v1::Board board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::HEALTH_CHECK);
  EXPECT_EQ(board.consecutive_infra_failures(), 2);
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.boards_quarantined(), 1);
  EXPECT_EQ(summary.boards_free(), 0);
  EXPECT_EQ(Queued(summary), 1);
  v1::Job job = Get(job_id);
  EXPECT_EQ(job.state(), v1::QUEUED);
  ASSERT_EQ(job.attempts_size(), 2);
  EXPECT_EQ(job.attempts(0).error_code(), v1::FLASH_ERROR);
  EXPECT_EQ(job.attempts(1).error_code(), v1::SESSION_ERROR);

  // The check fails: quarantined until the backoff has passed, then checked again.
  ASSERT_NO_FATAL_FAILURE(agent->Report(*check, v1::RUNTIME_DEVICE));
  EXPECT_EQ(ListedBoard("b1").state(), v1::QUARANTINED);
  EXPECT_EQ(Get(job_id).state(), v1::QUEUED);
  fake_clock_.Advance(absl::Seconds(31));
  ASSERT_TRUE(agent->Heartbeat({}));  // (else the agent is silent for a lease: offered nothing)
  std::optional<v1::JobOffer> recheck = agent->NextOffer();
  ASSERT_TRUE(recheck.has_value());
  EXPECT_TRUE(recheck->health_check());  // the job was not offered in between
  EXPECT_NE(recheck->job_id(), check->job_id());

  // It passes: the board is back in service and runs the job.
  ASSERT_NO_FATAL_FAILURE(agent->Report(*recheck));
  offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_FALSE(offer->health_check());
  EXPECT_EQ(offer->job_id(), job_id);
  EXPECT_EQ(offer->attempt(), 3);
  board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::BUSY);
  EXPECT_EQ(board.consecutive_infra_failures(), 0);
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  job = Get(job_id);
  EXPECT_EQ(job.state(), v1::DONE);
  EXPECT_EQ(job.result().error_code(), v1::NO_ERROR);
  EXPECT_EQ(job.result().attempts(), 3);
}

}  // namespace
}  // namespace benchfarm::tracker
