// The tracker's gRPC surface against an in-process server on port 0, with fake agents speaking
// the agent stream: submission and validation over gRPC, offers, results and their acks, watch
// streams, cancellation reaching the agent, summaries, and the health service.
#include "tracker/service.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tracker/clock.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {
namespace {

using AgentStream = grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>;

v1::Trial MakeTrial(const std::string& kind = "host") {
  v1::Trial t;
  t.set_board_kind(kind);
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) t.add_args()->add_shape(16);
  return t;
}

std::chrono::system_clock::time_point Soon() {
  return std::chrono::system_clock::now() + std::chrono::seconds(10);
}

class ServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                       ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path.c_str());
    store_ = std::move(*SqliteStore::Open(path));
    JobQueueOptions options;
    options.known_kinds = {"host"};
    queue_ = std::make_unique<JobQueue>(store_.get(), &clock_, options);
    ASSERT_TRUE(queue_->Recover().ok());
    ServiceOptions service_options;
    service_options.dispatch_period = absl::Milliseconds(20);
    service_ = std::make_unique<TrackerService>(queue_.get(), &metrics_, service_options);
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(static_cast<v1::Tracker::CallbackService*>(service_.get()));
    builder.RegisterService(static_cast<v1::TrackerAgent::CallbackService*>(service_.get()));
    server_ = builder.BuildAndStart();
    ASSERT_NE(port, 0);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                   grpc::InsecureChannelCredentials());
    client_ = v1::Tracker::NewStub(channel_);
    agents_ = v1::TrackerAgent::NewStub(channel_);
  }

  void TearDown() override {
    service_->Stop();
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
  }

  // A fake agent: opens its stream and registers one "host" board per id.
  std::unique_ptr<AgentStream> Agent(grpc::ClientContext* context, const std::string& agent_id,
                                     const std::vector<std::string>& boards) {
    context->set_deadline(Soon());
    auto stream = agents_->Connect(context);
    v1::AgentMessage m;
    m.mutable_register_()->set_agent_id(agent_id);
    for (const std::string& b : boards) {
      v1::BoardRegistration* r = m.mutable_register_()->add_boards();
      r->set_board_id(b);
      r->set_kind("host");
    }
    EXPECT_TRUE(stream->Write(m));
    v1::TrackerMessage reply;
    EXPECT_TRUE(stream->Read(&reply));
    EXPECT_TRUE(reply.has_registered());
    EXPECT_GT(reply.registered().lease_ms(), 0);
    return stream;
  }

  std::vector<std::string> Submit(int n, const std::string& request_id) {
    v1::SubmitTrialsRequest request;
    request.set_client_id("c1");
    request.set_request_id(request_id);
    for (int i = 0; i < n; ++i) *request.add_trials() = MakeTrial();
    v1::SubmitTrialsResponse response;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    grpc::Status s = client_->SubmitTrials(&context, request, &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {response.job_ids().begin(), response.job_ids().end()};
  }

  v1::Job Get(const std::string& id) {
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    EXPECT_TRUE(client_->GetJob(&context, request, &job).ok());
    return job;
  }

  RealClock clock_;
  Metrics metrics_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<TrackerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tracker::Stub> client_;
  std::unique_ptr<v1::TrackerAgent::Stub> agents_;
};

