// The tracker's gRPC surface against an in-process server on port 0, with fake agents speaking
// the agent stream. Every scheduling rule of the tracker is exercised through gRPC: per board-kind
// queues, priority then FIFO, pins (board id and labels), fair share between clients, leases
// renewed by heartbeats, expired leases and lost agents re-queueing with their attempt history up
// to the retry budget, quarantine and health checks, cancellation of queued and running jobs,
// boards with several slots; also validation, watch streams, /metrics over HTTP and the health
// service.
//
// Waiting is on conditions with a deadline (a fake agent's next message, or polling the tracker
// through gRPC); lease expiry runs on a FakeClock except where real heartbeats are the point.
#include "tracker/service.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sqlite3.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {
namespace {

v1::Trial MakeTrial(const std::string& kind = "host", int priority = 0) {
  v1::Trial t;
  t.set_board_kind(kind);
  t.set_priority(priority);
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) {
    t.add_args()->add_shape(16);
    t.mutable_args(i)->add_shape(16);
  }
  return t;
}

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

std::chrono::system_clock::time_point Soon() { return In(absl::Seconds(10)); }

// Calls probe until it returns true, for at most `limit`; returns whether it did.
bool WaitFor(const std::function<bool()>& probe, absl::Duration limit = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + limit;
  while (!probe()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

v1::BoardRegistration Board(const std::string& id, const std::string& kind = "host",
                            const std::map<std::string, std::string>& labels = {}, int slots = 0) {
  v1::BoardRegistration b;
  b.set_board_id(id);
  b.set_kind(kind);
  for (const auto& [key, value] : labels) (*b.mutable_labels())[key] = value;
  b.set_slots(slots);
  return b;
}

v1::Register Registration(const std::string& agent_id,
                          const std::vector<v1::BoardRegistration>& boards,
                          const std::vector<std::string>& held = {}) {
  v1::Register r;
  r.set_agent_id(agent_id);
  for (const v1::BoardRegistration& b : boards) *r.add_boards() = b;
  for (const std::string& id : held) r.add_held_job_ids(id);
  return r;
}

// A fake agent: one Connect stream that registers at once. Messages the tracker sends are read
// in order; a call that looks for one kind (offer, cancel, ack) keeps the others for later calls,
// because the tracker's dispatcher and its stream handler interleave them freely (an offer for a
// board freed by a result may come before or after that result's ack). Reads give up at the
// stream's deadline, 30 s after it opened.
class FakeAgent {
 public:
  FakeAgent(v1::TrackerAgent::Stub* stub, const v1::Register& registration) {
    context_.set_deadline(In(absl::Seconds(30)));
    stream_ = stub->Connect(&context_);
    v1::AgentMessage m;
    *m.mutable_register_() = registration;
    EXPECT_TRUE(stream_->Write(m));
    v1::TrackerMessage reply;
    // The registered reply comes before any offer.
    EXPECT_TRUE(stream_->Read(&reply));
    EXPECT_TRUE(reply.has_registered()) << reply.DebugString();
    registered_ = reply.registered();
  }
  ~FakeAgent() { Hangup(); }

  const v1::Registered& registered() const { return registered_; }

  bool Send(const v1::AgentMessage& m) { return stream_->Write(m); }

  // A heartbeat naming the attempts (job id, attempt) the agent holds.
  bool Heartbeat(const std::vector<std::pair<std::string, int>>& held) {
    v1::AgentMessage m;
    v1::Heartbeat* beat = m.mutable_heartbeat();
    for (const auto& [job_id, attempt] : held) {
      v1::HeldAttempt* h = beat->add_held();
      h->set_job_id(job_id);
      h->set_attempt(attempt);
    }
    return Send(m);
  }

  bool SendResult(const std::string& job_id, int attempt, v1::ErrorCode code,
                  double cost_s = 1e-4) {
    v1::AgentMessage m;
    m.mutable_result()->set_job_id(job_id);
    m.mutable_result()->set_attempt(attempt);
    m.mutable_result()->mutable_result()->set_error_code(code);
    if (code == v1::NO_ERROR) m.mutable_result()->mutable_result()->add_costs_s(cost_s);
    return Send(m);
  }

  // Reports the offer's result and waits for the tracker to acknowledge it.
  void Report(const v1::JobOffer& offer, v1::ErrorCode code = v1::NO_ERROR) {
    ASSERT_TRUE(SendResult(offer.job_id(), offer.attempt(), code));
    ASSERT_TRUE(AwaitAck(offer.job_id())) << "no ack for " << offer.job_id();
  }

  // The next offer; nullopt if the stream ended first.
  std::optional<v1::JobOffer> NextOffer() {
    std::optional<v1::TrackerMessage> m =
        Next([](const v1::TrackerMessage& t) { return t.has_offer(); });
    if (!m.has_value()) return std::nullopt;
    return m->offer();
  }

  // The job id of the next cancellation; nullopt if the stream ended first.
  std::optional<std::string> NextCancel() {
    std::optional<v1::TrackerMessage> m =
        Next([](const v1::TrackerMessage& t) { return t.has_cancel(); });
    if (!m.has_value()) return std::nullopt;
    return m->cancel().job_id();
  }

  // The next message whatever it is; nullopt if the stream ended first.
  std::optional<v1::TrackerMessage> NextMessage() {
    return Next([](const v1::TrackerMessage&) { return true; });
  }

  bool AwaitAck(const std::string& job_id) {
    return Next([&](const v1::TrackerMessage& t) {
             return t.has_result_ack() && t.result_ack().job_id() == job_id;
           })
        .has_value();
  }

  // Ends the stream as a crashed agent's would end (the tracker sees it cancelled).
  grpc::Status Hangup() {
    if (!finished_) {
      finished_ = true;
      context_.TryCancel();
      status_ = stream_->Finish();
    }
    return status_;
  }

  // Ends the stream cleanly: half-closes, reads what is left, returns the tracker's status.
  grpc::Status Close() {
    if (!finished_) {
      finished_ = true;
      stream_->WritesDone();
      v1::TrackerMessage m;
      while (stream_->Read(&m)) pending_.push_back(m);
      status_ = stream_->Finish();
    }
    return status_;
  }

 private:
  std::optional<v1::TrackerMessage> Next(
      const std::function<bool(const v1::TrackerMessage&)>& want) {
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (want(*it)) {
        v1::TrackerMessage m = std::move(*it);
        pending_.erase(it);
        return m;
      }
    }
    if (finished_) return std::nullopt;
    v1::TrackerMessage m;
    while (stream_->Read(&m)) {
      if (want(m)) return m;
      pending_.push_back(m);
    }
    return std::nullopt;
  }

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>> stream_;
  v1::Registered registered_;
  std::deque<v1::TrackerMessage> pending_;
  bool finished_ = false;
  grpc::Status status_;
};

// GET http://127.0.0.1:port/path with a plain socket; returns the whole response ("" on error).
std::string HttpGet(int port, const std::string& path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return "";
  timeval timeout{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    std::string request =
        absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    if (write(fd, request.data(), request.size()) == static_cast<ssize_t>(request.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return response;
}

// Prometheus text format -> {"name{labels}": value}.
std::map<std::string, double> ParseSamples(const std::string& body) {
  std::map<std::string, double> samples;
  for (absl::string_view line : absl::StrSplit(body, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    samples[std::string(line.substr(0, space))] =
        std::strtod(std::string(line.substr(space + 1)).c_str(), nullptr);
  }
  return samples;
}

class ServiceTest : public ::testing::Test {
 protected:
  static JobQueueOptions HostOptions() {
    JobQueueOptions options;
    options.known_kinds = {"host"};
    return options;
  }

  // Builds the store, the queue (on `clock`, real time if null) and the service, and serves them
  // on 127.0.0.1:0. The lease told to agents is the queue's.
  void StartServer(JobQueueOptions options = HostOptions(), const base::Clock* clock = nullptr) {
    std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path.c_str());
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    ServiceOptions service_options;
    service_options.dispatch_period = absl::Milliseconds(20);
    service_options.lease = options.lease;
    queue_ = std::make_unique<JobQueue>(store_.get(), clock != nullptr ? clock : &real_clock_,
                                        std::move(options));
    ASSERT_TRUE(queue_->Recover().ok());
    service_ = std::make_unique<TrackerService>(queue_.get(), &metrics_, service_options);
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    service_->AddTo(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    channel_ =
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
    client_ = v1::Tracker::NewStub(channel_);
    agents_ = v1::TrackerAgent::NewStub(channel_);
  }

  void TearDown() override {
    if (service_) service_->Stop();
    if (server_) server_->Shutdown(In(absl::Seconds(1)));
    if (queue_) (void)queue_->Flush();  // answers waiting for the store use the server and service
  }

  std::unique_ptr<FakeAgent> Agent(const v1::Register& registration) {
    return std::make_unique<FakeAgent>(agents_.get(), registration);
  }

  std::vector<std::string> Submit(const std::string& client_id, const std::string& request_id,
                                  const std::vector<v1::Trial>& trials) {
    v1::SubmitTrialsRequest request;
    request.set_client_id(client_id);
    request.set_request_id(request_id);
    for (const v1::Trial& t : trials) *request.add_trials() = t;
    v1::SubmitTrialsResponse response;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    grpc::Status s = client_->SubmitTrials(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {response.job_ids().begin(), response.job_ids().end()};
  }

  std::vector<std::string> Submit(int n, const std::string& request_id) {
    return Submit("c1", request_id, std::vector<v1::Trial>(n, MakeTrial()));
  }

  v1::Job Get(const std::string& id) {
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    grpc::Status s = client_->GetJob(&context, request, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  grpc::Status Cancel(const std::string& id, v1::Job* job = nullptr) {
    v1::CancelJobRequest request;
    request.set_job_id(id);
    v1::CancelJobResponse response;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    grpc::Status s = client_->CancelJob(&context, request, &response);
    if (job != nullptr) *job = response.job();
    return s;
  }

  // The board as ListBoards shows it (an empty Board if it is not listed).
  v1::Board ListedBoard(const std::string& board_id) {
    v1::ListBoardsRequest request;
    v1::ListBoardsResponse response;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    EXPECT_TRUE(client_->ListBoards(&context, request, &response).ok());
    for (const v1::Board& b : response.boards()) {
      if (b.board_id() == board_id) return b;
    }
    return v1::Board();
  }

  // The kind as QueueSummary shows it (an empty summary if it is not listed).
  v1::KindSummary Summary(const std::string& kind) {
    v1::QueueSummaryRequest request;
    v1::QueueSummaryResponse response;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    EXPECT_TRUE(client_->QueueSummary(&context, request, &response).ok());
    for (const v1::KindSummary& k : response.kinds()) {
      if (k.board_kind() == kind) return k;
    }
    return v1::KindSummary();
  }

  static int64_t Queued(const v1::KindSummary& k, int priority = 0) {
    auto it = k.queued_by_priority().find(priority);
    return it == k.queued_by_priority().end() ? 0 : it->second;
  }

  base::RealClock real_clock_;
  base::FakeClock fake_clock_;
  Metrics metrics_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<TrackerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tracker::Stub> client_;
  std::unique_ptr<v1::TrackerAgent::Stub> agents_;
};

// ---- submission, results, watch ---------------------------------------------------------------

TEST_F(ServiceTest, MalformedRequestsAreInvalidArgumentAndStoreNothing) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::SubmitTrialsRequest request;
  request.set_client_id("c1");
  request.set_request_id("r1");
  v1::Trial bad = MakeTrial();
  bad.mutable_args(2)->set_shape(0, 0);
  *request.add_trials() = MakeTrial();
  *request.add_trials() = bad;
  v1::SubmitTrialsResponse response;
  grpc::ClientContext context;
  grpc::Status s = client_->SubmitTrials(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("trials[1].args[2].shape[0]"), std::string::npos)
      << s.error_message();

  request.clear_trials();
  *request.add_trials() = MakeTrial("no-such-kind");
  grpc::ClientContext context2;
  s = client_->SubmitTrials(&context2, request, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("board_kind"), std::string::npos);

  v1::ListResultsRequest list;
  v1::ListResultsResponse listed;
  grpc::ClientContext context3;
  ASSERT_TRUE(client_->ListResults(&context3, list, &listed).ok());
  EXPECT_EQ(listed.jobs_size(), 0);

  v1::GetJobRequest get;
  v1::Job job;
  grpc::ClientContext context4;
  EXPECT_EQ(client_->GetJob(&context4, get, &job).error_code(), grpc::INVALID_ARGUMENT);
  get.set_job_id("j-nope");
  grpc::ClientContext context5;
  EXPECT_EQ(client_->GetJob(&context5, get, &job).error_code(), grpc::NOT_FOUND);
}

TEST_F(ServiceTest, AgentGetsOffersAndResultsAreAcknowledged) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(2, "r1");
  ASSERT_EQ(ids.size(), 2u);
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  EXPECT_GT(agent->registered().lease_ms(), 0);
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->board_id(), "b1");
    EXPECT_EQ(offer->job_id(), ids[i]);  // FIFO
    ASSERT_TRUE(agent->SendResult(offer->job_id(), offer->attempt(), v1::NO_ERROR, 1e-4 * (i + 1)));
    ASSERT_TRUE(agent->AwaitAck(ids[i]));
  }
  v1::Job job = Get(ids[1]);
  EXPECT_EQ(job.state(), v1::DONE);
  ASSERT_EQ(job.result().costs_s_size(), 1);
  EXPECT_EQ(job.result().costs_s(0), 2e-4);
  EXPECT_EQ(job.result().attempts(), 1);

  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.boards_total(), 1);
  EXPECT_EQ(summary.boards_free(), 1);

  EXPECT_TRUE(agent->Close().ok());
  // The stream ended: the board goes offline once the server has run OnDone.
  EXPECT_TRUE(WaitFor([&] { return ListedBoard("b1").state() == v1::OFFLINE; }));
}

// An agent that registers with batched_acks gets a result's acknowledgement with the offer of
// the board's next job, in one message; with nothing to offer, the acknowledgement comes alone.
// (The agents of the other tests do not ask: they get ResultAck messages.)
TEST_F(ServiceTest, BatchedAcksRideOnTheNextOffer) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(3, "r1");
  ASSERT_EQ(ids.size(), 3u);
  v1::Register registration = Registration("agent-1", {Board("b1")});
  registration.set_batched_acks(true);
  auto agent = Agent(registration);
  std::optional<v1::TrackerMessage> m = agent->NextMessage();
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->has_offer()) << m->DebugString();
  EXPECT_EQ(m->offer().job_id(), ids[0]);
  EXPECT_EQ(m->acks_size(), 0);
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(agent->SendResult(m->offer().job_id(), m->offer().attempt(), v1::NO_ERROR));
    m = agent->NextMessage();
    ASSERT_TRUE(m.has_value());
    ASSERT_TRUE(m->has_offer()) << m->DebugString();
    EXPECT_EQ(m->offer().job_id(), ids[i]);
    ASSERT_EQ(m->acks_size(), 1) << m->DebugString();
    EXPECT_EQ(m->acks(0).job_id(), ids[i - 1]);
    EXPECT_EQ(m->acks(0).attempt(), 1);
    EXPECT_FALSE(m->acks(0).superseded());
    EXPECT_EQ(Get(ids[i - 1]).state(), v1::DONE);  // acknowledged once stored
  }
  ASSERT_TRUE(agent->SendResult(ids[2], 1, v1::NO_ERROR));
  m = agent->NextMessage();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->msg_case(), v1::TrackerMessage::MSG_NOT_SET) << m->DebugString();
  ASSERT_EQ(m->acks_size(), 1) << m->DebugString();
  EXPECT_EQ(m->acks(0).job_id(), ids[2]);
  EXPECT_EQ(Get(ids[2]).state(), v1::DONE);
  EXPECT_TRUE(agent->Close().ok());
}

