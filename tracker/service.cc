// TrackerService: see service.h.
#include "tracker/service.h"

#include <deque>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "tracker/metrics.h"

namespace benchfarm::tracker {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

}  // namespace

// ---- the agent stream -------------------------------------------------------------------------

// One agent's stream. Reads are handled one at a time; writes go through an outbox with one
// write in flight. Deletes itself when gRPC is done with it.
class AgentStream final : public grpc::ServerBidiReactor<v1::AgentMessage, v1::TrackerMessage> {
 public:
  explicit AgentStream(TrackerService* service) : service_(service) { StartRead(&in_); }

  // Sends offers and cancellations for this agent's free boards (dispatcher thread).
  void Pump() {
    std::string agent;
    {
      absl::MutexLock lock(&mu_);
      if (closing_ || agent_id_.empty()) return;
      agent = agent_id_;
    }
    for (Offer& offer : service_->queue()->TakeOffers(agent)) {
      v1::TrackerMessage m;
      *m.mutable_offer() = std::move(offer.offer);
      Send(std::move(m));
    }
    for (std::string& job_id : service_->queue()->TakeCancels(agent)) {
      v1::TrackerMessage m;
      m.mutable_cancel()->set_job_id(std::move(job_id));
      Send(std::move(m));
    }
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Close(grpc::Status::OK);
      return;
    }
    grpc::Status status = Handle(in_);
    if (!status.ok()) {
      Close(status);
      return;
    }
    StartRead(&in_);
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    // A failed write means the stream is broken: nothing more is sent, and the read side (which
    // fails too) closes it; if it already has, WriteNextLocked finishes the stream here.
    if (!ok) write_failed_ = true;
    WriteNextLocked();
  }

  void OnDone() override {
    std::string agent;
    {
      absl::MutexLock lock(&mu_);
      agent = agent_id_;
    }
    if (!agent.empty()) service_->Detach(agent, this);
    delete this;
  }

  void OnCancel() override {}

 private:
  grpc::Status Handle(const v1::AgentMessage& m) {
    JobQueue* queue = service_->queue();
    std::string agent;
    {
      absl::MutexLock lock(&mu_);
      agent = agent_id_;
    }
    if (m.has_register_()) {
      if (!agent.empty()) return grpc::Status(grpc::FAILED_PRECONDITION, "registered twice");
      absl::Status s = service_->Attach(m.register_(), this);
      if (!s.ok()) return ToGrpc(s);
      v1::TrackerMessage reply;
      reply.mutable_registered()->set_heartbeat_period_ms(
          static_cast<int32_t>(absl::ToInt64Milliseconds(service_->options().heartbeat)));
      reply.mutable_registered()->set_lease_ms(
          static_cast<int32_t>(absl::ToInt64Milliseconds(service_->options().lease)));
      Send(std::move(reply));
      {
        // Only now may Pump send offers: none can overtake the registered reply.
        absl::MutexLock lock(&mu_);
        agent_id_ = m.register_().agent_id();
      }
      service_->Poke();
      return grpc::Status::OK;
    }
    if (agent.empty()) {
      return grpc::Status(grpc::FAILED_PRECONDITION, "the first message must be register");
    }
    queue->Touch(agent);
    switch (m.msg_case()) {
      case v1::AgentMessage::kResult: {
        absl::Status s = queue->ReportResult(agent, m.result());
        if (s.ok()) {
          v1::TrackerMessage ack;
          ack.mutable_result_ack()->set_job_id(m.result().job_id());
          Send(std::move(ack));
          service_->Poke();
        }
        // Not stored: no ack, so the agent keeps the result and sends it again.
        return grpc::Status::OK;
      }
      case v1::AgentMessage::kBoard:
        queue->RecordFlashes(agent, m.board());
        return grpc::Status::OK;
      case v1::AgentMessage::kHeartbeat:
      case v1::AgentMessage::kAck:
      case v1::AgentMessage::kProgress:
        return grpc::Status::OK;
      default:
        return grpc::Status(grpc::INVALID_ARGUMENT, "empty agent message");
    }
  }

  void Send(v1::TrackerMessage m) {
    absl::MutexLock lock(&mu_);
    if (closing_ || write_failed_) return;
    outbox_.push_back(std::move(m));
    WriteNextLocked();
  }

  // Starts the next write, or — once the stream is closing and nothing more can or need be
  // written — finishes it (exactly once; gRPC then calls OnDone).
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_) return;
    if (write_failed_ || (closing_ && !final_status_.ok())) outbox_.clear();
    if (outbox_.empty()) {
      if (closing_ && !finished_) {
        finished_ = true;
        Finish(final_status_);
      }
      return;
    }
    current_ = std::move(outbox_.front());
    outbox_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }

  void Close(grpc::Status status) {
    absl::MutexLock lock(&mu_);
    if (closing_) return;
    closing_ = true;
    final_status_ = std::move(status);
    WriteNextLocked();
  }

  TrackerService* const service_;
  v1::AgentMessage in_;
  absl::Mutex mu_;
  std::string agent_id_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::TrackerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  v1::TrackerMessage current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // the read side ended (or a message was bad)
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

