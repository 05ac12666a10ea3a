// JobQueue over its store (tracker/README.md, "Durability"): deferred offer writes, the store's
// upkeep in Stats, a store that fails or is slow, and recovery after a restart.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "tracker/flaky_store.h"
#include "tracker/job_queue_test_fixture.h"

namespace benchfarm::tracker {
namespace {

// An offer's change to RUNNING is deferred: a result before it is due replaces it (one write
// for the two), a read of the store sees it (List), and a restart stores it.
TEST_F(JobQueueTest, AnOffersWriteIsDeferredReplacedByItsResultAndSeenByReads) {
  JobQueueOptions options = Defaults();
  options.defer_offer_writes = absl::Hours(1);
  Restart(options);
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer first = TakeOne("a");
  auto stored = store_->GetJob(first.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::QUEUED);  // not written yet
  ASSERT_TRUE(queue_->ReportResult("a", Ok(first)).ok());
  stored = store_->GetJob(first.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::DONE);
  EXPECT_EQ(queue_->Stats().store_writes_saved, 1);

  v1::JobOffer second = TakeOne("a");
  JobFilter running;
  running.state = v1::RUNNING;
  auto listed = queue_->List(running);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].job.job_id(), second.job_id());
  EXPECT_EQ((*listed)[0].job.attempts_size(), 1);
  EXPECT_EQ(queue_->Stats().store_writes_saved, 1);  // written for the read, not replaced
}

// An offer whose result has not come is written once it is due (ExpireLeases, the dispatcher's
// periodic look), not before; its result later is one more write, none saved.
TEST_F(JobQueueTest, AnOffersWriteIsMadeOnceDueWithNoResult) {
  JobQueueOptions options = Defaults();
  options.defer_offer_writes = absl::Seconds(2);
  Restart(options);
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  auto stored_state = [&]() {
    auto stored = store_->GetJob(o.job_id());
    EXPECT_TRUE(stored.ok() && stored->has_value());
    return stored.ok() && stored->has_value() ? (*stored)->job.state() : v1::JOB_STATE_UNSPECIFIED;
  };
  clock_.Advance(absl::Seconds(1));
  queue_->ExpireLeases();
  EXPECT_EQ(stored_state(), v1::QUEUED);  // not due yet: not handed to the store at all
  clock_.Advance(absl::Seconds(1));
  queue_->ExpireLeases();  // due: handed to the commit thread, stored soon (no Flush here)
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (stored_state() != v1::RUNNING && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_EQ(stored_state(), v1::RUNNING);
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  EXPECT_EQ(queue_->Stats().store_writes_saved, 0);
}

TEST_F(JobQueueTest, AnOfferDeferredAtARestartIsStoredAndStillRunsAfterIt) {
  JobQueueOptions options = Defaults();
  options.defer_offer_writes = absl::Hours(1);
  Restart(options);
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  Restart(options);  // the queue stops cleanly: what it deferred is written
  auto stored = store_->GetJob(o.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::RUNNING);
  v1::Register again = MakeAgent("a", {"b1"});
  *again.add_held() = Held(o.job_id(), 1);  // the agent is still measuring it
  ASSERT_TRUE(queue_->RegisterAgent(again).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  auto job = queue_->GetJob(o.job_id());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::DONE);
}

// /metrics shows the store's own upkeep: Stats carries SqliteStore's WAL truncations (here at a
// WAL of 20 pages, which a few submissions fill).
TEST_F(JobQueueTest, StatsCarryTheStoresWalTruncations) {
  queue_.reset();
  store_.reset();
  SqliteStoreOptions small;
  small.wal_truncate_pages = 20;
  auto store = SqliteStore::Open(path_, small);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
  queue_ = std::make_unique<JobQueue>(store_.get(), &clock_, Defaults());
  ASSERT_TRUE(queue_->Recover().ok());
  EXPECT_EQ(queue_->Stats().store_upkeep.wal_truncations, 0);
  for (int i = 0; i < 20 && queue_->Stats().store_upkeep.wal_truncations == 0; ++i) {
    Submit(std::vector<v1::Trial>(50, MakeTrial()));
  }
  EXPECT_GE(queue_->Stats().store_upkeep.wal_truncations, 1);
  EXPECT_EQ(queue_->Stats().store_upkeep.wal_truncations_blocked, 0);
}

TEST_F(JobQueueTest, AFailingStoreRefusesWorkKeepsResultsRetryableAndRecovers) {
  FlakyStore flaky(store_.get());
  JobQueueOptions options = Defaults();
  options.store_probe = absl::Milliseconds(50);  // the commit thread's retry, in real time
  queue_ = std::make_unique<JobQueue>(&flaky, &clock_, options);
  ASSERT_TRUE(queue_->Recover().ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto ids = Submit({MakeTrial(), MakeTrial()});
  v1::JobOffer o = TakeOne("a");
  flaky.SetWriteFailure(absl::InternalError("sqlite: database or disk is full"));
  // The result cannot be stored: Unavailable naming the cause. It is kept, not lost: the job is
  // not offered again, and the copy the agent sends again is acknowledged once it is stored.
  absl::Status s = queue_->ReportResult("a", Ok(o, 3e-3));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("disk is full"), std::string::npos) << s;
  QueueStats stats = queue_->Stats();
  EXPECT_GE(stats.store_failures, 1);
  EXPECT_NE(stats.store_problem.find("disk is full"), std::string::npos);
  // No new work while the store fails (the board has a free slot: give it two).
  v1::Register two = MakeAgent("a", {"b1"});
  two.mutable_boards(0)->set_slots(2);
  ASSERT_TRUE(queue_->RegisterAgent(two).ok());  // a failing store does not keep agents out
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  // Submissions and cancellations are refused with the cause, and nothing is taken.
  auto refused = queue_->Submit("c1", "while-full", {MakeTrial()});
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_TRUE(absl::IsUnavailable(queue_->Cancel(ids[1]).status()));
  EXPECT_EQ(queue_->GetJob(ids[1])->state(), v1::QUEUED);
  // Sent again while the store still fails: still Unavailable; the database has no result.
  EXPECT_TRUE(absl::IsUnavailable(queue_->ReportResult("a", Ok(o, 3e-3))));
  auto unstored = store_->GetJob(o.job_id());
  ASSERT_TRUE(unstored.ok() && unstored->has_value());
  EXPECT_NE((*unstored)->job.state(), v1::DONE);
  // Space is back: the kept changes are stored at the next try, work flows again, and the resent
  // result is acknowledged (recorded once: a second copy is ignored).
  flaky.SetWriteFailure(absl::OkStatus());
  for (int i = 0; i < 500 && !queue_->Stats().store_problem.empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(queue_->Stats().store_problem.empty());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 3e-3)).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 9.0)).ok());  // a second copy: ignored
  auto job = queue_->GetJob(o.job_id());
  EXPECT_EQ(job->state(), v1::DONE);
  EXPECT_EQ(job->result().costs_s(0), 3e-3);
  std::vector<Offer> next = queue_->TakeOffers("a");
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].offer.job_id(), ids[1]);
  // What was acknowledged is in the database itself.
  auto stored = store_->GetJob(o.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::DONE);
  EXPECT_EQ((*stored)->job.result().costs_s(0), 3e-3);
  queue_.reset();  // before `flaky`: the queue's last writes go through it
}