// Only an agent that asked for batched acks has its offers wait for a result to be stored: while
// the database is locked by another connection (the tracker's commit waits), an agent that did
// not ask gets its board's next job at once, and one that did gets it with the acknowledgement
// once the lock is gone.
TEST_F(ServiceTest, OnlyBatchingAgentsOffersWaitForTheStore) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(4, "r1");
  ASSERT_EQ(ids.size(), 4u);
  auto plain = Agent(Registration("plain", {Board("p1")}));
  std::optional<v1::JobOffer> first = plain->NextOffer();
  ASSERT_TRUE(first.has_value());
  v1::Register registration = Registration("batching", {Board("b1")});
  registration.set_batched_acks(true);
  auto batching = Agent(registration);
  std::optional<v1::TrackerMessage> m = batching->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  const v1::JobOffer batched_first = m->offer();

  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &lock), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  absl::Notification released;
  std::thread unlocker([&] {  // well within the store's 5 s busy timeout
    absl::SleepFor(absl::Seconds(3));
    sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(lock);
    released.Notify();
  });
  ASSERT_TRUE(plain->SendResult(first->job_id(), first->attempt(), v1::NO_ERROR));
  std::optional<v1::JobOffer> second = plain->NextOffer();
  EXPECT_TRUE(second.has_value());
  EXPECT_FALSE(released.HasBeenNotified()) << "the plain agent's offer waited for the store";
  ASSERT_TRUE(batching->SendResult(batched_first.job_id(), batched_first.attempt(), v1::NO_ERROR));
  m = batching->NextMessage();
  EXPECT_TRUE(released.HasBeenNotified());  // not before the result was stored
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  ASSERT_EQ(m->acks_size(), 1);
  EXPECT_EQ(m->acks(0).job_id(), batched_first.job_id());
  unlocker.join();
  EXPECT_TRUE(plain->AwaitAck(first->job_id()));
}

