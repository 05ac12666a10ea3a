// Metrics: the tracker's Prometheus series (prometheus-cpp), served on /metrics by an Exposer.
//
//   benchfarm_tracker_queue_depth{board_kind,priority}   gauge: queued jobs
//   benchfarm_tracker_jobs{state}                         gauge: live jobs by state
//   benchfarm_tracker_jobs_finished_total{result}         counter: done / cancelled
//   benchfarm_tracker_boards{state}                       gauge
//   benchfarm_tracker_lease_expiries_total                counter
//   benchfarm_tracker_requeues_total                      counter
//   benchfarm_tracker_trials_submitted_total{client}      counter
//   benchfarm_tracker_job_wait_seconds                    histogram: submitted -> first start
//   benchfarm_tracker_job_run_seconds                     histogram: last start -> finished
//
// Thread-safety: safe from any thread.

#ifndef BENCHFARM_TRACKER_METRICS_H_
#define BENCHFARM_TRACKER_METRICS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/counter.h"
#include "prometheus/exposer.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "proto/benchfarm.pb.h"
#include "tracker/job_queue.h"

namespace benchfarm::tracker {

class Metrics {
 public:
  Metrics();

  // Serves /metrics on address ("0.0.0.0:9470"). Errors: InvalidArgument/Unavailable with the
  // library's message when the address cannot be bound.
  absl::Status Serve(const std::string& address);
  // The port actually bound (after Serve with port 0), or 0.
  int port() const;

  // Brings gauges and counters up to date with the queue.
  void Update(const QueueStats& stats);
  // A job reached DONE or CANCELLED.
  void JobFinished(const v1::Job& job);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& jobs_;
  prometheus::Family<prometheus::Counter>& finished_;
  prometheus::Family<prometheus::Gauge>& boards_;
  prometheus::Counter& lease_expiries_;
  prometheus::Counter& requeues_;
  prometheus::Family<prometheus::Counter>& submitted_;
  prometheus::Histogram& wait_;
  prometheus::Histogram& run_;

  absl::Mutex mu_;
  QueueStats last_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_METRICS_H_
