// TrackerService: see service.h.
#include "tracker/service.h"

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/memory.h"
#include "catalog/trial.h"
#include "spdlog/spdlog.h"
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
  AgentStream(TrackerService* service, Caller caller)
      : service_(service), caller_(std::move(caller)) {
    StartRead(&in_);
  }

  // A stream of an agent that registered again on a newer stream: ended, with the reason.
  void Replace(const std::string& why) { Close(grpc::Status(grpc::ABORTED, why)); }

  // Ends a stream whose caller may not use it (before it registered anything), or whose
  // credential was revoked since.
  void Refuse(const absl::Status& status) { Close(ToGrpc(status)); }

  const Caller& caller() const { return caller_; }

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
      if (closing_) return grpc::Status::OK;  // refused or replaced: nothing more is taken
      agent = agent_id_;
    }
    if (m.has_register_()) {
      if (!agent.empty()) return grpc::Status(grpc::FAILED_PRECONDITION, "registered twice");
      absl::Status s = service_->Attach(caller_, m.register_(), this);
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
        batched_acks_ = m.register_().batched_acks();
      }
      service_->Poke(m.register_().agent_id());
      return grpc::Status::OK;
    }
    if (agent.empty()) {
      return grpc::Status(grpc::FAILED_PRECONDITION, "the first message must be register");
    }
    // Leases are renewed for exactly the attempts the agent says it holds (JobQueue::Touch).
    switch (m.msg_case()) {
      case v1::AgentMessage::kResult: {
        const v1::JobResult& result = m.result();
        bool superseded = false;
        GroupCommit::Ticket ticket = 0;
        absl::Status s = queue->ReportResult(agent, result, &superseded, &ticket);
        if (s.ok()) {
          v1::TrackerMessage ack;
          ack.mutable_result_ack()->set_job_id(result.job_id());
          ack.mutable_result_ack()->set_attempt(result.attempt());
          ack.mutable_result_ack()->set_superseded(superseded);
          {
            absl::MutexLock lock(&mu_);
            // Keeps the stream open (and this reactor alive) until answered; with batched acks,
            // the offers sent meanwhile wait to carry the acknowledgement (WriteNextLocked).
            ++awaiting_store_;
          }
          // The board is free now: its next job is taken at once, from this thread (no
          // dispatcher wake-up); the result is acknowledged once it is stored.
          Pump();
          queue->WhenDurable(ticket, [this, ack = std::move(ack)](absl::Status stored) mutable {
            if (stored.ok()) {
              Answer(std::move(ack));
            } else {
              Answer(ResultRetry(ack.result_ack().job_id(), ack.result_ack().attempt(), stored));
            }
          });
          return grpc::Status::OK;
        }
        if (absl::IsInvalidArgument(s)) {
          // Refused (a non-finite cost, an oversized message...): the attempt already ended as an
          // infrastructure failure and the job re-queued. Ending the stream tells the agent why;
          // its spooled copy, sent again after it reconnects, is ignored (that attempt is over)
          // and acknowledged.
          service_->Poke();
          return ToGrpc(s);
        }
        // Not stored (the database is failing): the agent keeps the result and sends it again;
        // meanwhile its attempt stays leased (a recorded result ends the attempt instead).
        queue->Touch(agent, result.job_id(), result.attempt());
        Send(ResultRetry(result.job_id(), result.attempt(), s));
        return grpc::Status::OK;
      }
      case v1::AgentMessage::kBoard:
        queue->RecordFlashes(agent, m.board());
        return grpc::Status::OK;
      case v1::AgentMessage::kHeartbeat:
        queue->Touch(agent, std::vector<v1::HeldAttempt>(m.heartbeat().held().begin(),
                                                         m.heartbeat().held().end()));
        return grpc::Status::OK;
      case v1::AgentMessage::kAck:
        queue->Touch(agent, m.ack().job_id(), m.ack().attempt());
        return grpc::Status::OK;
      case v1::AgentMessage::kProgress:
        queue->Touch(agent, m.progress().job_id(), m.progress().attempt());
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
  // The answer to a result, once the store has decided (commit thread). Sent even if the read
  // side has ended meanwhile (the agent may still read it).
  void Answer(v1::TrackerMessage m) {
    absl::MutexLock lock(&mu_);
    --awaiting_store_;
    if (!write_failed_ && !(closing_ && !final_status_.ok())) {
      if (batched_acks_ && m.has_result_ack()) {
        acks_.push_back(std::move(*m.mutable_result_ack()));
      } else {
        outbox_.push_back(std::move(m));
      }
    }
    WriteNextLocked();
  }
  // Tells the agent to send a result again later: it could not be stored.
  v1::TrackerMessage ResultRetry(const std::string& job_id, int attempt,
                                 const absl::Status& why) const {
    v1::TrackerMessage retry;
    v1::ResultRetry* r = retry.mutable_result_retry();
    r->set_job_id(job_id);
    r->set_attempt(attempt);
    r->set_reason(std::string(why.message()));
    r->set_retry_after_ms(
        static_cast<int32_t>(absl::ToInt64Milliseconds(service_->options().result_retry)));
    return retry;
  }

  // Starts the next write, or — once the stream is closing and nothing more can or need be
  // written — finishes it (exactly once; gRPC then calls OnDone). With batched acks, the
  // acknowledgements ready ride on the next message, and an offer waits while results are
  // being stored until one of their acknowledgements can ride on it (one message where there
  // were two; they are stored within a group commit).
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_) return;
    if (write_failed_ || (closing_ && !final_status_.ok())) {
      outbox_.clear();
      acks_.clear();
    }
    if (outbox_.empty() && acks_.empty()) {
      if (closing_ && !finished_ && awaiting_store_ == 0) {
        finished_ = true;
        Finish(final_status_);
      }
      return;
    }
    if (batched_acks_ && !outbox_.empty() && outbox_.front().has_offer() && acks_.empty() &&
        awaiting_store_ > 0) {
      return;  // Answer brings the acknowledgement
    }
    if (outbox_.empty()) {
      current_.Clear();
    } else {
      current_ = std::move(outbox_.front());
      outbox_.pop_front();
    }
    for (v1::ResultAck& ack : acks_) *current_.add_acks() = std::move(ack);
    acks_.clear();
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
  const Caller caller_;
  v1::AgentMessage in_;
  absl::Mutex mu_;
  std::string agent_id_ ABSL_GUARDED_BY(mu_);
  bool batched_acks_ ABSL_GUARDED_BY(mu_) = false;  // the agent reads TrackerMessage.acks
  std::deque<v1::TrackerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ResultAck> acks_ ABSL_GUARDED_BY(mu_);  // to ride on the next message
  v1::TrackerMessage current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // the read side ended (or a message was bad)
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int awaiting_store_ ABSL_GUARDED_BY(mu_) = 0;  // results whose answer waits for the store
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