TEST_F(ServiceTest, WatchFollowsJobsToTheEnd) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(1, "r1");
  v1::WatchJobsRequest watch;
  watch.add_job_ids(ids[0]);
  grpc::ClientContext watch_context;
  watch_context.set_deadline(Soon());
  auto watcher = client_->WatchJobs(&watch_context, watch);
  v1::JobEvent event;
  ASSERT_TRUE(watcher->Read(&event));
  EXPECT_EQ(event.job().state(), v1::QUEUED);

  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_TRUE(agent->SendResult(offer->job_id(), offer->attempt(), v1::WRONG_ANSWER));

  std::vector<v1::JobState> states;
  while (watcher->Read(&event)) states.push_back(event.job().state());
  EXPECT_TRUE(watcher->Finish().ok());  // ends by itself once the job is done
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), v1::DONE);
  // A wrong answer is not an infrastructure error: no retry.
  v1::Job job = Get(ids[0]);
  EXPECT_EQ(job.result().autotvm_error_no(), 5);
  EXPECT_EQ(job.result().attempts(), 1);
}

TEST_F(ServiceTest, AMessageBeforeRegisterEndsTheStream) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  grpc::ClientContext context;
  context.set_deadline(Soon());
  auto stream = agents_->Connect(&context);
  v1::AgentMessage m;
  m.mutable_heartbeat();
  ASSERT_TRUE(stream->Write(m));
  v1::TrackerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  EXPECT_EQ(stream->Finish().error_code(), grpc::FAILED_PRECONDITION);
}

