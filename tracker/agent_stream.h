// AgentStream: one agent's bidirectional stream on the tracker (TrackerAgent.Connect): its
// registration, heartbeats, results and the offers and cancellations the dispatcher sends it.
// The service's own part, included by service.cc only.

#ifndef BENCHFARM_TRACKER_AGENT_STREAM_H_
#define BENCHFARM_TRACKER_AGENT_STREAM_H_

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "spdlog/spdlog.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/service.h"

namespace benchfarm::tracker {

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

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_AGENT_STREAM_H_
