// What the service tests share (tests only): trials and registrations, FakeAgent (one agent's
// stream) and ServiceTest, the tracker's services on an in-process server on 127.0.0.1:0.
// Waiting is on conditions with a deadline; lease expiry runs on a FakeClock where a test asks.

#ifndef BENCHFARM_TRACKER_SERVICE_TEST_FIXTURE_H_
#define BENCHFARM_TRACKER_SERVICE_TEST_FIXTURE_H_

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "base/clock.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/service.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {

// A trial of `kind` running matmul on three 16x16 arguments.
v1::Trial MakeTrial(const std::string& kind = "host", int priority = 0);

// Now + d, and now + 10 s: gRPC deadlines.
std::chrono::system_clock::time_point In(absl::Duration d);
std::chrono::system_clock::time_point Soon();

// Calls probe until it returns true, for at most `limit`; returns whether it did.
bool WaitFor(const std::function<bool()>& probe, absl::Duration limit = absl::Seconds(10));

v1::BoardRegistration Board(const std::string& id, const std::string& kind = "host",
                            const std::map<std::string, std::string>& labels = {}, int slots = 0);
v1::Register Registration(const std::string& agent_id,
                          const std::vector<v1::BoardRegistration>& boards,
                          const std::vector<std::string>& held = {});

// A fake agent: one Connect stream that registers at once. Messages the tracker sends are read
// in order; a call that looks for one kind (offer, cancel, ack) keeps the others for later calls,
// because the tracker's dispatcher and its stream handler interleave them freely (an offer for a
// board freed by a result may come before or after that result's ack). Reads give up at the
// stream's deadline, 30 s after it opened.
class FakeAgent {
 public:
  FakeAgent(v1::TrackerAgent::Stub* stub, const v1::Register& registration);
  ~FakeAgent();

  const v1::Registered& registered() const { return registered_; }

  bool Send(const v1::AgentMessage& m);
  // A heartbeat naming the attempts (job id, attempt) the agent holds.
  bool Heartbeat(const std::vector<std::pair<std::string, int>>& held);
  // A result: `code`, and one cost `cost_s` if it is NO_ERROR.
  bool SendResult(const std::string& job_id, int attempt, v1::ErrorCode code, double cost_s = 1e-4);
  // Reports the offer's result and waits for the tracker to acknowledge it.
  void Report(const v1::JobOffer& offer, v1::ErrorCode code = v1::NO_ERROR);

  // The next offer; nullopt if the stream ended first.
  std::optional<v1::JobOffer> NextOffer();
  // The job id of the next cancellation; nullopt if the stream ended first.
  std::optional<std::string> NextCancel();
  // The next message whatever it is; nullopt if the stream ended first.
  std::optional<v1::TrackerMessage> NextMessage();
  // Whether the acknowledgement of `job_id`'s result came before the stream ended.
  bool AwaitAck(const std::string& job_id);

  // Ends the stream as a crashed agent's would end (the tracker sees it cancelled).
  grpc::Status Hangup();
  // Ends the stream cleanly: half-closes, reads what is left, returns the tracker's status.
  grpc::Status Close();

 private:
  std::optional<v1::TrackerMessage> Next(
      const std::function<bool(const v1::TrackerMessage&)>& want);

  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>> stream_;
  v1::Registered registered_;
  std::deque<v1::TrackerMessage> pending_;
  bool finished_ = false;
  grpc::Status status_;
};

// The tracker's services over a SQLite file of the test's own (TEST_TMPDIR), and clients of them.
class ServiceTest : public ::testing::Test {
 protected:
  // Board kind host only.
  static JobQueueOptions HostOptions();

  // Builds the store, the queue (on `clock`, real time if null) and the service, and serves them
  // on 127.0.0.1:0. The lease told to agents is the queue's.
  void StartServer(JobQueueOptions options = HostOptions(), const base::Clock* clock = nullptr);

  void TearDown() override;

  std::unique_ptr<FakeAgent> Agent(const v1::Register& registration);

  // SubmitTrials; the job ids (a failure fails the test).
  std::vector<std::string> Submit(const std::string& client_id, const std::string& request_id,
                                  const std::vector<v1::Trial>& trials);
  // `n` MakeTrial()s as client c1.
  std::vector<std::string> Submit(int n, const std::string& request_id);

  v1::Job Get(const std::string& id);
  // CancelJob; the job it answers with in `job`.
  grpc::Status Cancel(const std::string& id, v1::Job* job = nullptr);
  // The board as ListBoards shows it (an empty Board if it is not listed).
  v1::Board ListedBoard(const std::string& board_id);
  // The kind as QueueSummary shows it (an empty summary if it is not listed).
  v1::KindSummary Summary(const std::string& kind);
  // Jobs of `k` queued at `priority`.
  static int64_t Queued(const v1::KindSummary& k, int priority = 0);

  base::RealClock real_clock_;
  base::FakeClock fake_clock_;
  Metrics metrics_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<TrackerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Tracker::Stub> client_;
  std::unique_ptr<v1::TrackerAgent::Stub> agents_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_SERVICE_TEST_FIXTURE_H_