// ---- scheduling -------------------------------------------------------------------------------

TEST_F(ServiceTest, EachBoardKindHasItsOwnQueue) {
  JobQueueOptions options = HostOptions();
  options.known_kinds = {"host", "m3"};
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  std::vector<std::string> m3 = Submit("c1", "r1", {MakeTrial("m3")});
  std::vector<std::string> host = Submit("c1", "r2", {MakeTrial("host"), MakeTrial("host")});
  ASSERT_EQ(m3.size(), 1u);
  ASSERT_EQ(host.size(), 2u);

  auto hosts = Agent(Registration("agent-host", {Board("h1")}));
  std::optional<v1::JobOffer> first = hosts->NextOffer();
  ASSERT_TRUE(first.has_value());
  // The m3 job came first but is not in the host queue.
  EXPECT_EQ(first->job_id(), host[0]);
  EXPECT_EQ(first->trial().board_kind(), "host");
  v1::KindSummary host_summary = Summary("host");
  EXPECT_EQ(host_summary.running(), 1);
  EXPECT_EQ(Queued(host_summary), 1);
  v1::KindSummary m3_summary = Summary("m3");
  EXPECT_EQ(m3_summary.running(), 0);
  EXPECT_EQ(Queued(m3_summary), 1);
  EXPECT_EQ(m3_summary.boards_total(), 0);

  ASSERT_NO_FATAL_FAILURE(hosts->Report(*first));
  std::optional<v1::JobOffer> second = hosts->NextOffer();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job_id(), host[1]);
  ASSERT_NO_FATAL_FAILURE(hosts->Report(*second));
  EXPECT_EQ(Get(m3[0]).state(), v1::QUEUED);

  auto m3_agent = Agent(Registration("agent-m3", {Board("m3-1", "m3")}));
  std::optional<v1::JobOffer> third = m3_agent->NextOffer();
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->job_id(), m3[0]);
  EXPECT_EQ(third->board_id(), "m3-1");
}

