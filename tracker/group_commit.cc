#include "tracker/group_commit.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "spdlog/spdlog.h"

namespace benchfarm::tracker {

GroupCommit::GroupCommit(Store* store, GroupCommitOptions options)
    : store_(store), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

GroupCommit::~GroupCommit() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

GroupCommit::Ticket GroupCommit::PutSubmission(const std::string& client_id,
                                               const std::string& request_id,
                                               std::vector<WriteBatch::JobWrite> jobs) {
  std::vector<std::string> job_ids;
  job_ids.reserve(jobs.size());
  for (const WriteBatch::JobWrite& job : jobs) job_ids.push_back(job.job_id);
  absl::MutexLock lock(&mu_);  // one acquisition: the commit thread takes all of it or none
  pending_.submissions.push_back({client_id, request_id, std::move(job_ids)});
  if (const size_t needed = pending_.jobs.size() + jobs.size(); pending_.jobs.capacity() < needed) {
    pending_.jobs.reserve(std::max(needed, 2 * pending_.jobs.capacity()));
  }
  for (WriteBatch::JobWrite& job : jobs) AddJobLocked(std::move(job));
  return ++last_;
}

GroupCommit::Ticket GroupCommit::PutJob(int64_t seq, bool insert, const v1::Job& job) {
  WriteBatch::JobWrite write = WriteBatch::JobWrite::Of(seq, insert, job);  // outside the lock
  absl::MutexLock lock(&mu_);
  AddJobLocked(std::move(write));
  return ++last_;
}

GroupCommit::Ticket GroupCommit::PutLog(const std::string& job_id, v1::AttemptLog log) {
  absl::MutexLock lock(&mu_);
  pending_.logs.push_back({job_id, std::move(log)});
  return ++last_;
}

GroupCommit::Ticket GroupCommit::PutBoard(const v1::Board& board) {
  absl::MutexLock lock(&mu_);
  AddBoardLocked(board);
  return ++last_;
}

void GroupCommit::AddJobLocked(WriteBatch::JobWrite write) {
  auto [it, added] = pending_jobs_.try_emplace(write.job_id, pending_.jobs.size());
  if (added) {
    pending_.jobs.push_back(std::move(write));
    return;
  }
  WriteBatch::JobWrite& pending = pending_.jobs[it->second];
  // The newer state replaces the older; an insert stays an insert, with its seq.
  const bool insert = pending.insert || write.insert;
  const int64_t seq = pending.insert ? pending.seq : write.seq;
  pending = std::move(write);
  pending.insert = insert;
  pending.seq = seq;
}

void GroupCommit::AddBoardLocked(v1::Board board) {
  auto [it, added] = pending_boards_.try_emplace(board.board_id(), pending_.boards.size());
  if (added) {
    pending_.boards.push_back(std::move(board));
  } else {
    pending_.boards[it->second] = std::move(board);
  }
}

absl::Status GroupCommit::Refused() const {
  return absl::UnavailableError(
      absl::StrCat("the tracker's database is failing (", stats_.problem,
                   "); the change is kept and stored when it works again: try again later"));
}

void GroupCommit::WhenDurable(Ticket ticket, Done done, bool urgent) {
  absl::Status now;
  {
    absl::MutexLock lock(&mu_);
    if (ticket > durable_.load(std::memory_order_relaxed)) {
      if (stats_.problem.empty()) {
        waiters_[ticket].push_back(Waiter{std::move(done), urgent});
        if (urgent) ++urgent_waiters_;
        return;
      }
      now = Refused();
    }
  }
  done(now);
}

absl::Status GroupCommit::Wait(Ticket ticket) {
  absl::Notification decided;
  absl::Status result;
  WhenDurable(ticket, [&](absl::Status s) {
    result = std::move(s);
    decided.Notify();
  });
  decided.WaitForNotification();
  return result;
}

GroupCommit::Ticket GroupCommit::durable() const {
  return durable_.load(std::memory_order_acquire);
}

GroupCommit::Ticket GroupCommit::last() const {
  absl::MutexLock lock(&mu_);
  return last_;
}

bool GroupCommit::failing() const { return failing_.load(std::memory_order_acquire); }

CommitStats GroupCommit::Stats() const {
  absl::MutexLock lock(&mu_);
  CommitStats stats = stats_;
  stats.pending = static_cast<int64_t>(pending_.size());
  return stats;
}

void GroupCommit::Run() {
  bool last_try = false;
  for (;;) {
    WriteBatch batch;
    Ticket upto = 0;
    {
      absl::MutexLock lock(&mu_);
      // While failing, wake for the next try even without new changes.
      const absl::Time deadline = stats_.problem.empty() ? absl::InfiniteFuture() : next_try_;
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return stopping_ || (!pending_.empty() && absl::Now() >= next_try_);
      };
      mu_.AwaitWithDeadline(absl::Condition(&ready), deadline);
      if (pending_.empty() && stopping_) return;
      if (pending_.empty() || (!stopping_ && absl::Now() < next_try_)) continue;
      // Close behind the last commit, with no one waiting urgently: what comes in meanwhile
      // joins this one (until someone does).
      if (const absl::Time gathered = last_start_ + options_.min_interval;
          !stopping_ && stats_.problem.empty() && urgent_waiters_ == 0 && absl::Now() < gathered) {
        auto go = [this]()
                      ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || urgent_waiters_ > 0; };
        mu_.AwaitWithDeadline(absl::Condition(&go), gathered);
      }
      last_start_ = absl::Now();
      if (stopping_) {
        if (last_try) {
          spdlog::error("database: {} changes could not be stored before stopping ({})",
                        pending_.size(), stats_.problem);
          return;
        }
        last_try = true;
      }
      batch = std::move(pending_);
      pending_ = WriteBatch();
      pending_jobs_.clear();
      pending_boards_.clear();
      upto = last_;
      // After a failure the batch may have been committed already (the answer to COMMIT lost):
      // sent again, what is stored is not an error.
      batch.replay = !stats_.problem.empty();
    }
    const absl::Status status = store_->Apply(batch);
    std::vector<Done> decided;
    absl::Status verdict;
    {
      absl::MutexLock lock(&mu_);
      if (status.ok()) {
        if (!stats_.problem.empty()) {
          spdlog::info("database: writes work again (they failed with: {}); {} changes stored",
                       stats_.problem, batch.size());
          stats_.problem.clear();
          failing_.store(false, std::memory_order_release);
        }
        stats_.commits++;
        stats_.writes += static_cast<int64_t>(batch.size());
        durable_.store(upto, std::memory_order_release);
      } else {
        stats_.failures++;
        const std::string cause(status.message().substr(0, 512));
        if (stats_.problem.empty()) {
          spdlog::error(
              "database: a write failed: {}; no new work is taken, and results and "
              "submissions are answered UNAVAILABLE until writes work again (tried "
              "every {}; {} changes kept)",
              cause, absl::FormatDuration(options_.retry), batch.size());
        }
        stats_.problem = cause;
        failing_.store(true, std::memory_order_release);
        next_try_ = absl::Now() + options_.retry;
        // Kept, older than what came meanwhile: the newer changes merge into it.
        WriteBatch newer = std::move(pending_);
        pending_ = WriteBatch();
        pending_jobs_.clear();
        pending_boards_.clear();
        pending_.submissions = std::move(batch.submissions);
        for (WriteBatch::JobWrite& write : batch.jobs) AddJobLocked(std::move(write));
        for (v1::Board& board : batch.boards) AddBoardLocked(std::move(board));
        pending_.logs = std::move(batch.logs);
        for (WriteBatch::Submission& s : newer.submissions) {
          pending_.submissions.push_back(std::move(s));
        }
        for (WriteBatch::JobWrite& write : newer.jobs) AddJobLocked(std::move(write));
        for (v1::Board& board : newer.boards) AddBoardLocked(std::move(board));
        for (WriteBatch::LogWrite& log : newer.logs) pending_.logs.push_back(std::move(log));
        verdict = Refused();
      }
      // Waiters of the batch's tickets (on failure: and of every ticket, the store failing).
      auto end = status.ok() ? waiters_.upper_bound(upto) : waiters_.end();
      for (auto it = waiters_.begin(); it != end; ++it) {
        for (Waiter& w : it->second) {
          if (w.urgent) --urgent_waiters_;
          decided.push_back(std::move(w.done));
        }
      }
      waiters_.erase(waiters_.begin(), end);
    }
    for (Done& done : decided) done(verdict);
  }
}

}  // namespace benchfarm::tracker
