#include "device/testing/fake_flasher.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace benchfarm::device {

FakeFlasher::FakeFlasher(std::string name) : name_(std::move(name)) {}

absl::Status FakeFlasher::Flash(const FirmwareImage& image, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  ++attempts_;
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat(name_, ": deadline passed before flashing ", image.path));
  }
  if (!failures_.empty()) {
    absl::Status failure = std::move(failures_.front());
    failures_.pop_front();
    running_.reset();
    return failure;
  }
  flashed_.push_back(image);
  running_ = image;
  return absl::OkStatus();
}

void FakeFlasher::FailNextFlash(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (status.ok()) status = absl::InternalError("FakeFlasher::FailNextFlash given an OK status");
  failures_.push_back(std::move(status));
}

std::vector<FirmwareImage> FakeFlasher::flashed() const {
  absl::MutexLock lock(&mu_);
  return flashed_;
}

int FakeFlasher::attempts() const {
  absl::MutexLock lock(&mu_);
  return attempts_;
}

std::optional<FirmwareImage> FakeFlasher::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

}  // namespace benchfarm::device
