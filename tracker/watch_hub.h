// The WatchJobs machinery: WatchHub (one queue listener feeding every stream's bounded buffer),
// WatchSink (one stream's filter, buffer and writes) and JobWatcher (its reactor). The service's
// own part, included by service.cc only; how it behaves: service.h.

#ifndef BENCHFARM_TRACKER_WATCH_HUB_H_
#define BENCHFARM_TRACKER_WATCH_HUB_H_

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "spdlog/spdlog.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/service.h"

namespace benchfarm::tracker {

class JobWatcher;

// One job event, shared by every stream that shows it: one immutable copy of the job per event,
// however many streams watch it.
struct WatchEvent {
  std::shared_ptr<const v1::Job> job;
  int64_t bytes = 0;  // serialized
};

// What one WatchJobs stream has to send: its filter, its bounded buffer and the state of its
// writes. Shared by the stream's reactor, the hub (which offers it events under the queue's lock:
// a push, nothing more) and the hub's pump thread (which starts writes and finishes cut streams
// outside any lock of the queue's or the hub's).
//
// The reactor stays alive while `writing` or `busy` is set or Finish has not been called (gRPC
// calls OnDone only after Finish): that is what lets Advance call it outside `mu`.
class WatchSink : public std::enable_shared_from_this<WatchSink> {
 public:
  enum class Offered { kQueued, kKick, kCut };

  WatchSink(const v1::WatchJobsRequest& request, const ServiceOptions& options, Caller caller)
      : caller(std::move(caller)),
        client_id(request.client_id()),
        job_ids(request.job_ids().begin(), request.job_ids().end()),
        max_events_(options.watch_buffer_events + static_cast<int64_t>(job_ids.size())),
        max_bytes_(options.watch_buffer_bytes),
        remaining_(job_ids) {}

  const Caller caller;                  // who watches (its credential may be revoked meanwhile)
  const std::string client_id;          // empty: every client
  const std::set<std::string> job_ids;  // empty: every job (of the client)

  bool Matches(const v1::Job& job) const {
    return (client_id.empty() || job.client_id() == client_id) &&
           (job_ids.empty() || job_ids.count(job.job_id()) > 0);
  }

  void Attach(JobWatcher* watcher) {
    absl::MutexLock lock(&mu_);
    watcher_ = watcher;
  }

  // Queues the event (kKick: the pump must start a write), or — the buffer being full — drops
  // what is buffered and marks the stream to be finished with RESOURCE_EXHAUSTED (kCut). Called
  // under the queue's lock: O(1).
  Offered Offer(const WatchEvent& event) {
    absl::MutexLock lock(&mu_);
    if (watcher_ == nullptr || finish_wanted_) return Offered::kQueued;
    const int64_t events = static_cast<int64_t>(pending_.size());
    if (events > 0 && (events >= max_events_ || pending_bytes_ + event.bytes > max_bytes_)) {
      FinishLocked(grpc::Status(
          grpc::RESOURCE_EXHAUSTED,
          absl::StrCat("WatchJobs: this stream fell too far behind: ", events + 1, " events (",
                       pending_bytes_ + event.bytes,
                       " bytes) were waiting to be sent, more than a stream may hold (",
                       max_events_, " events, ", max_bytes_,
                       " bytes); it is closed so the tracker does not hold them. Read faster or "
                       "watch fewer jobs (client_id, job_ids), and watch again (GetJob and "
                       "ListResults give the current state)")));
      cut_ = true;
      return Offered::kCut;
    }
    pending_.push_back(event);
    pending_bytes_ += event.bytes;
    const v1::JobState state = event.job->state();
    if (state == v1::DONE || state == v1::CANCELLED_STATE) remaining_.erase(event.job->job_id());
    if (writing_ || kick_pending_) return Offered::kQueued;
    kick_pending_ = true;
    return Offered::kKick;
  }

  // Starts the next write, or finishes the stream when it is done (every named job finished and
  // sent, the client gone, or cut off). Never under the queue's or the hub's lock.
  void Advance();

  // A cut-off stream whose write in flight does not complete (its client does not read) is
  // cancelled: that completes the write and frees the stream.
  void CancelIfStuck();