TEST_F(JobQueueTest, JobsAreOfferedAndResultsAcknowledgedOnlyOnceStored) {
  FlakyStore flaky(store_.get());
  queue_ = std::make_unique<JobQueue>(&flaky, &clock_, Defaults());
  ASSERT_TRUE(queue_->Recover().ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto durable = [this](GroupCommit::Ticket ticket) {
    absl::Notification told;
    absl::Status verdict;
    queue_->WhenDurable(ticket, [&](absl::Status s) {
      verdict = s;
      told.Notify();
    });
    return told.WaitForNotificationWithTimeout(absl::Seconds(10)) && verdict.ok();
  };
  flaky.HoldWrites(true);  // a slow disk: the commit of the submission waits
  auto accepted = queue_->SubmitAsync("c1", "r1", {MakeTrial()});
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  ASSERT_EQ(accepted->job_ids.size(), 1u);
  const std::string id = accepted->job_ids[0];
  EXPECT_EQ(queue_->GetJob(id)->state(), v1::QUEUED);  // visible at once...
  EXPECT_TRUE(queue_->TakeOffers("a").empty());        // ...offered only once stored
  // A retry of the same request gets the same job, and the same wait.
  auto retried = queue_->SubmitAsync("c1", "r1", {MakeTrial()});
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->job_ids, accepted->job_ids);
  flaky.HoldWrites(false);
  ASSERT_TRUE(durable(accepted->ticket));
  ASSERT_TRUE(durable(retried->ticket));
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].offer.job_id(), id);
  // The result is recorded at once (the board is free) and acknowledged once stored; the copy
  // sent again meanwhile waits for the same write.
  flaky.HoldWrites(true);
  GroupCommit::Ticket ticket = 0, again = 0;
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer, 2e-3), nullptr, &ticket).ok());
  EXPECT_EQ(queue_->GetJob(id)->state(), v1::DONE);
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer, 9.0), nullptr, &again).ok());
  EXPECT_EQ(again, ticket);
  auto before = store_->GetJob(id);
  ASSERT_TRUE(before.ok() && before->has_value());
  EXPECT_NE((*before)->job.state(), v1::DONE);
  flaky.HoldWrites(false);
  ASSERT_TRUE(durable(ticket));
  auto after = store_->GetJob(id);
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->job.state(), v1::DONE);
  EXPECT_EQ((*after)->job.result().costs_s(0), 2e-3);
  queue_.reset();  // before `flaky`
}

TEST_F(JobQueueTest, RestartKeepsQueuedAndRunningJobs) {
  auto ids = Submit({MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer)).ok());
  Restart();  // the tracker process died and came back
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::DONE);
  EXPECT_EQ(queue_->GetJob(offers[1].offer.job_id())->state(), v1::RUNNING);
  // The agent reconnects holding its running job and finishes it.
  v1::Register reg = MakeAgent("a", {"b1", "b2"});
  reg.add_held_job_ids(offers[1].offer.job_id());
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[1].offer)).ok());
  EXPECT_EQ(queue_->GetJob(offers[1].offer.job_id())->state(), v1::DONE);
  // The queued one is offered.
  std::vector<Offer> more = queue_->TakeOffers("a");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(queue_->Summary()[0].running(), 1);
}

TEST_F(JobQueueTest, RunningJobsOfAnAgentThatNeverReturnsRequeueAfterRestart) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  Restart();
  clock_.Advance(absl::Seconds(11));
  EXPECT_EQ(queue_->ExpireLeases(), 1);
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::QUEUED);
  EXPECT_EQ(job->attempts_size(), 1);
}

}  // namespace
}  // namespace benchfarm::tracker
