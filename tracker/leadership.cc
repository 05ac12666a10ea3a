#include "tracker/leadership.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/files.h"

namespace benchfarm::tracker {

FileLeadership::FileLeadership(std::string path) : path_(std::move(path)) {}

FileLeadership::~FileLeadership() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

absl::StatusOr<bool> FileLeadership::TryAcquire() {
  if (leading_) return true;
  if (fd_ < 0) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      return absl::InternalError(
          absl::StrCat("leadership: cannot open ", path_, ": ", std::strerror(errno)));
    }
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return false;
    return absl::InternalError(
        absl::StrCat("leadership: cannot lock ", path_, ": ", std::strerror(errno)));
  }
  leading_ = true;
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // Only the standby's message needs it: leadership holds without.
  }
  return true;
}

absl::StatusOr<bool> FileLeadership::Acquire(absl::FunctionRef<bool()> stop,
                                             absl::Duration poll) {
  for (;;) {
    absl::StatusOr<bool> led = TryAcquire();
    if (!led.ok() || *led) return led;
    if (stop()) return false;
    absl::SleepFor(poll);
  }
}

int FileLeadership::LeaderPid() const {
  absl::StatusOr<std::string> text = base::ReadFile(path_);
  int pid = 0;
  if (!text.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid)) return 0;
  return pid;
}

}  // namespace benchfarm::tracker
