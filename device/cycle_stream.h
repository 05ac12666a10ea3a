// CycleStream: the records benchfarm's cycle-model plugin (cyclemodel/plugin.c) writes from inside
// QEMU to a pipe — its greeting once, one line per timed interval the firmware marks (the cycles
// the model charged between the START and STOP markers, and the instructions), and a summary when
// QEMU exits. A thread reads them as they come, so the plugin never waits on a full pipe; a
// measurement takes a call's intervals after the call returned (the plugin writes an interval
// before the firmware's reply leaves the board, so they are in the pipe by then).
//
// Thread-safety: every method may be called from any thread.

#ifndef BENCHFARM_DEVICE_CYCLE_STREAM_H_
#define BENCHFARM_DEVICE_CYCLE_STREAM_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace benchfarm::device {

// One timed interval as the model counted it.
struct ModeledInterval {
  uint64_t cycles = 0;
  uint64_t instructions = 0;
};

class CycleStream {
 public:
  // At most this many intervals wait to be taken; older ones are dropped (and Take says so).
  static constexpr size_t kMaxPending = size_t{1} << 16;

  // Reads `fd` (the pipe's read end; owned from now on) in a thread of its own. `board` names the
  // board in errors ("qemu:mps2-an385").
  CycleStream(int fd, std::string board);
  ~CycleStream();  // stops the thread, closes fd

  CycleStream(const CycleStream&) = delete;
  CycleStream& operator=(const CycleStream&) = delete;

  // Waits for the plugin's greeting. FailedPrecondition if the first line is something else (its
  // text quoted), Unavailable if the stream ended first (QEMU exited: its own output says why),
  // DeadlineExceeded if nothing came in time.
  absl::Status WaitReady(absl::Time deadline);
  // The core the plugin models ("cortex-m3"), once ready; "" before.
  std::string core() const;

  // Forgets the intervals received so far (before a timed call).
  void Discard();
  // The `n` intervals of the call that just returned, in order. Errors (messages start with the
  // board): FailedPrecondition when fewer than n arrived by `deadline` ("reported 2 timed
  // intervals for 5 repeats: the firmware does not mark its timer?"); DataLoss when more than n
  // arrived, some were dropped, or a record was malformed; Unavailable when the stream ended first
  // (QEMU is gone). Taken intervals are removed.
  absl::StatusOr<std::vector<ModeledInterval>> Take(size_t n, absl::Time deadline);

  // The plugin's summary (cycles=, instructions=, unmodeled=, intervals=, ...) once QEMU exited and
  // wrote it; empty before.
  std::map<std::string, uint64_t> Summary() const;
  // Whether the stream has ended (QEMU closed the pipe).
  bool Ended() const;

 private:
  void Run();
  // Parses one line; called with mu_ held.
  void Parse(const std::string& line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int fd_;
  const std::string board_;
  mutable absl::Mutex mu_;
  bool ready_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;    // between a read() and the end of its parsing
  std::string first_line_ ABSL_GUARDED_BY(mu_);  // when it was not the greeting
  std::string core_ ABSL_GUARDED_BY(mu_);
  std::deque<ModeledInterval> intervals_ ABSL_GUARDED_BY(mu_);
  uint64_t dropped_ ABSL_GUARDED_BY(mu_) = 0;
  std::string malformed_ ABSL_GUARDED_BY(mu_);  // the first bad record since the last Discard
  std::map<std::string, uint64_t> summary_ ABSL_GUARDED_BY(mu_);
  std::thread reader_;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_CYCLE_STREAM_H_
