// PgStore beyond the Store contract (store_contract_test runs that on both backends): its schema,
// Open's refusals, PostgreSQL's errors, reads beside a blocked write, and a real PostgreSQL 15
// server restarted or killed under a store that is never reopened. A server that cannot start
// fails the tests with the reason.

#include "tracker/pg_store.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <postgresql/libpq-fe.h>  // /usr/include/postgresql: see //third_party:pq
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/benchfarm.pb.h"
#include "tests/http_probe.h"
#include "tests/postgres_server.h"
#include "tracker/store_test_util.h"

namespace benchfarm::tracker {
namespace {

using ::benchfarm::testing::PostgresServer;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string CreateDatabase(PostgresServer& server, const std::string& dbname) {
  absl::StatusOr<std::string> conninfo = server.CreateDatabase(dbname);
  EXPECT_TRUE(conninfo.ok()) << conninfo.status();
  return conninfo.value_or("");
}

std::unique_ptr<PgStore> OpenOrDie(const std::string& conninfo) {
  absl::StatusOr<std::unique_ptr<PgStore>> store = PgStore::Open(conninfo);
  EXPECT_TRUE(store.ok()) << store.status();
  return store.ok() ? *std::move(store) : nullptr;
}

std::string QueryOrDie(PostgresServer& server, const std::string& dbname, const std::string& sql) {
  absl::StatusOr<std::string> value = server.Query(dbname, sql);
  EXPECT_TRUE(value.ok()) << value.status();
  return value.value_or("error: " + value.status().ToString());
}

// Tests on the binary's shared server (which they do not stop), each on databases of its own.
class PgStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<PostgresServer*> server = benchfarm::testing::SharedPostgresServer();
    ASSERT_TRUE(server.ok()) << "PostgreSQL is needed for this test: " << server.status();
    server_ = *server;
  }

  // A store on a new database.
  std::unique_ptr<PgStore> NewStore(const std::string& dbname) {
    return OpenOrDie(CreateDatabase(*server_, dbname));
  }

  PostgresServer* server_ = nullptr;
};

TEST_F(PgStoreTest, OpenCreatesTheSchemaAndASecondStoreSharesIt) {
  const std::string conninfo = CreateDatabase(*server_, "schema");
  auto store = OpenOrDie(conninfo);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->name(), absl::StrCat("127.0.0.1:", server_->port(), "/schema"));
  EXPECT_EQ(QueryOrDie(*server_, "schema",
                       "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename "
                       "IN ('jobs', 'submissions', 'boards', 'operators', 'operator_owners', "
                       "'benchfarm_meta')"),
            "6");
  EXPECT_EQ(QueryOrDie(*server_, "schema",
                       "SELECT count(*) FROM pg_indexes WHERE indexname IN "
                       "('jobs_client_seq', 'jobs_state', 'jobs_board_kind')"),
            "3");
  EXPECT_EQ(QueryOrDie(*server_, "schema", "SELECT schema_version FROM benchfarm_meta"), "4");
  EXPECT_EQ(
      QueryOrDie(*server_, "schema",
                 "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY "
                 "ordinal_position) FROM information_schema.columns WHERE table_name = 'jobs'"),
      "seq bigint, job_id text, client_id text, state integer, board_kind text, op text, "
      "priority integer, data bytea");

  // Another store (a second tracker) on the same database: the schema is left as it is, and
  // each sees the other's writes.
  auto other = OpenOrDie(conninfo);
  ASSERT_NE(other, nullptr);
  ASSERT_TRUE(store->InsertSubmission("alice", "r1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  auto seen = other->GetJob("a");
  ASSERT_TRUE(seen.ok() && seen->has_value()) << seen.status();
  auto seqs = other->InsertSubmission("bob", "r1", {MakeJob("b", "bob", "m3", "matmul")});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_THAT(*seqs, ElementsAre(2));
  EXPECT_EQ(QueryOrDie(*server_, "schema", "SELECT count(*) FROM benchfarm_meta"), "1");
}

TEST_F(PgStoreTest, ConcurrentOpensOfAnEmptyDatabaseCreateTheSchemaOnce) {
  const std::string conninfo = CreateDatabase(*server_, "racing_opens");
  std::vector<absl::Status> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] { results[i] = PgStore::Open(conninfo).status(); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& result : results) EXPECT_TRUE(result.ok()) << result;
  EXPECT_EQ(QueryOrDie(*server_, "racing_opens", "SELECT count(*) FROM benchfarm_meta"), "1");
}