TEST_F(ServiceTest, HigherPriorityFirstThenSubmissionOrder) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids =
      Submit("c1", "r1",
             {MakeTrial("host", 0), MakeTrial("host", 5), MakeTrial("host", 0),
              MakeTrial("host", 5), MakeTrial("host", 9)});
  ASSERT_EQ(ids.size(), 5u);
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::vector<std::string> order;
  for (int i = 0; i < 5; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    order.push_back(offer->job_id());
    ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  }
  EXPECT_EQ(order, (std::vector<std::string>{ids[4], ids[1], ids[3], ids[0], ids[2]}));
}

TEST_F(ServiceTest, PinnedJobsRunOnlyOnMatchingBoards) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // b1 is in rack A (and has another label the job does not ask for); b2 is in rack B.
  auto agent_a =
      Agent(Registration("agent-a", {Board("b1", "host", {{"rack", "A"}, {"usb", "2"}})}));
  auto agent_b = Agent(Registration("agent-b", {Board("b2", "host", {{"rack", "B"}})}));
  ASSERT_EQ(Summary("host").boards_total(), 2);

  // No board is in rack C: refused at submission, nothing stored.
  v1::Trial no_match = MakeTrial();
  (*no_match.mutable_labels())["rack"] = "C";
  v1::SubmitTrialsRequest request;
  request.set_client_id("c1");
  request.set_request_id("r0");
  *request.add_trials() = no_match;
  v1::SubmitTrialsResponse response;
  grpc::ClientContext context;
  grpc::Status s = client_->SubmitTrials(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "trials[0].labels: no registered board of kind host has rack=C");

  v1::Trial on_b2 = MakeTrial();
  on_b2.set_board_id("b2");
  v1::Trial rack_a = MakeTrial();
  (*rack_a.mutable_labels())["rack"] = "A";
  v1::Trial anywhere = MakeTrial();
  std::vector<std::string> ids = Submit("c1", "r1", {on_b2, rack_a, anywhere});
  ASSERT_EQ(ids.size(), 3u);

  std::optional<v1::JobOffer> a1 = agent_a->NextOffer();
  ASSERT_TRUE(a1.has_value());
  EXPECT_EQ(a1->job_id(), ids[1]);  // the one before it may not run on b1
  std::optional<v1::JobOffer> b1 = agent_b->NextOffer();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->job_id(), ids[0]);
  EXPECT_EQ(b1->board_id(), "b2");

  ASSERT_NO_FATAL_FAILURE(agent_a->Report(*a1));
  std::optional<v1::JobOffer> a2 = agent_a->NextOffer();
  ASSERT_TRUE(a2.has_value());
  EXPECT_EQ(a2->job_id(), ids[2]);
  ASSERT_NO_FATAL_FAILURE(agent_a->Report(*a2));
  ASSERT_NO_FATAL_FAILURE(agent_b->Report(*b1));
  for (const std::string& id : ids) EXPECT_EQ(Get(id).state(), v1::DONE) << id;
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(Queued(summary), 0);
  EXPECT_EQ(summary.waiting_size(), 0);
}

TEST_F(ServiceTest, ClientsTakeTurnsAtEqualPriority) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> alice = Submit("alice", "r1", std::vector<v1::Trial>(4, MakeTrial()));
  std::vector<std::string> bob = Submit("bob", "r1", std::vector<v1::Trial>(2, MakeTrial()));
  ASSERT_EQ(alice.size(), 4u);
  ASSERT_EQ(bob.size(), 2u);
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    order.push_back(offer->job_id());
    ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  }
  // Alice submitted everything first, yet Bob's jobs are interleaved; each client's own jobs
  // keep their order.
  EXPECT_EQ(order,
            (std::vector<std::string>{alice[0], bob[0], alice[1], bob[1], alice[2], alice[3]}));
}

// ---- leases, lost agents, retries -------------------------------------------------------------

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

// ---- cancellation -----------------------------------------------------------------------------

