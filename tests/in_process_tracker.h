// InProcessTracker: a real tracker (SqliteStore + JobQueue + TrackerService on gRPC) inside a
// test process, on a loopback port, that can be stopped and started again on the same port and
// database — a tracker outage as an agent sees it. Its clock can jump ahead (an agent silent past
// its lease, as the tracker sees a paused agent) and its database's writes can be made to fail (a
// full disk), without stopping it.
//
// Thread-safety: Start/Stop from the test's thread; client() from any thread.

#ifndef BENCHFARM_TESTS_IN_PROCESS_TRACKER_H_
#define BENCHFARM_TESTS_IN_PROCESS_TRACKER_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "proto/config.pb.h"
#include "tracker/flaky_store.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/service.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::testing {

class InProcessTracker {
 public:
  // database: the SQLite file (kept across Stop/Start).
  InProcessTracker(std::string database, tracker::JobQueueOptions queue_options,
                   tracker::ServiceOptions service_options = {});
  ~InProcessTracker();

  // Serves on 127.0.0.1:<port>; port 0 picks one on the first start, later starts reuse it.
  absl::Status Start(int port = 0);
  void Stop();
  bool running() const { return server_ != nullptr; }

  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  v1::Tracker::Stub* client();
  tracker::Metrics* metrics() { return metrics_.get(); }
  tracker::JobQueue* queue() { return queue_.get(); }

  // The tracker's clock jumps ahead by `d` (leases run out as if the agent had been silent).
  void AdvanceClock(absl::Duration d) { clock_.Advance(d); }
  // Every database write fails with `failure` until called again with OkStatus().
  void FailStoreWrites(absl::Status failure) { flaky_->SetWriteFailure(std::move(failure)); }

  // Submits the trials as one request; returns their job ids.
  absl::StatusOr<std::vector<std::string>> Submit(const std::vector<v1::Trial>& trials,
                                                  const std::string& client_id = "test");
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);
  // An agent's config for this tracker: agent_id, tracker_address, plain text (an in-process
  // tracker serves no TLS), and scratch/cache/spool directories under `state_dir`; no boards.
  v1::AgentConfig AgentConfig(const std::string& agent_id, const std::string& state_dir) const;
  // Adds a user operator to the catalog; returns it as stored (with its version).
  absl::StatusOr<v1::Operator> AddOperator(const v1::Operator& op);
  // Polls until every job is DONE or CANCELLED_STATE, or the timeout; returns them as they are
  // then (DeadlineExceeded if some are not finished, naming one).
  absl::StatusOr<std::vector<v1::Job>> WaitFinished(const std::vector<std::string>& job_ids,
                                                    absl::Duration timeout);

 private:
  const std::string database_;
  const tracker::JobQueueOptions queue_options_;
  const tracker::ServiceOptions service_options_;
  // Real time plus an offset the test may add to.
  class JumpingClock final : public base::Clock {
   public:
    absl::Time Now() const override {
      absl::MutexLock lock(&mu_);
      return absl::Now() + offset_;
    }
    void Advance(absl::Duration d) {
      absl::MutexLock lock(&mu_);
      offset_ += d;
    }

   private:
    mutable absl::Mutex mu_;
    absl::Duration offset_ ABSL_GUARDED_BY(mu_);
  };
  JumpingClock clock_;
  std::unique_ptr<tracker::SqliteStore> store_;
  std::unique_ptr<tracker::FlakyStore> flaky_;
  std::unique_ptr<tracker::JobQueue> queue_;
  std::unique_ptr<tracker::Metrics> metrics_;
  std::unique_ptr<tracker::TrackerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tracker::Stub> client_;
  int port_ = 0;
};

}  // namespace benchfarm::testing

#endif  // BENCHFARM_TESTS_IN_PROCESS_TRACKER_H_
