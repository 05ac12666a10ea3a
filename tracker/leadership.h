// Leadership: of several trackers given the same database, one serves and the others wait to
// take over (active/standby). A standby does not listen: clients and agents given every
// tracker's address (TrackerChannel: "HOST:PORT,HOST:PORT") reach whichever one serves.
//
// FileLeadership is the SQLite form: the trackers share one machine and the database file, and
// leadership is an exclusive lock (flock) on the file "<database>.leader" beside it. The kernel
// releases it when the leader's process ends, however it ends (kill -9 included), and a standby
// that polls it takes over within one poll period. It also keeps a second tracker from ever
// writing a database another one serves. The leader writes its pid into the file (for the
// standby's log).
//
// Thread-safety: one thread uses an object.

#ifndef BENCHFARM_TRACKER_LEADERSHIP_H_
#define BENCHFARM_TRACKER_LEADERSHIP_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace benchfarm::tracker {

class FileLeadership {
 public:
  explicit FileLeadership(std::string path);  // the lock file, e.g. "<database>.leader"
  ~FileLeadership();                          // gives leadership up

  FileLeadership(const FileLeadership&) = delete;
  FileLeadership& operator=(const FileLeadership&) = delete;

  // Leads now if no other process does: true, or false (another leads). Errors: Internal
  // naming the file when it cannot be opened or locked.
  absl::StatusOr<bool> TryAcquire();
  // Waits, trying every `poll`, until this process leads (true) or `stop()` (false).
  absl::StatusOr<bool> Acquire(absl::FunctionRef<bool()> stop, absl::Duration poll);
  // The leader's pid as it wrote it into the file, or 0 (none, or unreadable).
  int LeaderPid() const;

  bool leading() const { return leading_; }
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  int fd_ = -1;
  bool leading_ = false;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_LEADERSHIP_H_