// ---- WatchJobs --------------------------------------------------------------------------------

class JobWatcher;

// One job event, shared by every stream that shows it: one immutable copy of the job per event,
// however many streams watch it.
struct WatchEvent {
  std::shared_ptr<const v1::Job> job;
  int64_t bytes = 0;  // serialized
};

// What one WatchJobs stream has to send: its filter, its bounded buffer and the state of its
// writes. Shared by the stream's reactor, the hub (which offers it events under the queue's lock:
// a push, nothing more) and the hub's pump thread (which starts writes and finishes cut streams
// outside any lock of the queue's or the hub's).
//
// The reactor stays alive while `writing` or `busy` is set or Finish has not been called (gRPC
// calls OnDone only after Finish): that is what lets Advance call it outside `mu`.
class WatchSink : public std::enable_shared_from_this<WatchSink> {
 public:
  enum class Offered { kQueued, kKick, kCut };

  WatchSink(const v1::WatchJobsRequest& request, const ServiceOptions& options, Caller caller)
      : caller(std::move(caller)),
        client_id(request.client_id()),
        job_ids(request.job_ids().begin(), request.job_ids().end()),
        max_events_(options.watch_buffer_events + static_cast<int64_t>(job_ids.size())),
        max_bytes_(options.watch_buffer_bytes),
        remaining_(job_ids) {}

  const Caller caller;                  // who watches (its credential may be revoked meanwhile)
  const std::string client_id;          // empty: every client
  const std::set<std::string> job_ids;  // empty: every job (of the client)

  bool Matches(const v1::Job& job) const {
    return (client_id.empty() || job.client_id() == client_id) &&
           (job_ids.empty() || job_ids.count(job.job_id()) > 0);
  }

  void Attach(JobWatcher* watcher) {
    absl::MutexLock lock(&mu_);
    watcher_ = watcher;
  }

  // Queues the event (kKick: the pump must start a write), or — the buffer being full — drops
  // what is buffered and marks the stream to be finished with RESOURCE_EXHAUSTED (kCut). Called
  // under the queue's lock: O(1).
  Offered Offer(const WatchEvent& event) {
    absl::MutexLock lock(&mu_);
    if (watcher_ == nullptr || finish_wanted_) return Offered::kQueued;
    const int64_t events = static_cast<int64_t>(pending_.size());
    if (events > 0 && (events >= max_events_ || pending_bytes_ + event.bytes > max_bytes_)) {
      FinishLocked(grpc::Status(
          grpc::RESOURCE_EXHAUSTED,
          absl::StrCat("WatchJobs: this stream fell too far behind: ", events + 1, " events (",
                       pending_bytes_ + event.bytes,
                       " bytes) were waiting to be sent, more than a stream may hold (",
                       max_events_, " events, ", max_bytes_,
                       " bytes); it is closed so the tracker does not hold them. Read faster or "
                       "watch fewer jobs (client_id, job_ids), and watch again (GetJob and "
                       "ListResults give the current state)")));
      cut_ = true;
      return Offered::kCut;
    }
    pending_.push_back(event);
    pending_bytes_ += event.bytes;
    const v1::JobState state = event.job->state();
    if (state == v1::DONE || state == v1::CANCELLED_STATE) remaining_.erase(event.job->job_id());
    if (writing_ || kick_pending_) return Offered::kQueued;
    kick_pending_ = true;
    return Offered::kKick;
  }

  // Starts the next write, or finishes the stream when it is done (every named job finished and
  // sent, the client gone, or cut off). Never under the queue's or the hub's lock.
  void Advance();

  // A cut-off stream whose write in flight does not complete (its client does not read) is
  // cancelled: that completes the write and frees the stream.
  void CancelIfStuck();

