// The Store contract (tracker/store.h), run on every backend: SqliteStore on a file of its own per
// test, PgStore on a database of its own per test, all on one real PostgreSQL 15 server started
// for this binary (tests/postgres_server.h). A backend that cannot be set up fails its tests
// with the reason; none is skipped. What only one backend has (SQLite's files, PostgreSQL's lost
// connections) is tested in sqlite_store_test and pg_store_test.

#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <optional>
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
#include "tests/postgres_server.h"
#include "tracker/pg_store.h"
#include "tracker/sqlite_store.h"
#include "tracker/store.h"
#include "tracker/store_test_util.h"

namespace benchfarm::tracker {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A store to test and what the tests need beside it.
class Backend {
 public:
  virtual ~Backend() = default;
  // A new, empty store (at the first call) or the same one again.
  virtual absl::StatusOr<std::unique_ptr<Store>> Open() = 0;
  // Runs SQL on the store's database over a connection of its own.
  virtual absl::Status Exec(const std::string& sql) = 0;
};

class SqliteBackend : public Backend {
 public:
  SqliteBackend() : path_(TestDir() + "/store.db") {}

  absl::StatusOr<std::unique_ptr<Store>> Open() override {
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path_);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(*std::move(store));
  }

  absl::Status Exec(const std::string& sql) override {
    sqlite3* db = nullptr;
    int rc = sqlite3_open_v2(path_.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    absl::Status status = rc == SQLITE_OK
                              ? absl::OkStatus()
                              : absl::InternalError(absl::StrCat(sql, ": ", sqlite3_errmsg(db)));
    sqlite3_close_v2(db);
    return status;
  }

 private:
  const std::string path_;
};

class PostgresBackend : public Backend {
 public:
  // On a new database of the binary's shared server.
  static absl::StatusOr<std::unique_ptr<Backend>> Make() {
    absl::StatusOr<benchfarm::testing::PostgresServer*> server =
        benchfarm::testing::SharedPostgresServer();
    if (!server.ok()) return server.status();
    static int databases = 0;
    const std::string dbname = absl::StrCat("contract_", ++databases);
    absl::StatusOr<std::string> conninfo = (*server)->CreateDatabase(dbname);
    if (!conninfo.ok()) return conninfo.status();
    return std::unique_ptr<Backend>(new PostgresBackend(*server, dbname, *conninfo));
  }

  absl::StatusOr<std::unique_ptr<Store>> Open() override {
    absl::StatusOr<std::unique_ptr<PgStore>> store = PgStore::Open(conninfo_);
    if (!store.ok()) return store.status();
    return std::unique_ptr<Store>(*std::move(store));
  }

  absl::Status Exec(const std::string& sql) override {
    return server_->Query(dbname_, sql).status();
  }

 private:
  PostgresBackend(benchfarm::testing::PostgresServer* server, std::string dbname,
                  std::string conninfo)
      : server_(server), dbname_(std::move(dbname)), conninfo_(std::move(conninfo)) {}

  benchfarm::testing::PostgresServer* const server_;
  const std::string dbname_;
  const std::string conninfo_;
};

class StoreContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "sqlite") {
      backend_ = std::make_unique<SqliteBackend>();
    } else {
      absl::StatusOr<std::unique_ptr<Backend>> backend = PostgresBackend::Make();
      ASSERT_TRUE(backend.ok()) << "PostgreSQL is needed for this test: " << backend.status();
      backend_ = *std::move(backend);
    }
    Reopen();
  }

  // Closes the store and opens it again.
  void Reopen() {
    store_.reset();
    absl::StatusOr<std::unique_ptr<Store>> store = backend_->Open();
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
  }

  Store& store() { return *store_; }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<Store> store_;
};

std::string BackendName(const ::testing::TestParamInfo<std::string>& info) { return info.param; }

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

class StoreListJobsTest : public StoreContractTest {
 protected:
  void SetUp() override {
    StoreContractTest::SetUp();
    if (HasFatalFailure()) return;
    // seq: 1..4 alice, 5..7 bob.
    ASSERT_TRUE(store()
                    .InsertSubmission("alice", "r1",
                                      {MakeJob("a1", "alice", "m3", "matmul", v1::QUEUED),
                                       MakeJob("a2", "alice", "m3", "conv2d", v1::RUNNING),
                                       MakeJob("a3", "alice", "m4", "matmul", v1::DONE),
                                       MakeJob("a4", "alice", "m4", "", v1::QUEUED)})
                    .ok());
    ASSERT_TRUE(store()
                    .InsertSubmission("bob", "r1",
                                      {MakeJob("b1", "bob", "m3", "matmul", v1::CANCELLED_STATE),
                                       MakeJob("b2", "bob", "m4", "matmul", v1::QUEUED),
                                       MakeJob("b3", "bob", "m3", "conv2d", v1::RUNNING)})
                    .ok());
  }

