// AgentStream: one agent's bidirectional stream on the tracker (TrackerAgent.Connect): its
// registration, heartbeats, results and the offers and cancellations the dispatcher sends it.
// The service's own part, included by service.cc only.

#ifndef BENCHFARM_TRACKER_AGENT_STREAM_H_
#define BENCHFARM_TRACKER_AGENT_STREAM_H_

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "catalog/trial.h"
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

  // Sends offers and cancellations for this agent's free boards (the dispatcher's thread, or the
  // thread that read a result). One pump at a time: a cancellation one thread takes cannot
  // overtake the offer of its job another took.
  // Returns how many offers it sent.
  int Pump() {
    absl::MutexLock pumping(&pump_mu_);
    std::string agent;
    {
      absl::MutexLock lock(&mu_);
      if (closing_ || agent_id_.empty()) return 0;
      agent = agent_id_;
    }
    int offered = 0;
    std::vector<std::string> cancels;
    for (Offer& offer : service_->queue()->TakeOffers(agent, &cancels)) {
      v1::TrackerMessage m;
      *m.mutable_offer() = std::move(offer.offer);
      Send(std::move(m));
      ++offered;
    }
    for (std::string& job_id : cancels) {
      v1::TrackerMessage m;
      m.mutable_cancel()->set_job_id(std::move(job_id));
      Send(std::move(m));
    }
    return offered;
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
      reply.mutable_registered()->set_batched_results(true);
      Send(std::move(reply));
      {
        // Only now may Pump send offers: none can overtake the registered reply.
        absl::MutexLock lock(&mu_);
        agent_id_ = m.register_().agent_id();
        batched_acks_ = m.register_().batched_acks();
        // Offers ride together only where acknowledgements ride too: the wait for one is what
        // gathers them (WriteNextLocked).
        batched_offers_ = batched_acks_ && m.register_().batched_offers();
        // An agent of one board has nothing for that wait to gather: its board's next offer goes
        // at once (the board works while the result is stored, and more results share each
        // fsync), and the acknowledgement rides on the offer after it instead (WriteNextLocked).
        acks_wait_for_offers_ = batched_acks_ && m.register_().boards_size() == 1;
      }
      service_->Poke(m.register_().agent_id());
      return grpc::Status::OK;
    }
    if (agent.empty()) {
      return grpc::Status(grpc::FAILED_PRECONDITION, "the first message must be register");
    }
    // Leases are renewed for exactly the attempts the agent says it holds (JobQueue::Touch).
    // The message's own content, then its batched results (AgentMessage.results).
    switch (m.msg_case()) {
      case v1::AgentMessage::MSG_NOT_SET:
        if (m.results().empty()) {
          return grpc::Status(grpc::INVALID_ARGUMENT, "empty agent message");
        }
        break;
      case v1::AgentMessage::kResult:
        break;  // with the batched ones, below
      case v1::AgentMessage::kBoard:
        queue->RecordFlashes(agent, m.board());
        break;
      case v1::AgentMessage::kHeartbeat: {
        queue->Touch(agent, std::vector<v1::HeldAttempt>(m.heartbeat().held().begin(),
                                                         m.heartbeat().held().end()));
        // Acknowledgements held for an offer whose result may never come (its job cancelled, a
        // long trial): those ready go now, or, if none is, the next one goes as soon as it is;
        // so each waits at most a heartbeat after it was ready.
        absl::MutexLock lock(&mu_);
        flush_acks_ = true;
        WriteNextLocked();
        break;
      }
      case v1::AgentMessage::kAck:
        queue->Touch(agent, m.ack().job_id(), m.ack().attempt());
        break;
      case v1::AgentMessage::kProgress:
        queue->Touch(agent, m.progress().job_id(), m.progress().attempt());
        break;
      default:
        return grpc::Status(grpc::INVALID_ARGUMENT, "empty agent message");
    }
    if (const int results = m.results_size() + (m.has_result() ? 1 : 0);
        results > catalog::kMaxResultsPerMessage) {
      return grpc::Status(grpc::INVALID_ARGUMENT,
                          absl::StrCat("a message carries at most ", catalog::kMaxResultsPerMessage,
                                       " results, not ", results));
    }
    if (!m.has_result() && m.results().empty()) return grpc::Status::OK;
    // Nothing is written while the message's results are taken and the boards' next offers
    // queued (the dispatcher may offer one of the jobs meanwhile), so that an offer cannot
    // overtake the acknowledgement it must follow (a superseded one), and the acknowledgements
    // can ride on the offers however quick the store.
    {
      absl::MutexLock lock(&mu_);
      taking_offers_ = true;
    }
    Answers answers;
    grpc::Status status = grpc::Status::OK;
    if (m.has_result()) status = HandleResult(agent, m.result(), &answers);
    for (int i = 0; status.ok() && i < m.results_size(); ++i) {
      status = HandleResult(agent, m.results(i), &answers);
    }
    int offered = 0;
    const bool answered = status.ok() && !answers.acks.empty();  // (Flush empties answers)
    if (answered) {
      // The wait for the store before the offers: anything that waits for the store after the
      // agent sees them is answered after these acknowledgements are in hand (GroupCommit calls
      // a ticket's waiters in order).
      answers.Flush(this);
      // Their boards are free now: their next jobs are taken at once, from this thread (no
      // dispatcher wake-up), and go out with the acknowledgements once the results are stored
      // (an agent of one board: at once, with those held for it).
      offered = Pump();
    }
    absl::MutexLock lock(&mu_);
    taking_offers_ = false;
    // An agent of one board with no next job: nothing more comes for the held acknowledgements
    // to ride on, and they go alone.
    if (answered && offered == 0) offer_out_ = false;
    WriteNextLocked();
    return status;
  }

  // The acknowledgements of one message's results, answered together once the newest of their
  // changes is stored (group commit tickets are stored in order): one wait and one answer per
  // message rather than per result.
  struct Answers {
    std::vector<std::pair<GroupCommit::Ticket, v1::ResultAck>> acks;

    void Add(GroupCommit::Ticket ticket, v1::ResultAck ack) {
      acks.emplace_back(ticket, std::move(ack));
    }
    void Flush(AgentStream* stream) {
      if (acks.empty()) return;
      GroupCommit::Ticket newest = 0;
      for (const auto& [ticket, ack] : acks) newest = std::max(newest, ticket);
      bool urgent = false;
      {
        absl::MutexLock lock(&stream->mu_);
        // Held to ride on the board's next offer anyway: the commit may gather. Not a
        // superseded one: the offer that may follow of its job waits for it (WriteNextLocked).
        urgent = !stream->acks_wait_for_offers_ || stream->superseded_awaiting_store_ > 0;
      }
      stream->service_->queue()->WhenDurable(
          newest,
          [stream, acks = std::move(acks)](absl::Status stored) mutable {
            stream->Answer(std::move(acks), stored);
          },
          urgent);
      acks.clear();
    }
  };

  // One result: stored (its acknowledgement added to `answers`, to be sent once durable), or
  // refused (the stream ends), or not stored now (the agent is told to send it again).
  grpc::Status HandleResult(const std::string& agent, const v1::JobResult& result,
                            Answers* answers) {
    JobQueue* queue = service_->queue();
    bool superseded = false;
    GroupCommit::Ticket ticket = 0;
    absl::Status s = queue->ReportResult(agent, result, &superseded, &ticket);
    if (s.ok()) {
      v1::ResultAck ack;
      ack.set_job_id(result.job_id());
      ack.set_attempt(result.attempt());
      ack.set_superseded(superseded);
      {
        absl::MutexLock lock(&mu_);
        // The stream was ended meanwhile (replaced by the agent's newer one) and is finished:
        // no answer can be written; the agent sends the result again on its newer stream and
        // it is acknowledged there.
        if (finished_) return grpc::Status::OK;
        // Keeps the stream open (and this reactor alive) until answered; with batched acks,
        // the offers sent meanwhile wait to carry the acknowledgement (WriteNextLocked).
        ++awaiting_store_;
        // The agent notes a superseded result before it reads an offer of its job: with
        // batched acks, every offer waits for this acknowledgement (WriteNextLocked).
        if (superseded) ++superseded_awaiting_store_;
      }
      answers->Add(ticket, std::move(ack));
      return grpc::Status::OK;
    }
    if (absl::IsInvalidArgument(s)) {
      // Refused (a non-finite cost, an oversized message...): the attempt already ended as an
      // infrastructure failure and the job re-queued. Ending the stream tells the agent why;
      // its spooled copy, sent again after it reconnects, is ignored (that attempt is over)
      // and acknowledged. So are the results before it in its message, which are stored (their
      // answers, dropped with the stream, still wait for the store: the stream finishes
      // after them); those after it are read after the reconnect.
      answers->Flush(this);
      service_->Poke();
      return ToGrpc(s);
    }
    // Not stored (the database is failing): the agent keeps the result and sends it again;
    // meanwhile its attempt stays leased (a recorded result ends the attempt instead).
    queue->Touch(agent, result.job_id(), result.attempt());
    Send(ResultRetry(result.job_id(), result.attempt(), s));
    return grpc::Status::OK;
  }

  void Send(v1::TrackerMessage m) {
    absl::MutexLock lock(&mu_);
    if (closing_ || write_failed_) return;
    outbox_.push_back(std::move(m));
    WriteNextLocked();
  }
  // The answers to results, once the store has decided (commit thread): their acknowledgements,
  // or, for those whose change the failing store did not take, requests to send them again.
  // Sent even if the read side has ended meanwhile (the agent may still read them).
  void Answer(std::vector<std::pair<GroupCommit::Ticket, v1::ResultAck>> acks,
              const absl::Status& stored) {
    const GroupCommit::Ticket durable = stored.ok() ? 0 : service_->queue()->Durable();
    absl::MutexLock lock(&mu_);
    awaiting_store_ -= static_cast<int>(acks.size());
    for (const auto& [ticket, ack] : acks) superseded_awaiting_store_ -= ack.superseded() ? 1 : 0;
    if (!write_failed_ && !(closing_ && !final_status_.ok())) {
      for (auto& [ticket, ack] : acks) {
        if (!stored.ok() && ticket > durable) {
          outbox_.push_back(ResultRetry(ack.job_id(), ack.attempt(), stored));
        } else if (batched_acks_) {
          acks_.push_back(std::move(ack));
        } else {
          v1::TrackerMessage m;
          *m.mutable_result_ack() = std::move(ack);
          outbox_.push_back(std::move(m));
        }
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
  // acknowledgements ready ride on the next message, and, for an agent of several boards, an
  // offer waits while results are being stored until one of their acknowledgements can ride on
  // it (one message where there were two; they are stored within a group commit), gathering the
  // offers of the boards that finish meanwhile.
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || taking_offers_) return;
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
    if (batched_acks_ && !outbox_.empty() && outbox_.front().has_offer() && awaiting_store_ > 0 &&
        ((!acks_wait_for_offers_ && acks_.empty()) || superseded_awaiting_store_ > 0)) {
      return;  // Answer brings the acknowledgement
    }
    // An agent of one board whose board holds an offer: its acknowledgements ride on the
    // board's next offer (sent when that offer's result comes), unless the stream is closing or
    // a heartbeat came.
    if (acks_wait_for_offers_ && outbox_.empty() && offer_out_ && !closing_ && !flush_acks_) {
      return;
    }
    if (outbox_.empty()) {
      current_.Clear();
    } else {
      current_ = std::move(outbox_.front());
      outbox_.pop_front();
      // The offers queued behind it ride along, in order, while the message stays within
      // kBatchedOfferBytes (an offer carries its trial and a user operator's files: a large one
      // goes alone); a cancellation or other message after them waits for the next write.
      if (batched_offers_ && current_.has_offer()) {
        size_t bytes = current_.offer().ByteSizeLong();
        while (!outbox_.empty() && outbox_.front().has_offer()) {
          const size_t more = outbox_.front().offer().ByteSizeLong();
          if (bytes + more > kBatchedOfferBytes) break;
          bytes += more;
          *current_.add_offers() = std::move(*outbox_.front().mutable_offer());
          outbox_.pop_front();
        }
      }
    }
    if (!acks_.empty()) flush_acks_ = false;  // those a heartbeat asked for go now
    for (v1::ResultAck& ack : acks_) *current_.add_acks() = std::move(ack);
    acks_.clear();
    if (current_.has_offer()) offer_out_ = true;
    if (current_.has_cancel()) offer_out_ = false;  // no result need come
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
  absl::Mutex pump_mu_;  // taken before mu_
  absl::Mutex mu_;
  std::string agent_id_ ABSL_GUARDED_BY(mu_);
  bool batched_acks_ ABSL_GUARDED_BY(mu_) = false;    // the agent reads TrackerMessage.acks
  bool batched_offers_ ABSL_GUARDED_BY(mu_) = false;  // ... and TrackerMessage.offers
  // Batched acks and one board: offers go at once, acks wait for the next (else, with batched
  // acks, offers wait for the acks).
  bool acks_wait_for_offers_ ABSL_GUARDED_BY(mu_) = false;
  bool offer_out_ ABSL_GUARDED_BY(mu_) = false;   // an offer sent, its result not read yet
  bool flush_acks_ ABSL_GUARDED_BY(mu_) = false;  // a heartbeat came: held acks (or the next) go
  std::deque<v1::TrackerMessage> outbox_ ABSL_GUARDED_BY(mu_);
  std::vector<v1::ResultAck> acks_ ABSL_GUARDED_BY(mu_);  // to ride on the next message
  v1::TrackerMessage current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool taking_offers_ ABSL_GUARDED_BY(mu_) = false;  // Handle: a message's results being taken
  bool write_failed_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;  // the read side ended (or a message was bad)
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  int awaiting_store_ ABSL_GUARDED_BY(mu_) = 0;  // results whose answer waits for the store
  int superseded_awaiting_store_ ABSL_GUARDED_BY(mu_) = 0;  // ... of them, superseded
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_AGENT_STREAM_H_