TEST_F(ServiceTest, CancellingQueuedAndRunningJobs) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(3, "r1");
  ASSERT_EQ(ids.size(), 3u);

  // Queued: cancelled at once, never offered.
  v1::Job cancelled;
  ASSERT_TRUE(Cancel(ids[0], &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::CANCELLED_STATE);
  EXPECT_EQ(cancelled.result().error_code(), v1::CANCELLED);
  EXPECT_EQ(Cancel(ids[0]).error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_EQ(Cancel("j-nope").error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(Cancel("").error_code(), grpc::INVALID_ARGUMENT);

  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->job_id(), ids[1]);

  // Running: cancelled, its agent is told, and the freed board gets the next job.
  ASSERT_TRUE(Cancel(ids[1], &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::CANCELLED_STATE);
  std::optional<std::string> told = agent->NextCancel();
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(*told, ids[1]);
  std::optional<v1::JobOffer> next = agent->NextOffer();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->job_id(), ids[2]);

  // A result the agent sends anyway is acknowledged and ignored.
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  v1::Job job = Get(ids[1]);
  EXPECT_EQ(job.state(), v1::CANCELLED_STATE);
  EXPECT_EQ(job.result().error_code(), v1::CANCELLED);
  EXPECT_EQ(job.result().costs_s_size(), 0);

  ASSERT_NO_FATAL_FAILURE(agent->Report(*next));
  EXPECT_EQ(Get(ids[2]).state(), v1::DONE);
  EXPECT_EQ(Get(ids[0]).attempts_size(), 0);
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.running(), 0);
  EXPECT_EQ(Queued(summary), 0);
}

// ---- slots ------------------------------------------------------------------------------------

TEST_F(ServiceTest, ABoardWithSeveralSlotsHoldsSeveralJobs) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(5, "r1");
  ASSERT_EQ(ids.size(), 5u);
  auto agent = Agent(Registration("agent-1", {Board("b1", "host", {}, 3)}));
  std::vector<v1::JobOffer> held;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->board_id(), "b1");
    EXPECT_EQ(offer->job_id(), ids[i]);
    held.push_back(*offer);
  }
  v1::Board board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::BUSY);
  EXPECT_EQ(board.slots(), 3);
  EXPECT_EQ(board.running_jobs(), 3);
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.running(), 3);
  EXPECT_EQ(Queued(summary), 2);
  EXPECT_EQ(Get(ids[3]).state(), v1::QUEUED);

  // A freed slot takes the next job.
  ASSERT_NO_FATAL_FAILURE(agent->Report(held[1]));
  std::optional<v1::JobOffer> fourth = agent->NextOffer();
  ASSERT_TRUE(fourth.has_value());
  EXPECT_EQ(fourth->job_id(), ids[3]);
  EXPECT_EQ(ListedBoard("b1").running_jobs(), 3);
  EXPECT_EQ(Get(ids[4]).state(), v1::QUEUED);

  ASSERT_NO_FATAL_FAILURE(agent->Report(held[0]));
  std::optional<v1::JobOffer> fifth = agent->NextOffer();
  ASSERT_TRUE(fifth.has_value());
  EXPECT_EQ(fifth->job_id(), ids[4]);
  for (const v1::JobOffer& o : {held[2], *fourth, *fifth}) {
    ASSERT_NO_FATAL_FAILURE(agent->Report(o));
  }
  for (const std::string& id : ids) EXPECT_EQ(Get(id).state(), v1::DONE);
  board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::IDLE);
  EXPECT_EQ(board.running_jobs(), 0);
}

TEST_F(ServiceTest, BoardsTakeTurnsFillingTheirSlots) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(3, "r1");
  auto agent =
      Agent(Registration("agent-1", {Board("a", "host", {}, 2), Board("b", "host", {}, 2)}));
  std::vector<std::string> boards;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->job_id(), ids[i]);
    boards.push_back(offer->board_id());
  }
  // One job each per round: b gets one before a gets its second.
  EXPECT_EQ(boards, (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(ListedBoard("a").running_jobs(), 2);
  EXPECT_EQ(ListedBoard("b").running_jobs(), 1);
}

// ---- metrics and health -----------------------------------------------------------------------

TEST_F(ServiceTest, MetricsAreServedOverHttp) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(metrics_.Serve("127.0.0.1:0").ok());
  const int port = metrics_.port();
  ASSERT_NE(port, 0);

  std::vector<std::string> alice = Submit("alice", "r1", std::vector<v1::Trial>(3, MakeTrial()));
  std::vector<std::string> bob = Submit("bob", "r1", std::vector<v1::Trial>(2, MakeTrial()));
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  // One infrastructure error (re-queued), two results, one job left running.
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, v1::FLASH_ERROR));
  for (int i = 0; i < 2; ++i) {
    offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  }
  std::optional<v1::JobOffer> running = agent->NextOffer();
  ASSERT_TRUE(running.has_value());
  // Cancel one of the two still queued, one that never ran (so no wait time to observe).
  std::vector<std::string> all = alice;
  all.insert(all.end(), bob.begin(), bob.end());
  std::string queued;
  for (const std::string& id : all) {
    v1::Job job = Get(id);
    if (job.state() == v1::QUEUED && job.attempts_size() == 0) queued = id;
  }
  ASSERT_FALSE(queued.empty());
  ASSERT_TRUE(Cancel(queued).ok());

  // The dispatcher brings the gauges up to date every dispatch period; results and cancellations
  // reach the histograms at once.
  const std::map<std::string, double> expected = {
      {"benchfarm_tracker_trials_submitted_total{client=\"alice\"}", 3},
      {"benchfarm_tracker_trials_submitted_total{client=\"bob\"}", 2},
      {"benchfarm_tracker_jobs_finished_total{result=\"done\"}", 2},
      {"benchfarm_tracker_jobs_finished_total{result=\"cancelled\"}", 1},
      {"benchfarm_tracker_jobs{state=\"QUEUED\"}", 1},
      {"benchfarm_tracker_jobs{state=\"RUNNING\"}", 1},
      {"benchfarm_tracker_boards{state=\"BUSY\"}", 1},
      {"benchfarm_tracker_queue_depth{board_kind=\"host\",priority=\"0\"}", 1},
      {"benchfarm_tracker_requeues_total", 1},
      {"benchfarm_tracker_lease_expiries_total", 0},
      {"benchfarm_tracker_unstable_results_total", 0},
      {"benchfarm_tracker_job_wait_seconds_count", 2},
      {"benchfarm_tracker_job_run_seconds_count", 2},
  };
  std::string response;
  std::map<std::string, double> samples;
  auto matches = [&] {
    response = HttpGet(port, "/metrics");
    size_t body = response.find("\r\n\r\n");
    samples = ParseSamples(body == std::string::npos ? "" : response.substr(body + 4));
    for (const auto& [series, value] : expected) {
      auto it = samples.find(series);
      if (it == samples.end() || it->second != value) return false;
    }
    return true;
  };
  bool matched = WaitFor(matches);
  ASSERT_TRUE(absl::StartsWith(response, "HTTP/1.1 200") ||
              absl::StartsWith(response, "HTTP/1.0 200"))
      << response.substr(0, 200);
  for (const auto& [series, value] : expected) {
    auto it = samples.find(series);
    ASSERT_NE(it, samples.end()) << series << " missing from\n" << response;
    EXPECT_EQ(it->second, value) << series;
  }
  EXPECT_TRUE(matched);
  // Histogram buckets of the wait and run times: every observation is in the +Inf bucket.
  EXPECT_EQ(samples["benchfarm_tracker_job_wait_seconds_bucket{le=\"+Inf\"}"], 2);
  EXPECT_GE(samples["benchfarm_tracker_job_run_seconds_sum"], 0);
  EXPECT_NE(response.find("# TYPE benchfarm_tracker_job_wait_seconds histogram"),
            std::string::npos);
  EXPECT_NE(response.find("# TYPE benchfarm_tracker_jobs_finished_total counter"),
            std::string::npos);
}

