// The tracker survives kill -9 without losing or duplicating work: several clients submit
// 10,000 trials while fake agents run them; the tracker is killed with SIGKILL mid-stream and
// either restarted on the same database, or — active/standby — a standby tracker started beside
// it on the same database takes over, with clients and agents given both addresses from the start
// (nobody is told about the switch or restarted). Clients retry unacknowledged batches with the
// same request_id and agents reconnect holding their unacknowledged results. At the end every
// acknowledged job exists exactly once, is DONE with one result, and nothing else was stored.
//
// The tracker is the real //tracker:tracker binary, a child process in its own process group
// (tests/tracker_process.h), found in the test's runfiles.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tests/http_probe.h"
#include "tests/postgres_server.h"
#include "tests/tracker_process.h"

namespace benchfarm {
namespace {

constexpr int kClients = 4;
constexpr int kBatchesPerClient = 25;
constexpr int kBatchSize = 100;
constexpr int kTotalTrials = kClients * kBatchesPerClient * kBatchSize;  // 10,000
constexpr int kAgents = 4;
constexpr int kBoardsPerAgent = 4;
// Clients keep at most this many submitted trials without results, so submissions and results
// are both still flowing when the tracker is killed.
constexpr int kMaxBacklog = 2000;
constexpr int kKillAfterSubmitted = 5000;
constexpr absl::Duration kTestDeadline = absl::Seconds(90);

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

// What the test observed; shared by clients, agents and the main thread.
struct World {
  absl::Mutex mu;
  std::string address ABSL_GUARDED_BY(mu);
  int generation ABSL_GUARDED_BY(mu) = 0;  // bumped at every (re)start
  bool stopping ABSL_GUARDED_BY(mu) = false;
  std::set<std::string> submitted ABSL_GUARDED_BY(mu);      // job ids of acknowledged batches
  std::set<std::string> results_acked ABSL_GUARDED_BY(mu);  // job ids whose result was acked
  int submit_failures ABSL_GUARDED_BY(mu) = 0;
  int agent_reconnects ABSL_GUARDED_BY(mu) = 0;
  int results_resent ABSL_GUARDED_BY(mu) = 0;
  int offers ABSL_GUARDED_BY(mu) = 0;
  std::vector<std::string> errors ABSL_GUARDED_BY(mu);
  // Every batch: request_id -> the job ids it was acknowledged with (a retry must match).
  std::map<std::string, std::vector<std::string>> batches ABSL_GUARDED_BY(mu);

  std::string Address() {
    absl::MutexLock lock(&mu);
    return address;
  }
  bool Stopping() {
    absl::MutexLock lock(&mu);
    return stopping;
  }
};

v1::Trial MakeTrial(int client, int index) {
  v1::Trial t;
  t.set_board_kind("host");
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) {  // 16x16 matmul
    t.add_args()->add_shape(16);
    t.mutable_args(i)->add_shape(16);
  }
  t.set_seed(static_cast<uint64_t>(client) * 1000000 + index);
  return t;
}

// One client: kBatchesPerClient batches, each retried with the same request_id until OK.
void RunClient(World* world, int client) {
  std::string address;
  std::unique_ptr<v1::Tracker::Stub> stub;
  for (int b = 0; b < kBatchesPerClient; ++b) {
    v1::SubmitTrialsRequest request;
    request.set_client_id(absl::StrCat("client-", client));
    request.set_request_id(absl::StrCat("c", client, "-b", b));
    for (int i = 0; i < kBatchSize; ++i)
      *request.add_trials() = MakeTrial(client, b * kBatchSize + i);
    {
      // Pace: keep the backlog bounded so the kill lands while results are flowing.
      absl::MutexLock lock(&world->mu);
      auto room = [world]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(world->mu) {
        return world->stopping || static_cast<int>(world->submitted.size() -
                                                   world->results_acked.size()) < kMaxBacklog;
      };
      world->mu.AwaitWithTimeout(absl::Condition(&room), kTestDeadline);
    }
    for (int attempt = 0;; ++attempt) {
      if (world->Stopping()) return;
      std::string now = world->Address();
      if (now != address || stub == nullptr) {
        address = now;
        stub =
            v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
      }
      grpc::ClientContext context;
      context.set_deadline(In(absl::Seconds(5)));
      v1::SubmitTrialsResponse response;
      grpc::Status s = stub->SubmitTrials(&context, request, &response);
      absl::MutexLock lock(&world->mu);
      if (s.ok()) {
        if (response.job_ids_size() != kBatchSize) {
          world->errors.push_back(
              absl::StrCat(request.request_id(), ": ", response.job_ids_size(), " job ids"));
        }
        auto& ids = world->batches[request.request_id()];
        std::vector<std::string> got(response.job_ids().begin(), response.job_ids().end());
        if (!ids.empty() && ids != got) {
          world->errors.push_back(absl::StrCat(request.request_id(), ": a retry got other ids"));
        }
        ids = got;
        world->submitted.insert(got.begin(), got.end());
        break;
      }
      ++world->submit_failures;
      if (s.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
        world->errors.push_back(absl::StrCat(request.request_id(), ": ", s.error_message()));
        return;
      }
      world->mu.Unlock();
      absl::SleepFor(absl::Milliseconds(std::min(50 * (attempt + 1), 500)));  // retry backoff
      world->mu.Lock();
    }
  }
}

// A fake agent with kBoardsPerAgent "host" boards that runs every offer instantly. It keeps
// each result until the tracker acknowledges it; after a reconnect it registers holding those
// jobs and sends their results again.
class FakeAgent {
 public:
  FakeAgent(World* world, int index) : world_(world), id_(absl::StrCat("agent-", index)) {}

