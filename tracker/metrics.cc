// Metrics: see metrics.h.
#include "tracker/metrics.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "base/metrics_http.h"
#include "base/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::tracker {
namespace {

using google::protobuf::util::TimeUtil;

const prometheus::Histogram::BucketBoundaries& SecondsBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800};
  return *b;
}

std::string StateName(v1::JobState s) { return v1::JobState_Name(s); }
std::string BoardStateName(v1::BoardState s) { return v1::BoardState_Name(s); }

}  // namespace

std::string Metrics::CappedLabel::operator()(const std::string& value) {
  if (value == kOtherLabelValue) return value;  // never takes a place of its own
  if (own_.count(value) != 0) return value;
  if (own_.size() < cap_) {
    own_.insert(value);
    return value;
  }
  return kOtherLabelValue;
}

Metrics::Metrics(MetricsOptions options)
    : options_(options),
      registry_(std::make_shared<prometheus::Registry>()),
      queue_depth_(prometheus::BuildGauge()
                       .Name("benchfarm_tracker_queue_depth")
                       .Help("Queued jobs by board kind and priority")
                       .Register(*registry_)),
      jobs_(prometheus::BuildGauge()
                .Name("benchfarm_tracker_jobs")
                .Help("Live jobs by state")
                .Register(*registry_)),
      finished_(prometheus::BuildCounter()
                    .Name("benchfarm_tracker_jobs_finished_total")
                    .Help("Jobs that reached DONE or CANCELLED, by board kind and their "
                          "result's error code (NO_ERROR: measured; CANCELLED: cancelled)")
                    .Register(*registry_)),
      boards_(prometheus::BuildGauge()
                  .Name("benchfarm_tracker_boards")
                  .Help("Boards by state")
                  .Register(*registry_)),
      lease_expiries_(prometheus::BuildCounter()
                          .Name("benchfarm_tracker_lease_expiries_total")
                          .Help("Job leases that expired without a result")
                          .Register(*registry_)
                          .Add({})),
      unstable_results_(prometheus::BuildCounter()
                            .Name("benchfarm_tracker_unstable_results_total")
                            .Help("Results stored with an unstable flag: their median's 95 % "
                                  "interval is wider than the unstable threshold")
                            .Register(*registry_)
                            .Add({})),
      requeues_(prometheus::BuildCounter()
                    .Name("benchfarm_tracker_requeues_total")
                    .Help("Jobs queued again after a lost or failed attempt")
                    .Register(*registry_)
                    .Add({})),
      revoked_attempts_(prometheus::BuildCounter()
                            .Name("benchfarm_tracker_revoked_attempts_total")
                            .Help("Attempts ended (their jobs queued again) because the agent "
                                  "running them had its credential revoked")
                            .Register(*registry_)
                            .Add({})),
      silent_agents_(prometheus::BuildCounter()
                         .Name("benchfarm_tracker_silent_agents_total")
                         .Help("Times a connected agent said nothing for a whole lease (paused, "
                               "partitioned): its boards went OFFLINE until it was heard again")
                         .Register(*registry_)
                         .Add({})),
      submitted_(prometheus::BuildCounter()
                     .Name("benchfarm_tracker_trials_submitted_total")
                     .Help("Trials accepted, by client")
                     .Register(*registry_)),
      wait_(prometheus::BuildHistogram()
                .Name("benchfarm_tracker_job_wait_seconds")
                .Help("Time from submission to the first start on a board")
                .Register(*registry_)
                .Add({}, SecondsBuckets())),
      run_(prometheus::BuildHistogram()
               .Name("benchfarm_tracker_job_run_seconds")
               .Help("Time from the last start on a board to the result")
               .Register(*registry_)
               .Add({}, SecondsBuckets())),
      auth_refusals_(
          prometheus::BuildCounter()
              .Name("benchfarm_tracker_auth_refusals_total")
              .Help("Calls refused: no accepted credential, or not allowed to the caller")
              .Register(*registry_)),
      watchers_(prometheus::BuildGauge()
                    .Name("benchfarm_tracker_watchers")
                    .Help("Open WatchJobs streams")
                    .Register(*registry_)
                    .Add({})),
      watchers_cut_(prometheus::BuildCounter()
                        .Name("benchfarm_tracker_watchers_cut_total")
                        .Help("WatchJobs streams cut off with RESOURCE_EXHAUSTED because their "
                              "client fell further behind than the stream's buffer")
                        .Register(*registry_)
                        .Add({})),
      store_failures_(prometheus::BuildCounter()
                          .Name("benchfarm_tracker_store_failures_total")
                          .Help("Database writes that failed (a full disk, a read-only file, a "
                                "lost connection)")
                          .Register(*registry_)
                          .Add({})),
      leader_(prometheus::BuildGauge()
                  .Name("benchfarm_tracker_leader")
                  .Help("1 while this tracker serves its database; 0 while it waits as a "
                        "standby (another tracker serves)")
                  .Register(*registry_)
                  .Add({})),
      store_commits_(prometheus::BuildCounter()
                         .Name("benchfarm_tracker_store_commits_total")
                         .Help("Database transactions committed (group commit: each holds every "
                               "change made while the one before it was written)")
                         .Register(*registry_)
                         .Add({})),
      store_writes_(prometheus::BuildCounter()
                        .Name("benchfarm_tracker_store_writes_total")
                        .Help("Changes those transactions held (a job or board changed several "
                              "times before its commit counts once)")
                        .Register(*registry_)
                        .Add({})),
      store_writes_saved_(prometheus::BuildCounter()
                              .Name("benchfarm_tracker_store_writes_saved_total")
                              .Help("Offers (a job's change to RUNNING) never written: their "
                                    "result replaced them while they were deferred")
                              .Register(*registry_)
                              .Add({})),
      store_up_(prometheus::BuildGauge()
                    .Name("benchfarm_tracker_store_up")
                    .Help("1 while database writes work; 0 while they fail and the tracker "
                          "offers no new work")
                    .Register(*registry_)
                    .Add({})),
      wal_truncations_(prometheus::BuildCounter()
                           .Name("benchfarm_tracker_store_wal_truncations_total")
                           .Help("SQLite's write-ahead log found at its size limit after a commit "
                                 "(readers kept checkpoints from finishing): truncated, or "
                                 "blocked by another process holding a read transaction on the "
                                 "database")
                           .Register(*registry_)),
      client_label_(options_.max_clients),
      kind_label_(options_.max_board_kinds) {
  for (v1::JobState s : {v1::QUEUED, v1::RUNNING}) jobs_.Add({{"state", StateName(s)}});
  base::AddBuildInfo(*registry_);
  for (const char* r : {"TRUNCATED", "BLOCKED"}) wal_truncations_.Add({{"result", r}});
  store_up_.Set(1);
}