  std::vector<std::string> List(const JobFilter& filter) {
    absl::StatusOr<std::vector<StoredJob>> jobs = store().ListJobs(filter);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    if (!jobs.ok()) return {};
    for (size_t i = 1; i < jobs->size(); ++i) EXPECT_LT((*jobs)[i - 1].seq, (*jobs)[i].seq);
    return JobIds(*jobs);
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreListJobsTest, ::testing::Values("sqlite", "postgres"),
                         BackendName);

TEST_P(StoreListJobsTest, EmptyFilterListsEverythingInSequenceOrder) {
  EXPECT_THAT(List({}), ElementsAre("a1", "a2", "a3", "a4", "b1", "b2", "b3"));
}

TEST_P(StoreListJobsTest, EachFieldFilters) {
  JobFilter by_client;
  by_client.client_id = "bob";
  EXPECT_THAT(List(by_client), ElementsAre("b1", "b2", "b3"));

  JobFilter by_kind;
  by_kind.board_kind = "m4";
  EXPECT_THAT(List(by_kind), ElementsAre("a3", "a4", "b2"));

  JobFilter by_op;
  by_op.op = "conv2d";
  EXPECT_THAT(List(by_op), ElementsAre("a2", "b3"));

  JobFilter by_state;
  by_state.state = v1::QUEUED;
  EXPECT_THAT(List(by_state), ElementsAre("a1", "a4", "b2"));

  JobFilter unknown;
  unknown.client_id = "carol";
  EXPECT_THAT(List(unknown), IsEmpty());
}

TEST_P(StoreListJobsTest, FieldsCombine) {
  JobFilter filter;
  filter.client_id = "alice";
  filter.board_kind = "m3";
  EXPECT_THAT(List(filter), ElementsAre("a1", "a2"));
  filter.op = "matmul";
  EXPECT_THAT(List(filter), ElementsAre("a1"));
  filter.state = v1::RUNNING;
  EXPECT_THAT(List(filter), IsEmpty());

  JobFilter kind_and_state;
  kind_and_state.board_kind = "m3";
  kind_and_state.state = v1::RUNNING;
  EXPECT_THAT(List(kind_and_state), ElementsAre("a2", "b3"));

  JobFilter all_four;
  all_four.client_id = "bob";
  all_four.board_kind = "m4";
  all_four.op = "matmul";
  all_four.state = v1::QUEUED;
  EXPECT_THAT(List(all_four), ElementsAre("b2"));
}

TEST_P(StoreListJobsTest, PagesByAfterSeqAndLimit) {
  JobFilter filter;
  filter.limit = 3;
  std::vector<std::string> all;
  for (int page = 0; page < 10; ++page) {
    auto jobs = store().ListJobs(filter);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    EXPECT_LE(jobs->size(), 3u);
    if (jobs->empty()) break;
    for (const StoredJob& stored : *jobs) all.push_back(stored.job.job_id());
    filter.after_seq = jobs->back().seq;
  }
  EXPECT_THAT(all, ElementsAre("a1", "a2", "a3", "a4", "b1", "b2", "b3"));

  JobFilter queued_after;
  queued_after.state = v1::QUEUED;
  queued_after.after_seq = 1;
  queued_after.limit = 1;
  EXPECT_THAT(List(queued_after), ElementsAre("a4"));

  JobFilter none;
  none.limit = 0;
  EXPECT_THAT(List(none), IsEmpty());
}

// Matches thousands of sequence numbers apart (a store may read the table in slices: SqliteStore
// reads 4,096 sequence numbers per read transaction), with paging through them, and page tokens
// out of range.
TEST_P(StoreListJobsTest, FindsMatchesFarApartAndPagesThroughThem) {
  std::vector<v1::Job> jobs;
  for (int i = 0; i < 12000; ++i) {
    // seq 8 + i; "rare" at seqs 8, 4,508, 9,008 and 11,999 (the slices' edges are 4,096 apart).
    const bool rare = i % 4500 == 0 || i == 11991;
    jobs.push_back(MakeJob(absl::StrCat("f", i), "carol", "m7", rare ? "rare" : "matmul"));
  }
  ASSERT_TRUE(store().InsertSubmission("carol", "many", jobs).ok());
  JobFilter rare;
  rare.op = "rare";
  EXPECT_THAT(List(rare), ElementsAre("f0", "f4500", "f9000", "f11991"));
  rare.limit = 2;
  EXPECT_THAT(List(rare), ElementsAre("f0", "f4500"));
  rare.after_seq = 8 + 4500;
  EXPECT_THAT(List(rare), ElementsAre("f9000", "f11991"));
  rare.after_seq = 8 + 11991;
  EXPECT_THAT(List(rare), IsEmpty());
  rare.after_seq = -100;  // before the first: from the start
  EXPECT_THAT(List(rare), ElementsAre("f0", "f4500"));
  rare.after_seq = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(List(rare), IsEmpty());

  JobFilter by_kind;  // an index, 12,000 matches: a page is `limit` of them
  by_kind.board_kind = "m7";
  by_kind.limit = 5000;
  std::vector<std::string> listed = List(by_kind);
  ASSERT_EQ(listed.size(), 5000u);
  EXPECT_EQ(listed.front(), "f0");
  EXPECT_EQ(listed.back(), "f4999");
}

TEST_P(StoreListJobsTest, LoadUnfinishedJobsReturnsQueuedAndRunningInOrder) {
  auto jobs = store().LoadUnfinishedJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(JobIds(*jobs), ElementsAre("a1", "a2", "a4", "b2", "b3"));
  std::vector<int64_t> seqs;
  for (const StoredJob& stored : *jobs) seqs.push_back(stored.seq);
  EXPECT_THAT(seqs, ElementsAre(1, 2, 4, 6, 7));
}

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