  void Run() {
    int backoff_ms = 20;
    while (!world_->Stopping()) {
      bool registered = Session();
      if (world_->Stopping()) break;
      {
        absl::MutexLock lock(&world_->mu);
        ++world_->agent_reconnects;
      }
      backoff_ms = registered ? 20 : std::min(backoff_ms * 2, 500);
      absl::SleepFor(absl::Milliseconds(backoff_ms));  // reconnect backoff
    }
  }

  // Ends the current stream (at shutdown).
  void Cancel() {
    absl::MutexLock lock(&mu_);
    if (context_ != nullptr) context_->TryCancel();
  }

 private:
  // One stream; returns whether it got as far as Registered.
  bool Session() {
    auto stub = v1::TrackerAgent::NewStub(
        grpc::CreateChannel(world_->Address(), grpc::InsecureChannelCredentials()));
    grpc::ClientContext context;
    context.set_deadline(In(kTestDeadline + absl::Seconds(10)));
    {
      absl::MutexLock lock(&mu_);
      if (world_->Stopping()) return false;
      context_ = &context;
    }
    auto stream = stub->Connect(&context);
    v1::AgentMessage hello;
    std::vector<v1::JobResult> resend;
    {
      absl::MutexLock lock(&mu_);
      hello.mutable_register_()->set_agent_id(id_);
      for (int b = 0; b < kBoardsPerAgent; ++b) {
        v1::BoardRegistration* r = hello.mutable_register_()->add_boards();
        r->set_board_id(absl::StrCat(id_, "-board-", b));
        r->set_kind("host");
      }
      for (const auto& [job_id, result] : unacked_) {
        hello.mutable_register_()->add_held_job_ids(job_id);
        resend.push_back(result);
      }
    }
    bool registered = false;
    std::atomic<bool> live{true};
    std::thread heartbeats;
    if (stream->Write(hello)) {
      v1::TrackerMessage m;
      if (stream->Read(&m) && m.has_registered()) {
        registered = true;
        for (const v1::JobResult& r : resend) {
          v1::AgentMessage out;
          *out.mutable_result() = r;
          Write(stream.get(), out);
        }
        {
          absl::MutexLock lock(&world_->mu);
          world_->results_resent += static_cast<int>(resend.size());
        }
        heartbeats = std::thread([&] {
          while (live) {
            v1::AgentMessage beat;
            beat.mutable_heartbeat();
            if (!Write(stream.get(), beat)) break;
            absl::SleepFor(absl::Milliseconds(300));  // the heartbeat period, not a wait
          }
        });
        while (stream->Read(&m)) {
          if (m.has_offer()) {
            v1::JobResult result;
            result.set_job_id(m.offer().job_id());
            result.set_attempt(m.offer().attempt());
            result.mutable_result()->add_costs_s(1e-3);
            result.mutable_result()->set_board_id(m.offer().board_id());
            {
              absl::MutexLock lock(&mu_);
              unacked_[result.job_id()] = result;
            }
            {
              absl::MutexLock lock(&world_->mu);
              ++world_->offers;
            }
            v1::AgentMessage out;
            *out.mutable_result() = result;
            Write(stream.get(), out);
          } else if (m.has_result_ack()) {
            {
              absl::MutexLock lock(&mu_);
              unacked_.erase(m.result_ack().job_id());
            }
            absl::MutexLock lock(&world_->mu);
            world_->results_acked.insert(m.result_ack().job_id());
          }
        }
      }
    }
    live = false;
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
    }
    context.TryCancel();
    if (heartbeats.joinable()) heartbeats.join();
    stream->Finish().IgnoreError();
    return registered;
  }