TEST(PgStore, OpenRejectsBadArguments) {
  auto garbage = PgStore::Open("this is not a connection string");
  EXPECT_EQ(garbage.status().code(), absl::StatusCode::kInvalidArgument) << garbage.status();
  EXPECT_THAT(garbage.status().message(), HasSubstr("postgres store"));
  PgStoreOptions options;
  options.connect_timeout_seconds = 0;
  auto no_timeout = PgStore::Open("host=127.0.0.1 dbname=x", options);
  EXPECT_EQ(no_timeout.status().code(), absl::StatusCode::kInvalidArgument) << no_timeout.status();
}

TEST(PgStore, OpenWithoutAServerIsUnavailableNamingTheStoreAndTheCause) {
  const int port = benchfarm::testing::FreePort().value();
  auto store = PgStore::Open(absl::StrCat("host=127.0.0.1 port=", port, " dbname=farm user=x"));
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kUnavailable) << store.status();
  EXPECT_THAT(store.status().message(),
              AllOf(HasSubstr(absl::StrCat("postgres store 127.0.0.1:", port, "/farm")),
                    HasSubstr("Connection refused")));
  std::cout << "no server: " << store.status() << std::endl;
}

TEST_F(PgStoreTest, NewerSchemaVersionFailsOpen) {
  const std::string conninfo = CreateDatabase(*server_, "newer");
  ASSERT_NE(OpenOrDie(conninfo), nullptr);
  QueryOrDie(*server_, "newer", "UPDATE benchfarm_meta SET schema_version = 5");
  auto store = PgStore::Open(conninfo);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(),
              AllOf(HasSubstr("created by a newer benchfarm"), HasSubstr("/newer")));
}

TEST_F(PgStoreTest, AnotherApplicationsDatabaseFailsOpenAndIsLeftAlone) {
  const std::string conninfo = CreateDatabase(*server_, "other_app");
  QueryOrDie(*server_, "other_app", "CREATE TABLE notes (text TEXT)");
  auto store = PgStore::Open(conninfo);
  ASSERT_FALSE(store.ok());
  EXPECT_EQ(store.status().code(), absl::StatusCode::kFailedPrecondition) << store.status();
  EXPECT_THAT(store.status().message(), HasSubstr("not a benchfarm store"));
  EXPECT_EQ(QueryOrDie(*server_, "other_app",
                       "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"),
            "1");
}

TEST_F(PgStoreTest, ErrorsNameTheStoreAndCarryPostgresMessage) {
  auto store = NewStore("errors");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->InsertSubmission("alice", "r1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  auto again = store->InsertSubmission("alice", "r1", {MakeJob("b", "alice", "m3", "matmul")});
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  EXPECT_THAT(
      again.status().message(),
      AllOf(HasSubstr("postgres store 127.0.0.1:"), HasSubstr("submission (alice, r1)"),
            HasSubstr("duplicate key value violates unique constraint"), HasSubstr("23505")));
  // TEXT cannot hold a NUL byte: refused as bad data, and nothing is written.
  auto nul = store->InsertSubmission("alice", "r2",
                                     {MakeJob("c", "alice", "m3", "matmul"),
                                      MakeJob(std::string("d\0d", 3), "alice", "m3", "matmul")});
  EXPECT_EQ(nul.status().code(), absl::StatusCode::kInvalidArgument) << nul.status();
  std::cout << "NUL byte: " << nul.status() << std::endl;
  auto c = store->GetJob("c");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->has_value());
}

