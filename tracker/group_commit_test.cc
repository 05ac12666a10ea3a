#include "tracker/group_commit.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "tracker/flaky_store.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {
namespace {

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                             ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                             ".db";
    std::remove(path.c_str());
    auto store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    flaky_ = std::make_unique<FlakyStore>(store_.get());
  }

  static v1::Job Job(const std::string& id, v1::JobState state) {
    v1::Job job;
    job.set_job_id(id);
    job.set_client_id("c");
    job.set_state(state);
    return job;
  }

  v1::JobState StoredState(const std::string& id) {
    auto stored = store_->GetJob(id);
    EXPECT_TRUE(stored.ok()) << stored.status();
    if (!stored.ok() || !stored->has_value()) return v1::JOB_STATE_UNSPECIFIED;
    return (*stored)->job.state();
  }

  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<FlakyStore> flaky_;
};

TEST_F(GroupCommitTest, ChangesMadeDuringACommitGoTogetherInTheNextCoalescedPerJob) {
  GroupCommit commit(flaky_.get(), {});
  flaky_->HoldWrites(true);  // the first commit waits on a "slow disk"
  GroupCommit::Ticket first = commit.PutJob(1, true, Job("a", v1::QUEUED));
  while (flaky_->writes() < 1) absl::SleepFor(absl::Milliseconds(1));
  // Meanwhile: a new job inserted then changed twice, and "a" changed: one write each.
  commit.PutJob(2, true, Job("b", v1::QUEUED));
  commit.PutJob(0, false, Job("b", v1::RUNNING));
  commit.PutJob(0, false, Job("a", v1::RUNNING));
  GroupCommit::Ticket last = commit.PutJob(0, false, Job("b", v1::DONE));
  EXPECT_LT(commit.durable(), first);
  absl::Notification told;
  absl::Status verdict = absl::UnknownError("not called");
  commit.WhenDurable(last, [&](absl::Status s) {
    verdict = s;
    told.Notify();
  });
  flaky_->HoldWrites(false);
  ASSERT_TRUE(told.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_TRUE(verdict.ok()) << verdict;
  EXPECT_EQ(commit.durable(), last);  // and so `first` too
  EXPECT_EQ(StoredState("a"), v1::RUNNING);
  EXPECT_EQ(StoredState("b"), v1::DONE);
  CommitStats stats = commit.Stats();
  EXPECT_EQ(stats.commits, 2);  // the first, then the four changes made meanwhile
  EXPECT_EQ(stats.writes, 3);   // a; then b (inserted as DONE) and a again
  EXPECT_EQ(flaky_->writes(), 2);
}

TEST_F(GroupCommitTest, AFailingStoreKeepsChangesAnswersUnavailableAndCatchesUp) {
  GroupCommitOptions options;
  options.retry = absl::Milliseconds(20);
  GroupCommit commit(flaky_.get(), options);
  ASSERT_TRUE(commit.Wait(commit.PutJob(1, true, Job("a", v1::QUEUED))).ok());
  flaky_->SetWriteFailure(absl::InternalError("database or disk is full"));
  GroupCommit::Ticket done = commit.PutJob(0, false, Job("a", v1::DONE));
  absl::Status s = commit.Wait(done);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("disk is full"), std::string::npos) << s;
  EXPECT_TRUE(commit.failing());
  EXPECT_NE(commit.Stats().problem.find("disk is full"), std::string::npos);
  // Asked again while it fails: at once, the same answer; the change is still pending.
  EXPECT_TRUE(absl::IsUnavailable(commit.Wait(done)));
  EXPECT_EQ(StoredState("a"), v1::QUEUED);
  // Changes made meanwhile merge into the kept batch.
  GroupCommit::Ticket board = commit.PutBoard([] {
    v1::Board b;
    b.set_board_id("b1");
    return b;
  }());
  flaky_->SetWriteFailure(absl::OkStatus());
  for (int i = 0; i < 1000 && commit.failing(); ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_FALSE(commit.failing());
  EXPECT_TRUE(commit.Wait(board).ok());
  EXPECT_GE(commit.durable(), done);
  EXPECT_EQ(StoredState("a"), v1::DONE);
  auto boards = store_->LoadBoards();
  ASSERT_TRUE(boards.ok());
  ASSERT_EQ(boards->size(), 1u);
  EXPECT_GE(commit.Stats().failures, 1);
}

// The store committed a batch but its answer was lost (a connection dropped during COMMIT): the
// batch is sent again as a replay, and stored once rather than failing for ever (AlreadyExists).
TEST_F(GroupCommitTest, ABatchWhoseCommitAnswerWasLostIsReplayedAndStoredOnce) {
  GroupCommitOptions options;
  options.retry = absl::Milliseconds(20);
  GroupCommit commit(flaky_.get(), options);
  flaky_->SetWriteFailure(absl::UnavailableError("connection lost during COMMIT"),
                          /*after_commit=*/true);
  std::vector<WriteBatch::JobWrite> jobs = {
      WriteBatch::JobWrite::Of(1, true, Job("a", v1::QUEUED)),
      WriteBatch::JobWrite::Of(2, true, Job("b", v1::QUEUED))};
  GroupCommit::Ticket submitted = commit.PutSubmission("c", "r1", jobs);
  EXPECT_TRUE(absl::IsUnavailable(commit.Wait(submitted)));
  EXPECT_EQ(StoredState("a"), v1::QUEUED);  // it was stored all the same
  GroupCommit::Ticket done = commit.PutJob(0, false, Job("a", v1::DONE));
  flaky_->SetWriteFailure(absl::OkStatus());
  for (int i = 0; i < 1000 && commit.failing(); ++i) absl::SleepFor(absl::Milliseconds(5));
  ASSERT_FALSE(commit.failing()) << commit.Stats().problem;
  EXPECT_TRUE(commit.Wait(done).ok());
  EXPECT_EQ(StoredState("a"), v1::DONE);
  EXPECT_EQ(StoredState("b"), v1::QUEUED);
}

TEST_F(GroupCommitTest, PendingChangesAreStoredWhenItStops) {
  {
    GroupCommit commit(flaky_.get(), {});
    flaky_->HoldWrites(true);
    commit.PutJob(1, true, Job("a", v1::QUEUED));
    while (flaky_->writes() < 1) absl::SleepFor(absl::Milliseconds(1));
    commit.PutJob(2, true, Job("b", v1::QUEUED));
    flaky_->HoldWrites(false);
  }
  EXPECT_EQ(StoredState("a"), v1::QUEUED);
  EXPECT_EQ(StoredState("b"), v1::QUEUED);
}

// Changes put soon after a commit started, with no one waiting urgently, wait for min_interval
// and go together in the next; an urgent waiter ends that wait; one put after a quiet spell is
// committed at once; stopping does not wait for the interval.
TEST_F(GroupCommitTest, ChangesCloseBehindACommitAreGatheredUntilSomeoneIsUrgent) {
  GroupCommitOptions options;
  options.min_interval = absl::Seconds(2);
  absl::Time stopped;
  {
    GroupCommit commit(flaky_.get(), options);
    const absl::Time start = absl::Now();
    ASSERT_TRUE(commit.Wait(commit.PutJob(1, true, Job("a", v1::QUEUED))).ok());
    EXPECT_LT(absl::Now() - start, absl::Seconds(1)) << "the first commit waited";
    // Not urgent: b and c wait for the interval, together.
    commit.PutJob(2, true, Job("b", v1::QUEUED));
    absl::Notification c_stored;
    commit.WhenDurable(
        commit.PutJob(3, true, Job("c", v1::QUEUED)), [&](absl::Status) { c_stored.Notify(); },
        /*urgent=*/false);
    ASSERT_TRUE(c_stored.WaitForNotificationWithTimeout(absl::Seconds(10)));
    EXPECT_GE(absl::Now() - start, absl::Seconds(2)) << "b and c did not wait to gather";
    EXPECT_EQ(commit.Stats().commits, 2);  // a; then b and c together
    // Close behind that commit: d gathers, until e's urgent waiter comes.
    const absl::Time d_put = absl::Now();
    absl::Notification d_stored;
    commit.WhenDurable(
        commit.PutJob(4, true, Job("d", v1::QUEUED)), [&](absl::Status) { d_stored.Notify(); },
        /*urgent=*/false);
    absl::SleepFor(absl::Milliseconds(100));
    EXPECT_FALSE(d_stored.HasBeenNotified()) << "d did not gather";
    ASSERT_TRUE(commit.Wait(commit.PutJob(5, true, Job("e", v1::QUEUED))).ok());
    EXPECT_TRUE(d_stored.HasBeenNotified());
    EXPECT_LT(absl::Now() - d_put, absl::Seconds(1)) << "e's urgent waiter waited for the interval";
    CommitStats stats = commit.Stats();
    EXPECT_EQ(stats.commits, 3);  // d and e together
    EXPECT_EQ(stats.writes, 5);
    // Pending when it stops: stored at once, not after the interval.
    commit.PutJob(0, false, Job("a", v1::DONE));
    stopped = absl::Now();
  }
  EXPECT_LT(absl::Now() - stopped, absl::Seconds(1)) << "stopping waited for the interval";
  EXPECT_EQ(StoredState("a"), v1::DONE);
  EXPECT_EQ(StoredState("e"), v1::QUEUED);
}

TEST_F(GroupCommitTest, AnAlreadyDurableTicketIsAnsweredAtOnce) {
  GroupCommit commit(flaky_.get(), {});
  bool called = false;
  commit.WhenDurable(0, [&](absl::Status s) { called = s.ok(); });
  EXPECT_TRUE(called);
}

}  // namespace
}  // namespace benchfarm::tracker