TEST_F(ServiceTest, MalformedRequestsAreInvalidArgumentAndStoreNothing) {
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
  std::vector<std::string> ids = Submit(2, "r1");
  ASSERT_EQ(ids.size(), 2u);
  grpc::ClientContext context;
  auto agent = Agent(&context, "agent-1", {"b1"});
  for (int i = 0; i < 2; ++i) {
    v1::TrackerMessage m;
    ASSERT_TRUE(agent->Read(&m));
    ASSERT_TRUE(m.has_offer()) << m.DebugString();
    EXPECT_EQ(m.offer().board_id(), "b1");
    EXPECT_EQ(m.offer().job_id(), ids[i]);  // FIFO
    v1::AgentMessage result;
    result.mutable_result()->set_job_id(m.offer().job_id());
    result.mutable_result()->set_attempt(m.offer().attempt());
    result.mutable_result()->mutable_result()->add_costs_s(1e-4 * (i + 1));
    ASSERT_TRUE(agent->Write(result));
    v1::TrackerMessage ack;
    ASSERT_TRUE(agent->Read(&ack));
    ASSERT_TRUE(ack.has_result_ack());
    EXPECT_EQ(ack.result_ack().job_id(), ids[i]);
  }
  v1::Job job = Get(ids[1]);
  EXPECT_EQ(job.state(), v1::DONE);
  EXPECT_EQ(job.result().costs_s(0), 2e-4);
  EXPECT_EQ(job.result().attempts(), 1);

  v1::QueueSummaryRequest summary_request;
  v1::QueueSummaryResponse summary;
  grpc::ClientContext c2;
  ASSERT_TRUE(client_->QueueSummary(&c2, summary_request, &summary).ok());
  ASSERT_EQ(summary.kinds_size(), 1);
  EXPECT_EQ(summary.kinds(0).boards_total(), 1);
  EXPECT_EQ(summary.kinds(0).boards_free(), 1);

  agent->WritesDone();
  EXPECT_TRUE(agent->Finish().ok());
  v1::ListBoardsRequest boards_request;
  v1::ListBoardsResponse boards;
  grpc::ClientContext c3;
  ASSERT_TRUE(client_->ListBoards(&c3, boards_request, &boards).ok());
  ASSERT_EQ(boards.boards_size(), 1);
  // The stream ended: the board is offline (give the server a moment to run OnDone).
  for (int i = 0; i < 100 && queue_->Boards("host")[0].state() != v1::OFFLINE; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::OFFLINE);
}

TEST_F(ServiceTest, WatchFollowsJobsToTheEnd) {
  std::vector<std::string> ids = Submit(1, "r1");
  v1::WatchJobsRequest watch;
  watch.add_job_ids(ids[0]);
  grpc::ClientContext watch_context;
  watch_context.set_deadline(Soon());
  auto watcher = client_->WatchJobs(&watch_context, watch);
  v1::JobEvent event;
  ASSERT_TRUE(watcher->Read(&event));
  EXPECT_EQ(event.job().state(), v1::QUEUED);

  grpc::ClientContext context;
  auto agent = Agent(&context, "agent-1", {"b1"});
  v1::TrackerMessage m;
  ASSERT_TRUE(agent->Read(&m));
  ASSERT_TRUE(m.has_offer());
  v1::AgentMessage result;
  result.mutable_result()->set_job_id(m.offer().job_id());
  result.mutable_result()->set_attempt(m.offer().attempt());
  result.mutable_result()->mutable_result()->set_error_code(v1::WRONG_ANSWER);
  ASSERT_TRUE(agent->Write(result));

  std::vector<v1::JobState> states;
  while (watcher->Read(&event)) states.push_back(event.job().state());
  EXPECT_TRUE(watcher->Finish().ok());  // ends by itself once the job is done
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), v1::DONE);
  EXPECT_EQ(Get(ids[0]).result().autotvm_error_no(), 5);
}

TEST_F(ServiceTest, CancellingARunningJobTellsItsAgent) {
  std::vector<std::string> ids = Submit(1, "r1");
  grpc::ClientContext context;
  auto agent = Agent(&context, "agent-1", {"b1"});
  v1::TrackerMessage m;
  ASSERT_TRUE(agent->Read(&m));
  ASSERT_TRUE(m.has_offer());
  v1::CancelJobRequest cancel;
  cancel.set_job_id(ids[0]);
  v1::CancelJobResponse cancelled;
  grpc::ClientContext c2;
  ASSERT_TRUE(client_->CancelJob(&c2, cancel, &cancelled).ok());
  EXPECT_EQ(cancelled.job().state(), v1::CANCELLED_STATE);
  ASSERT_TRUE(agent->Read(&m));
  ASSERT_TRUE(m.has_cancel());
  EXPECT_EQ(m.cancel().job_id(), ids[0]);
}

TEST_F(ServiceTest, AMessageBeforeRegisterEndsTheStream) {
  grpc::ClientContext context;
  auto stream = agents_->Connect(&context);
  v1::AgentMessage m;
  m.mutable_heartbeat();
  ASSERT_TRUE(stream->Write(m));
  v1::TrackerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  EXPECT_EQ(stream->Finish().error_code(), grpc::FAILED_PRECONDITION);
}

TEST_F(ServiceTest, HealthServiceIsOn) {
  ASSERT_NE(server_->GetHealthCheckService(), nullptr);
}

}  // namespace
}  // namespace benchfarm::tracker
