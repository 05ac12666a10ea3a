// Helpers shared by the Store tests (tests only): jobs to store, a fresh directory per test.

#ifndef BENCHFARM_TRACKER_STORE_TEST_UTIL_H_
#define BENCHFARM_TRACKER_STORE_TEST_UTIL_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

// A fresh, empty directory for the running test under TEST_TMPDIR (a real file system), named
// after the test; a failure is the test's.
std::string TestDir();

// A job with a trial of `board_kind` running template op `op` (a C source trial if op is empty).
v1::Job MakeJob(const std::string& job_id, const std::string& client_id,
                const std::string& board_kind, const std::string& op,
                v1::JobState state = v1::QUEUED, int priority = 0);

// The job ids of `jobs`, in order.
std::vector<std::string> JobIds(const std::vector<StoredJob>& jobs);

// An attempt's log, and a batch of its own writing it for `job_id`.
v1::AttemptLog MakeLog(int attempt, const std::string& board_id, const std::string& text);
WriteBatch LogBatch(const std::string& job_id, const v1::AttemptLog& log);

// The upgrade tests' check of a store opened on a schema from before attempt logs that held job
// "a" and one operator: it still holds them, has no log of "a", and takes one. Else Internal
// saying what differs (or the store's error).
absl::Status UpgradedToAttemptLogs(Store& store);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_STORE_TEST_UTIL_H_
