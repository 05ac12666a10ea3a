// TrackerService: the tracker's gRPC surface over JobQueue — the client service (Tracker) and the
// agent service (TrackerAgent: one bidirectional stream per agent) — on gRPC's callback API.
// Methods stay thin: they check the request, call the core, convert the status.
//
// A dispatcher thread offers queued jobs to free boards of connected agents (at once when
// something changes, and every dispatch_period otherwise) and expires leases.
//
// WatchJobs streams are fed by one queue listener (WatchHub) that, under the queue's lock, only
// matches the event against the streams' filters (indexed by job id and client) and pushes one
// shared, immutable copy of the job onto each matching stream's bounded buffer; serialization
// and writes happen outside that lock (gRPC's threads and the hub's pump thread). A stream whose
// buffer is full (ServiceOptions::watch_buffer_events/_bytes) is cut off with RESOURCE_EXHAUSTED
// naming how far behind it was, so a slow or stalled watcher never slows the tracker or other
// clients, and never holds more than its buffer (benchfarm_tracker_watchers_cut_total counts it).
//
// Thread-safety: all methods are called by gRPC on its threads; reactors never block beyond the
// core's short critical sections (which include SQLite commits).

#ifndef BENCHFARM_TRACKER_SERVICE_H_
#define BENCHFARM_TRACKER_SERVICE_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tracker/auth.h"
#include "tracker/job_queue.h"
#include "tracker/refusal_log.h"

namespace benchfarm::tracker {

class AgentStream;
class Metrics;
class WatchHub;

// absl::Status -> grpc::Status, keeping the code and the message.
grpc::Status ToGrpc(const absl::Status& status);

// The most offers one message carries to an agent that reads batched offers, in bytes (an offer
// larger than this goes alone, as to any agent).
inline constexpr size_t kBatchedOfferBytes = size_t{1} << 20;

struct ServiceOptions {
  absl::Duration heartbeat = absl::Seconds(5);  // told to agents
  absl::Duration lease = absl::Seconds(60);     // told to agents
  absl::Duration dispatch_period = absl::Milliseconds(200);
  // A result the store could not take: the agent is told to send it again after this (it backs
  // off further by itself).
  absl::Duration result_retry = absl::Seconds(1);
  // WatchJobs back-pressure: the events (and their serialized bytes) one stream may have waiting
  // to be sent. A stream further behind is cut off with RESOURCE_EXHAUSTED saying how far behind
  // it was, and what it held is freed; a stream that names job_ids may hold that many more.
  int64_t watch_buffer_events = 16384;
  int64_t watch_buffer_bytes = int64_t{32} << 20;
  // A cut-off stream whose client does not read even the write in flight is cancelled after this.
  absl::Duration watch_cut_grace = absl::Seconds(30);
  // Every heap_check_period, free heap the allocator holds beyond release_heap_over bytes is
  // given back to the system (after a burst — a watcher flood, a large backlog finished — glibc
  // would otherwise keep it resident for the life of the process).
  absl::Duration heap_check_period = absl::Seconds(2);
  int64_t release_heap_over = int64_t{64} << 20;
  // Who may call (borrowed; outlives the service). Null: an --insecure tracker, where every
  // caller may do everything and client ids are taken from requests.
  Authenticator* auth = nullptr;
  // How often the credential files are looked at for revocations that end open streams (agents'
  // and watchers'); a revoked agent's running attempts re-queue at once.
  absl::Duration credential_check_period = absl::Seconds(1);
};

// The caller of one call, as the service authorized it.
struct Caller {
  bool authenticated = false;  // false on an insecure tracker
  Identity identity;
  // Users act only on their own jobs; admins (and callers of an insecure tracker) on any.
  bool may_act_for(const std::string& client_id) const {
    return !authenticated || identity.role == Role::kAdmin || identity.name == client_id;
  }
};

class TrackerService final : public v1::Tracker::CallbackService,
                             public v1::TrackerAgent::CallbackService {
 public:
  // queue and metrics (may be null) are borrowed and outlive the service.
  TrackerService(JobQueue* queue, Metrics* metrics, ServiceOptions options);
  ~TrackerService() override;

  // Stops the dispatcher and ends every agent stream. Call before shutting the server down.
  void Stop();

  // Registers both services on `builder` (every server of the tracker is built this way), with
  // the tracker's largest request (64 MiB) and one rule gRPC's callback API does not keep: a
  // request that does not parse as its method's message is INVALID_ARGUMENT naming that message
  // type, not UNIMPLEMENTED as if the method did not exist (server_setup.cc). Methods the tracker
  // does not have stay UNIMPLEMENTED.
  void AddTo(grpc::ServerBuilder* builder);

  // ---- Tracker ----
  grpc::ServerUnaryReactor* SubmitTrials(grpc::CallbackServerContext* context,
                                         const v1::SubmitTrialsRequest* request,
                                         v1::SubmitTrialsResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context,
                                   const v1::GetJobRequest* request, v1::Job* response) override;
  grpc::ServerWriteReactor<v1::JobEvent>* WatchJobs(grpc::CallbackServerContext* context,
                                                    const v1::WatchJobsRequest* request) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context,
                                      const v1::CancelJobRequest* request,
                                      v1::CancelJobResponse* response) override;
  grpc::ServerUnaryReactor* GetJobLog(grpc::CallbackServerContext* context,
                                      const v1::GetJobLogRequest* request,
                                      v1::GetJobLogResponse* response) override;
  grpc::ServerUnaryReactor* ListResults(grpc::CallbackServerContext* context,
                                        const v1::ListResultsRequest* request,
                                        v1::ListResultsResponse* response) override;
  grpc::ServerUnaryReactor* QueueSummary(grpc::CallbackServerContext* context,
                                         const v1::QueueSummaryRequest* request,
                                         v1::QueueSummaryResponse* response) override;
  grpc::ServerUnaryReactor* ListBoards(grpc::CallbackServerContext* context,
                                       const v1::ListBoardsRequest* request,
                                       v1::ListBoardsResponse* response) override;
  grpc::ServerUnaryReactor* AddOperator(grpc::CallbackServerContext* context,
                                        const v1::AddOperatorRequest* request,
                                        v1::AddOperatorResponse* response) override;
  grpc::ServerUnaryReactor* ListOperators(grpc::CallbackServerContext* context,
                                          const v1::ListOperatorsRequest* request,
                                          v1::ListOperatorsResponse* response) override;
  grpc::ServerUnaryReactor* GetOperator(grpc::CallbackServerContext* context,
                                        const v1::GetOperatorRequest* request,
                                        v1::Operator* response) override;
  grpc::ServerUnaryReactor* SetOperatorOwner(grpc::CallbackServerContext* context,
                                             const v1::SetOperatorOwnerRequest* request,
                                             v1::Operator* response) override;
  grpc::ServerUnaryReactor* RetireOperator(grpc::CallbackServerContext* context,
                                           const v1::RetireOperatorRequest* request,
                                           v1::RetireOperatorResponse* response) override;
  grpc::ServerUnaryReactor* MoveBoard(grpc::CallbackServerContext* context,
                                      const v1::MoveBoardRequest* request,
                                      v1::Board* response) override;
  grpc::ServerUnaryReactor* SetBoardQuarantine(grpc::CallbackServerContext* context,
                                               const v1::SetBoardQuarantineRequest* request,
                                               v1::Board* response) override;
  grpc::ServerUnaryReactor* WhoAmI(grpc::CallbackServerContext* context,
                                   const v1::WhoAmIRequest* request,
                                   v1::WhoAmIResponse* response) override;