TEST_F(ServiceTest, HealthServiceAnswersServing) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NE(server_->GetHealthCheckService(), nullptr);
  // grpc.health.v1.Health/Check with an empty HealthCheckRequest (service ""), spoken through
  // the generic stub: Debian ships no health.proto. HealthCheckResponse.status is field 1.
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(Soon());
  grpc::Slice empty_request("");
  grpc::ByteBuffer request(&empty_request, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  int tag = 1;
  call->Finish(&response, &status, &tag);
  void* got = nullptr;
  bool ok = false;
  ASSERT_EQ(cq.AsyncNext(&got, &ok, Soon()), grpc::CompletionQueue::GOT_EVENT);
  ASSERT_EQ(got, &tag);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  google::protobuf::UnknownFieldSet fields;
  ASSERT_TRUE(fields.ParseFromString(bytes));
  ASSERT_EQ(fields.field_count(), 1);
  EXPECT_EQ(fields.field(0).number(), 1);
  EXPECT_EQ(fields.field(0).varint(), 1u);  // SERVING
  cq.Shutdown();
  while (cq.Next(&got, &ok)) {
  }
}

// ---- the operator catalog ---------------------------------------------------------------------

TEST_F(ServiceTest, OperatorsAreAddedListedAndFetched) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::AddOperatorRequest add;
  v1::Operator* op = add.mutable_op();
  op->set_name("scale");
  op->mutable_spec()->set_entry("scale");
  op->mutable_spec()->add_sources("scale.c");
  (*op->mutable_spec()->mutable_dims())["N"] = 64;
  for (const char* name : {"X", "Y"}) {
    v1::OpArg* arg = op->mutable_spec()->add_args();
    arg->set_name(name);
    arg->add_shape("N");
  }
  v1::Knob* knob = op->mutable_spec()->add_knobs();
  knob->set_name("unroll");
  knob->add_values()->set_number_value(1);
  knob->add_values()->set_number_value(4);
  // A file the spec names is missing: refused, naming the field.
  {
    v1::AddOperatorResponse response;
    grpc::ClientContext context;
    grpc::Status s = client_->AddOperator(&context, add, &response);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("op.files"), std::string::npos) << s.error_message();
  }
  (*op->mutable_files())["scale.c"] = "/* kernel */";
  v1::AddOperatorResponse added;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->AddOperator(&context, add, &added).ok());
  }
  EXPECT_TRUE(added.created());
  EXPECT_EQ(added.op().version().size(), 16u);
  EXPECT_TRUE(added.op().latest());
  EXPECT_EQ(added.op().files_size(), 0);
  v1::ListOperatorsResponse list;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->ListOperators(&context, v1::ListOperatorsRequest(), &list).ok());
  }
  std::vector<std::string> names;
  for (const v1::Operator& o : list.ops()) names.push_back(o.name() + (o.builtin() ? "*" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{"add*", "conv2d*", "matmul*", "scale"}));
  v1::GetOperatorRequest get;
  get.set_name("scale");
  v1::Operator got;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->GetOperator(&context, get, &got).ok());
  }
  EXPECT_EQ(got.files().at("scale.c"), "/* kernel */");
  EXPECT_EQ(got.version(), added.op().version());
  get.set_version("ffffffffffffffff");
  {
    grpc::ClientContext context;
    EXPECT_EQ(client_->GetOperator(&context, get, &got).error_code(), grpc::NOT_FOUND);
  }
}