  // gRPC's notifications, from the reactor.
  void WriteDone(bool ok) {
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) FinishLocked(grpc::Status::CANCELLED);  // the client went away
    }
    Advance();
  }
  void Cancelled() {
    {
      absl::MutexLock lock(&mu_);
      FinishLocked(grpc::Status::CANCELLED);
    }
    Advance();
  }
  void Done() {
    absl::MutexLock lock(&mu_);
    watcher_ = nullptr;
    pending_.clear();
    pending_bytes_ = 0;
  }

  bool cut() {
    absl::MutexLock lock(&mu_);
    return cut_;
  }

  // The watcher's credential was revoked: the stream ends with UNAUTHENTICATED. Never under the
  // queue's or the hub's lock.
  void Revoke(const std::string& why) {
    {
      absl::MutexLock lock(&mu_);
      FinishLocked(grpc::Status(grpc::UNAUTHENTICATED, why));
    }
    Advance();
  }

 private:
  // Asks for the stream to end with `status` (the first reason wins) and drops what is buffered.
  void FinishLocked(grpc::Status status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finish_wanted_) return;
    finish_wanted_ = true;
    final_status_ = std::move(status);
    pending_.clear();
    pending_bytes_ = 0;
  }

  const int64_t max_events_;
  const int64_t max_bytes_;
  absl::Mutex mu_;
  JobWatcher* watcher_ ABSL_GUARDED_BY(mu_) = nullptr;  // null once the stream is done
  std::deque<WatchEvent> pending_ ABSL_GUARDED_BY(mu_);
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<std::string> remaining_ ABSL_GUARDED_BY(mu_);  // named jobs not finished yet
  bool writing_ ABSL_GUARDED_BY(mu_) = false;             // a write is in flight (or being started)
  int busy_ ABSL_GUARDED_BY(mu_) = 0;                     // calls into the reactor outside mu_
  bool kick_pending_ ABSL_GUARDED_BY(mu_) = false;        // the pump will call Advance
  bool finish_wanted_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // Finish was called
  bool cut_ ABSL_GUARDED_BY(mu_) = false;
  grpc::Status final_status_ ABSL_GUARDED_BY(mu_);
};

// Feeds every WatchJobs stream from one queue listener. The listener (under the queue's lock)
// looks the event up in the streams' filters — by job id, by client, or everything — and offers
// one shared copy to each matching stream; starting writes and finishing cut streams is the
// pump thread's. Lock order: the queue's lock, then mu_, then a sink's.
class WatchHub {
 public:
  WatchHub(JobQueue* queue, Metrics* metrics, const ServiceOptions& options)
      : queue_(queue), metrics_(metrics), options_(options) {
    listener_ = queue_->AddListener([this](const v1::Job& job) { OnJob(job); });
    pump_ = std::thread([this] { Pump(); });
  }
  ~WatchHub() { Stop(); }