void Metrics::AuthRefused(const std::string& method, const std::string& reason) {
  auth_refusals_.Add({{"method", method}, {"reason", reason}}).Increment();
}

void Metrics::SetWatchers(int64_t open) { watchers_.Set(static_cast<double>(open)); }

void Metrics::SetLeader(bool leading) { leader_.Set(leading ? 1 : 0); }

void Metrics::WatcherCut() { watchers_cut_.Increment(); }

absl::Status Metrics::Serve(const std::string& address) {
  ASSIGN_OR_RETURN(server_, base::ServeMetrics(address, registry_, options_.server));
  return absl::OkStatus();
}

int Metrics::port() const { return server_ == nullptr ? 0 : server_->port(); }

void Metrics::Update(const QueueStats& stats) {
  absl::MutexLock lock(&mu_);
  // Gauges: set the current values (kinds past the cap summed under "_other"), and zero the
  // series set last time that have none now.
  std::map<std::pair<std::string, int>, int64_t> depth;
  for (const auto& [key, n] : stats.queued_by_kind_priority) {
    depth[{kind_label_(key.first), key.second}] += n;
  }
  for (const auto& [key, n] : last_depth_) {
    if (depth.count(key) == 0) {
      queue_depth_.Add({{"board_kind", key.first}, {"priority", absl::StrCat(key.second)}}).Set(0);
    }
  }
  for (const auto& [key, n] : depth) {
    queue_depth_.Add({{"board_kind", key.first}, {"priority", absl::StrCat(key.second)}})
        .Set(static_cast<double>(n));
  }
  last_depth_ = std::move(depth);
  for (v1::JobState s : {v1::QUEUED, v1::RUNNING}) {
    auto it = stats.jobs_by_state.find(s);
    jobs_.Add({{"state", StateName(s)}}).Set(it == stats.jobs_by_state.end() ? 0 : it->second);
  }
  for (const auto& [state, n] : last_.boards_by_state)
    boards_.Add({{"state", BoardStateName(state)}}).Set(0);
  for (const auto& [state, n] : stats.boards_by_state) {
    boards_.Add({{"state", BoardStateName(state)}}).Set(static_cast<double>(n));
  }
  // Counters: add what grew since last time.
  lease_expiries_.Increment(static_cast<double>(stats.lease_expiries - last_.lease_expiries));
  requeues_.Increment(static_cast<double>(stats.requeues - last_.requeues));
  revoked_attempts_.Increment(static_cast<double>(stats.revoked_attempts - last_.revoked_attempts));
  silent_agents_.Increment(static_cast<double>(stats.silent_agents - last_.silent_agents));
  store_failures_.Increment(static_cast<double>(stats.store_failures - last_.store_failures));
  store_commits_.Increment(static_cast<double>(stats.store_commits - last_.store_commits));
  store_writes_.Increment(static_cast<double>(stats.store_writes - last_.store_writes));
  store_writes_saved_.Increment(
      static_cast<double>(stats.store_writes_saved - last_.store_writes_saved));
  store_up_.Set(stats.store_problem.empty() ? 1 : 0);
  wal_truncations_.Add({{"result", "TRUNCATED"}})
      .Increment(static_cast<double>(stats.store_upkeep.wal_truncations -
                                     last_.store_upkeep.wal_truncations));
  wal_truncations_.Add({{"result", "BLOCKED"}})
      .Increment(static_cast<double>(stats.store_upkeep.wal_truncations_blocked -
                                     last_.store_upkeep.wal_truncations_blocked));
  unstable_results_.Increment(static_cast<double>(stats.unstable_results - last_.unstable_results));
  for (const auto& [key, n] : stats.finished) {
    auto it = last_.finished.find(key);
    const int64_t before = it == last_.finished.end() ? 0 : it->second;
    if (n == before) continue;
    finished_
        .Add({{"board_kind", kind_label_(key.first)},
              {"error_code", v1::ErrorCode_Name(key.second)}})
        .Increment(static_cast<double>(n - before));
  }
  for (const auto& [client, n] : stats.trials_by_client) {
    auto it = last_.trials_by_client.find(client);
    int64_t before = it == last_.trials_by_client.end() ? 0 : it->second;
    if (n == before) continue;
    submitted_.Add({{"client", client_label_(client)}}).Increment(static_cast<double>(n - before));
  }
  last_ = stats;
}

void Metrics::JobFinished(const v1::Job& job) {
  if (job.attempts_size() == 0) return;
  const v1::Attempt& first = job.attempts(0);
  const v1::Attempt& last = job.attempts(job.attempts_size() - 1);
  double wait = TimeUtil::DurationToNanoseconds(first.started_at() - job.submitted_at()) * 1e-9;
  if (wait >= 0) wait_.Observe(wait);
  if (last.has_ended_at()) {
    double run = TimeUtil::DurationToNanoseconds(last.ended_at() - last.started_at()) * 1e-9;
    if (run >= 0) run_.Observe(run);
  }
}

}  // namespace benchfarm::tracker
