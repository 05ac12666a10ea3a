// What the JobQueue tests share (tests only): trials, registrations and results to send, and
// JobQueueTest, a queue on a real SQLite store and a fake clock, with agents as plain calls.

#ifndef BENCHFARM_TRACKER_JOB_QUEUE_TEST_FIXTURE_H_
#define BENCHFARM_TRACKER_JOB_QUEUE_TEST_FIXTURE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "proto/benchfarm.pb.h"
#include "tracker/job_queue.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {

// A trial of `kind` running template op `op` on three 8x8 float32 arguments.
v1::Trial MakeTrial(const std::string& kind = "host", int priority = 0,
                    const std::string& op = "matmul");
// Agent `agent` registering `boards`, all of `kind`.
v1::Register MakeAgent(const std::string& agent, const std::vector<std::string>& boards,
                       const std::string& kind = "host");
// The offer's attempt measured: one cost.
v1::JobResult Ok(const v1::JobOffer& offer, double cost = 1e-3);
// The offer's attempt failed with `code`.
v1::JobResult Failed(const v1::JobOffer& offer, v1::ErrorCode code);
// An attempt an agent says it holds.
v1::HeldAttempt Held(const std::string& job_id, int attempt);

// A JobQueue on a SQLite file of the test's own (TEST_TMPDIR) and a FakeClock. Every test ends,
// and every restart begins, with the board indexes agreeing with the boards (CheckIndexes).
class JobQueueTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;

  // Closes the queue and the store and opens them again (the tracker restarted): Recover().
  void Restart(JobQueueOptions options = Defaults());

  // Lease 10 s, retry budget 3, quarantine after 2 failures, board kinds host and stm32.
  static JobQueueOptions Defaults();

  // Submits `trials` as `client` (a new request id unless `request` is given); the job ids, none
  // after a failure (which fails the test).
  std::vector<std::string> Submit(std::vector<v1::Trial> trials, const std::string& client = "c1",
                                  const std::string& request = "");

  // The one offer `agent` takes now, as the agent reads it (any other number fails the test).
  v1::JobOffer TakeOne(const std::string& agent);

  std::string path_;
  base::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_JOB_QUEUE_TEST_FIXTURE_H_
