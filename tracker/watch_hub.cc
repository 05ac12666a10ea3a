#include "tracker/watch_hub.h"

namespace benchfarm::tracker {

void WatchSink::Advance() {
  std::shared_ptr<const v1::Job> next;
  grpc::Status status;
  JobWatcher* watcher = nullptr;
  {
    absl::MutexLock lock(&mu_);
    kick_pending_ = false;
    if (watcher_ == nullptr || finished_ || writing_ || busy_ > 0) return;
    if (!finish_wanted_ && pending_.empty() && !job_ids.empty() && remaining_.empty()) {
      FinishLocked(grpc::Status::OK);  // every watched job has finished, and was sent
    }
    if (finish_wanted_) {
      finished_ = true;
      status = final_status_;
    } else if (!pending_.empty()) {
      next = std::move(pending_.front().job);
      pending_bytes_ -= pending_.front().bytes;
      pending_.pop_front();
      writing_ = true;
    } else {
      return;
    }
    watcher = watcher_;
  }
  if (next != nullptr) {
    watcher->Write(*next);
  } else {
    watcher->Finish(std::move(status));  // the reactor may be gone once this returns
  }
}

void WatchSink::CancelIfStuck() {
  JobWatcher* watcher = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (watcher_ == nullptr || finished_ || !writing_ || busy_ > 0) return;
    ++busy_;
    watcher = watcher_;
  }
  watcher->Cancel();
  {
    absl::MutexLock lock(&mu_);
    --busy_;
  }
  Advance();
}

}  // namespace benchfarm::tracker
