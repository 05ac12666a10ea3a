#include "tracker/service_test_fixture.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpcpp/health_check_service_interface.h"

namespace benchfarm::tracker {

v1::Trial MakeTrial(const std::string& kind, int priority) {
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

bool WaitFor(const std::function<bool()>& probe, absl::Duration limit) {
  const absl::Time end = absl::Now() + limit;
  while (!probe()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

v1::BoardRegistration Board(const std::string& id, const std::string& kind,
                            const std::map<std::string, std::string>& labels, int slots) {
  v1::BoardRegistration b;
  b.set_board_id(id);
  b.set_kind(kind);
  for (const auto& [key, value] : labels) (*b.mutable_labels())[key] = value;
  b.set_slots(slots);
  return b;
}

v1::Register Registration(const std::string& agent_id,
                          const std::vector<v1::BoardRegistration>& boards,
                          const std::vector<std::string>& held) {
  v1::Register r;
  r.set_agent_id(agent_id);
  for (const v1::BoardRegistration& b : boards) *r.add_boards() = b;
  for (const std::string& id : held) r.add_held_job_ids(id);
  return r;
}

FakeAgent::FakeAgent(v1::TrackerAgent::Stub* stub, const v1::Register& registration) {
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

FakeAgent::~FakeAgent() { Hangup(); }

bool FakeAgent::Send(const v1::AgentMessage& m) { return stream_->Write(m); }

bool FakeAgent::Heartbeat(const std::vector<std::pair<std::string, int>>& held) {
  v1::AgentMessage m;
  v1::Heartbeat* beat = m.mutable_heartbeat();
  for (const auto& [job_id, attempt] : held) {
    v1::HeldAttempt* h = beat->add_held();
    h->set_job_id(job_id);
    h->set_attempt(attempt);
  }
  return Send(m);
}

bool FakeAgent::SendResult(const std::string& job_id, int attempt, v1::ErrorCode code,
                           double cost_s) {
  v1::AgentMessage m;
  m.mutable_result()->set_job_id(job_id);
  m.mutable_result()->set_attempt(attempt);
  m.mutable_result()->mutable_result()->set_error_code(code);
  if (code == v1::NO_ERROR) m.mutable_result()->mutable_result()->add_costs_s(cost_s);
  return Send(m);
}

void FakeAgent::Report(const v1::JobOffer& offer, v1::ErrorCode code) {
  ASSERT_TRUE(SendResult(offer.job_id(), offer.attempt(), code));
  ASSERT_TRUE(AwaitAck(offer.job_id())) << "no ack for " << offer.job_id();
}

std::optional<v1::JobOffer> FakeAgent::NextOffer() {
  std::optional<v1::TrackerMessage> m =
      Next([](const v1::TrackerMessage& t) { return t.has_offer(); });
  if (!m.has_value()) return std::nullopt;
  return m->offer();
}

std::optional<std::string> FakeAgent::NextCancel() {
  std::optional<v1::TrackerMessage> m =
      Next([](const v1::TrackerMessage& t) { return t.has_cancel(); });
  if (!m.has_value()) return std::nullopt;
  return m->cancel().job_id();
}

std::optional<v1::TrackerMessage> FakeAgent::NextMessage() {
  return Next([](const v1::TrackerMessage&) { return true; });
}

bool FakeAgent::AwaitAck(const std::string& job_id) {
  return Next([&](const v1::TrackerMessage& t) {
           return t.has_result_ack() && t.result_ack().job_id() == job_id;
         })
      .has_value();
}

grpc::Status FakeAgent::Hangup() {
  if (!finished_) {
    finished_ = true;
    context_.TryCancel();
    status_ = stream_->Finish();
  }
  return status_;
}

grpc::Status FakeAgent::Close() {
  if (!finished_) {
    finished_ = true;
    stream_->WritesDone();
    v1::TrackerMessage m;
    while (stream_->Read(&m)) pending_.push_back(m);
    status_ = stream_->Finish();
  }
  return status_;
}

std::optional<v1::TrackerMessage> FakeAgent::Next(
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

JobQueueOptions ServiceTest::HostOptions() {
  JobQueueOptions options;
  options.known_kinds = {"host"};
  return options;
}

void ServiceTest::StartServer(JobQueueOptions options, const base::Clock* clock) {
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

void ServiceTest::TearDown() {
  if (service_) service_->Stop();
  if (server_) server_->Shutdown(In(absl::Seconds(1)));
  if (queue_) (void)queue_->Flush();  // answers waiting for the store use the server and service
}

std::unique_ptr<FakeAgent> ServiceTest::Agent(const v1::Register& registration) {
  return std::make_unique<FakeAgent>(agents_.get(), registration);
}

std::vector<std::string> ServiceTest::Submit(const std::string& client_id,
                                             const std::string& request_id,
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

std::vector<std::string> ServiceTest::Submit(int n, const std::string& request_id) {
  return Submit("c1", request_id, std::vector<v1::Trial>(n, MakeTrial()));
}

v1::Job ServiceTest::Get(const std::string& id) {
  v1::GetJobRequest request;
  request.set_job_id(id);
  v1::Job job;
  grpc::ClientContext context;
  context.set_deadline(Soon());
  grpc::Status s = client_->GetJob(&context, request, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

grpc::Status ServiceTest::Cancel(const std::string& id, v1::Job* job) {
  v1::CancelJobRequest request;
  request.set_job_id(id);
  v1::CancelJobResponse response;
  grpc::ClientContext context;
  context.set_deadline(Soon());
  grpc::Status s = client_->CancelJob(&context, request, &response);
  if (job != nullptr) *job = response.job();
  return s;
}

v1::Board ServiceTest::ListedBoard(const std::string& board_id) {
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

v1::KindSummary ServiceTest::Summary(const std::string& kind) {
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

int64_t ServiceTest::Queued(const v1::KindSummary& k, int priority) {
  auto it = k.queued_by_priority().find(priority);
  return it == k.queued_by_priority().end() ? 0 : it->second;
}

}  // namespace benchfarm::tracker