  // gRPC's notifications, from the reactor.
  void WriteDone(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) FinishLocked(grpc::Status::CANCELLED);  // the client went away
    }
    Advance();
  }
  void Cancelled() {
    {
      absl::MutexLock lock(&mu_);
      FinishLocked(grpc::Status::CANCELLED);
    }
    Advance();
  }
  void Done() {
    absl::MutexLock lock(&mu_);
    watcher_ = nullptr;
    pending_.clear();
    pending_bytes_ = 0;
  }

  bool cut() {
    absl::MutexLock lock(&mu_);
    return cut_;
  }

  // The watcher's credential was revoked: the stream ends with UNAUTHENTICATED. Never under the
  // queue's or the hub's lock.
  void Revoke(const std::string& why) {
    {
      absl::MutexLock lock(&mu_);
      FinishLocked(grpc::Status(grpc::UNAUTHENTICATED, why));
    }
    Advance();
  }

 private:
  // Asks for the stream to end with `status` (the first reason wins) and drops what is buffered.
  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finish_wanted_) return;
    finish_wanted_ = true;
    final_status_ = std::move(status);
    pending_.clear();
    pending_bytes_ = 0;
  }

  const int64_t max_events_;
  const int64_t max_bytes_;
  absl::Mutex mu_;
  JobWatcher* watcher_ ABSL_GUARDED_BY(mu_) = nullptr;  // null once the stream is done
  std::deque<WatchEvent> pending_ ABSL_GUARDED_BY(mu_);
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<std::string> remaining_ ABSL_GUARDED_BY(mu_);  // named jobs not finished yet
  bool writing_ ABSL_GUARDED_BY(mu_) = false;             // a write is in flight (or being started)
  int busy_ ABSL_GUARDED_BY(mu_) = 0;                     // calls into the reactor outside mu_
  bool kick_pending_ ABSL_GUARDED_BY(mu_) = false;        // the pump will call Advance
  bool finish_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called
  bool cut_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

// Feeds every WatchJobs stream from one queue listener. The listener (under the queue's lock)
// looks the event up in the streams' filters — by job id, by client, or everything — and offers
// one shared copy to each matching stream; starting writes and finishing cut streams is the
// pump thread's. Lock order: the queue's lock, then mu_, then a sink's.
class WatchHub {
 public:
  WatchHub(JobQueue* queue, Metrics* metrics, const ServiceOptions& options)
      : queue_(queue), metrics_(metrics), options_(options) {
    listener_ = queue_->AddListener([this](const v1::Job& job) { OnJob(job); });
    pump_ = std::thread([this] { Pump(); });
  }
  ~WatchHub() { Stop(); }

  // Removes the listener and stops the pump (streams still open finish on gRPC's threads).
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    queue_->RemoveListener(listener_);
    if (pump_.joinable()) pump_.join();
  }

  const ServiceOptions& options() const { return options_; }
  JobQueue* queue() const { return queue_; }

  // Ends the streams whose watcher `revoked` says lost its credential; how many.
  int EndRevoked(const std::function<bool(const Caller&)>& revoked) {
    std::vector<std::shared_ptr<WatchSink>> ended;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [raw, sink] : sinks_) {
        if (revoked(sink->caller)) ended.push_back(sink);
      }
    }
    for (const std::shared_ptr<WatchSink>& sink : ended) {
      sink->Revoke(absl::StrCat("WatchJobs: the ", sink->caller.identity.how, " of ",
                                sink->caller.identity.name, " was revoked"));
    }
    return static_cast<int>(ended.size());
  }

  void Add(const std::shared_ptr<WatchSink>& sink) {
    absl::MutexLock lock(&mu_);
    sinks_[sink.get()] = sink;
    if (!sink->job_ids.empty()) {
      for (const std::string& id : sink->job_ids) by_job_[id].insert(sink.get());
    } else if (!sink->client_id.empty()) {
      by_client_[sink->client_id].insert(sink.get());
    } else {
      everything_.insert(sink.get());
    }
    if (metrics_ != nullptr) metrics_->SetWatchers(static_cast<int64_t>(sinks_.size()));
  }

  void Remove(WatchSink* sink) {
    absl::MutexLock lock(&mu_);
    auto it = sinks_.find(sink);
    if (it == sinks_.end()) return;
    auto erase = [sink](auto* index, const std::string& key) {
      auto entry = index->find(key);
      if (entry == index->end()) return;
      entry->second.erase(sink);
      if (entry->second.empty()) index->erase(entry);
    };
    for (const std::string& id : sink->job_ids) erase(&by_job_, id);
    if (sink->job_ids.empty() && !sink->client_id.empty()) erase(&by_client_, sink->client_id);
    everything_.erase(sink);
    sinks_.erase(it);
    if (metrics_ != nullptr) metrics_->SetWatchers(static_cast<int64_t>(sinks_.size()));
  }

 private:
  // The queue's listener, under its lock: filter, one shared copy, a push per matching stream.
  void OnJob(const v1::Job& job) {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    matched_.clear();
    for (WatchSink* s : everything_) matched_.push_back(s);
    if (auto it = by_client_.find(job.client_id()); it != by_client_.end()) {
      for (WatchSink* s : it->second) matched_.push_back(s);
    }
    if (auto it = by_job_.find(job.job_id()); it != by_job_.end()) {
      for (WatchSink* s : it->second) {
        if (s->Matches(job)) matched_.push_back(s);
      }
    }
    if (matched_.empty()) return;
    WatchEvent event;
    event.job = std::make_shared<const v1::Job>(job);
    event.bytes = static_cast<int64_t>(event.job->ByteSizeLong());
    for (WatchSink* s : matched_) {
      switch (s->Offer(event)) {
        case WatchSink::Offered::kQueued:
          break;
        case WatchSink::Offered::kKick:
          kicks_.push_back(sinks_[s]);
          break;
        case WatchSink::Offered::kCut:
          kicks_.push_back(sinks_[s]);
          stuck_.push_back({absl::Now() + options_.watch_cut_grace, sinks_[s]});
          if (metrics_ != nullptr) metrics_->WatcherCut();
          break;
      }
    }
  }

  // Starts writes for the streams that got events while idle, finishes cut ones, and cancels
  // cut streams whose last write is stuck past the grace period.
  void Pump() {
    std::vector<std::shared_ptr<WatchSink>> kicks;
    std::vector<std::weak_ptr<WatchSink>> overdue;
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]()
                         ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || !kicks_.empty(); };
        absl::Time wake = stuck_.empty() ? absl::Now() + absl::Seconds(1) : stuck_.front().first;
        mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
        if (stopping_) return;
        kicks.swap(kicks_);
        const absl::Time now = absl::Now();
        while (!stuck_.empty() && stuck_.front().first <= now) {
          overdue.push_back(std::move(stuck_.front().second));
          stuck_.pop_front();
        }
      }
      for (std::shared_ptr<WatchSink>& sink : kicks) sink->Advance();
      kicks.clear();
      for (std::weak_ptr<WatchSink>& weak : overdue) {
        if (std::shared_ptr<WatchSink> sink = weak.lock()) sink->CancelIfStuck();
      }
      overdue.clear();
    }
  }

  JobQueue* const queue_;
  Metrics* const metrics_;
  const ServiceOptions options_;
  int listener_ = 0;
  std::thread pump_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<WatchSink*, std::shared_ptr<WatchSink>> sinks_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<WatchSink*> everything_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatchSink*>> by_client_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatchSink*>> by_job_ ABSL_GUARDED_BY(mu_);
  std::vector<WatchSink*> matched_ ABSL_GUARDED_BY(mu_);  // scratch for OnJob
  std::vector<std::shared_ptr<WatchSink>> kicks_ ABSL_GUARDED_BY(mu_);
  // Cut streams by when they are cancelled if still open (in time order: the grace is constant).
  std::deque<std::pair<absl::Time, std::weak_ptr<WatchSink>>> stuck_ ABSL_GUARDED_BY(mu_);
};