  bool Write(grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>* stream,
             const v1::AgentMessage& m) {
    absl::MutexLock lock(&write_mu_);
    return stream->Write(m);
  }

  World* const world_;
  const std::string id_;
  absl::Mutex write_mu_;  // one writer at a time on the stream
  absl::Mutex mu_;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  std::map<std::string, v1::JobResult> unacked_ ABSL_GUARDED_BY(mu_);
};

// After the kill: the same tracker restarted, or a standby already running takes over.
enum class AfterKill { kRestart, kStandby };

// `database`: "" for a SQLite file in the test's directory, else a postgresql:// URI.
void RunKillScenario(AfterKill after, std::string database = "") {
  const std::string dir = std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
  const std::string name = after == AfterKill::kRestart ? "tracker_crash" : "tracker_failover";
  if (database.empty()) {
    database = absl::StrCat(dir, "/", name, ".db");
    for (const char* suffix : {"", "-wal", "-shm", ".leader"}) {
      std::remove(absl::StrCat(database, suffix).c_str());
    }
  }
  const std::string config = absl::StrCat(dir, "/", name, ".textproto");
  {
    std::ofstream out(config);
    out << "lease_seconds: 2\nheartbeat_seconds: 1\n";
  }
  const absl::Time deadline = absl::Now() + kTestDeadline;

  World world;
  testing::TrackerProcess tracker, standby;
  auto flags = [&](const std::string& listen) {
    return std::vector<std::string>{"--database=" + database, "--config=" + config,
                                    "--listen=" + listen, "--metrics=off", "--insecure"};
  };
  const int port_a = after == AfterKill::kStandby ? testing::FreePort().value() : 0;
  const int port_b = after == AfterKill::kStandby ? testing::FreePort().value() : 0;
  absl::StatusOr<std::string> started = tracker.Start(flags(absl::StrCat("127.0.0.1:", port_a)));
  ASSERT_TRUE(started.ok()) << started.status();
  std::string address = *started;
  if (after == AfterKill::kStandby) {
    // The standby waits on the database's leadership without listening; clients and agents get
    // both addresses (gRPC follows whichever listens).
    ASSERT_TRUE(standby.Launch(flags(absl::StrCat("127.0.0.1:", port_b))).ok());
    address = absl::StrCat("ipv4:127.0.0.1:", port_a, ",127.0.0.1:", port_b);
  }
  {
    absl::MutexLock lock(&world.mu);
    world.address = address;
    world.generation = 1;
  }

  // Agents first: the tracker accepts trials only for board kinds it has seen.
  std::vector<std::unique_ptr<FakeAgent>> agents;
  std::vector<std::thread> agent_threads;
  for (int i = 0; i < kAgents; ++i) {
    agents.push_back(std::make_unique<FakeAgent>(&world, i));
    agent_threads.emplace_back([a = agents.back().get()] { a->Run(); });
  }
  {
    auto stub =
        v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    bool all_boards = false;
    while (!all_boards && absl::Now() < deadline) {
      grpc::ClientContext context;
      context.set_deadline(In(absl::Seconds(2)));
      v1::ListBoardsRequest request;
      request.set_board_kind("host");
      v1::ListBoardsResponse response;
      if (stub->ListBoards(&context, request, &response).ok()) {
        int idle = 0;
        for (const v1::Board& b : response.boards()) idle += b.state() == v1::IDLE;
        all_boards = idle == kAgents * kBoardsPerAgent;
      }
      if (!all_boards) absl::SleepFor(absl::Milliseconds(20));  // polling another process
    }
    ASSERT_TRUE(all_boards) << "the agents did not register";
  }

  std::vector<std::thread> clients;
  for (int c = 0; c < kClients; ++c) clients.emplace_back(RunClient, &world, c);

  // Kill -9 mid-stream, then restart on the same database.
  int submitted_at_kill = 0, results_at_kill = 0;
  {
    absl::MutexLock lock(&world.mu);
    auto enough = [&world]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(world.mu) {
      return static_cast<int>(world.submitted.size()) >= kKillAfterSubmitted;
    };
    world.mu.AwaitWithDeadline(absl::Condition(&enough), deadline);
    submitted_at_kill = static_cast<int>(world.submitted.size());
    results_at_kill = static_cast<int>(world.results_acked.size());
  }
  tracker.Kill();
  const absl::Time killed = absl::Now();
  std::printf("killed the tracker (SIGKILL) at %d acknowledged trials, %d acknowledged results\n",
              submitted_at_kill, results_at_kill);
  testing::TrackerProcess* serving = &tracker;
  if (after == AfterKill::kRestart) {
    started = tracker.Start(flags("127.0.0.1:0"));
    ASSERT_TRUE(started.ok()) << "the tracker did not restart: " << started.status();
    address = *started;
    absl::MutexLock lock(&world.mu);
    world.address = address;
    ++world.generation;
  } else {
    started = standby.WaitListening(absl::Seconds(30));
    ASSERT_TRUE(started.ok()) << "the standby did not take over: " << started.status();
    const absl::Duration takeover = absl::Now() - killed;
    std::printf("the standby took over in %s (listening on %s)\n",
                absl::FormatDuration(takeover).c_str(), started->c_str());
    EXPECT_LT(takeover, absl::Seconds(10)) << "the standby took too long to take over";
    serving = &standby;
  }

  for (std::thread& t : clients) t.join();

  // Wait until every acknowledged trial's result is acknowledged.
  bool finished = false;
  {
    absl::MutexLock lock(&world.mu);
    auto all_done = [&world]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(world.mu) {
      if (world.submitted.size() < static_cast<size_t>(kTotalTrials)) return false;
      for (const std::string& id : world.submitted) {
        if (world.results_acked.count(id) == 0) return false;
      }
      return true;
    };
    finished = world.mu.AwaitWithDeadline(absl::Condition(&all_done), deadline);
  }

  // Read back every job.
  auto stub =
      v1::Tracker::NewStub(grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  std::map<std::string, v1::Job> jobs;
  int duplicates = 0;
  std::string token;
  for (int page = 0; page < 100; ++page) {
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(10)));
    v1::ListResultsRequest request;
    request.set_limit(1000);
    request.set_page_token(token);
    v1::ListResultsResponse response;
    grpc::Status s = stub->ListResults(&context, request, &response);
    ASSERT_TRUE(s.ok()) << s.error_message();
    for (const v1::Job& job : response.jobs()) {
      if (!jobs.emplace(job.job_id(), job).second) ++duplicates;
    }
    token = response.next_page_token();
    if (token.empty()) break;
  }

  {
    absl::MutexLock lock(&world.mu);
    world.stopping = true;
  }
  for (auto& a : agents) a->Cancel();
  for (std::thread& t : agent_threads) t.join();
  absl::StatusOr<base::ProcessExit> stopped = serving->Stop(absl::Seconds(10));

  absl::MutexLock lock(&world.mu);
  int not_done = 0, bad_result = 0, missing = 0, unknown = 0, acked_not_done = 0;
  std::map<std::string, int> not_done_states;
  for (const auto& [id, job] : jobs) {
    if (world.submitted.count(id) == 0) ++unknown;
    if (job.state() != v1::DONE) {
      ++not_done;
      ++not_done_states[v1::JobState_Name(job.state())];
    } else if (job.result().costs_s_size() != 1 || job.result().error_code() != v1::NO_ERROR) {
      ++bad_result;
    }
  }
  for (const std::string& id : world.submitted) missing += jobs.count(id) == 0;
  for (const std::string& id : world.results_acked) {
    auto it = jobs.find(id);
    acked_not_done += it == jobs.end() || it->second.state() != v1::DONE;
  }
  std::printf(
      "trials acknowledged: %zu (batches %zu), jobs stored: %zu, duplicates: %d\n"
      "results acknowledged: %zu, offers: %d, results resent after reconnect: %d\n"
      "submit failures (retried): %d, agent reconnects: %d\n"
      "not DONE: %d, bad results: %d, missing: %d, unknown: %d, acked-but-not-DONE: %d\n",
      world.submitted.size(), world.batches.size(), jobs.size(), duplicates,
      world.results_acked.size(), world.offers, world.results_resent, world.submit_failures,
      world.agent_reconnects, not_done, bad_result, missing, unknown, acked_not_done);
  for (const auto& [state, n] : not_done_states) std::printf("  %s: %d\n", state.c_str(), n);

  for (const std::string& e : world.errors) ADD_FAILURE() << e;
  EXPECT_TRUE(finished) << "not every acknowledged trial got an acknowledged result in time";
  EXPECT_EQ(world.submitted.size(), static_cast<size_t>(kTotalTrials));
  EXPECT_EQ(world.batches.size(), static_cast<size_t>(kClients * kBatchesPerClient));
  EXPECT_EQ(jobs.size(), static_cast<size_t>(kTotalTrials));
  EXPECT_EQ(duplicates, 0);
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(unknown, 0);
  EXPECT_EQ(not_done, 0);
  EXPECT_EQ(bad_result, 0);
  EXPECT_EQ(acked_not_done, 0);
  EXPECT_GT(world.agent_reconnects, 0) << "the kill did not reach the agents";
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0)
      << "the tracker serving at the end did not stop cleanly: " << stopped->ToString();
  if (after == AfterKill::kStandby) {
    EXPECT_EQ(world.generation, 1) << "clients or agents were told a new address";  // (locked)
  }
}

