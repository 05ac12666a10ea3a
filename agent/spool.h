// ResultSpool: finished results kept on disk until the tracker acknowledges them, so a result is
// neither lost (agent or tracker restart, tracker away) nor reported twice (the tracker records a
// job's result once and acknowledges repeats). One file per job: <dir>/<job_id>.result, a
// serialized v1::JobResult written to a temporary file, fsynced and renamed into place. The spool
// is not part of the image cache (agent/firmware.h; by default its directory is beside the
// cache's, not in it): it counts toward no cache limit and nothing in it is evicted for room.
//
// Thread-safety: all methods may be called from any thread.

#ifndef BENCHFARM_AGENT_SPOOL_H_
#define BENCHFARM_AGENT_SPOOL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::agent {

class ResultSpool {
 public:
  // Opens (creating) the directory and loads what is in it. Unreadable or corrupt files are
  // moved aside as <name>.corrupt and reported on stderr, never fatal.
  static absl::StatusOr<std::unique_ptr<ResultSpool>> Open(const std::string& dir);

  // Durably stores the result (replacing an earlier one of the same job).
  absl::Status Add(const v1::JobResult& result);
  // The tracker has this attempt's result (or needs it no more): forget it. No-op for an unknown
  // job, or when the spooled result is of another attempt (relabelled since: see Get).
  void Remove(const std::string& job_id, int attempt);
  std::vector<v1::JobResult> All() const;
  size_t size() const;
  bool Contains(const std::string& job_id) const;
  // The spooled result of the job, if any (an agent offered a new attempt of a job it already
  // measured answers with it, relabelled, rather than measuring again).
  std::optional<v1::JobResult> Get(const std::string& job_id) const;
  // Job id -> the attempt of its spooled result.
  std::map<std::string, int> Attempts() const;

 private:
  explicit ResultSpool(std::string dir) : dir_(std::move(dir)) {}
  std::string PathOf(const std::string& job_id) const;

  const std::string dir_;
  mutable absl::Mutex mu_;
  std::map<std::string, v1::JobResult> results_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_SPOOL_H_