// LoadBoards' board_id order is bytewise, as SqliteStore's, also in a database whose collation
// (ICU, English) would sort "b1" before "B9".
TEST_F(PgStoreTest, LoadBoardsOrdersBytewiseWhateverTheCollation) {
  QueryOrDie(*server_, "postgres",
             "CREATE DATABASE english TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US' "
             "LOCALE 'C'");
  ASSERT_EQ(QueryOrDie(*server_, "english",
                       "SELECT string_agg(id, ' ' ORDER BY id) FROM "
                       "(VALUES ('b1'), ('B9'), ('b2')) AS t (id)"),
            "b1 b2 B9");
  auto store = OpenOrDie(server_->ConnInfo("english"));
  ASSERT_NE(store, nullptr);
  for (const char* id : {"b2", "B9", "b1"}) {
    v1::Board board;
    board.set_board_id(id);
    ASSERT_TRUE(store->UpsertBoard(board).ok());
  }
  auto boards = store->LoadBoards();
  ASSERT_TRUE(boards.ok()) << boards.status();
  std::vector<std::string> ids;
  for (const v1::Board& board : *boards) ids.push_back(board.board_id());
  EXPECT_THAT(ids, ElementsAre("B9", "b1", "b2"));
}

// Its own connection, holding benchfarm_meta's row locked in an open transaction until Release.
class RowLock {
 public:
  explicit RowLock(const std::string& conninfo) : conn_(PQconnectdb(conninfo.c_str())) {
    EXPECT_EQ(PQstatus(conn_), CONNECTION_OK) << PQerrorMessage(conn_);
    Run("BEGIN");
    Run("SELECT * FROM benchfarm_meta FOR UPDATE");
  }
  ~RowLock() { PQfinish(conn_); }
  void Release() { Run("COMMIT"); }

 private:
  void Run(const char* sql) {
    PGresult* result = PQexec(conn_, sql);
    EXPECT_TRUE(PQresultStatus(result) == PGRES_COMMAND_OK ||
                PQresultStatus(result) == PGRES_TUPLES_OK)
        << sql << ": " << PQresultErrorMessage(result);
    PQclear(result);
  }
  PGconn* const conn_;
};

TEST_F(PgStoreTest, ReadsDoNotWaitBehindAWrite) {
  const std::string conninfo = CreateDatabase(*server_, "reads_beside_writes");
  auto store = OpenOrDie(conninfo);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->InsertSubmission("alice", "r1", {MakeJob("a", "alice", "m3", "matmul")}).ok());

  // A write that waits inside its transaction (for the row another connection locked).
  RowLock lock(conninfo);
  std::atomic<bool> written{false};
  absl::Status write_status;
  std::thread writer([&] {
    write_status =
        store->InsertSubmission("alice", "r2", {MakeJob("b", "alice", "m3", "")}).status();
    written = true;
  });
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_FALSE(written) << "the write did not wait for the lock: " << write_status;
  // Meanwhile every read answers, without the write's uncommitted rows.
  auto a = store->GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status();
  auto b = store->GetJob("b");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_FALSE(b->has_value());
  auto listed = store->ListJobs({});
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_THAT(JobIds(*listed), ElementsAre("a"));
  EXPECT_TRUE(store->FindSubmission("alice", "r1").ok());
  EXPECT_TRUE(store->LoadBoards().ok());
  EXPECT_FALSE(written);
  lock.Release();
  writer.join();
  EXPECT_TRUE(write_status.ok()) << write_status;
  b = store->GetJob("b");
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
}

v1::Board Board(const std::string& id, int flashes) {
  v1::Board board;
  board.set_board_id(id);
  board.set_flashes(flashes);
  return board;
}

v1::Operator Operator(const std::string& name, const std::string& version) {
  v1::Operator op;
  op.set_name(name);
  op.set_version(version);
  return op;
}

// What each Store method returns now.
std::vector<absl::Status> EveryCall(PgStore& store) {
  return {
      store.FindSubmission("alice", "r1").status(),
      store.GetJob("a").status(),
      store.ListJobs({}).status(),
      store.LoadUnfinishedJobs().status(),
      store.LoadBoards().status(),
      store.LoadOperators().status(),
      store.LastSeq().status(),
      store.InsertSubmission("alice", "r2", {MakeJob("b", "alice", "m3", "matmul")}).status(),
      store.UpdateJob(MakeJob("a", "alice", "m3", "matmul", v1::RUNNING)),
      store.UpsertBoard(Board("board-2", 0)),
      store.InsertOperator(Operator("gemv", "2")),
      store.GetOperator("gemv", "1").status(),
      store.SetOperatorOwner("gemv", "alice"),
      store.LoadOperatorOwners().status(),
      store.SetOperatorState("gemv", "1", v1::OperatorState()),
      store.LoadOperatorStates().status(),
      store.GetAttemptLogs("a").status(),
  };
}

