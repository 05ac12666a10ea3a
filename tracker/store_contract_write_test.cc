// The Store contract (tracker/store.h) on every backend (store_contract_test_fixture.h):
// submissions, write batches (replayed, refused, failing in part or deep in a large one), job
// updates and sequence numbers. What only one backend has is tested in sqlite_store_test and
// pg_store_test.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"
#include "tracker/store_contract_test_fixture.h"
#include "tracker/store_test_util.h"

namespace benchfarm::tracker {
namespace {

INSTANTIATE_TEST_SUITE_P(Backends, StoreContractTest, ::testing::Values("sqlite", "postgres"),
                         BackendName);

TEST_P(StoreContractTest, SubmissionRoundTrip) {
  const std::vector<v1::Job> jobs = {MakeJob("a", "alice", "m3", "matmul"),
                                     MakeJob("b", "alice", "m3", "conv2d"),
                                     MakeJob("c", "alice", "m4", "")};
  absl::StatusOr<std::vector<int64_t>> seqs = store().InsertSubmission("alice", "req-1", jobs);
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_THAT(*seqs, ElementsAre(1, 2, 3));

  absl::StatusOr<std::optional<std::vector<std::string>>> found =
      store().FindSubmission("alice", "req-1");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_THAT(**found, ElementsAre("a", "b", "c"));

  for (size_t i = 0; i < jobs.size(); ++i) {
    absl::StatusOr<std::optional<StoredJob>> got = store().GetJob(jobs[i].job_id());
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(got->has_value());
    EXPECT_EQ((*got)->seq, (*seqs)[i]);
    EXPECT_TRUE(MessageDifferencer::Equals((*got)->job, jobs[i]))
        << (*got)->job.DebugString() << " vs " << jobs[i].DebugString();
  }
  absl::StatusOr<std::optional<StoredJob>> missing = store().GetJob("nope");
  ASSERT_TRUE(missing.ok()) << missing.status();
  EXPECT_FALSE(missing->has_value());
}

// A batch sent again because the answer to its COMMIT was lost (WriteBatch::replay) is stored
// once: the submission kept, the jobs in their latest state; without replay it is AlreadyExists.
TEST_P(StoreContractTest, AReplayedBatchIsStoredOnce) {
  WriteBatch batch;
  batch.submissions.push_back({"alice", "req-1", {"a", "b"}});
  batch.jobs.push_back(WriteBatch::JobWrite::Of(1, true, MakeJob("a", "alice", "m3", "matmul")));
  batch.jobs.push_back(WriteBatch::JobWrite::Of(2, true, MakeJob("b", "alice", "m3", "matmul")));
  ASSERT_TRUE(store().Apply(batch).ok());
  EXPECT_TRUE(absl::IsAlreadyExists(store().Apply(batch)));
  // Sent again with a newer state of "b" merged in (as the group commit does) and a new job.
  batch.jobs[1] =
      WriteBatch::JobWrite::Of(2, true, MakeJob("b", "alice", "m3", "matmul", v1::RUNNING));
  batch.jobs.push_back(WriteBatch::JobWrite::Of(3, true, MakeJob("c", "alice", "m3", "matmul")));
  batch.replay = true;
  absl::Status replayed = store().Apply(batch);
  ASSERT_TRUE(replayed.ok()) << replayed;
  auto found = store().FindSubmission("alice", "req-1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_THAT(**found, ElementsAre("a", "b"));
  JobFilter all;
  auto jobs = store().ListJobs(all);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(JobIds(*jobs), ElementsAre("a", "b", "c"));
  EXPECT_EQ((*jobs)[1].job.state(), v1::RUNNING);
  EXPECT_EQ(store().LastSeq().value(), 3);
}

TEST_P(StoreContractTest, EmptySubmissionIsStoredAndFound) {
  absl::StatusOr<std::vector<int64_t>> seqs = store().InsertSubmission("alice", "empty", {});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_THAT(*seqs, IsEmpty());
  auto found = store().FindSubmission("alice", "empty");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_THAT(**found, IsEmpty());
}

TEST_P(StoreContractTest, FindSubmissionIsIdempotentAndKeyedByClientAndRequest) {
  auto none = store().FindSubmission("alice", "req-1");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());

  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  for (int i = 0; i < 3; ++i) {
    auto found = store().FindSubmission("alice", "req-1");
    ASSERT_TRUE(found.ok()) << found.status();
    ASSERT_TRUE(found->has_value());
    EXPECT_THAT(**found, ElementsAre("a"));
  }
  // Same request id, other client: a different submission.
  auto other = store().FindSubmission("bob", "req-1");
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_FALSE(other->has_value());
  ASSERT_TRUE(store().InsertSubmission("bob", "req-1", {MakeJob("b", "bob", "m3", "matmul")}).ok());
}

TEST_P(StoreContractTest, DuplicateSubmissionIsAlreadyExistsAndWritesNothing) {
  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  absl::StatusOr<std::vector<int64_t>> again =
      store().InsertSubmission("alice", "req-1", {MakeJob("x", "alice", "m3", "matmul")});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_THAT(again.status().message(), HasSubstr("req-1"));
  auto x = store().GetJob("x");
  ASSERT_TRUE(x.ok());
  EXPECT_FALSE(x->has_value());
  auto found = store().FindSubmission("alice", "req-1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_THAT(**found, ElementsAre("a"));
}

TEST_P(StoreContractTest, DuplicateJobIdIsAlreadyExistsAndTheWholeSubmissionRollsBack) {
  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  absl::StatusOr<std::vector<int64_t>> clash = store().InsertSubmission(
      "alice", "req-2",
      {MakeJob("fresh", "alice", "m3", "matmul"), MakeJob("a", "alice", "m3", "")});
  EXPECT_EQ(clash.status().code(), absl::StatusCode::kAlreadyExists) << clash.status();
  EXPECT_THAT(clash.status().message(), HasSubstr("job a"));
  auto fresh = store().GetJob("fresh");
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE(fresh->has_value());
  auto submission = store().FindSubmission("alice", "req-2");
  ASSERT_TRUE(submission.ok());
  EXPECT_FALSE(submission->has_value());

  // Repeated within one submission.
  auto twice = store().InsertSubmission(
      "alice", "req-3", {MakeJob("t", "alice", "m3", "matmul"), MakeJob("t", "alice", "m3", "")});
  EXPECT_EQ(twice.status().code(), absl::StatusCode::kAlreadyExists) << twice.status();

  // The store is still usable, and sequence numbers continue.
  auto next = store().InsertSubmission("alice", "req-4", {MakeJob("b", "alice", "m3", "matmul")});
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_GT(next->front(), 1);
}

TEST_P(StoreContractTest, DuplicateSeqIsAlreadyExists) {
  WriteBatch batch;
  batch.jobs.push_back(WriteBatch::JobWrite::Of(7, true, MakeJob("a", "alice", "m3", "matmul")));
  batch.jobs.push_back(WriteBatch::JobWrite::Of(7, true, MakeJob("b", "alice", "m3", "matmul")));
  absl::Status status = store().Apply(batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;
  auto a = store().GetJob("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->has_value());
}

TEST_P(StoreContractTest, JobWithoutIdIsInvalidArgument) {
  auto inserted = store().InsertSubmission(
      "alice", "req-1", {MakeJob("a", "alice", "m3", "matmul"), MakeJob("", "alice", "m3", "")});
  EXPECT_EQ(inserted.status().code(), absl::StatusCode::kInvalidArgument) << inserted.status();
  auto a = store().GetJob("a");
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->has_value());
  EXPECT_EQ(store().UpdateJob(v1::Job()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, ApplyRefusesAnInsertWithoutSeqOrABoardWithoutIdAndWritesNothing) {
  v1::Board board;
  board.set_board_id("b1");
  WriteBatch no_seq;
  no_seq.boards.push_back(board);
  no_seq.jobs.push_back(WriteBatch::JobWrite::Of(0, true, MakeJob("a", "alice", "m3", "matmul")));
  absl::Status status = store().Apply(no_seq);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;

  WriteBatch no_board_id;
  no_board_id.jobs.push_back(WriteBatch::JobWrite::Of(1, true, MakeJob("a", "alice", "m3", "")));
  no_board_id.boards.push_back(board);
  no_board_id.boards.push_back(v1::Board());
  status = store().Apply(no_board_id);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;

  auto a = store().GetJob("a");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->has_value());
  auto boards = store().LoadBoards();
  ASSERT_TRUE(boards.ok()) << boards.status();
  EXPECT_THAT(*boards, IsEmpty());
}

TEST_P(StoreContractTest, EmptyBatchIsOk) {
  EXPECT_TRUE(store().Apply(WriteBatch()).ok());
  auto last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 0);
}

// A batch whose last part fails writes none of its parts: the submission, the new jobs, the
// update before the failing one and the board stay as they were.
TEST_P(StoreContractTest, ABatchWithAFailingPartWritesNothing) {
  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  v1::Board board;
  board.set_board_id("b1");
  board.set_flashes(1);
  ASSERT_TRUE(store().UpsertBoard(board).ok());

  WriteBatch batch;
  batch.submissions.push_back({"alice", "req-2", {"n1", "n2"}});
  batch.jobs.push_back(WriteBatch::JobWrite::Of(2, true, MakeJob("n1", "alice", "m3", "matmul")));
  batch.jobs.push_back(WriteBatch::JobWrite::Of(3, true, MakeJob("n2", "alice", "m3", "matmul")));
  batch.jobs.push_back(
      WriteBatch::JobWrite::Of(0, false, MakeJob("a", "alice", "m3", "matmul", v1::DONE)));
  batch.jobs.push_back(
      WriteBatch::JobWrite::Of(0, false, MakeJob("ghost", "alice", "m3", "matmul", v1::DONE)));
  v1::Board changed = board;
  changed.set_flashes(99);
  batch.boards.push_back(changed);
  absl::Status status = store().Apply(batch);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(status.message(), HasSubstr("ghost"));

  auto submission = store().FindSubmission("alice", "req-2");
  ASSERT_TRUE(submission.ok()) << submission.status();
  EXPECT_FALSE(submission->has_value());
  for (const char* id : {"n1", "n2"}) {
    auto job = store().GetJob(id);
    ASSERT_TRUE(job.ok()) << job.status();
    EXPECT_FALSE(job->has_value()) << id;
  }
  auto a = store().GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_EQ((*a)->job.state(), v1::QUEUED);
  auto boards = store().LoadBoards();
  ASSERT_TRUE(boards.ok() && boards->size() == 1);
  EXPECT_EQ(boards->front().flashes(), 1);
  auto last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 1);

  // The same batch without the failing part is stored whole.
  batch.jobs.pop_back();
  ASSERT_TRUE(store().Apply(batch).ok());
  submission = store().FindSubmission("alice", "req-2");
  ASSERT_TRUE(submission.ok() && submission->has_value());
  EXPECT_THAT(**submission, ElementsAre("n1", "n2"));
  boards = store().LoadBoards();
  ASSERT_TRUE(boards.ok() && boards->size() == 1);
  EXPECT_EQ(boards->front().flashes(), 99);
}

// The same deep in a large batch (PgStore sends a batch in pipelined chunks): a duplicate or a
// missing job after a thousand good writes leaves the store as it was.
TEST_P(StoreContractTest, AFailureDeepInALargeBatchWritesNothing) {
  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  auto large_batch = [](const std::string& prefix) {
    WriteBatch batch;
    for (int i = 0; i < 1000; ++i) {
      batch.jobs.push_back(WriteBatch::JobWrite::Of(
          100 + i, true, MakeJob(absl::StrCat(prefix, i), "alice", "m3", "matmul")));
    }
    return batch;
  };
  WriteBatch duplicate = large_batch("dup-");
  duplicate.jobs.push_back(WriteBatch::JobWrite::Of(5000, true, MakeJob("a", "alice", "m3", "")));
  absl::Status status = store().Apply(duplicate);
  EXPECT_EQ(status.code(), absl::StatusCode::kAlreadyExists) << status;
  EXPECT_THAT(status.message(), HasSubstr("job a"));

  WriteBatch missing = large_batch("missing-");
  missing.jobs.insert(missing.jobs.begin() + 700,
                      WriteBatch::JobWrite::Of(0, false, MakeJob("ghost", "alice", "m3", "")));
  status = store().Apply(missing);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(status.message(), HasSubstr("ghost"));

  auto jobs = store().ListJobs({});
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(JobIds(*jobs), ElementsAre("a"));
  auto last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 1);
}

TEST_P(StoreContractTest, UpdateJobReplacesTheJobAndItsState) {
  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  v1::Job job = MakeJob("a", "alice", "m3", "matmul", v1::DONE);
  job.mutable_result()->add_costs_s(1.5e-3);
  job.mutable_result()->set_board_id("board-1");
  job.add_attempts()->set_agent_id("agent-1");
  ASSERT_TRUE(store().UpdateJob(job).ok());

  auto got = store().GetJob("a");
  ASSERT_TRUE(got.ok() && got->has_value());
  EXPECT_EQ((*got)->seq, 1);
  EXPECT_TRUE(MessageDifferencer::Equals((*got)->job, job)) << (*got)->job.DebugString();

  JobFilter filter;
  filter.client_id = "alice";
  filter.board_kind = "m3";
  filter.op = "matmul";
  filter.state = v1::DONE;
  auto listed = store().ListJobs(filter);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(JobIds(*listed), ElementsAre("a"));
  filter.state = v1::QUEUED;
  listed = store().ListJobs(filter);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(JobIds(*listed), IsEmpty());
}

TEST_P(StoreContractTest, UpdateOfAnUnknownJobIsNotFound) {
  absl::Status status = store().UpdateJob(MakeJob("ghost", "alice", "m3", "matmul"));
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  EXPECT_THAT(status.message(), HasSubstr("ghost"));
  auto ghost = store().GetJob("ghost");
  ASSERT_TRUE(ghost.ok());
  EXPECT_FALSE(ghost->has_value());
}

TEST_P(StoreContractTest, AnUpdateNamingASeqMustMatchTheStoredJob) {
  ASSERT_TRUE(store()
                  .InsertSubmission("alice", "req-1",
                                    {MakeJob("a", "alice", "m3", "matmul"),
                                     MakeJob("b", "alice", "m3", "matmul")})
                  .ok());
  WriteBatch good;
  good.jobs.push_back(
      WriteBatch::JobWrite::Of(2, false, MakeJob("b", "alice", "m3", "matmul", v1::RUNNING)));
  ASSERT_TRUE(store().Apply(good).ok());
  // "a" with b's seq: nothing is written, neither a nor b.
  WriteBatch crossed;
  crossed.jobs.push_back(
      WriteBatch::JobWrite::Of(2, false, MakeJob("a", "alice", "m3", "matmul", v1::DONE)));
  absl::Status status = store().Apply(crossed);
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound) << status;
  auto a = store().GetJob("a");
  auto b = store().GetJob("b");
  ASSERT_TRUE(a.ok() && a->has_value() && b.ok() && b->has_value());
  EXPECT_EQ((*a)->job.state(), v1::QUEUED);
  EXPECT_EQ((*a)->seq, 1);
  EXPECT_EQ((*b)->job.state(), v1::RUNNING);
  EXPECT_EQ((*b)->seq, 2);
}

TEST_P(StoreContractTest, LastSeqCountsEveryNumberGivenAndNeverGoesBack) {
  auto last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 0);
  ASSERT_TRUE(store()
                  .InsertSubmission(
                      "alice", "r1",
                      {MakeJob("a", "alice", "m3", "matmul"), MakeJob("b", "alice", "m3", "matmul"),
                       MakeJob("c", "alice", "m3", "matmul")})
                  .ok());
  last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 3);
  // Numbers the caller chose, with a gap: the highest counts.
  WriteBatch batch;
  batch.jobs.push_back(WriteBatch::JobWrite::Of(10, true, MakeJob("d", "alice", "m3", "matmul")));
  ASSERT_TRUE(store().Apply(batch).ok());
  last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 10);

  // The newest job deleted by hand (and the store reopened): its number is not given again.
  ASSERT_TRUE(backend_->Exec("DELETE FROM jobs WHERE job_id = 'd'").ok());
  Reopen();
  last = store().LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, 10);
  auto seqs = store().InsertSubmission("alice", "r2", {MakeJob("e", "alice", "m3", "matmul")});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_THAT(*seqs, ElementsAre(11));
}

}  // namespace
}  // namespace benchfarm::tracker