// One WatchJobs stream: the reactor over its WatchSink. Deletes itself when gRPC is done with it.
class JobWatcher final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  JobWatcher(grpc::CallbackServerContext* context, std::shared_ptr<WatchHub> hub,
             const v1::WatchJobsRequest& request, Caller caller)
      : context_(context),
        hub_(std::move(hub)),
        sink_(std::make_shared<WatchSink>(request, hub_->options(), std::move(caller))) {
    sink_->Attach(this);
    hub_->Add(sink_);
    // The current state of named jobs first (they may have finished already).
    for (const std::string& id : sink_->job_ids) {
      absl::StatusOr<v1::Job> job = hub_->queue()->GetJob(id);
      if (!job.ok() || !sink_->Matches(*job)) continue;
      WatchEvent event;
      event.job = std::make_shared<const v1::Job>(*std::move(job));
      event.bytes = static_cast<int64_t>(event.job->ByteSizeLong());
      sink_->Offer(event);
    }
    sink_->Advance();
  }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnCancel() override { sink_->Cancelled(); }
  void OnDone() override {
    hub_->Remove(sink_.get());
    sink_->Done();
    delete this;
  }

  // For WatchSink (which calls them outside its lock, with the reactor kept alive).
  void Write(const v1::Job& job) {
    *event_.mutable_job() = job;  // the copy and serialization happen here, outside every lock
    StartWrite(&event_);
  }
  void Cancel() { context_->TryCancel(); }

 private:
  grpc::CallbackServerContext* const context_;
  const std::shared_ptr<WatchHub> hub_;
  const std::shared_ptr<WatchSink> sink_;
  v1::JobEvent event_;  // the write in flight
};

void WatchSink::Advance() {
  std::shared_ptr<const v1::Job> next;
  grpc::Status status;
  JobWatcher* watcher = nullptr;
  {
    absl::MutexLock lock(&mu_);
    kick_pending_ = false;
    if (watcher_ == nullptr || finished_ || writing_ || busy_ > 0) return;
    if (!finish_wanted_ && pending_.empty() && !job_ids.empty() && remaining_.empty()) {
      FinishLocked(grpc::Status::OK);  // every watched job has finished, and was sent
    }
    if (finish_wanted_) {
      finished_ = true;
      status = final_status_;
    } else if (!pending_.empty()) {
      next = std::move(pending_.front().job);
      pending_bytes_ -= pending_.front().bytes;
      pending_.pop_front();
      writing_ = true;
    } else {
      return;
    }
    watcher = watcher_;
  }
  if (next != nullptr) {
    watcher->Write(*next);
  } else {
    watcher->Finish(std::move(status));  // the reactor may be gone once this returns
  }
}

void WatchSink::CancelIfStuck() {
  JobWatcher* watcher = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (watcher_ == nullptr || finished_ || !writing_ || busy_ > 0) return;
    ++busy_;
    watcher = watcher_;
  }
  watcher->Cancel();
  {
    absl::MutexLock lock(&mu_);
    --busy_;
  }
  Advance();
}

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
  watch_hub_ = std::make_shared<WatchHub>(queue_, metrics_, options_);
}

TrackerService::~TrackerService() {
  Stop();
  watch_hub_->Stop();
}

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

void TrackerService::Poke(const std::string& agent_id) {
  absl::MutexLock lock(&poke_mu_);
  poked_agents_.push_back(agent_id);
}