TEST_F(PgStoreTest, AVersionOneDatabaseGetsOperatorOwnersKeepingItsOperators) {
  const std::string conninfo = CreateDatabase(*server_, "v1");
  {
    auto store = OpenOrDie(conninfo);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->InsertOperator(Operator("gemv", "1")).ok());
  }
  // What a version-1 tracker left: operators, no owners.
  QueryOrDie(*server_, "v1", "DROP TABLE operator_owners");
  QueryOrDie(*server_, "v1", "DROP TABLE operator_states");
  QueryOrDie(*server_, "v1", "DROP TABLE attempt_logs");
  QueryOrDie(*server_, "v1", "UPDATE benchfarm_meta SET schema_version = 1");
  auto store = OpenOrDie(conninfo);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryOrDie(*server_, "v1", "SELECT schema_version FROM benchfarm_meta"), "4");
  EXPECT_EQ(store->LoadOperators()->size(), 1u);
  auto owners = store->LoadOperatorOwners();
  ASSERT_TRUE(owners.ok()) << owners.status();
  EXPECT_TRUE(owners->empty());
  EXPECT_TRUE(store->SetOperatorOwner("gemv", "alice").ok());
}

TEST_F(PgStoreTest, AVersionTwoDatabaseGetsOperatorStatesKeepingItsCatalog) {
  const std::string conninfo = CreateDatabase(*server_, "v2");
  {
    auto store = OpenOrDie(conninfo);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->InsertOperator(Operator("gemv", "1")).ok());
    ASSERT_TRUE(store->SetOperatorOwner("gemv", "alice").ok());
  }
  // What a version-2 tracker left: operators and owners, no states.
  QueryOrDie(*server_, "v2", "DROP TABLE operator_states");
  QueryOrDie(*server_, "v2", "DROP TABLE attempt_logs");
  QueryOrDie(*server_, "v2", "UPDATE benchfarm_meta SET schema_version = 2");
  auto store = OpenOrDie(conninfo);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryOrDie(*server_, "v2", "SELECT schema_version FROM benchfarm_meta"), "4");
  EXPECT_EQ(store->LoadOperators()->size(), 1u);
  EXPECT_EQ(store->LoadOperatorOwners()->size(), 1u);
  auto states = store->LoadOperatorStates();
  ASSERT_TRUE(states.ok()) << states.status();
  EXPECT_TRUE(states->empty());
  v1::OperatorState retired;
  retired.set_retired(true);
  EXPECT_TRUE(store->SetOperatorState("gemv", "1", retired).ok());
}

TEST_F(PgStoreTest, AVersionThreeDatabaseGetsAttemptLogsKeepingItsJobs) {
  const std::string conninfo = CreateDatabase(*server_, "v3");
  {
    auto store = OpenOrDie(conninfo);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->InsertSubmission("alice", "r1", {MakeJob("a", "alice", "m3", "add")}).ok());
    ASSERT_TRUE(store->InsertOperator(Operator("gemv", "1")).ok());
  }
  // What a version-3 tracker left: jobs and the catalog, no attempt logs.
  QueryOrDie(*server_, "v3", "DROP TABLE attempt_logs");
  QueryOrDie(*server_, "v3", "UPDATE benchfarm_meta SET schema_version = 3");
  auto store = OpenOrDie(conninfo);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(QueryOrDie(*server_, "v3", "SELECT schema_version FROM benchfarm_meta"), "4");
  absl::Status upgraded = UpgradedToAttemptLogs(*store);
  EXPECT_TRUE(upgraded.ok()) << upgraded;
}

// The state the restart and kill tests write before the server goes away.
void WriteSomething(PgStore& store) {
  ASSERT_TRUE(store.InsertSubmission("alice", "r1", {MakeJob("a", "alice", "m3", "matmul")}).ok());
  ASSERT_TRUE(store.UpsertBoard(Board("board-1", 3)).ok());
  ASSERT_TRUE(store.InsertOperator(Operator("gemv", "1")).ok());
}

