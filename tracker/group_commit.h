// GroupCommit: the tracker's one writer to its Store. JobQueue hands it every state change as it
// makes it (under the queue's lock, so tickets follow the order of the changes; a submission's
// new jobs, which nothing else knows yet, under JobQueue's submission lock); a commit thread
// writes whatever is pending in one Store::Apply transaction — one fsync for many changes,
// outside the queue's lock and off gRPC's threads — and then tells those waiting for a ticket
// (an acknowledgement that may be sent only once its change is durable: an accepted submission,
// a stored result).
//
// Coalescing: a job or board changed several times before its commit is written once, in its
// latest state (a job inserted and then updated is inserted in that state).
//
// (An offer's change to RUNNING, whose loss in a crash is harmless, is not handed to it at once:
// JobQueue keeps it until its result replaces it or it is due — JobQueueOptions.defer_offer_writes
// — so that one write per dispatch serializes the job instead of two.)
//
// Failure: a batch the store refuses (a full disk, a read-only file, a lost connection) is kept
// — newer changes merge into it — and tried again every `retry`; the first failure and the
// recovery are logged. While it fails, problem() names the cause (JobQueue then takes no new
// work), and every waiter of a ticket in a refused batch, or registered meanwhile, is told
// Unavailable naming the cause; its change stays pending, so waiting again later succeeds once
// the store works.
//
// Thread-safety: every method may be called from any thread. Callbacks run on the commit thread
// (or, for a ticket already durable or a store already failing, on the caller's thread), with no
// lock of GroupCommit held.

#ifndef BENCHFARM_TRACKER_GROUP_COMMIT_H_
#define BENCHFARM_TRACKER_GROUP_COMMIT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

struct GroupCommitOptions {
  // While the store refuses writes: how often the pending batch is tried again.
  absl::Duration retry = absl::Seconds(1);
  // The least time from one commit's start to the next's while no one waits urgently for what
  // is pending (WhenDurable's `urgent`): a change put after a quiet spell is committed at once,
  // and under a steady stream of changes that can wait each commit gathers this long's worth
  // (one fsync for more changes; 0: commit whenever the last one is done).
  absl::Duration min_interval = absl::Milliseconds(10);
};

// What the commit thread did (for /metrics and the bench).
struct CommitStats {
  int64_t commits = 0;   // transactions committed
  int64_t writes = 0;    // changes they held (after coalescing)
  int64_t failures = 0;  // transactions the store refused
  int64_t pending = 0;   // changes waiting now
  std::string problem;   // why the store is failing now; empty while it works
};

class GroupCommit {
 public:
  using Ticket = int64_t;  // 1, 2, ... in the order changes were put; 0: nothing to wait for
  using Done = std::function<void(absl::Status)>;

  GroupCommit(Store* store, GroupCommitOptions options);  // store borrowed; outlives this
  // Commits what is pending (one more try if the store is failing), then stops the thread.
  ~GroupCommit();

  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;

  // A submission and its new jobs (inserts), always in the same transaction.
  Ticket PutSubmission(const std::string& client_id, const std::string& request_id,
                       std::vector<WriteBatch::JobWrite> jobs);
  // insert: a new job with sequence number seq; else the stored job is replaced.
  Ticket PutJob(int64_t seq, bool insert, const v1::Job& job);
  Ticket PutBoard(const v1::Board& board);
  // An attempt's log (WriteBatch::logs): never coalesced (a log sent twice is written twice, the
  // later replacing the earlier), so it costs one row write and no read.
  Ticket PutLog(const std::string& job_id, v1::AttemptLog log);

  // Calls done(OK) once every change up to `ticket` is durable, or done(Unavailable naming the
  // cause) when a commit holding it fails or the store is failing already (the change stays
  // pending). Ticket 0 or one already durable: at once. Not `urgent`: the answer may wait for a
  // commit that gathers changes for up to min_interval (no one is held up by it); an urgent
  // waiter has the commit that holds its change start as soon as the one before is done.
  void WhenDurable(Ticket ticket, Done done, bool urgent = true);
  // The blocking form.
  absl::Status Wait(Ticket ticket);

  Ticket durable() const;  // every change up to this ticket is stored
  Ticket last() const;     // the newest ticket given
  bool failing() const;
  CommitStats Stats() const;

 private:
  void Run();
  // Adds a write to pending_, merging it with a pending one of the same job or board.
  void AddJobLocked(WriteBatch::JobWrite write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AddBoardLocked(v1::Board board) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Refused() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  const GroupCommitOptions options_;
  mutable absl::Mutex mu_;
  WriteBatch pending_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, size_t> pending_jobs_ ABSL_GUARDED_BY(mu_);    // -> index
  absl::flat_hash_map<std::string, size_t> pending_boards_ ABSL_GUARDED_BY(mu_);  // -> index
  Ticket last_ ABSL_GUARDED_BY(mu_) = 0;
  // Written under mu_ (with stats_); read without it too (durable(), failing(): asked on every
  // offer and result).
  std::atomic<Ticket> durable_{0};
  std::atomic<bool> failing_{false};  // !stats_.problem.empty()
  struct Waiter {
    Done done;
    bool urgent = true;
  };
  std::map<Ticket, std::vector<Waiter>> waiters_ ABSL_GUARDED_BY(mu_);
  int64_t urgent_waiters_ ABSL_GUARDED_BY(mu_) = 0;  // of waiters_
  CommitStats stats_ ABSL_GUARDED_BY(mu_);
  absl::Time next_try_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  absl::Time last_start_ = absl::InfinitePast();  // of the last commit (the commit thread's)
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_GROUP_COMMIT_H_
