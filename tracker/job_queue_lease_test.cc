// JobQueue's attempts and leases: expiry re-queues with the attempt history up to the retry
// budget, heartbeats renew only the attempts they name, silent agents, agents that register
// again (holding their attempts or not), boards bound to their agents, revoked agents.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tracker/job_queue_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(JobQueueTest, ExpiredLeaseRequeuesWithHistoryThenFailsBoardLost) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int attempt = 1; attempt <= 3; ++attempt) {
    v1::JobOffer o = TakeOne("a");
    EXPECT_EQ(o.attempt(), attempt);
    clock_.Advance(absl::Seconds(5));
    queue_->Touch("a", o.job_id(), o.attempt());  // a heartbeat naming it renews the lease
    clock_.Advance(absl::Seconds(6));
    EXPECT_EQ(queue_->ExpireLeases(), 0);
    queue_->Touch("a", std::vector<v1::HeldAttempt>{});  // a heartbeat that does not name it
    clock_.Advance(absl::Seconds(5));
    EXPECT_EQ(queue_->ExpireLeases(), 1);
    // A lease expiry is not the board's failure: three of them (the threshold is 2) leave it
    // serving.
    EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
    EXPECT_EQ(queue_->Boards("host")[0].consecutive_infra_failures(), 0);
  }
  auto job = queue_->GetJob(ids[0]);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), v1::DONE);
  EXPECT_EQ(job->result().error_code(), v1::BOARD_LOST);
  EXPECT_EQ(job->result().autotvm_error_no(), 7);
  ASSERT_EQ(job->attempts_size(), 3);
  for (const v1::Attempt& a : job->attempts()) EXPECT_EQ(a.error_code(), v1::BOARD_LOST);
  EXPECT_EQ(queue_->Stats().lease_expiries, 3);
}