TEST(TrackerCrash, EveryAcknowledgedTrialHasExactlyOneResultAfterKill9) {
  RunKillScenario(AfterKill::kRestart);
}

// Issue 17: active/standby. The standby takes over within seconds of the leader's kill -9;
// agents and clients, given both addresses, follow it without a restart; nothing is lost or
// measured twice.
TEST(TrackerFailover, AStandbyTakesOverFromAKilledLeaderAndNoTrialIsLostOrDoubled) {
  RunKillScenario(AfterKill::kStandby);
}

// The same with both trackers on a real PostgreSQL server (leadership: an advisory lock).
TEST(TrackerFailover, OnPostgresAStandbyTakesOverFromAKilledLeader) {
  absl::StatusOr<std::unique_ptr<testing::PostgresServer>> server =
      testing::PostgresServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->CreateDatabase("farm").ok());
  RunKillScenario(AfterKill::kStandby, absl::StrCat("postgresql://", testing::PostgresServer::kUser,
                                                    "@127.0.0.1:", (*server)->port(), "/farm"));
}

// A leader whose database session ends (its network to the database cut, here: the session
// terminated by the server) may already have been replaced: it stops at once, and the standby
// serves.
TEST(TrackerFailover, ALeaderThatLosesItsDatabaseSessionStopsAndTheStandbyServes) {
  absl::StatusOr<std::unique_ptr<testing::PostgresServer>> server =
      testing::PostgresServer::Start();
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_TRUE((*server)->CreateDatabase("farm").ok());
  const std::string database = absl::StrCat("postgresql://", testing::PostgresServer::kUser,
                                            "@127.0.0.1:", (*server)->port(), "/farm");
  auto flags = [&](int port) {
    return std::vector<std::string>{"--database=" + database,
                                    absl::StrCat("--listen=127.0.0.1:", port), "--metrics=off",
                                    "--insecure"};
  };
  testing::TrackerProcess leader, standby;
  ASSERT_TRUE(leader.Start(flags(testing::FreePort().value())).ok());
  ASSERT_TRUE(standby.Launch(flags(testing::FreePort().value())).ok());
  absl::SleepFor(absl::Milliseconds(500));  // the standby is waiting on the lock
  // The session holding the advisory lock: the leader's.
  absl::StatusOr<std::string> terminated = (*server)->Query(
      "farm",
      "SELECT count(pg_terminate_backend(l.pid)) FROM pg_locks l WHERE l.locktype = 'advisory' "
      "AND l.granted");
  ASSERT_TRUE(terminated.ok()) << terminated.status();
  EXPECT_EQ(*terminated, "1");
  absl::StatusOr<base::ProcessExit> ended = leader.WaitExit(absl::Seconds(10));
  ASSERT_TRUE(ended.ok()) << "the leader went on without its database session: " << ended.status();
  EXPECT_EQ(ended->exit_code, 3) << ended->ToString();
  absl::StatusOr<std::string> serving = standby.WaitListening(absl::Seconds(10));
  ASSERT_TRUE(serving.ok()) << "the standby did not take over: " << serving.status();
  absl::StatusOr<base::ProcessExit> stopped = standby.Stop(absl::Seconds(10));
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0) << stopped->ToString();
}

}  // namespace
}  // namespace benchfarm
