// FaultInjectingTransport: wraps another Transport and corrupts the byte stream on purpose —
// drops, bit flips, duplicates and delays, each with its own per-byte probability — so tests can
// prove the framing, session and RPC layers survive a bad link.
//
// Reproducibility: every decision comes from std::mt19937_64 seeded with FaultOptions::seed, one
// generator per direction (writes use `seed`, reads a fixed derivation of it), and each byte
// consumes the same number of draws whatever happens to it. So, for a given seed, the faults a
// direction applies depend only on the sequence of bytes through it — not on how they are split
// into Read/Write calls, not on timing, and not on the other direction. Probabilities are
// computed from the raw 64-bit draws (not std::uniform_real_distribution, whose output differs
// between standard libraries).
//
// Per byte, in this order: dropped with drop_rate (nothing else happens to it); otherwise one
// random bit flipped with flip_rate; then sent twice with duplicate_rate; then held back with
// delay_rate for a uniform random time in [0, max_delay] before it (and everything after it, so
// bytes never reorder) goes through.
//
// Delays: on Write, the bytes before a delayed byte are written, then the call waits; on Read,
// processed bytes wait in a queue until their release time. A wait ends at the call's deadline
// at the latest (DeadlineExceeded; bytes still queued on the read side are returned by a later
// Read), or when Close() is called (FailedPrecondition).
//
// Errors: those of the inner transport, plus DeadlineExceeded when an injected delay reaches the
// deadline and FailedPrecondition when Close() interrupts one; Name() is "faulty:<inner name>".
//
// Thread-safety: as Transport — one reader plus one writer (each direction has its own state);
// Close() and counters() may be called from any thread. Open/Close are forwarded to the inner
// transport.

#ifndef BENCHFARM_DEVICE_FAULT_INJECTING_TRANSPORT_H_
#define BENCHFARM_DEVICE_FAULT_INJECTING_TRANSPORT_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "device/transport.h"

namespace benchfarm::device {

struct FaultOptions {
  // Per-byte probabilities; values outside [0, 1] are clamped (NaN counts as 0).
  double drop_rate = 0.0;
  double flip_rate = 0.0;
  double duplicate_rate = 0.0;
  double delay_rate = 0.0;
  // Upper bound of one injected delay; negative counts as zero.
  absl::Duration max_delay = absl::ZeroDuration();
  uint64_t seed = 1;
  // Which directions are affected: bytes read from the inner transport, bytes written to it.
  bool on_read = true;
  bool on_write = true;
};

// What the transport did so far (both directions together). A duplicated byte counts once.
struct FaultCounters {
  uint64_t dropped = 0;
  uint64_t flipped = 0;
  uint64_t duplicated = 0;
  uint64_t delayed = 0;
};

class FaultInjectingTransport final : public Transport {
 public:
  // Owns `inner`.
  FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultOptions options);
  // Borrows `inner`, which must outlive this object.
  FaultInjectingTransport(Transport* inner, FaultOptions options);

  FaultInjectingTransport(const FaultInjectingTransport&) = delete;
  FaultInjectingTransport& operator=(const FaultInjectingTransport&) = delete;

  absl::Status Open() override { return inner_->Open(); }
  // Also forgets bytes queued by read-side delays.
  void Close() override;
  absl::Status Write(absl::string_view data, absl::Time deadline) override;
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override;
  std::string Name() const override;

  FaultCounters counters() const;

 private:
  // One direction's generator and the per-byte decision it makes.
  struct Direction {
    explicit Direction(uint64_t seed) : rng(seed) {}
    std::mt19937_64 rng;
  };
  struct Fate {
    bool drop = false;
    bool duplicate = false;
    uint8_t byte = 0;  // possibly flipped
    absl::Duration delay;
  };
  struct Queued {
    uint8_t byte;
    absl::Time release;
  };

  Fate Decide(Direction& direction, uint8_t byte);
  uint64_t CloseCount() const;
  // Waits until `until`; DeadlineExceeded if `deadline` comes first, FailedPrecondition if
  // Close() is called (close_count_ moves away from `close_count`).
  absl::Status WaitUntil(absl::Time until, absl::Time deadline, uint64_t close_count);

  std::unique_ptr<Transport> owned_;
  Transport* const inner_;
  const FaultOptions options_;
  Direction read_;
  Direction write_;
  mutable absl::Mutex mu_;
  absl::CondVar closed_;
  uint64_t close_count_ ABSL_GUARDED_BY(mu_) = 0;
  // Read side: processed bytes waiting for their release time.
  std::deque<Queued> read_queue_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> flipped_{0};
  std::atomic<uint64_t> duplicated_{0};
  std::atomic<uint64_t> delayed_{0};
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_FAULT_INJECTING_TRANSPORT_H_
