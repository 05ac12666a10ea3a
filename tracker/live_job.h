// LiveJob: a job the tracker holds in memory while it is QUEUED or RUNNING (JobQueue's jobs),
// with what scheduling needs beside the stored v1::Job.

#ifndef BENCHFARM_TRACKER_LIVE_JOB_H_
#define BENCHFARM_TRACKER_LIVE_JOB_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "proto/benchfarm.pb.h"
#include "tracker/group_commit.h"

namespace benchfarm::tracker {

struct LiveJob {
  int64_t seq = 0;  // its submission order (the store's sequence number)
  v1::Job job;
  absl::Time lease_deadline;  // while RUNNING
  std::string agent_id;       // while RUNNING: the agent whose board runs it
  int64_t trial_bytes = 0;    // counted in its client's load
  // The ticket of its insert: it is offered only once that is stored (a job offered but then
  // lost with its unacknowledged submission in a crash would be measured for nobody).
  GroupCommit::Ticket inserted = 0;
  // While RUNNING: its change to RUNNING is not handed to the store yet (JobQueueOptions::
  // defer_offer_writes), and when it was offered.
  bool offer_unsaved = false;
  absl::Time offered_at;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_LIVE_JOB_H_
