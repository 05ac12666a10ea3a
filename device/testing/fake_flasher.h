// FakeFlasher: a Flasher for tests of the code that decides when and what to flash (the agent's
// workers). It touches no file and no board: Flash() records the image and "runs" it, unless a
// failure was scripted with FailNextFlash().
//
// Flash() errors:
//   DeadlineExceeded  the deadline had already passed when Flash() was called (nothing recorded
//                     as flashed; counts as an attempt).
//   whatever FailNextFlash() queued, in order, one per Flash() call (recorded as an attempt, not
//                     as flashed; running() is cleared, as a real failed flash leaves the board in
//                     an unknown state).
//
// Thread-safety: every method may be called from any thread, concurrently.

#ifndef BENCHFARM_DEVICE_TESTING_FAKE_FLASHER_H_
#define BENCHFARM_DEVICE_TESTING_FAKE_FLASHER_H_

#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device/flasher.h"

namespace benchfarm::device {

class FakeFlasher final : public Flasher {
 public:
  // `name` is what Name() returns.
  explicit FakeFlasher(std::string name = "fake");

  absl::Status Flash(const FirmwareImage& image, absl::Time deadline) override;
  std::string Name() const override { return name_; }

  // Makes a coming Flash() fail with `status` (which must not be OK). Calls queue up: the n-th
  // queued status fails the n-th following Flash().
  void FailNextFlash(absl::Status status);

  // The images successfully flashed, oldest first.
  std::vector<FirmwareImage> flashed() const;
  // Every Flash() call so far, successful or not.
  int attempts() const;
  // The image the fake board runs: the last successful flash, unless a flash failed since.
  std::optional<FirmwareImage> running() const;

 private:
  const std::string name_;
  mutable absl::Mutex mu_;
  std::deque<absl::Status> failures_ ABSL_GUARDED_BY(mu_);
  std::vector<FirmwareImage> flashed_ ABSL_GUARDED_BY(mu_);
  std::optional<FirmwareImage> running_ ABSL_GUARDED_BY(mu_);
  int attempts_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_TESTING_FAKE_FLASHER_H_
