// Leftovers: what a killed predecessor of this process (the agent before a kill -9 or a crash) left
// running, found and ended when the process starts again.
//
// Every child the agent starts goes through Subprocess, which makes it die with the agent
// (PR_SET_PDEATHSIG) and, with RecordChildrenIn(dir), has it record itself as <dir>/<pid> holding
// its start time. Both are needed: a sandbox whose agent is killed in the ~10 ms bwrap takes to
// build it outlives the agent (see sandbox.h), and the child's record is removed only once the
// child has been reaped. The agent's start, before it starts anything:
//
//   1. StateLock::Acquire(scratch_dir): an exclusive flock on <scratch_dir>/agent.lock, held for
//      the process's life. A second agent on the same directories is refused (it would take the
//      first one's boards for leftovers); a dead agent's lock goes with it (the kernel drops it),
//      so no lock is ever stale.
//   2. KillLeftovers(<scratch_dir>/processes): for each record <pid> with start time T, every
//      live process that is the recorded one (its pid with start time T) or is in its process
//      group or session (Subprocess children lead both, and so does everything they start — in
//      particular a sandbox's init) and started at or after T, is killed (SIGKILL through a pidfd,
//      after checking its start time again, so a reused pid is never hit). A record whose pid now
//      belongs to another process (a different start time), or that was written before the last
//      boot, or that names this process's own process group or session, is stale: nothing is
//      killed for it. Neither this process nor one of its ancestors is ever killed. A record is
//      removed once nothing of it runs.
//   3. RemoveSandboxLinks(scratch_dir): symbolic links there into a sandbox (QEMU's serial links,
//      "/proc/<pid>/root/dev/pts/N") are removed: nothing of this process runs yet, so they are a
//      predecessor's, and a reused pid could make one point at another sandbox's pty.
//   4. RecordChildrenIn(<scratch_dir>/processes).
//
// Thread-safety: the functions may be called from any thread; StateLock is not shared.

#ifndef BENCHFARM_PROCESS_LEFTOVERS_H_
#define BENCHFARM_PROCESS_LEFTOVERS_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace benchfarm::process {

// The directory leftovers keep their records in, under a scratch directory.
std::string ProcessRecordDir(const std::string& scratch_dir);

// An exclusive lock on a state directory, held while the object lives.
class StateLock {
 public:
  // Creates `dir` (and parents) if needed and locks <dir>/agent.lock, writing this process's pid
  // into it. FailedPrecondition naming the holder's pid when another live process holds it;
  // Internal for OS failures.
  static absl::StatusOr<std::unique_ptr<StateLock>> Acquire(const std::string& dir);
  ~StateLock();
  StateLock(const StateLock&) = delete;
  StateLock& operator=(const StateLock&) = delete;

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  const int fd_;
};

// One process KillLeftovers ended (or tried to).
struct Leftover {
  pid_t pid = 0;
  pid_t record = 0;     // the record (a child's pid) it belonged to
  std::string command;  // its command line, arguments joined by spaces, cut at 200 characters
};

struct LeftoverReport {
  int records = 0;        // records found
  int stale_records = 0;  // of them: pid reused, written before the last boot, or unreadable
  std::vector<Leftover> killed;
  // Killed but still there at the deadline (a process stuck in the kernel); their records are
  // kept for the next start.
  std::vector<Leftover> still_running;
};

// See the file comment (step 2). Waits for the killed processes until `deadline`. Creates `dir`
// (and parents) if it does not exist. Errors: Internal when `dir` cannot be created or listed.
absl::StatusOr<LeftoverReport> KillLeftovers(const std::string& dir, absl::Time deadline);

// See the file comment (step 3): removes the symbolic links directly in `dir` whose target starts
// with "/proc/". Call it before this process starts sandboxes. Returns how many it removed.
int RemoveSandboxLinks(const std::string& dir);

// "3 records, 1 stale; killed 2 processes: 1234 (bwrap ...), ..." for logs.
std::string DescribeLeftovers(const LeftoverReport& report);

}  // namespace benchfarm::process

#endif  // BENCHFARM_PROCESS_LEFTOVERS_H_
