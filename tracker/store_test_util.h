// Helpers shared by the Store tests (tests only): jobs to store, a fresh directory per test.

#ifndef BENCHFARM_TRACKER_STORE_TEST_UTIL_H_
#define BENCHFARM_TRACKER_STORE_TEST_UTIL_H_

#include <string>
#include <vector>

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

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_STORE_TEST_UTIL_H_