// ---- WatchJobs --------------------------------------------------------------------------------

class JobWatcher final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  JobWatcher(JobQueue* queue, const v1::WatchJobsRequest& request)
      : queue_(queue),
        client_id_(request.client_id()),
        job_ids_(request.job_ids().begin(), request.job_ids().end()),
        remaining_(job_ids_) {
    listener_ = queue_->AddListener([this](const v1::Job& job) { OnJob(job); });
    // The current state of named jobs first (they may have finished already).
    for (const std::string& id : job_ids_) {
      absl::StatusOr<v1::Job> job = queue_->GetJob(id);
      if (job.ok()) OnJob(*job);
    }
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (!ok) {
      FinishLocked(grpc::Status::CANCELLED);  // the client went away
      return;
    }
    WriteNextLocked();
  }

  void OnCancel() override {
    absl::MutexLock lock(&mu_);
    FinishLocked(grpc::Status::CANCELLED);
  }

  void OnDone() override {
    queue_->RemoveListener(listener_);
    delete this;
  }

 private:
  void OnJob(const v1::Job& job) {
    if (!client_id_.empty() && job.client_id() != client_id_) return;
    if (!job_ids_.empty() && job_ids_.count(job.job_id()) == 0) return;
    absl::MutexLock lock(&mu_);
    if (done_) return;
    v1::JobEvent event;
    *event.mutable_job() = job;
    outbox_.push_back(std::move(event));
    if (job.state() == v1::DONE || job.state() == v1::CANCELLED_STATE) remaining_.erase(job.job_id());
    WriteNextLocked();
  }

  // Finishes the call exactly once; nothing is written after.
  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (done_) return;
    done_ = true;
    outbox_.clear();
    Finish(std::move(status));
  }

  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || done_) return;
    if (outbox_.empty()) {
      if (!job_ids_.empty() && remaining_.empty()) {
        FinishLocked(grpc::Status::OK);  // every watched job has finished
      }
      return;
    }
    current_ = std::move(outbox_.front());
    outbox_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }

  JobQueue* const queue_;
  const std::string client_id_;
  const std::set<std::string> job_ids_;
  int listener_ = 0;
  absl::Mutex mu_;
  std::set<std::string> remaining_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::JobEvent> outbox_ ABSL_GUARDED_BY(mu_);
  v1::JobEvent current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

// ---- the service ------------------------------------------------------------------------------

TrackerService::TrackerService(JobQueue* queue, Metrics* metrics, ServiceOptions options)
    : queue_(queue), metrics_(metrics), options_(options) {
  queue_->AddListener([this](const v1::Job& job) {
    if (job.state() == v1::DONE || job.state() == v1::CANCELLED_STATE) {
      if (metrics_ != nullptr) metrics_->JobFinished(job);
    }
    if (job.state() == v1::QUEUED) Poke();
  });
  dispatcher_ = std::thread([this] { DispatchLoop(); });
}

TrackerService::~TrackerService() { Stop(); }

