#include "tests/in_process_tracker.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

namespace benchfarm::testing {

InProcessTracker::InProcessTracker(std::string database, tracker::JobQueueOptions queue_options,
                                   tracker::ServiceOptions service_options)
    : database_(std::move(database)),
      queue_options_(std::move(queue_options)),
      service_options_(service_options) {}

InProcessTracker::~InProcessTracker() { Stop(); }

absl::Status InProcessTracker::Start(int port) {
  if (server_ != nullptr) return absl::FailedPreconditionError("already running");
  absl::StatusOr<std::unique_ptr<tracker::SqliteStore>> store =
      tracker::SqliteStore::Open(database_);
  if (!store.ok()) return store.status();
  store_ = *std::move(store);
  flaky_ = std::make_unique<tracker::FlakyStore>(store_.get());
  queue_ = std::make_unique<tracker::JobQueue>(flaky_.get(), &clock_, queue_options_);
  absl::Status recovered = queue_->Recover();
  if (!recovered.ok()) return recovered;
  metrics_ = std::make_unique<tracker::Metrics>();
  service_ =
      std::make_unique<tracker::TrackerService>(queue_.get(), metrics_.get(), service_options_);
  grpc::ServerBuilder builder;
  int bound = 0;
  const int want = port != 0 ? port : port_;
  builder.AddListeningPort(absl::StrCat("127.0.0.1:", want), grpc::InsecureServerCredentials(),
                           &bound);
  service_->AddTo(&builder);
  server_ = builder.BuildAndStart();
  if (server_ == nullptr || bound == 0) {
    server_.reset();
    return absl::UnavailableError(absl::StrCat("cannot listen on 127.0.0.1:", want));
  }
  if (port_ == 0) port_ = bound;
  if (channel_ == nullptr) {
    grpc::ChannelArguments args;  // reconnect soon after a restart
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
    channel_ = grpc::CreateCustomChannel(address(), grpc::InsecureChannelCredentials(), args);
    client_ = v1::Tracker::NewStub(channel_);
  }
  return absl::OkStatus();
}

void InProcessTracker::Stop() {
  if (server_ == nullptr) return;
  service_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  server_->Wait();
  (void)queue_->Flush();  // answers still waiting for the store use the server and the service
  server_.reset();
  service_.reset();
  metrics_.reset();
  queue_.reset();
  flaky_.reset();
  store_.reset();
}

v1::Tracker::Stub* InProcessTracker::client() { return client_.get(); }

absl::StatusOr<std::vector<std::string>> InProcessTracker::Submit(
    const std::vector<v1::Trial>& trials, const std::string& client_id) {
  static int request = 0;
  v1::SubmitTrialsRequest req;
  req.set_client_id(client_id);
  req.set_request_id(absl::StrCat("req-", ++request, "-", absl::ToUnixNanos(absl::Now())));
  for (const v1::Trial& t : trials) *req.add_trials() = t;
  v1::SubmitTrialsResponse resp;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  grpc::Status s = client_->SubmitTrials(&context, req, &resp);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  return std::vector<std::string>(resp.job_ids().begin(), resp.job_ids().end());
}

v1::AgentConfig InProcessTracker::AgentConfig(const std::string& agent_id,
                                              const std::string& state_dir) const {
  v1::AgentConfig c;
  c.set_agent_id(agent_id);
  c.set_tracker_address(address());
  c.mutable_credentials()->set_insecure(true);
  c.set_scratch_dir(state_dir + "/scratch");
  c.set_cache_dir(state_dir + "/cache");
  c.set_spool_dir(state_dir + "/spool");
  return c;
}

absl::StatusOr<v1::Operator> InProcessTracker::AddOperator(const v1::Operator& op) {
  v1::AddOperatorRequest req;
  *req.mutable_op() = op;
  v1::AddOperatorResponse resp;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = client_->AddOperator(&context, req, &resp);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  return resp.op();
}

absl::StatusOr<v1::Job> InProcessTracker::GetJob(const std::string& job_id) {
  v1::GetJobRequest req;
  req.set_job_id(job_id);
  v1::Job job;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = client_->GetJob(&context, req, &job);
  if (!s.ok()) {
    return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  }
  return job;
}

absl::StatusOr<std::vector<v1::Job>> InProcessTracker::WaitFinished(
    const std::vector<std::string>& job_ids, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    std::vector<v1::Job> jobs;
    std::string unfinished;
    for (const std::string& id : job_ids) {
      absl::StatusOr<v1::Job> job = GetJob(id);
      if (!job.ok()) return job.status();
      if (job->state() != v1::DONE && job->state() != v1::CANCELLED_STATE && unfinished.empty()) {
        unfinished = absl::StrCat(id, " is ", v1::JobState_Name(job->state()));
      }
      jobs.push_back(*std::move(job));
    }
    if (unfinished.empty()) return jobs;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat("not finished in time: ", unfinished));
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

}  // namespace benchfarm::testing
