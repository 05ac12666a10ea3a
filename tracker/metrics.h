// Metrics: the tracker's Prometheus series (prometheus-cpp), served on /metrics
// (base/metrics_http.h).
//
//   benchfarm_build_info{version,commit}                  gauge: 1 (base/metrics_http.h)
//   benchfarm_tracker_queue_depth{board_kind,priority}   gauge: queued jobs
//   benchfarm_tracker_jobs{state}                         gauge: live jobs by state (QUEUED,
//                                                         RUNNING)
//   benchfarm_tracker_jobs_finished_total{board_kind,error_code}
//                                                         counter: jobs that reached DONE or
//                                                         CANCELLED, by their result's ErrorCode
//                                                         name: NO_ERROR for a measured trial,
//                                                         CANCELLED for a cancelled one, the
//                                                         failure's code otherwise
//   benchfarm_tracker_boards{state}                       gauge: IDLE, BUSY, QUARANTINED,
//                                                         HEALTH_CHECK, OFFLINE
//   benchfarm_tracker_lease_expiries_total                counter
//   benchfarm_tracker_unstable_results_total              counter: results flagged unstable
//   benchfarm_tracker_requeues_total                      counter
//   benchfarm_tracker_revoked_attempts_total              counter
//   benchfarm_tracker_silent_agents_total                 counter: agents silent for a lease
//   benchfarm_tracker_trials_submitted_total{client}      counter
//   benchfarm_tracker_job_wait_seconds                    histogram: submitted -> first start
//   benchfarm_tracker_job_run_seconds                     histogram: last start -> finished
//   benchfarm_tracker_watchers                            gauge: open WatchJobs streams
//   benchfarm_tracker_watchers_cut_total                  counter: WatchJobs streams cut off
//                                                         for falling behind (RESOURCE_EXHAUSTED)
//   benchfarm_tracker_store_failures_total                counter: database writes that failed
//   benchfarm_tracker_leader                              gauge: 1 while this tracker serves, 0
//                                                         while it waits as a standby
//   benchfarm_tracker_store_commits_total                 counter: database transactions committed
//   benchfarm_tracker_store_writes_total                  counter: changes they held
//   benchfarm_tracker_store_writes_saved_total            counter: offers never written, their
//                                                         result having replaced them first
//   benchfarm_tracker_store_up                            gauge: 1 while database writes work, 0
//                                                         while they fail (no new work is offered)
//   benchfarm_tracker_store_wal_truncations_total{result} counter: SQLite's WAL found at 32 MiB
//                                                         or more after a commit and truncated, or
//                                                         held off by another process's reader
//                                                         (TRUNCATED, BLOCKED)
//
// Label values that clients or agents choose are capped (MetricsOptions): the first
// max_clients client ids get their own trials_submitted_total series and the first
// max_board_kinds board kinds their own queue_depth and jobs_finished_total series; later ones
// are counted under client="_other" / board_kind="_other", so totals and sums over the label stay
// right. Fixed label values are upper case, as on the agent (base/metrics_http.h).
//
// The HTTP server (base/http_server.h) is one thread over non-blocking sockets: idle or slow
// connections cost a descriptor each, never a worker; each must send its request within
// request_timeout, and past max_connections the oldest idle one is closed for a new one, so no
// number of them keeps a scrape from being answered.
//
// Thread-safety: safe from any thread.

#ifndef BENCHFARM_TRACKER_METRICS_H_
#define BENCHFARM_TRACKER_METRICS_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/http_server.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/benchfarm.pb.h"
#include "tracker/job_queue.h"

namespace benchfarm::tracker {

// The label value that stands for every value past a cap.
inline constexpr char kOtherLabelValue[] = "_other";

struct MetricsOptions {
  // The /metrics server's request_timeout (5 s) and max_connections (1024).
  base::HttpServerOptions server;
  // Distinct client ids with their own benchfarm_tracker_trials_submitted_total series.
  int max_clients = 100;
  // Distinct board kinds with their own benchfarm_tracker_queue_depth and
  // benchfarm_tracker_jobs_finished_total series.
  int max_board_kinds = 50;
};

class Metrics {
 public:
  Metrics() : Metrics(MetricsOptions()) {}
  explicit Metrics(MetricsOptions options);

  // Serves /metrics on address ("127.0.0.1:9470", "[::]:9470"; port 0 picks one) with options'
  // server, until destroyed. Call it once. Errors: Unavailable naming the address and why when it
  // is malformed or cannot be bound.
  absl::Status Serve(const std::string& address);
  // The port actually bound (after Serve with port 0), or 0.
  int port() const;

  // Brings gauges and counters up to date with the queue.
  void Update(const QueueStats& stats);
  // A job reached DONE or CANCELLED.
  void JobFinished(const v1::Job& job);
  // A call the tracker refused: `method` (a fixed RPC name, or "Handshake" for a TLS handshake
  // that failed), `reason` ("UNAUTHENTICATED", "PERMISSION_DENIED", "REVOKED", "NOT_GRANTED",
  // "BOARD_HELD", a credential's (auth.h: "CERT_EXPIRED", "TOKEN_EXPIRED", ...) or a handshake's
  // (refusal_log.h: "PLAINTEXT_CLIENT", ...)):
  // benchfarm_tracker_auth_refusals_total{method,reason}.
  void AuthRefused(const std::string& method, const std::string& reason);
  // WatchJobs streams now open; one cut off for falling behind. Cheap (no lock of Metrics'):
  // called under the queue's lock.
  void SetWatchers(int64_t open);
  // This tracker serves (true) or waits as a standby (false).
  void SetLeader(bool leading);
  void WatcherCut();

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  // The first `cap` distinct values keep their own label value; the rest are "_other".
  class CappedLabel {
   public:
    explicit CappedLabel(int cap) : cap_(cap < 0 ? 0 : static_cast<size_t>(cap)) {}
    std::string operator()(const std::string& value);

   private:
    const size_t cap_;
    std::set<std::string> own_;
  };

  const MetricsOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<base::HttpServer> server_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Family<prometheus::Gauge>& boards_;
  prometheus::Counter& lease_expiries_;
  prometheus::Counter& unstable_results_;
  prometheus::Counter& requeues_;
  prometheus::Counter& revoked_attempts_;
  prometheus::Counter& silent_agents_;
  prometheus::Family<prometheus::Counter>& submitted_;
  prometheus::Histogram& wait_;
  prometheus::Histogram& run_;
  prometheus::Family<prometheus::Counter>& auth_refusals_;
  prometheus::Gauge& watchers_;
  prometheus::Counter& watchers_cut_;
  prometheus::Counter& store_failures_;
  prometheus::Gauge& leader_;
  prometheus::Counter& store_commits_;
  prometheus::Counter& store_writes_;
  prometheus::Counter& store_writes_saved_;
  prometheus::Gauge& store_up_;
  prometheus::Family<prometheus::Counter>& wal_truncations_;

  absl::Mutex mu_;
  QueueStats last_ ABSL_GUARDED_BY(mu_);
  CappedLabel client_label_ ABSL_GUARDED_BY(mu_);
  CappedLabel kind_label_ ABSL_GUARDED_BY(mu_);
  // The queue_depth series (board_kind label, priority) the last Update set.
  std::map<std::pair<std::string, int>, int64_t> last_depth_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_METRICS_H_