absl::Status TrackerService::Granted(const Identity& id, const v1::BoardRegistration& b) {
  const std::string board = b.board_id().substr(0, 128);
  if (id.grants.empty() && !id.legacy_board_globs.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "register.boards: agent ", id.name,
        "'s certificate names boards but not their kinds "
        "(issued before kinds were bound): issue it again with deploy/pki.sh agent DIR ",
        id.name, " 'GLOB=KIND[:SLOTS]'"));
  }
  bool id_matched = false;
  std::string kinds;
  for (const BoardGrant& g : id.grants) {
    if (!GlobMatch(g.glob, b.board_id())) continue;
    id_matched = true;
    if (g.kind != "*" && g.kind != b.kind()) {
      absl::StrAppend(&kinds, kinds.empty() ? "" : ", ", g.kind);
      continue;
    }
    if (g.max_slots > 0 && b.slots() > g.max_slots) {
      return absl::PermissionDeniedError(
          absl::StrCat("register.boards: agent ", id.name, "'s certificate lets it serve board \"",
                       board, "\" with at most ", g.max_slots, " slots, not ", b.slots()));
    }
    return absl::OkStatus();
  }
  if (id_matched) {
    return absl::PermissionDeniedError(
        absl::StrCat("register.boards: agent ", id.name, "'s certificate lets it serve board \"",
                     board, "\" only as kind ", kinds, ", not \"", b.kind().substr(0, 128), "\""));
  }
  return absl::PermissionDeniedError(absl::StrCat("register.boards: agent ", id.name,
                                                  "'s certificate does not let it serve board \"",
                                                  board, "\""));
}

absl::Status TrackerService::Attach(const Caller& caller, const v1::Register& registration,
                                    AgentStream* stream) {
  if (options_.auth != nullptr && !caller.authenticated) {
    return absl::UnauthenticatedError("register: this stream has no accepted credential");
  }
  if (caller.authenticated) {
    const Identity& id = caller.identity;
    if (registration.agent_id() != id.name) {
      return absl::PermissionDeniedError(absl::StrCat(
          "register.agent_id: this stream is authenticated as agent \"", id.name,
          "\"; it may not register as \"", registration.agent_id().substr(0, 128), "\""));
    }
    for (const v1::BoardRegistration& b : registration.boards()) {
      if (absl::Status granted = Granted(id, b); !granted.ok()) {
        if (metrics_ != nullptr) metrics_->AuthRefused("Register", "not_granted");
        return granted;
      }
    }
  }
  absl::MutexLock lock(&mu_);
  absl::Status s = queue_->RegisterAgent(registration, caller.authenticated);
  if (absl::IsPermissionDenied(s) && metrics_ != nullptr) {
    metrics_->AuthRefused("Register", "board_held");
  }
  if (!s.ok()) return s;
  auto it = streams_.find(registration.agent_id());
  if (it != streams_.end() && it->second != stream) {
    // The agent connected again (say, after a network break its old stream has not noticed): the
    // newer stream wins and the old one is told, rather than left open and deaf.
    it->second->Replace(absl::StrCat("agent ", registration.agent_id(),
                                     " registered again on a newer stream; this one is closed"));
  }
  streams_[registration.agent_id()] = stream;
  return s;
}

absl::StatusOr<Caller> TrackerService::Authorize(const grpc::CallbackServerContext& context,
                                                 std::initializer_list<Role> roles,
                                                 const char* method) {
  Caller caller;
  if (options_.auth == nullptr) return caller;  // --insecure
  absl::StatusOr<Identity> id = options_.auth->Identify(context);
  if (!id.ok()) {
    if (metrics_ != nullptr) metrics_->AuthRefused(method, "unauthenticated");
    return id.status();
  }
  for (Role role : roles) {
    if (id->role == role) {
      caller.authenticated = true;
      caller.identity = *std::move(id);
      return caller;
    }
  }
  if (metrics_ != nullptr) metrics_->AuthRefused(method, "permission_denied");
  return absl::PermissionDeniedError(
      absl::StrCat(method, ": not allowed to ", RoleName(id->role), " ", id->name));
}

namespace {

constexpr std::initializer_list<Role> kUsers = {Role::kUser, Role::kAdmin};

// A string a request names: at most `max` bytes, and not empty when `required`. Too long, it is
// not echoed back.
absl::Status CheckField(const char* field, const std::string& value, size_t max,
                        bool required = true) {
  if (required && value.empty())
    return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (value.size() > max) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": longer than ", max, " bytes"));
  }
  return absl::OkStatus();
}

// What a job id that does not exist, and another client's job, are answered alike: a user cannot
// tell whether someone else's job id exists (the job queue's own NotFound reads the same).
absl::Status NoSuchJob(const std::string& job_id) {
  return absl::NotFoundError(absl::StrCat("no job ", job_id));
}

}  // namespace

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
  absl::Time last_heap_check = absl::Now();
  absl::Time last_credential_check = absl::Now();
  uint64_t credentials_generation = options_.auth != nullptr ? options_.auth->Generation() : 0;
  std::vector<std::string> agents;
  for (;;) {
    bool all = false;
    agents.clear();
    {
      absl::MutexLock lock(&poke_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(poke_mu_) {
        return poked_ || !poked_agents_.empty() || stopping_;
      };
      // Unpoked for a period: every agent is looked at (leases expired, health checks due).
      all = !poke_mu_.AwaitWithTimeout(absl::Condition(&ready), options_.dispatch_period) || poked_;
      if (stopping_) return;
      poked_ = false;
      agents.swap(poked_agents_);
    }
    DispatchOnce(all, agents);
    if (absl::Now() - last_full >= options_.dispatch_period) {
      queue_->ExpireLeases();
      if (metrics_ != nullptr) metrics_->Update(queue_->Stats());
      last_full = absl::Now();
    }
    if (absl::Now() - last_heap_check >= options_.heap_check_period) {
      base::ReleaseFreeHeapOver(options_.release_heap_over);
      last_heap_check = absl::Now();
    }
    if (options_.auth != nullptr &&
        absl::Now() - last_credential_check >= options_.credential_check_period) {
      const uint64_t generation = options_.auth->Generation();
      if (generation != credentials_generation) EndRevokedStreams();
      credentials_generation = generation;
      last_credential_check = absl::Now();
    }
  }
}