void TrackerService::Stop() {
  {
    absl::MutexLock lock(&poke_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (dispatcher_.joinable()) dispatcher_.join();
}

void TrackerService::Poke() {
  absl::MutexLock lock(&poke_mu_);
  poked_ = true;
}

absl::Status TrackerService::Attach(const v1::Register& registration, AgentStream* stream) {
  absl::MutexLock lock(&mu_);
  absl::Status s = queue_->RegisterAgent(registration);
  if (s.ok()) streams_[registration.agent_id()] = stream;
  return s;
}

void TrackerService::Detach(const std::string& agent_id, AgentStream* stream) {
  // Under mu_, so a new stream of the same agent is attached either before (this one is no
  // longer the agent's: nothing to do) or after (its registration reconnects the agent).
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(agent_id);
  if (it == streams_.end() || it->second != stream) return;
  streams_.erase(it);
  queue_->DisconnectAgent(agent_id);
}

void TrackerService::DispatchLoop() {
  absl::Time last_full = absl::InfinitePast();
  for (;;) {
    {
      absl::MutexLock lock(&poke_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(poke_mu_) { return poked_ || stopping_; };
      poke_mu_.AwaitWithTimeout(absl::Condition(&ready), options_.dispatch_period);
      if (stopping_) return;
      poked_ = false;
    }
    DispatchOnce();
    if (absl::Now() - last_full >= options_.dispatch_period) {
      queue_->ExpireLeases();
      if (metrics_ != nullptr) metrics_->Update(queue_->Stats());
      last_full = absl::Now();
    }
  }
}

void TrackerService::DispatchOnce() {
  // Streams cannot be deleted while mu_ is held (OnDone detaches under it first).
  absl::MutexLock lock(&mu_);
  for (auto& [agent, stream] : streams_) stream->Pump();
}

grpc::ServerUnaryReactor* TrackerService::SubmitTrials(grpc::CallbackServerContext* context,
                                                       const v1::SubmitTrialsRequest* request,
                                                       v1::SubmitTrialsResponse* response) {
  std::vector<v1::Trial> trials(request->trials().begin(), request->trials().end());
  absl::StatusOr<std::vector<std::string>> ids =
      queue_->Submit(request->client_id(), request->request_id(), trials);
  if (ids.ok()) {
    for (std::string& id : *ids) response->add_job_ids(std::move(id));
  }
  return Done(context, ids.status());
}

grpc::ServerUnaryReactor* TrackerService::GetJob(grpc::CallbackServerContext* context,
                                                 const v1::GetJobRequest* request,
                                                 v1::Job* response) {
  if (request->job_id().empty()) {
    return Done(context, absl::InvalidArgumentError("job_id: required"));
  }
  absl::StatusOr<v1::Job> job = queue_->GetJob(request->job_id());
  if (job.ok()) *response = std::move(*job);
  return Done(context, job.status());
}

grpc::ServerWriteReactor<v1::JobEvent>* TrackerService::WatchJobs(
    grpc::CallbackServerContext* context, const v1::WatchJobsRequest* request) {
  (void)context;
  return new JobWatcher(queue_, *request);
}

grpc::ServerUnaryReactor* TrackerService::CancelJob(grpc::CallbackServerContext* context,
                                                    const v1::CancelJobRequest* request,
                                                    v1::CancelJobResponse* response) {
  if (request->job_id().empty()) {
    return Done(context, absl::InvalidArgumentError("job_id: required"));
  }
  absl::StatusOr<v1::Job> job = queue_->Cancel(request->job_id());
  if (job.ok()) *response->mutable_job() = std::move(*job);
  Poke();
  return Done(context, job.status());
}

grpc::ServerUnaryReactor* TrackerService::ListResults(grpc::CallbackServerContext* context,
                                                      const v1::ListResultsRequest* request,
                                                      v1::ListResultsResponse* response) {
  JobFilter filter;
  filter.client_id = request->client_id();
  filter.board_kind = request->board_kind();
  filter.op = request->op();
  filter.state = request->state();
  if (request->limit() < 0 || request->limit() > 10000) {
    return Done(context, absl::InvalidArgumentError("limit: must be in 0..10000"));
  }
  filter.limit = request->limit() == 0 ? 1000 : request->limit();
  if (!request->page_token().empty() && !absl::SimpleAtoi(request->page_token(), &filter.after_seq)) {
    return Done(context, absl::InvalidArgumentError("page_token: not a token from this tracker"));
  }
  absl::StatusOr<std::vector<StoredJob>> jobs = queue_->List(filter);
  if (jobs.ok()) {
    for (StoredJob& job : *jobs) *response->add_jobs() = std::move(job.job);
    if (static_cast<int>(jobs->size()) == filter.limit) {
      response->set_next_page_token(absl::StrCat(jobs->back().seq));
    }
  }
  return Done(context, jobs.status());
}

grpc::ServerUnaryReactor* TrackerService::QueueSummary(grpc::CallbackServerContext* context,
                                                       const v1::QueueSummaryRequest*,
                                                       v1::QueueSummaryResponse* response) {
  for (v1::KindSummary& kind : queue_->Summary()) *response->add_kinds() = std::move(kind);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::ListBoards(grpc::CallbackServerContext* context,
                                                     const v1::ListBoardsRequest* request,
                                                     v1::ListBoardsResponse* response) {
  for (v1::Board& board : queue_->Boards(request->board_kind())) {
    *response->add_boards() = std::move(board);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::AddOperator(grpc::CallbackServerContext* context,
                                                      const v1::AddOperatorRequest* request,
                                                      v1::AddOperatorResponse* response) {
  absl::StatusOr<OperatorCatalog::Added> added =
      queue_->catalog()->Add(request->op(), absl::Now());
  if (added.ok()) {
    *response->mutable_op() = std::move(added->op);
    response->set_created(added->created);
  }
  return Done(context, added.status());
}

grpc::ServerUnaryReactor* TrackerService::ListOperators(grpc::CallbackServerContext* context,
                                                        const v1::ListOperatorsRequest* request,
                                                        v1::ListOperatorsResponse* response) {
  for (v1::Operator& op : queue_->catalog()->List(request->name(), request->all_versions())) {
    *response->add_ops() = std::move(op);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::GetOperator(grpc::CallbackServerContext* context,
                                                      const v1::GetOperatorRequest* request,
                                                      v1::Operator* response) {
  absl::StatusOr<v1::Operator> op = queue_->catalog()->Get(request->name(), request->version());
  if (op.ok()) *response = *std::move(op);
  return Done(context, op.status());
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::TrackerMessage>* TrackerService::Connect(
    grpc::CallbackServerContext* context) {
  (void)context;
  return new AgentStream(this);
}

}  // namespace benchfarm::tracker