// ... and what it must find afterwards, with `last_seq` the highest sequence number given.
void CheckSomething(PgStore& store, int64_t last_seq = 1) {
  auto found = store.FindSubmission("alice", "r1");
  ASSERT_TRUE(found.ok()) << found.status();
  ASSERT_TRUE(found->has_value());
  EXPECT_THAT(**found, ElementsAre("a"));
  auto a = store.GetJob("a");
  ASSERT_TRUE(a.ok() && a->has_value()) << a.status();
  EXPECT_EQ((*a)->seq, 1);
  auto boards = store.LoadBoards();
  ASSERT_TRUE(boards.ok() && boards->size() == 1) << boards.status();
  EXPECT_EQ(boards->front().flashes(), 3);
  auto ops = store.LoadOperators();
  ASSERT_TRUE(ops.ok() && ops->size() == 1) << ops.status();
  auto last = store.LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, last_seq);
}

// A store on a database of a server of the test's own, which the test restarts or kills.
class ServerGoesAwayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<PostgresServer>> server = PostgresServer::Start();
    ASSERT_TRUE(server.ok()) << "PostgreSQL is needed for this test: " << server.status();
    server_ = *std::move(server);
    conninfo_ = CreateDatabase(*server_, "farm");
    store_ = OpenOrDie(conninfo_);
    ASSERT_NE(store_, nullptr);
  }

  std::unique_ptr<PostgresServer> server_;
  std::string conninfo_;
  std::unique_ptr<PgStore> store_;
};

TEST_F(ServerGoesAwayTest, DataSurvivesAServerRestartAndTheStoreCarriesOn) {
  WriteSomething(*store_);
  ASSERT_TRUE(store_->LoadBoards().ok());  // the reading connection is open too

  const absl::Time start = absl::Now();
  ASSERT_TRUE(server_->Restart().ok());
  std::cout << "restart: " << absl::FormatDuration(absl::Now() - start) << std::endl;
  // The same store, never reopened: the shutdown closed its connections, and the next call on
  // each connects afresh — a write first (which then reconnects the writing connection) ...
  EXPECT_TRUE(store_->UpsertBoard(Board("board-1", 3)).ok());
  CheckSomething(*store_);
  // ... and, after another restart, the catalog's write first.
  ASSERT_TRUE(server_->Restart().ok());
  absl::Status again = store_->InsertOperator(Operator("gemv", "1"));
  EXPECT_EQ(again.code(), absl::StatusCode::kAlreadyExists) << again;
  CheckSomething(*store_);
  auto seqs = store_->InsertSubmission("alice", "r2", {MakeJob("b", "alice", "m3", "matmul")});
  ASSERT_TRUE(seqs.ok()) << seqs.status();
  EXPECT_THAT(*seqs, ElementsAre(2));
  auto fresh = OpenOrDie(conninfo_);
  ASSERT_NE(fresh, nullptr);
  CheckSomething(*fresh, 2);
}

TEST_F(ServerGoesAwayTest, AKilledServerMakesEveryCallUnavailableAndTheStoreHealsWhenItIsBack) {
  WriteSomething(*store_);
  ASSERT_TRUE(store_->LoadBoards().ok());

  server_->Kill();
  // Twice: the calls that find their connection dead, then the ones that fail to reconnect.
  for (int round = 0; round < 2; ++round) {
    const std::vector<absl::Status> statuses = EveryCall(*store_);
    for (size_t i = 0; i < statuses.size(); ++i) {
      EXPECT_EQ(statuses[i].code(), absl::StatusCode::kUnavailable)
          << "round " << round << ", call " << i << ": " << statuses[i];
      EXPECT_THAT(
          statuses[i].message(),
          AllOf(HasSubstr(absl::StrCat("postgres store 127.0.0.1:", server_->port(), "/farm")),
                HasSubstr("connection lost")))
          << "round " << round << ", call " << i;
    }
    std::cout << "killed, round " << round << ": " << statuses.front() << std::endl;
  }

  ASSERT_TRUE(server_->Restart().ok());  // crash recovery from the WAL
  CheckSomething(*store_);
  const std::vector<absl::Status> statuses = EveryCall(*store_);
  for (size_t i = 0; i < statuses.size(); ++i) {
    EXPECT_TRUE(statuses[i].ok()) << i << ": " << statuses[i];
  }
  auto b = store_->GetJob("b");
  ASSERT_TRUE(b.ok() && b->has_value()) << b.status();
  EXPECT_EQ((*b)->seq, 2);
}