void TrackerService::EndRevokedStreams() {
  auto revoked = [this](const Caller& c) {
    return c.authenticated && options_.auth->Revoked(c.identity);
  };
  std::vector<std::string> agents;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [agent_id, stream] : streams_) {
      if (!revoked(stream->caller())) continue;
      agents.push_back(agent_id);
      stream->Refuse(absl::UnauthenticatedError(absl::StrCat(
          "agent ", agent_id, ": its certificate was revoked; this stream is closed")));
    }
  }
  for (const std::string& agent_id : agents) {
    // What it holds re-queues now: a revoked agent's measurements are not trusted.
    queue_->RevokeAgent(agent_id, "its agent's certificate was revoked: measured again elsewhere");
    if (metrics_ != nullptr) metrics_->AuthRefused("AgentStream", "revoked");
  }
  const int watchers = watch_hub_->EndRevoked(revoked);
  if (metrics_ != nullptr) {
    for (int i = 0; i < watchers; ++i) metrics_->AuthRefused("WatchJobs", "revoked");
  }
  if (!agents.empty() || watchers > 0) {
    spdlog::warn("revoked credentials: ended {} agent stream(s) and {} watch stream(s)",
                 agents.size(), watchers);
  }
}

// Agents pumped per look at the farm's boards (the queue's lock is released between chunks).
constexpr size_t kPumpChunk = 64;

void TrackerService::DispatchOnce(bool all, const std::vector<std::string>& agents) {
  // Streams cannot be deleted while mu_ is held (OnDone detaches under it first). Pumping an
  // agent twice is harmless.
  auto pump = [this](const std::vector<std::string>& agents) {
    absl::MutexLock lock(&mu_);
    for (const std::string& agent : agents) {
      if (auto it = streams_.find(agent); it != streams_.end()) it->second->Pump();
    }
  };
  pump(agents);
  if (!all) return;
  // Chunks: the first offers go out before the whole farm has been looked at.
  JobQueue::PumpCursor cursor;
  do {
    pump(queue_->AgentsToPump(&cursor, kPumpChunk));
  } while (cursor.more);
}

grpc::ServerUnaryReactor* TrackerService::SubmitTrials(grpc::CallbackServerContext* context,
                                                       const v1::SubmitTrialsRequest* request,
                                                       v1::SubmitTrialsResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "SubmitTrials");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("client_id", request->client_id(), kMaxIdBytes, false); !s.ok()) {
    return Done(context, s);
  }
  // The client is who the credential says: a request cannot claim someone else's id.
  std::string client = request->client_id();
  if (caller->authenticated) {
    if (!client.empty() && !caller->may_act_for(client)) {
      if (metrics_ != nullptr) metrics_->AuthRefused("SubmitTrials", "permission_denied");
      return Done(context, absl::PermissionDeniedError(absl::StrCat(
                               "client_id: this call is authenticated as ", caller->identity.name,
                               "; it may not submit as \"", client, "\"")));
    }
    if (client.empty()) client = caller->identity.name;
  }
  std::vector<v1::Trial> trials(request->trials().begin(), request->trials().end());
  absl::StatusOr<JobQueue::Accepted> accepted =
      queue_->SubmitAsync(client, request->request_id(), trials);
  if (!accepted.ok()) return Done(context, accepted.status());
  for (std::string& id : accepted->job_ids) response->add_job_ids(std::move(id));
  // Answered, and its jobs offered, once the submission is stored (on the commit thread).
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  queue_->WhenDurable(accepted->ticket, [this, reactor, response](absl::Status stored) {
    if (!stored.ok()) response->clear_job_ids();
    if (stored.ok()) Poke();
    reactor->Finish(ToGrpc(stored));
  });
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::GetJob(grpc::CallbackServerContext* context,
                                                 const v1::GetJobRequest* request,
                                                 v1::Job* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "GetJob");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("job_id", request->job_id(), kMaxIdBytes); !s.ok()) {
    return Done(context, s);
  }
  absl::StatusOr<v1::Job> job = queue_->GetJob(request->job_id());
  if (job.ok() && !caller->may_act_for(job->client_id())) {
    if (metrics_ != nullptr) metrics_->AuthRefused("GetJob", "permission_denied");
    return Done(context, NoSuchJob(request->job_id()));
  }
  if (job.ok()) *response = std::move(*job);
  return Done(context, job.status());
}

