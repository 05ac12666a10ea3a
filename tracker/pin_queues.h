// PinQueues: the queued jobs of every board kind, filed so that a free board finds its next job
// without looking at jobs it may not run — no lock, no store; JobQueue holds it under its lock.
//
// Jobs are filed by kind, then priority (highest first), then pin — the board id a trial is
// pinned to ("" for none) and its label set ("" for none) —, then client, each client's jobs in
// submission order (seq). Pick(board) takes, among the pins the board may serve (unpinned, its
// own id, label sets it has), the highest priority that has any; among that priority's clients
// the first after the one served last at that priority (cyclically: clients take turns, whatever
// board served them); and that client's first job in submission order among those pins. What a
// pick costs depends on the board's pins and the clients, never on how many jobs wait.
//
// Thread-safety: none (the caller locks).

#ifndef BENCHFARM_TRACKER_PIN_QUEUES_H_
#define BENCHFARM_TRACKER_PIN_QUEUES_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "proto/benchfarm.pb.h"
#include "tracker/live_job.h"

namespace benchfarm::tracker {

// The board has every one of the labels.
bool HasLabels(const v1::Board& board, const std::map<std::string, std::string>& labels);
// The trial may run on the board: its pin (board id, labels) allows it (the kind aside).
bool Eligible(const v1::Trial& trial, const v1::Board& board);

class PinQueues {
 public:
  // Files the job (by its trial's kind, priority, pin, and its client) in submission order, also
  // when it comes back to the queue.
  void Add(LiveJob* job);
  // Takes it out; nothing if it is not there.
  void Remove(const LiveJob& job);

  // The next job for `board` (see the file comment), or null. A job `ready` refuses is not
  // taken, and nothing else is either (its turn waits: e.g. its submission is not stored yet).
  // The job stays filed: the caller Remove()s it when it offers it.
  LiveJob* Pick(const v1::Board& board, absl::FunctionRef<bool(const LiveJob&)> ready);

  int64_t size() const { return size_; }
  // Jobs queued for `kind`, by priority.
  std::map<int, int64_t> QueuedByPriority(const std::string& kind) const;
  // The pinned groups of `kind` (a board id or a label set), with their jobs, all priorities
  // together: what Summary's waiting reasons are read from.
  struct Pin {
    std::string board_id;
    std::map<std::string, std::string> labels;
    int64_t jobs = 0;
  };
  std::vector<Pin> Pinned(const std::string& kind) const;
  // The kinds with jobs queued, in order, from the first not before `from`.
  std::vector<std::string> KindsFrom(const std::string& from) const;

 private:
  struct QueuedJob {
    int64_t seq = 0;
    LiveJob* job = nullptr;
  };
  // The queued jobs of one pin (a board id or none, and a label set or none) at one priority.
  struct PinQueue {
    std::map<std::string, std::string> labels;               // the pin's labels
    std::map<std::string, std::deque<QueuedJob>> by_client;  // client -> jobs, in seq order
    int64_t size = 0;
  };
  // One priority of one kind: its jobs grouped by pin; the pins' client queues together make the
  // fair-share round (last_client: the client served last at this level, by any board).
  struct Level {
    // pinned board id ("" for none) -> label-set key ("" for none) -> queue
    std::map<std::string, std::map<std::string, PinQueue>> by_pin;
    std::string last_client;
    int64_t size = 0;
  };

  // kind -> priority (highest first) -> level
  std::map<std::string, std::map<int, Level, std::greater<int>>> kinds_;
  int64_t size_ = 0;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_PIN_QUEUES_H_