  // Removes the listener and stops the pump (streams still open finish on gRPC's threads).
  void Stop() {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      stopping_ = true;
    }
    queue_->RemoveListener(listener_);
    if (pump_.joinable()) pump_.join();
  }

  const ServiceOptions& options() const { return options_; }
  JobQueue* queue() const { return queue_; }

  // Ends the streams whose watcher `revoked` says lost its credential; how many.
  int EndRevoked(const std::function<bool(const Caller&)>& revoked) {
    std::vector<std::shared_ptr<WatchSink>> ended;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [raw, sink] : sinks_) {
        if (revoked(sink->caller)) ended.push_back(sink);
      }
    }
    for (const std::shared_ptr<WatchSink>& sink : ended) {
      sink->Revoke(absl::StrCat("WatchJobs: the ", sink->caller.identity.how, " of ",
                                sink->caller.identity.name, " was revoked"));
    }
    return static_cast<int>(ended.size());
  }

  void Add(const std::shared_ptr<WatchSink>& sink) {
    absl::MutexLock lock(&mu_);
    sinks_[sink.get()] = sink;
    if (!sink->job_ids.empty()) {
      for (const std::string& id : sink->job_ids) by_job_[id].insert(sink.get());
    } else if (!sink->client_id.empty()) {
      by_client_[sink->client_id].insert(sink.get());
    } else {
      everything_.insert(sink.get());
    }
    if (metrics_ != nullptr) metrics_->SetWatchers(static_cast<int64_t>(sinks_.size()));
  }

  void Remove(WatchSink* sink) {
    absl::MutexLock lock(&mu_);
    auto it = sinks_.find(sink);
    if (it == sinks_.end()) return;
    auto erase = [sink](auto* index, const std::string& key) {
      auto entry = index->find(key);
      if (entry == index->end()) return;
      entry->second.erase(sink);
      if (entry->second.empty()) index->erase(entry);
    };
    for (const std::string& id : sink->job_ids) erase(&by_job_, id);
    if (sink->job_ids.empty() && !sink->client_id.empty()) erase(&by_client_, sink->client_id);
    everything_.erase(sink);
    sinks_.erase(it);
    if (metrics_ != nullptr) metrics_->SetWatchers(static_cast<int64_t>(sinks_.size()));
  }

 private:
  // The queue's listener, under its lock: filter, one shared copy, a push per matching stream.
  void OnJob(const v1::Job& job) {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    matched_.clear();
    for (WatchSink* s : everything_) matched_.push_back(s);
    if (auto it = by_client_.find(job.client_id()); it != by_client_.end()) {
      for (WatchSink* s : it->second) matched_.push_back(s);
    }
    if (auto it = by_job_.find(job.job_id()); it != by_job_.end()) {
      for (WatchSink* s : it->second) {
        if (s->Matches(job)) matched_.push_back(s);
      }
    }
    if (matched_.empty()) return;
    WatchEvent event;
    event.job = std::make_shared<const v1::Job>(job);
    event.bytes = static_cast<int64_t>(event.job->ByteSizeLong());
    for (WatchSink* s : matched_) {
      switch (s->Offer(event)) {
        case WatchSink::Offered::kQueued:
          break;
        case WatchSink::Offered::kKick:
          kicks_.push_back(sinks_[s]);
          break;
        case WatchSink::Offered::kCut:
          kicks_.push_back(sinks_[s]);
          stuck_.push_back({absl::Now() + options_.watch_cut_grace, sinks_[s]});
          if (metrics_ != nullptr) metrics_->WatcherCut();
          break;
      }
    }
  }

  // Starts writes for the streams that got events while idle, finishes cut ones, and cancels
  // cut streams whose last write is stuck past the grace period.
  void Pump() {
    std::vector<std::shared_ptr<WatchSink>> kicks;
    std::vector<std::weak_ptr<WatchSink>> overdue;
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        auto ready = [this]()
                         ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_ || !kicks_.empty(); };
        absl::Time wake = stuck_.empty() ? absl::Now() + absl::Seconds(1) : stuck_.front().first;
        mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
        if (stopping_) return;
        kicks.swap(kicks_);
        const absl::Time now = absl::Now();
        while (!stuck_.empty() && stuck_.front().first <= now) {
          overdue.push_back(std::move(stuck_.front().second));
          stuck_.pop_front();
        }
      }
      for (std::shared_ptr<WatchSink>& sink : kicks) sink->Advance();
      kicks.clear();
      for (std::weak_ptr<WatchSink>& weak : overdue) {
        if (std::shared_ptr<WatchSink> sink = weak.lock()) sink->CancelIfStuck();
      }
      overdue.clear();
    }
  }

  JobQueue* const queue_;
  Metrics* const metrics_;
  const ServiceOptions options_;
  int listener_ = 0;
  std::thread pump_;
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::flat_hash_map<WatchSink*, std::shared_ptr<WatchSink>> sinks_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<WatchSink*> everything_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatchSink*>> by_client_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, absl::flat_hash_set<WatchSink*>> by_job_ ABSL_GUARDED_BY(mu_);
  std::vector<WatchSink*> matched_ ABSL_GUARDED_BY(mu_);  // scratch for OnJob
  std::vector<std::shared_ptr<WatchSink>> kicks_ ABSL_GUARDED_BY(mu_);
  // Cut streams by when they are cancelled if still open (in time order: the grace is constant).
  std::deque<std::pair<absl::Time, std::weak_ptr<WatchSink>>> stuck_ ABSL_GUARDED_BY(mu_);
};

// One WatchJobs stream: the reactor over its WatchSink. Deletes itself when gRPC is done with it.
class JobWatcher final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  JobWatcher(grpc::CallbackServerContext* context, std::shared_ptr<WatchHub> hub,
             const v1::WatchJobsRequest& request, Caller caller)
      : context_(context),
        hub_(std::move(hub)),
        sink_(std::make_shared<WatchSink>(request, hub_->options(), std::move(caller))) {
    sink_->Attach(this);
    hub_->Add(sink_);
    // The current state of named jobs first (they may have finished already).
    for (const std::string& id : sink_->job_ids) {
      absl::StatusOr<v1::Job> job = hub_->queue()->GetJob(id);
      if (!job.ok() || !sink_->Matches(*job)) continue;
      WatchEvent event;
      event.job = std::make_shared<const v1::Job>(*std::move(job));
      event.bytes = static_cast<int64_t>(event.job->ByteSizeLong());
      sink_->Offer(event);
    }
    sink_->Advance();
  }

  void OnWriteDone(bool ok) override { sink_->WriteDone(ok); }
  void OnCancel() override { sink_->Cancelled(); }
  void OnDone() override {
    hub_->Remove(sink_.get());
    sink_->Done();
    delete this;
  }

  // For WatchSink (which calls them outside its lock, with the reactor kept alive).
  void Write(const v1::Job& job) {
    *event_.mutable_job() = job;  // the copy and serialization happen here, outside every lock
    StartWrite(&event_);
  }
  void Cancel() { context_->TryCancel(); }

 private:
  grpc::CallbackServerContext* const context_;
  const std::shared_ptr<WatchHub> hub_;
  const std::shared_ptr<WatchSink> sink_;
  v1::JobEvent event_;  // the write in flight
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_WATCH_HUB_H_