// A hung server (stopped, not dead: its kernel still accepts and acknowledges) makes calls
// Unavailable after the answer timeout instead of blocking the tracker's commit thread for ever;
// the store carries on once the server resumes.
TEST_F(ServerGoesAwayTest, AStoppedServerMakesCallsUnavailableAndTheStoreHealsWhenItResumes) {
  PgStoreOptions options;
  options.answer_timeout_seconds = 1;
  options.connect_timeout_seconds = 2;
  absl::StatusOr<std::unique_ptr<PgStore>> opened = PgStore::Open(conninfo_, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  PgStore& store = **opened;
  WriteSomething(store);
  ASSERT_TRUE(store.LoadBoards().ok());  // the reading connection is open too

  server_->Freeze(true);
  const absl::Time start = absl::Now();
  absl::Status write = store.UpsertBoard(Board("board-2", 1));
  absl::Status read = store.GetJob("a").status();
  server_->Freeze(false);
  std::cout << "stopped server: " << absl::FormatDuration(absl::Now() - start) << "; " << write
            << "; " << read << std::endl;
  for (const absl::Status& status : {write, read}) {
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_THAT(status.message(),
                HasSubstr(absl::StrCat("postgres store 127.0.0.1:", server_->port(), "/farm")));
  }
  // Which message depends on the retry on a fresh connection: silence on the old one, or a
  // connection that could not be made in time.
  EXPECT_THAT(write.message(), AnyOf(HasSubstr("sent nothing for 1 s"), HasSubstr("timeout")));

  CheckSomething(store);  // connects afresh
  EXPECT_TRUE(store.UpsertBoard(Board("board-2", 1)).ok());
  auto boards = store.LoadBoards();
  ASSERT_TRUE(boards.ok()) << boards.status();
  EXPECT_EQ(boards->size(), 2u);
}

// The server is killed while a store commits submission after submission: every acknowledged
// submission is there after the restart, and every stored one is whole.
TEST_F(ServerGoesAwayTest, SurvivesTheServerBeingKilledMidWrite) {
  PgStore* const store = store_.get();
  std::atomic<int> acknowledged{0};
  absl::Notification enough;
  absl::Status failure;
  std::thread writer([&] {
    for (int n = 0;; ++n) {
      std::vector<v1::Job> jobs;
      for (int i = 0; i < 50; ++i) {
        jobs.push_back(MakeJob(absl::StrCat("job-", n, "-", i), "alice", "m3", "conv2d"));
      }
      auto seqs = store->InsertSubmission("alice", absl::StrCat("s-", n), jobs);
      if (!seqs.ok()) {
        failure = seqs.status();
        return;
      }
      acknowledged = n + 1;
      if (n == 20) enough.Notify();
    }
  });
  ASSERT_TRUE(enough.WaitForNotificationWithTimeout(absl::Seconds(60)));
  server_->Kill();
  writer.join();
  EXPECT_EQ(failure.code(), absl::StatusCode::kUnavailable) << failure;

  ASSERT_TRUE(server_->Restart().ok());
  int complete = 0;
  for (;; ++complete) {
    auto found = store->FindSubmission("alice", absl::StrCat("s-", complete));
    ASSERT_TRUE(found.ok()) << found.status();
    if (!found->has_value()) break;
    ASSERT_EQ((*found)->size(), 50u) << complete;
  }
  // The one in flight may have committed (its COMMIT's answer lost), no further.
  EXPECT_GE(complete, acknowledged.load());
  EXPECT_LE(complete, acknowledged.load() + 1);
  JobFilter all;
  all.limit = 1000000;
  auto jobs = store->ListJobs(all);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ(jobs->size(), static_cast<size_t>(complete) * 50);
  auto last = store->LastSeq();
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, complete * 50);
  std::cout << "killed after " << acknowledged << " acknowledged submissions; " << complete
            << " stored" << std::endl;
}

}  // namespace
}  // namespace benchfarm::tracker