TEST_F(JobQueueTest, ASilentAgentsBoardsGoOfflineNotQuarantinedAndServeWhenItSpeaks) {
  auto ids = Submit({MakeTrial(), MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2", "b3"})).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("z", {"c1"})).ok());
  ASSERT_EQ(queue_->TakeOffers("a").size(), 3u);
  std::vector<Offer> on_z = queue_->TakeOffers("z");
  ASSERT_EQ(on_z.size(), 1u);
  auto state_of = [&](const std::string& board) {
    for (const v1::Board& b : queue_->Boards("host")) {
      if (b.board_id() == board) return b;
    }
    return v1::Board();
  };
  // Agent a is paused (SIGSTOP) past the lease, twice (the quarantine threshold is 2); z keeps
  // sending heartbeats.
  for (int pause = 1; pause <= 2; ++pause) {
    for (int s = 0; s < 11; ++s) {
      clock_.Advance(absl::Seconds(1));
      queue_->Touch("z", on_z[0].offer.job_id(), on_z[0].offer.attempt());
      queue_->ExpireLeases();
    }
    for (const char* b : {"b1", "b2", "b3"}) {
      EXPECT_EQ(state_of(b).state(), v1::OFFLINE) << b << " after pause " << pause;
      EXPECT_EQ(state_of(b).consecutive_infra_failures(), 0) << b;
    }
    EXPECT_EQ(state_of("c1").state(), v1::BUSY);
    EXPECT_TRUE(queue_->TakeOffers("a").empty()) << "a silent agent is offered nothing";
    // Its attempts ended (not the boards' failure) and wait for a board.
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<v1::Job> job = queue_->GetJob(ids[i]);
      ASSERT_TRUE(job.ok());
      EXPECT_EQ(job->state(), v1::QUEUED);
      ASSERT_EQ(job->attempts_size(), pause);
      EXPECT_NE(job->attempts(pause - 1).message().find("agent a has said nothing for 10s"),
                std::string::npos)
          << job->attempts(pause - 1).message();
    }
    EXPECT_EQ(queue_->Stats().silent_agents, pause);
    // It resumes: its first heartbeat brings its boards back, and they are offered work at once.
    queue_->Touch("a", std::vector<v1::HeldAttempt>{});
    for (const char* b : {"b1", "b2", "b3"}) EXPECT_EQ(state_of(b).state(), v1::IDLE) << b;
    std::vector<Offer> offers = queue_->TakeOffers("a");
    ASSERT_EQ(offers.size(), 3u);
    for (const Offer& o : offers) EXPECT_EQ(o.offer.attempt(), pause + 1);
  }
  EXPECT_EQ(queue_->Stats().silent_agents, 2);
  EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
}

TEST_F(JobQueueTest, HeartbeatsRenewOnlyTheAttemptsTheyName) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  JobQueueOptions options = Defaults();
  options.quarantine_threshold = 100;
  Restart(options);
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  const v1::JobOffer& kept = offers[0].offer;
  const v1::JobOffer& dropped = offers[1].offer;
  // The agent holds only the first (it dropped the second): only that lease is renewed.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Seconds(6));
    queue_->Touch("a", {Held(kept.job_id(), kept.attempt())});
    queue_->ExpireLeases();
  }
  EXPECT_EQ(queue_->GetJob(kept.job_id())->state(), v1::RUNNING);
  auto lost = queue_->GetJob(dropped.job_id());
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(lost->state(), v1::QUEUED);  // re-queued for attempt 2
  EXPECT_EQ(lost->attempts(0).error_code(), v1::BOARD_LOST);
  // Attempt 2 goes out; a heartbeat still naming attempt 1 does not keep attempt 2 alive.
  v1::JobOffer second = TakeOne("a");
  ASSERT_EQ(second.job_id(), dropped.job_id());
  ASSERT_EQ(second.attempt(), 2);
  for (int i = 0; i < 2; ++i) {
    clock_.Advance(absl::Seconds(6));
    queue_->Touch("a", {Held(kept.job_id(), kept.attempt()), Held(dropped.job_id(), 1)});
    queue_->ExpireLeases();
  }
  EXPECT_EQ(queue_->GetJob(dropped.job_id())->attempts_size(), 2);
  EXPECT_EQ(queue_->GetJob(dropped.job_id())->state(), v1::QUEUED);
  // Another agent's heartbeat naming the attempt renews nothing either.
  v1::JobOffer third = TakeOne("a");
  ASSERT_EQ(third.attempt(), 3);
  for (int i = 0; i < 2; ++i) {
    clock_.Advance(absl::Seconds(6));
    queue_->Touch("intruder", {Held(third.job_id(), 3)});
    queue_->Touch("a", kept.job_id(), kept.attempt());
    queue_->ExpireLeases();
  }
  EXPECT_EQ(queue_->GetJob(third.job_id())->state(), v1::DONE);  // out of attempts: BOARD_LOST
  // A result for an old attempt is ignored; the current attempt's counts.
  ASSERT_TRUE(queue_->ReportResult("a", Ok(kept, 5e-3)).ok());
  EXPECT_EQ(queue_->GetJob(kept.job_id())->state(), v1::DONE);
  EXPECT_EQ(queue_->GetJob(kept.job_id())->result().costs_s(0), 5e-3);
}

TEST_F(JobQueueTest, ReRegisteringMatchesHeldJobsByAttempt) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  queue_->DisconnectAgent("a");
  // Back, holding attempt 1 of the first job and an attempt of the second the tracker never gave.
  v1::Register again = MakeAgent("a", {"b1", "b2"});
  *again.add_held() = Held(offers[0].offer.job_id(), 1);
  *again.add_held() = Held(offers[1].offer.job_id(), 7);
  ASSERT_TRUE(queue_->RegisterAgent(again).ok());
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::RUNNING);
  auto other = queue_->GetJob(offers[1].offer.job_id());
  EXPECT_EQ(other->state(), v1::QUEUED);
  EXPECT_EQ(other->attempts(0).error_code(), v1::BOARD_LOST);
}