grpc::ServerWriteReactor<v1::JobEvent>* TrackerService::WatchJobs(
    grpc::CallbackServerContext* context, const v1::WatchJobsRequest* request) {
  v1::WatchJobsRequest watch = *request;
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "WatchJobs");
  absl::Status refused = caller.status();
  if (refused.ok()) refused = CheckField("client_id", watch.client_id(), kMaxIdBytes, false);
  for (const std::string& id : watch.job_ids()) {
    if (refused.ok()) refused = CheckField("job_ids", id, kMaxIdBytes);
  }
  // A user watches its own jobs only.
  const bool own_only =
      refused.ok() && caller->authenticated && caller->identity.role != Role::kAdmin;
  if (own_only) {
    if (!watch.client_id().empty() && watch.client_id() != caller->identity.name) {
      refused = absl::PermissionDeniedError(absl::StrCat(
          "client_id: you are ", caller->identity.name, "; you may watch only your own jobs"));
    }
    watch.set_client_id(caller->identity.name);
  }
  // A job that does not exist is never watched (job ids are the tracker's to give), and is
  // answered as another client's job is.
  for (const std::string& id : watch.job_ids()) {
    if (!refused.ok()) break;
    absl::StatusOr<v1::Job> job = queue_->GetJob(id);
    if (absl::IsNotFound(job.status()) ||
        (own_only && job.ok() && job->client_id() != caller->identity.name)) {
      refused = NoSuchJob(id);
    }
  }
  if (own_only && !refused.ok() && metrics_ != nullptr) {
    metrics_->AuthRefused("WatchJobs", "permission_denied");
  }
  if (!refused.ok()) {
    class Refusal final : public grpc::ServerWriteReactor<v1::JobEvent> {
     public:
      explicit Refusal(const absl::Status& status) { Finish(ToGrpc(status)); }
      void OnDone() override { delete this; }
    };
    return new Refusal(refused);
  }
  return new JobWatcher(context, watch_hub_, watch, *caller);
}

grpc::ServerUnaryReactor* TrackerService::CancelJob(grpc::CallbackServerContext* context,
                                                    const v1::CancelJobRequest* request,
                                                    v1::CancelJobResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "CancelJob");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("job_id", request->job_id(), kMaxIdBytes); !s.ok()) {
    return Done(context, s);
  }
  if (caller->authenticated) {
    absl::StatusOr<v1::Job> current = queue_->GetJob(request->job_id());
    if (current.ok() && !caller->may_act_for(current->client_id())) {
      if (metrics_ != nullptr) metrics_->AuthRefused("CancelJob", "permission_denied");
      return Done(context, NoSuchJob(request->job_id()));
    }
  }
  absl::StatusOr<v1::Job> job = queue_->Cancel(request->job_id());
  if (job.ok()) *response->mutable_job() = std::move(*job);
  Poke();
  return Done(context, job.status());
}

