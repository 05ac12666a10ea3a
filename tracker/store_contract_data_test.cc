// The Store contract (tracker/store.h) on every backend (store_contract_test_fixture.h): boards,
// operators and their owners, attempt logs, data across closing and reopening, large jobs with
// every byte value, 10,000 jobs in one submission, and concurrent callers.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
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

TEST_P(StoreContractTest, BoardsRoundTripInBoardIdOrderAndUpsertReplaces) {
  auto empty = store().LoadBoards();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_THAT(*empty, IsEmpty());

  v1::Board b2;
  b2.set_board_id("b2");
  b2.set_kind("m3");
  (*b2.mutable_labels())["usb"] = "1-2";
  b2.add_capabilities("fpu");
  b2.set_state(v1::IDLE);
  v1::Board b1 = b2;
  b1.set_board_id("b1");
  // Bytewise order: upper case before lower case, whatever the database's collation.
  v1::Board upper = b2;
  upper.set_board_id("B9");
  ASSERT_TRUE(store().UpsertBoard(b2).ok());
  ASSERT_TRUE(store().UpsertBoard(b1).ok());
  ASSERT_TRUE(store().UpsertBoard(upper).ok());
  b2.set_state(v1::QUARANTINED);
  b2.set_flashes(12);
  b2.set_consecutive_infra_failures(3);
  ASSERT_TRUE(store().UpsertBoard(b2).ok());

  auto boards = store().LoadBoards();
  ASSERT_TRUE(boards.ok()) << boards.status();
  ASSERT_EQ(boards->size(), 3u);
  EXPECT_TRUE(MessageDifferencer::Equals((*boards)[0], upper)) << (*boards)[0].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals((*boards)[1], b1)) << (*boards)[1].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals((*boards)[2], b2)) << (*boards)[2].DebugString();

  EXPECT_EQ(store().UpsertBoard(v1::Board()).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(StoreContractTest, OperatorsAreStoredOncePerVersionInOrder) {
  v1::Operator a1;
  a1.set_name("gemv");
  a1.set_version("00000000000000a1");
  (*a1.mutable_files())["gemv.c"] = "int x;";
  v1::Operator a2 = a1;
  a2.set_version("00000000000000a2");
  ASSERT_TRUE(store().InsertOperator(a2).ok());
  ASSERT_TRUE(store().InsertOperator(a1).ok());
  absl::Status again = store().InsertOperator(a1);
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  EXPECT_THAT(again.message(), HasSubstr("gemv"));
  EXPECT_EQ(store().InsertOperator(v1::Operator()).code(), absl::StatusCode::kInvalidArgument);
  Reopen();  // durable
  // Loaded without their files (their size kept); one at a time with them.
  auto ops = store().LoadOperators();
  ASSERT_TRUE(ops.ok()) << ops.status();
  ASSERT_EQ(ops->size(), 2u);
  v1::Operator a1_light = a1, a2_light = a2;
  a1_light.clear_files();
  a1_light.set_files_bytes(12);  // "gemv.c" + "int x;"
  a2_light.clear_files();
  a2_light.set_files_bytes(12);
  EXPECT_TRUE(MessageDifferencer::Equals((*ops)[0], a2_light)) << (*ops)[0].DebugString();
  EXPECT_TRUE(MessageDifferencer::Equals((*ops)[1], a1_light)) << (*ops)[1].DebugString();
  auto full = store().GetOperator("gemv", a1.version());
  ASSERT_TRUE(full.ok()) << full.status();
  ASSERT_TRUE(full->has_value());
  EXPECT_TRUE(MessageDifferencer::Equals(**full, a1)) << (*full)->DebugString();
  auto none = store().GetOperator("gemv", "0000000000000000");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
  none = store().GetOperator("nope", a1.version());
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_FALSE(none->has_value());
}

TEST_P(StoreContractTest, OperatorOwnersAreSetReplacedAndDurable) {
  auto owners = store().LoadOperatorOwners();
  ASSERT_TRUE(owners.ok()) << owners.status();
  EXPECT_TRUE(owners->empty());
  ASSERT_TRUE(store().SetOperatorOwner("gemv", "alice").ok());
  ASSERT_TRUE(store().SetOperatorOwner("conv", "bob").ok());
  ASSERT_TRUE(store().SetOperatorOwner("gemv", "carol").ok());  // an admin gave it away
  EXPECT_EQ(store().SetOperatorOwner("", "alice").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().SetOperatorOwner("gemv", "").code(), absl::StatusCode::kInvalidArgument);
  Reopen();
  owners = store().LoadOperatorOwners();
  ASSERT_TRUE(owners.ok()) << owners.status();
  EXPECT_EQ(*owners, (std::map<std::string, std::string>{{"conv", "bob"}, {"gemv", "carol"}}));
}

TEST_P(StoreContractTest, OperatorStatesAreSetReplacedAndDurable) {
  auto states = store().LoadOperatorStates();
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_TRUE(states->empty());
  v1::OperatorState retired;
  retired.set_retired(true);
  v1::OperatorState readded;
  readded.mutable_readded_at()->set_seconds(1800000000);
  ASSERT_TRUE(store().SetOperatorState("gemv", "1", retired).ok());
  ASSERT_TRUE(store().SetOperatorState("gemv", "2", retired).ok());
  ASSERT_TRUE(store().SetOperatorState("gemv", "1", readded).ok());  // added again
  ASSERT_TRUE(store().SetOperatorState("conv", "1", readded).ok());
  EXPECT_EQ(store().SetOperatorState("", "1", retired).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store().SetOperatorState("gemv", "", retired).code(),
            absl::StatusCode::kInvalidArgument);
  Reopen();
  states = store().LoadOperatorStates();
  ASSERT_TRUE(states.ok()) << states.status();
  ASSERT_EQ(states->size(), 3u);
  EXPECT_TRUE(MessageDifferencer::Equals(states->at({"gemv", "1"}), readded));
  EXPECT_TRUE(MessageDifferencer::Equals(states->at({"gemv", "2"}), retired));
  EXPECT_TRUE(MessageDifferencer::Equals(states->at({"conv", "1"}), readded));
}

// Attempt logs travel in write batches beside the jobs they belong to, are kept by (job,
// attempt) — a log sent again replaces itself —, come back in attempt order, survive a reopen and
// hold any valid UTF-8 text, 64 KiB of it whole.
TEST_P(StoreContractTest, AttemptLogsAreStoredByJobAndAttempt) {
  ASSERT_TRUE(
      store().InsertSubmission("alice", "req-1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  auto none = store().GetAttemptLogs("a");
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_THAT(*none, IsEmpty());

  std::string big;
  while (big.size() < (64 << 10) - 16) big += "trial.c:3: error: «ü» 日本 \x1b[1m\t\n";
  WriteBatch batch;
  batch.jobs.push_back(
      WriteBatch::JobWrite::Of(0, false, MakeJob("a", "alice", "m3", "matmul", v1::RUNNING)));
  batch.logs.push_back({"a", MakeLog(2, "hp1", "attempt two\n")});
  batch.logs.push_back({"a", MakeLog(1, "hp0", big)});
  batch.logs.push_back({"other", MakeLog(1, "hp0", "another job's")});
  ASSERT_TRUE(store().Apply(batch).ok());
  // Attempt 2's log sent again, changed.
  ASSERT_TRUE(store().Apply(LogBatch("a", MakeLog(2, "hp1", "attempt two, again\n"))).ok());

  Reopen();
  auto logs = store().GetAttemptLogs("a");
  ASSERT_TRUE(logs.ok()) << logs.status();
  ASSERT_EQ(logs->size(), 2u);
  EXPECT_TRUE(MessageDifferencer::Equals((*logs)[0], MakeLog(1, "hp0", big)));
  EXPECT_TRUE(MessageDifferencer::Equals((*logs)[1], MakeLog(2, "hp1", "attempt two, again\n")));
  auto other = store().GetAttemptLogs("other");
  ASSERT_TRUE(other.ok() && other->size() == 1);
  EXPECT_EQ(other->front().text(), "another job's");

  // A log without its job id is refused, and nothing of its batch is written.
  WriteBatch bad;
  bad.logs.push_back({"b", MakeLog(1, "hp0", "kept out")});
  bad.logs.push_back({"", MakeLog(1, "hp0", "no job")});
  EXPECT_EQ(store().Apply(bad).code(), absl::StatusCode::kInvalidArgument);
  auto b = store().GetAttemptLogs("b");
  ASSERT_TRUE(b.ok());
  EXPECT_THAT(*b, IsEmpty());
}

TEST_P(StoreContractTest, DataSurvivesClosingAndReopening) {
  v1::Job done = MakeJob("a", "alice", "m3", "matmul", v1::DONE);
  done.mutable_result()->add_costs_s(2e-4);
  v1::Board board;
  board.set_board_id("board-1");
  board.set_kind("m3");
  board.set_flashes(5);
  ASSERT_TRUE(store()
                  .InsertSubmission("alice", "req-1",
                                    {MakeJob("a", "alice", "m3", "matmul"),
                                     MakeJob("b", "alice", "m3", "matmul")})
                  .ok());
  ASSERT_TRUE(store().UpdateJob(done).ok());
  ASSERT_TRUE(store().UpsertBoard(board).ok());
  Reopen();
  auto found = store().FindSubmission("alice", "req-1");
  ASSERT_TRUE(found.ok() && found->has_value());
  EXPECT_THAT(**found, ElementsAre("a", "b"));
  auto a = store().GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value());
  EXPECT_TRUE(MessageDifferencer::Equals((*a)->job, done));
  auto unfinished = store().LoadUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_THAT(JobIds(*unfinished), ElementsAre("b"));
  auto boards = store().LoadBoards();
  ASSERT_TRUE(boards.ok() && boards->size() == 1);
  EXPECT_TRUE(MessageDifferencer::Equals(boards->front(), board));
  // Sequence numbers continue after a reopen.
  auto seqs = store().InsertSubmission("alice", "req-2", {MakeJob("c", "alice", "m3", "matmul")});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_THAT(*seqs, ElementsAre(3));
}

// Every byte value survives in the serialized job (BYTEA, BLOB), and a 1 MiB job whole.
TEST_P(StoreContractTest, LargeJobsWithEveryByteValueRoundTrip) {
  v1::Job big = MakeJob("big", "alice", "m3", "");
  big.mutable_trial()->mutable_op()->set_c_source(std::string(1 << 20, 'x'));
  // Costs near 1.0 whose low bytes take every value, so the serialized job holds each byte.
  for (uint64_t low = 0; low < 256; ++low) {
    const uint64_t bits = 0x3ff0000000000000ull | low;
    double cost;
    std::memcpy(&cost, &bits, sizeof(cost));
    big.mutable_result()->add_costs_s(cost);
  }
  v1::Job zeros = MakeJob("zeros", "alice", "m3", "matmul");
  zeros.mutable_result()->add_costs_s(0.0);  // eight zero bytes
  ASSERT_TRUE(store().InsertSubmission("alice", "req-1", {big, zeros}).ok());
  for (const v1::Job& job : {big, zeros}) {
    auto got = store().GetJob(job.job_id());
    ASSERT_TRUE(got.ok() && got->has_value()) << job.job_id();
    EXPECT_TRUE(MessageDifferencer::Equals((*got)->job, job)) << job.job_id();
  }
}

TEST_P(StoreContractTest, TenThousandJobsInOneSubmission) {
  std::vector<v1::Job> jobs;
  for (int i = 0; i < 10000; ++i) {
    v1::Job job = MakeJob(absl::StrCat("job-", i), "alice", i % 2 ? "m3" : "m4", "matmul");
    (*job.mutable_trial()->mutable_op()->mutable_template_op()->mutable_knobs())["tile_n"] =
        std::to_string(i);
    jobs.push_back(std::move(job));
  }
  const absl::Time start = absl::Now();
  auto seqs = store().InsertSubmission("alice", "big", jobs);
  const absl::Duration elapsed = absl::Now() - start;
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  // Reported, not asserted: timing depends on the machine.
  std::cout << GetParam() << ": InsertSubmission of 10000 jobs: " << absl::FormatDuration(elapsed)
            << std::endl;
  RecordProperty("insert_10000_jobs_us", static_cast<int>(absl::ToInt64Microseconds(elapsed)));
  ASSERT_EQ(seqs->size(), 10000u);
  for (size_t i = 0; i < seqs->size(); ++i) ASSERT_EQ((*seqs)[i], static_cast<int64_t>(i + 1));

  JobFilter filter;
  filter.board_kind = "m3";
  size_t listed = 0;
  while (true) {
    auto page = store().ListJobs(filter);
    ASSERT_TRUE(page.ok()) << page.status();
    if (page->empty()) break;
    listed += page->size();
    filter.after_seq = page->back().seq;
  }
  EXPECT_EQ(listed, 5000u);
  auto unfinished = store().LoadUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_EQ(unfinished->size(), 10000u);

  // Every one updated in one batch.
  WriteBatch batch;
  for (v1::Job& job : jobs) {
    job.set_state(v1::DONE);
    batch.jobs.push_back(WriteBatch::JobWrite::Of(0, false, job));
  }
  ASSERT_TRUE(store().Apply(batch).ok());
  unfinished = store().LoadUnfinishedJobs();
  ASSERT_TRUE(unfinished.ok());
  EXPECT_THAT(*unfinished, IsEmpty());
}

TEST_P(StoreContractTest, ConcurrentCallersAreSerialized) {
  constexpr int kThreads = 4;
  constexpr int kSubmissions = 25;
  std::vector<std::thread> threads;
  std::vector<absl::Status> failures(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int s = 0; s < kSubmissions; ++s) {
        const std::string client = absl::StrCat("client-", t);
        const std::string id = absl::StrCat(t, "-", s);
        auto inserted = store().InsertSubmission(client, id, {MakeJob(id, client, "m3", "matmul")});
        if (!inserted.ok()) failures[t] = inserted.status();
        v1::Job running = MakeJob(id, client, "m3", "matmul", v1::RUNNING);
        if (absl::Status status = store().UpdateJob(running); !status.ok()) failures[t] = status;
        JobFilter filter;
        filter.client_id = client;
        auto listed = store().ListJobs(filter);
        if (!listed.ok()) failures[t] = listed.status();
        auto found = store().FindSubmission(client, id);
        if (!found.ok()) failures[t] = found.status();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& failure : failures) EXPECT_TRUE(failure.ok()) << failure;
  JobFilter running;
  running.state = v1::RUNNING;
  auto jobs = store().ListJobs(running);
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->size(), static_cast<size_t>(kThreads * kSubmissions));
  auto last = store().LastSeq();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(*last, kThreads * kSubmissions);
}

}  // namespace
}  // namespace benchfarm::tracker
