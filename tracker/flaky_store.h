// FlakyStore (tests only): a real Store whose writes can be made to fail, as a full disk or a lost
// database connection makes them fail, and then work again, or wait (HoldWrites). Reads always
// reach the real store.
//
// Thread-safety: as the wrapped store; SetWriteFailure may be called from any thread.

#ifndef BENCHFARM_TRACKER_FLAKY_STORE_H_
#define BENCHFARM_TRACKER_FLAKY_STORE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

class FlakyStore final : public Store {
 public:
  explicit FlakyStore(Store* real) : real_(real) {}  // borrowed; outlives this

  // Every write returns `failure` while it is not OK; OkStatus() heals the store. With
  // `after_commit` the write is stored first (as when the answer to COMMIT is lost).
  void SetWriteFailure(absl::Status failure, bool after_commit = false) {
    absl::MutexLock lock(&mu_);
    failure_ = std::move(failure);
    after_commit_ = after_commit;
  }
  // While held, a write waits (as behind a slow disk) until released.
  void HoldWrites(bool hold) {
    absl::MutexLock lock(&mu_);
    held_ = hold;
  }
  // Writes that reached the store (waiting or done).
  int64_t writes() const {
    absl::MutexLock lock(&mu_);
    return writes_;
  }
  int64_t refused_writes() const {
    absl::MutexLock lock(&mu_);
    return refused_;
  }

  absl::StatusOr<std::optional<std::vector<std::string>>> FindSubmission(
      const std::string& client_id, const std::string& request_id) override {
    return real_->FindSubmission(client_id, request_id);
  }
  absl::Status Apply(const WriteBatch& batch) override {
    absl::Status f = Failure();
    if (f.ok()) return real_->Apply(batch);
    if (AfterCommit()) {
      absl::Status stored = real_->Apply(batch);
      if (!stored.ok()) return stored;
    }
    return f;
  }
  absl::StatusOr<int64_t> LastSeq() override { return real_->LastSeq(); }
  StoreUpkeep Upkeep() const override { return real_->Upkeep(); }
  absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& job_id) override {
    return real_->GetJob(job_id);
  }
  absl::StatusOr<std::vector<StoredJob>> ListJobs(const JobFilter& filter) override {
    return real_->ListJobs(filter);
  }
  absl::StatusOr<std::vector<v1::AttemptLog>> GetAttemptLogs(const std::string& job_id) override {
    return real_->GetAttemptLogs(job_id);
  }
  absl::StatusOr<std::vector<StoredJob>> LoadUnfinishedJobs() override {
    return real_->LoadUnfinishedJobs();
  }
  absl::StatusOr<std::vector<v1::Board>> LoadBoards() override { return real_->LoadBoards(); }
  absl::Status InsertOperator(const v1::Operator& op) override {
    if (absl::Status f = Failure(); !f.ok()) return f;
    return real_->InsertOperator(op);
  }
  absl::StatusOr<std::vector<v1::Operator>> LoadOperators() override {
    return real_->LoadOperators();
  }
  absl::StatusOr<std::optional<v1::Operator>> GetOperator(const std::string& name,
                                                          const std::string& version) override {
    return real_->GetOperator(name, version);
  }
  absl::Status SetOperatorOwner(const std::string& name, const std::string& owner) override {
    if (absl::Status f = Failure(); !f.ok()) return f;
    return real_->SetOperatorOwner(name, owner);
  }
  absl::StatusOr<std::map<std::string, std::string>> LoadOperatorOwners() override {
    return real_->LoadOperatorOwners();
  }
  absl::Status SetOperatorState(const std::string& name, const std::string& version,
                                const v1::OperatorState& state) override {
    if (absl::Status f = Failure(); !f.ok()) return f;
    return real_->SetOperatorState(name, version, state);
  }
  absl::StatusOr<OperatorStates> LoadOperatorStates() override {
    return real_->LoadOperatorStates();
  }

 private:
  bool AfterCommit() {
    absl::MutexLock lock(&mu_);
    return after_commit_;
  }
  absl::Status Failure() {
    absl::MutexLock lock(&mu_);
    writes_++;
    mu_.Await(absl::Condition(
        +[](bool* held) { return !*held; }, &held_));
    if (!failure_.ok()) refused_++;
    return failure_;
  }

  Store* const real_;
  mutable absl::Mutex mu_;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t writes_ ABSL_GUARDED_BY(mu_) = 0;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool after_commit_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_FLAKY_STORE_H_