namespace {

// A ListResults page holds at most this many bytes (fewer when the request's max_bytes says so),
// so it fits gRPC's default 4 MiB receive limit with room to spare. It always holds at least one
// job: the caps at the door keep one job near 1.1 MiB at most.
constexpr int64_t kMaxResultsPageBytes = int64_t{3} << 20;
// Jobs read from the store at a time while a page fills (bounds what one call holds in memory).
constexpr int kResultsReadChunk = 32;

// The bytes a message of `size` bytes takes as an element of a repeated field numbered 1..15 of
// its parent: tag, length (a varint), payload.
int64_t ElementBytes(size_t size) {
  int64_t n = 1 + static_cast<int64_t>(size);
  do {
    ++n;
    size >>= 7;
  } while (size != 0);
  return n;
}

// Fills one ListResults page with filter's jobs from filter.after_seq on: at most filter.limit
// of them and, after the first, at most max_bytes of response in all. Sets next_page_token when
// more may follow (the page is full by count or by bytes).
absl::Status FillResultsPage(JobQueue* queue, JobFilter filter, int64_t max_bytes,
                             v1::ListResultsResponse* response) {
  constexpr int64_t kTokenBytes = 32;  // next_page_token: tag, length, at most 20 digits
  int64_t used = kTokenBytes;
  int left = filter.limit;
  int64_t last_seq = filter.after_seq;
  bool full = false;
  while (left > 0 && !full) {
    JobFilter chunk = filter;
    chunk.after_seq = last_seq;
    chunk.limit = left < kResultsReadChunk ? left : kResultsReadChunk;
    absl::StatusOr<std::vector<StoredJob>> jobs = queue->List(chunk);
    if (!jobs.ok()) return jobs.status();
    for (StoredJob& job : *jobs) {
      const int64_t bytes = ElementBytes(job.job.ByteSizeLong());
      if (response->jobs_size() > 0 && used + bytes > max_bytes) {
        full = true;
        break;
      }
      *response->add_jobs() = std::move(job.job);
      used += bytes;
      last_seq = job.seq;
      --left;
    }
    if (static_cast<int>(jobs->size()) < chunk.limit) break;  // the last of them
  }
  if (full || left == 0) response->set_next_page_token(absl::StrCat(last_seq));
  return absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* TrackerService::ListResults(grpc::CallbackServerContext* context,
                                                      const v1::ListResultsRequest* request,
                                                      v1::ListResultsResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "ListResults");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s :
       {CheckField("client_id", request->client_id(), kMaxIdBytes, false),
        CheckField("board_kind", request->board_kind(), catalog::kMaxBoardKindBytes, false),
        CheckField("op", request->op(), catalog::kMaxOpNameBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  // A user lists its own jobs (an empty client_id means: mine).
  if (caller->authenticated && caller->identity.role != Role::kAdmin &&
      !request->client_id().empty() && request->client_id() != caller->identity.name) {
    if (metrics_ != nullptr) metrics_->AuthRefused("ListResults", "permission_denied");
    return Done(context, absl::PermissionDeniedError(
                             absl::StrCat("client_id: you are ", caller->identity.name,
                                          "; you may list only your own jobs")));
  }
  JobFilter filter;
  filter.client_id = caller->authenticated && caller->identity.role != Role::kAdmin
                         ? caller->identity.name
                         : request->client_id();
  filter.board_kind = request->board_kind();
  filter.op = request->op();
  filter.state = request->state();
  if (request->limit() < 0 || request->limit() > 10000) {
    return Done(context, absl::InvalidArgumentError("limit: must be in 0..10000"));
  }
  filter.limit = request->limit() == 0 ? 1000 : request->limit();
  if (!request->page_token().empty() &&
      !absl::SimpleAtoi(request->page_token(), &filter.after_seq)) {
    return Done(context, absl::InvalidArgumentError("page_token: not a token from this tracker"));
  }
  if (request->max_bytes() < 0) {
    return Done(context, absl::InvalidArgumentError("max_bytes: must be 0 (3 MiB) or more"));
  }
  const int64_t max_bytes = request->max_bytes() == 0 || request->max_bytes() > kMaxResultsPageBytes
                                ? kMaxResultsPageBytes
                                : request->max_bytes();
  return Done(context, FillResultsPage(queue_, filter, max_bytes, response));
}

grpc::ServerUnaryReactor* TrackerService::QueueSummary(grpc::CallbackServerContext* context,
                                                       const v1::QueueSummaryRequest*,
                                                       v1::QueueSummaryResponse* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "QueueSummary"); !c.ok()) {
    return Done(context, c.status());
  }
  for (v1::KindSummary& kind : queue_->Summary()) *response->add_kinds() = std::move(kind);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::ListBoards(grpc::CallbackServerContext* context,
                                                     const v1::ListBoardsRequest* request,
                                                     v1::ListBoardsResponse* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "ListBoards"); !c.ok()) {
    return Done(context, c.status());
  }
  if (absl::Status s =
          CheckField("board_kind", request->board_kind(), catalog::kMaxBoardKindBytes, false);
      !s.ok()) {
    return Done(context, s);
  }
  for (v1::Board& board : queue_->Boards(request->board_kind())) {
    *response->add_boards() = std::move(board);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::AddOperator(grpc::CallbackServerContext* context,
                                                      const v1::AddOperatorRequest* request,
                                                      v1::AddOperatorResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "AddOperator");
  if (!caller.ok()) return Done(context, caller.status());
  CatalogCaller who;
  who.authenticated = caller->authenticated;
  who.client = caller->authenticated ? caller->identity.name : "";
  who.admin = caller->authenticated && caller->identity.role == Role::kAdmin;
  absl::StatusOr<OperatorCatalog::Added> added =
      queue_->catalog()->Add(request->op(), who, absl::Now());
  if (added.ok()) {
    *response->mutable_op() = std::move(added->op);
    response->set_created(added->created);
  }
  return Done(context, added.status());
}

grpc::ServerUnaryReactor* TrackerService::ListOperators(grpc::CallbackServerContext* context,
                                                        const v1::ListOperatorsRequest* request,
                                                        v1::ListOperatorsResponse* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "ListOperators"); !c.ok()) {
    return Done(context, c.status());
  }
  if (absl::Status s = CheckField("name", request->name(), catalog::kMaxOpNameBytes, false);
      !s.ok()) {
    return Done(context, s);
  }
  for (v1::Operator& op : queue_->catalog()->List(request->name(), request->all_versions())) {
    *response->add_ops() = std::move(op);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::GetOperator(grpc::CallbackServerContext* context,
                                                      const v1::GetOperatorRequest* request,
                                                      v1::Operator* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "GetOperator"); !c.ok()) {
    return Done(context, c.status());
  }
  for (absl::Status s :
       {CheckField("name", request->name(), catalog::kMaxOpNameBytes),
        CheckField("version", request->version(), catalog::kMaxVersionBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Operator> op = queue_->catalog()->Get(request->name(), request->version());
  if (op.ok()) *response = *std::move(op);
  return Done(context, op.status());
}

grpc::ServerUnaryReactor* TrackerService::SetOperatorOwner(
    grpc::CallbackServerContext* context, const v1::SetOperatorOwnerRequest* request,
    v1::Operator* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAdmin}, "SetOperatorOwner");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s : {CheckField("name", request->name(), catalog::kMaxOpNameBytes),
                         CheckField("owner", request->owner(), kMaxIdBytes)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Operator> op = queue_->catalog()->SetOwner(request->name(), request->owner());
  if (op.ok()) *response = *std::move(op);
  return Done(context, op.status());
}

grpc::ServerUnaryReactor* TrackerService::MoveBoard(grpc::CallbackServerContext* context,
                                                    const v1::MoveBoardRequest* request,
                                                    v1::Board* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAdmin}, "MoveBoard");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s : {CheckField("board_id", request->board_id(), catalog::kMaxBoardIdBytes),
                         CheckField("agent_id", request->agent_id(), kMaxIdBytes)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Board> board = queue_->MoveBoard(request->board_id(), request->agent_id());
  if (board.ok()) *response = *std::move(board);
  return Done(context, board.status());
}

grpc::ServerUnaryReactor* TrackerService::SetBoardQuarantine(
    grpc::CallbackServerContext* context, const v1::SetBoardQuarantineRequest* request,
    v1::Board* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAdmin}, "SetBoardQuarantine");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s :
       {CheckField("board_id", request->board_id(), catalog::kMaxBoardIdBytes),
        CheckField("reason", request->reason(), kMaxQuarantineReasonBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Board> board =
      queue_->SetQuarantine(request->board_id(), request->quarantine(), request->reason());
  if (board.ok()) *response = *std::move(board);
  Poke();
  return Done(context, board.status());
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::TrackerMessage>* TrackerService::Connect(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAgent}, "Connect");
  auto* stream = new AgentStream(this, caller.ok() ? *caller : Caller());
  if (!caller.ok()) stream->Refuse(caller.status());
  return stream;
}

}  // namespace benchfarm::tracker