TEST_F(JobQueueTest, LostAgentsJobsRequeueOnReRegister) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  queue_->DisconnectAgent("a");
  // It comes back holding only the first job.
  v1::Register reg = MakeAgent("a", {"b1", "b2"});
  reg.add_held_job_ids(offers[0].offer.job_id());
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::RUNNING);
  auto lost = queue_->GetJob(offers[1].offer.job_id());
  EXPECT_EQ(lost->state(), v1::QUEUED);
  ASSERT_EQ(lost->attempts_size(), 1);
  EXPECT_EQ(lost->attempts(0).error_code(), v1::BOARD_LOST);
  // The held job's result still counts.
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer)).ok());
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::DONE);
}

// Agents with verified identities (boards_bound): a board stays with the agent that registered
// it — another is refused even while the first is away — until an admin moves it (issue 34).
TEST_F(JobQueueTest, ABoundBoardIsItsAgentsUntilAnAdminMovesIt) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"}), true).ok());
  absl::Status s = queue_->RegisterAgent(MakeAgent("twin", {"b1"}), true);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_NE(s.message().find("board b1 is held by agent a; another agent may serve it only after "
                             "an admin moves it (farmctl board move b1 twin)"),
            absl::string_view::npos)
      << s;
  // Not while its agent is connected; then it goes to the named agent.
  EXPECT_TRUE(absl::IsFailedPrecondition(queue_->MoveBoard("b1", "twin").status()));
  queue_->DisconnectAgent("a");
  EXPECT_TRUE(absl::IsPermissionDenied(queue_->RegisterAgent(MakeAgent("twin", {"b1"}), true)));
  EXPECT_TRUE(absl::IsNotFound(queue_->MoveBoard("nope", "twin").status()));
  auto moved = queue_->MoveBoard("b1", "twin");
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->agent_id(), "twin");
  EXPECT_EQ(moved->state(), v1::OFFLINE);
  // Across a restart too.
  Restart();
  EXPECT_TRUE(absl::IsPermissionDenied(queue_->RegisterAgent(MakeAgent("a", {"b1"}), true)));
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("twin", {"b1"}), true).ok());
  Submit({MakeTrial()});
  EXPECT_EQ(TakeOne("twin").board_id(), "b1");
  // Unbound (an insecure tracker): the old rule, refused only while the holder is connected.
  queue_->DisconnectAgent("twin");
  EXPECT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
}

// A revoked agent's attempts end at once and its late results are ignored (issue 34 §3).
TEST_F(JobQueueTest, ARevokedAgentsAttemptsRequeueAndItsLateResultsAreIgnored) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto ids = Submit({MakeTrial()});
  v1::JobOffer o = TakeOne("a");
  ASSERT_EQ(o.job_id(), ids[0]);
  queue_->RevokeAgent("a", "its agent's certificate was revoked");
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::QUEUED);
  ASSERT_EQ(job->attempts_size(), 1);
  EXPECT_EQ(job->attempts(0).error_code(), v1::BOARD_LOST);
  EXPECT_EQ(job->attempts(0).message(), "its agent's certificate was revoked");
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::OFFLINE);
  EXPECT_EQ(queue_->Stats().revoked_attempts, 1);
  // What it measured arrives late: ignored, the job stays queued for someone else.
  EXPECT_TRUE(queue_->ReportResult("a", Ok(o, 1e-9)).ok());
  EXPECT_EQ(queue_->GetJob(ids[0])->state(), v1::QUEUED);
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("b", {"b2"})).ok());
  v1::JobOffer again = TakeOne("b");
  EXPECT_EQ(again.job_id(), ids[0]);
  EXPECT_EQ(again.attempt(), 2);
}

}  // namespace
}  // namespace benchfarm::tracker