// ---- results and sizes are checked --------------------------------------------------------------

TEST_F(ServiceTest, ListResultsPagesFitTheirBytes) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // 50 jobs of about 200 KB each (10 MB in all), submitted 10 at a time (2 MB per request, under
  // the server's default 4 MiB receive limit).
  std::vector<std::string> ids;
  for (int batch = 0; batch < 5; ++batch) {
    std::vector<v1::Trial> trials;
    for (int k = 0; k < 10; ++k) {
      v1::Trial t = MakeTrial();
      t.mutable_op()->set_c_source(
          absl::StrCat("/* ", batch, ".", k, " */", std::string(200 * 1000, ' ')));
      t.mutable_op()->set_entry_function("f");
      trials.push_back(t);
    }
    for (const std::string& id : Submit("big", absl::StrCat("r", batch), trials)) ids.push_back(id);
  }
  ASSERT_EQ(ids.size(), 50u);
  // Reads every page; checks each fits `budget` (when it holds more than one job) and the default
  // 4 MiB limit; returns the page sizes in jobs.
  auto list_all = [&](int32_t limit, int64_t max_bytes, int64_t budget) {
    std::vector<int> pages;
    std::vector<std::string> listed;
    v1::ListResultsRequest request;
    request.set_client_id("big");
    request.set_limit(limit);
    request.set_max_bytes(max_bytes);
    for (int n = 0; n < 200; ++n) {
      v1::ListResultsResponse page;
      grpc::ClientContext context;
      context.set_deadline(Soon());
      grpc::Status s = client_->ListResults(&context, request, &page);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) break;
      EXPECT_GE(page.jobs_size(), 1);
      if (page.jobs_size() > 1) {
        EXPECT_LE(static_cast<int64_t>(page.ByteSizeLong()), budget);
      }
      EXPECT_LT(page.ByteSizeLong(), size_t{4} << 20);
      pages.push_back(page.jobs_size());
      for (const v1::Job& j : page.jobs()) listed.push_back(j.job_id());
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
    }
    EXPECT_EQ(listed, ids);  // every job once, in submission order
    return pages;
  };
  // The default: 3 MiB pages (15 jobs of ~200 KB), however many jobs the limit allows.
  std::vector<int> pages = list_all(0, 0, int64_t{3} << 20);
  EXPECT_EQ(pages, (std::vector<int>{15, 15, 15, 5}));
  EXPECT_EQ(list_all(10000, int64_t{1} << 30, int64_t{3} << 20), pages);  // never more than 3 MiB
  // The client's own budget.
  pages = list_all(0, 500 * 1000, 500 * 1000);
  EXPECT_EQ(pages, std::vector<int>(25, 2));
  // A budget smaller than one job still makes progress: one job a page.
  pages = list_all(0, 1000, 1000);
  EXPECT_EQ(pages, std::vector<int>(50, 1));
  // The count limit still applies (the last page by count says more may follow).
  pages = list_all(7, 0, int64_t{3} << 20);
  EXPECT_EQ(pages, (std::vector<int>{7, 7, 7, 7, 7, 7, 7, 1}));

  v1::ListResultsRequest bad;
  bad.set_max_bytes(-1);
  v1::ListResultsResponse response;
  grpc::ClientContext context;
  EXPECT_EQ(client_->ListResults(&context, bad, &response).error_code(), grpc::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, ARefusedResultEndsTheAttemptAndTheJobRunsAgain) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(1, "r1");
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_TRUE(agent->SendResult(offer->job_id(), offer->attempt(), v1::NO_ERROR, -1.0));
  // Not stored as a result: the attempt ended as an infrastructure failure naming the field.
  ASSERT_TRUE(WaitFor(
      [&] { return Get(ids[0]).attempts_size() >= 1 && Get(ids[0]).attempts(0).has_ended_at(); }));
  v1::Job job = Get(ids[0]);
  EXPECT_NE(job.state(), v1::DONE);
  EXPECT_FALSE(job.has_result());
  EXPECT_EQ(job.attempts(0).error_code(), v1::SESSION_ERROR);
  EXPECT_NE(job.attempts(0).message().find("result refused: result.costs_s[0]: -1"),
            std::string::npos)
      << job.attempts(0).message();
}

TEST_F(ServiceTest, SubmissionsOverAClientsCapAreResourceExhausted) {
  JobQueueOptions options = HostOptions();
  options.max_queued_per_client = 3;
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  Submit(3, "r1");
  v1::SubmitTrialsRequest request;
  request.set_client_id("c1");
  request.set_request_id("r2");
  *request.add_trials() = MakeTrial();
  v1::SubmitTrialsResponse response;
  grpc::ClientContext context;
  grpc::Status s = client_->SubmitTrials(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("client c1 has 3 unfinished jobs"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("max_queued_per_client (3)"), std::string::npos);
  EXPECT_EQ(response.job_ids_size(), 0);
}

}  // namespace
}  // namespace benchfarm::tracker