  // ---- TrackerAgent ----
  grpc::ServerBidiReactor<v1::AgentMessage, v1::TrackerMessage>* Connect(
      grpc::CallbackServerContext* context) override;

  // Wakes the dispatcher: new work (every agent's free boards are offered it), or a board of this
  // agent freed (only its boards are looked at).
  void Poke();
  void Poke(const std::string& agent_id);

  // For AgentStream.
  JobQueue* queue() const { return queue_; }
  Metrics* metrics() const { return metrics_; }
  const ServiceOptions& options() const { return options_; }
  // Registers the agent with the core and makes stream the one its offers go to, atomically
  // with Detach. An earlier stream of the same agent is closed, told why (ABORTED). Errors:
  // PERMISSION_DENIED when `caller` may not register this agent or serve one of its boards;
  // RegisterAgent's (then nothing changed).
  absl::Status Attach(const Caller& caller, const v1::Register& registration, AgentStream* stream);
  // Closes the streams (agents', watchers') whose credential was revoked since they were
  // accepted, and re-queues what revoked agents hold (dispatcher thread).
  void EndRevokedStreams();
  // Whether an agent's certificate lets it register board `b` as its kind with its slots: OK, or
  // PERMISSION_DENIED naming what the certificate allows.
  static absl::Status Granted(const Identity& id, const v1::BoardRegistration& b);
  // The caller of a call, if it is one of `roles`: UNAUTHENTICATED without an accepted
  // credential, PERMISSION_DENIED for another role. Refusals are counted; those of credentials
  // are logged with the caller's address (a burst at a time: RefusalLog).
  absl::StatusOr<Caller> Authorize(const grpc::CallbackServerContext& context,
                                   std::initializer_list<Role> roles, const char* method);
  // The stream ended. Only if it is still the agent's stream is the agent disconnected: an agent
  // that re-registered on a new stream before the old one ended stays connected.
  void Detach(const std::string& agent_id, AgentStream* stream);

 private:
  void DispatchLoop();
  // Offers work to (and sends cancellations to) these agents (all: every agent that has some:
  // JobQueue::AgentsToPump).
  void DispatchOnce(bool all, const std::vector<std::string>& agents);

  JobQueue* const queue_;
  Metrics* const metrics_;
  const ServiceOptions options_;
  RefusalLog refusal_log_;

  // Lock order: mu_, then the queue's lock, then a stream's. JobQueue listeners (which run under
  // the queue's lock) only take poke_mu_.
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, AgentStream*> streams_ ABSL_GUARDED_BY(mu_);
  absl::Mutex poke_mu_;
  bool poked_ ABSL_GUARDED_BY(poke_mu_) = false;                     // every agent
  std::vector<std::string> poked_agents_ ABSL_GUARDED_BY(poke_mu_);  // these agents
  bool stopping_ ABSL_GUARDED_BY(poke_mu_) = false;
  std::thread dispatcher_;
  // Feeds WatchJobs streams (one queue listener for all of them); shared with the streams.
  std::shared_ptr<WatchHub> watch_hub_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_SERVICE_H_
