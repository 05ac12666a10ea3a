// Agent: the daemon next to the boards. It keeps one long-lived stream to the tracker
// (TrackerAgent.Connect): registers its boards (with slots for batching), heartbeats, hands job
// offers to one BoardWorker per board, relays cancellations, and delivers results. Results are
// spooled on disk (ResultSpool) before they are sent and forgotten only when the tracker
// acknowledges them; when the tracker is away the agent goes on measuring, reconnects with
// exponential backoff, re-registers holding its unfinished and unacknowledged jobs, and sends the
// spooled results again — nothing is lost, and the tracker records each once.
//
// Attempts: heartbeats list every attempt the agent holds (on its boards, or finished with the
// result in the spool), so the tracker renews exactly those leases. An offer of a new attempt of
// a job whose result is already spooled is answered from the spool (relabelled with the new
// attempt), not measured again; one for a job a board still runs supersedes it there
// (BoardWorker). A result of a lost attempt the tracker did not need (ResultAck.superseded) is
// kept in the spool for a while (kKeepSuperseded) to answer the next attempt, then dropped; it
// is not sent again or listed as held meanwhile. A result the tracker could not store (ResultRetry:
// its database is failing) is sent again after the delay it asks, backing off up to max_backoff,
// while connected.
//
// Thread-safety: Start/Stop from one thread; the accessors from any thread.

#ifndef BENCHFARM_AGENT_AGENT_H_
#define BENCHFARM_AGENT_AGENT_H_

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/board_worker.h"
#include "agent/firmware.h"
#include "agent/metrics.h"
#include "agent/spool.h"
#include "catalog/knob_space.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "proto/config.pb.h"

namespace benchfarm::agent {

struct AgentOptions {
  v1::AgentConfig config;
  // Where relative build_template paths and the crt tree are looked for besides the working
  // directory (the agent binary's runfiles).
  std::vector<std::string> search_roots;
  absl::Duration min_backoff = absl::Milliseconds(200);
  absl::Duration max_backoff = absl::Seconds(5);
};

// The agent's counters, summed over its boards.
struct AgentCounters {
  int64_t builds = 0;      // images built (template runs that succeeded)
  int64_t cache_hits = 0;  // images taken from the cache
  WorkerCounters boards;   // summed
  int64_t results_sent = 0;
  int64_t result_messages = 0;  // the messages that carried them (several to one: batched)
  int64_t results_acked = 0;
  int64_t connects = 0;  // successful registrations
};

class Agent {
 public:
  // Checks the config (InvalidArgument naming the field), finds the templates and the crt tree,
  // opens the spool, and serves /metrics if configured. Starts nothing else.
  static absl::StatusOr<std::unique_ptr<Agent>> Create(AgentOptions options);
  ~Agent();

  void Start();
  // Stops the workers and the connection. Spooled results stay on disk.
  void Stop();

  bool connected() const;
  AgentCounters counters() const;
  size_t spooled() const { return spool_->size(); }
  int metrics_port() const { return metrics_.port(); }
  const std::vector<std::unique_ptr<BoardWorker>>& workers() const { return workers_; }

 private:
  explicit Agent(AgentOptions options);

  void ConnectionLoop();
  // One connected session: register, then read until the stream ends. Returns whether the
  // tracker accepted the registration.
  bool RunStream(grpc::ClientContext* context);
  bool Write(const v1::AgentMessage& message);
  bool WriteLocked(const v1::AgentMessage& message) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void OnResult(const v1::JobResult& result);
  // Sends results, with any other board's waiting for the stream meanwhile: several to a message
  // where the tracker reads them so (Registered.batched_results; up to ~1 MiB each), else one to
  // a message. Stops at the first write that fails (not connected: every spooled result goes
  // again on registering).
  void SendResults(std::vector<v1::JobResult> results);
  void SendSpooled();
  void HeartbeatLoop();
  // Sends again the results the tracker asked to be retried, when their time comes.
  void RetryLoop();
  void OnOffer(const v1::JobOffer& offer);
  void OnRetry(const v1::ResultRetry& retry);
  // The tracker stored the result (or did not need it): it leaves the spool.
  void OnResultAck(const v1::ResultAck& ack);
  // Every attempt held: on the boards and in the spool (the latest attempt of each job), not the
  // superseded results.
  std::vector<v1::HeldAttempt> Held() const;
  bool Superseded(const std::string& job_id) const;
  // Drops the superseded results kept past their time.
  void DropStaleSuperseded();
  void UpdateBoardMetrics();

  const AgentOptions options_;
  AgentMetrics metrics_;
  std::unique_ptr<catalog::KnobSpace> space_;
  std::unique_ptr<ImageBuilder> builder_;
  std::unique_ptr<ResultSpool> spool_;
  std::vector<std::unique_ptr<BoardWorker>> workers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::TrackerAgent::Stub> stub_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>* stream_ ABSL_GUARDED_BY(mu_) =
      nullptr;
  absl::Duration heartbeat_ ABSL_GUARDED_BY(mu_) = absl::Seconds(5);
  bool batched_results_ ABSL_GUARDED_BY(mu_) = false;  // the tracker reads AgentMessage.results
  std::vector<v1::JobResult> outgoing_results_ ABSL_GUARDED_BY(mu_);  // for the next writer
  int64_t results_sent_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t result_messages_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t results_acked_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t connects_ ABSL_GUARDED_BY(mu_) = 0;
  struct Retry {
    absl::Time due;
    absl::Duration backoff;
  };
  std::map<std::string, Retry> retries_ ABSL_GUARDED_BY(mu_);  // job -> when to resend
  // Spooled results of lost attempts, kept until then to answer a newer attempt's offer.
  std::map<std::string, absl::Time> superseded_ ABSL_GUARDED_BY(mu_);
  absl::Mutex write_mu_;  // one writer at a time on the stream; taken before mu_
  std::thread connection_;
  std::thread heartbeat_thread_;
  std::thread retry_thread_;
};

// Reads an AgentConfig textproto. Errors: NotFound for the file, InvalidArgument with the parser's
// line and column.
absl::StatusOr<v1::AgentConfig> LoadAgentConfig(const std::string& path);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_AGENT_H_
