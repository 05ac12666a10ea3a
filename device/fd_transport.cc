// FdTransport. Every wait is a ppoll() on the data descriptor plus an eventfd that Close()
// signals, so a blocked Read/Write can be woken without closing a descriptor under it (closing an
// fd another thread polls is a race: the number may be reused before ppoll returns).

#include "device/fd_transport.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "base/os_error.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

// ppoll() until `deadline`; restarts after EINTR with the remaining time. Returns ppoll's result
// (0 on timeout) or -1 with errno set.
int PollUntil(struct pollfd* fds, nfds_t n, absl::Time deadline) {
  for (;;) {
    struct timespec ts;
    struct timespec* timeout = nullptr;
    if (deadline != absl::InfiniteFuture()) {
      absl::Duration left = deadline - absl::Now();
      if (left < absl::ZeroDuration()) left = absl::ZeroDuration();
      ts = absl::ToTimespec(left);
      timeout = &ts;
    }
    int r = ppoll(fds, n, timeout, nullptr);
    if (r >= 0 || errno != EINTR) return r;
  }
}

// Errors meaning "the other end is gone" rather than "something is broken here".
bool IsHangup(int err) {
  return err == EIO || err == ENXIO || err == ENODEV || err == ECONNRESET || err == EPIPE;
}

// write() with SIGPIPE held off for this thread only: writing to a pipe whose reader exited must
// yield EPIPE, not kill the process, and a library must not change process-wide dispositions. A
// SIGPIPE raised by this write stays pending while blocked; it is consumed before unblocking
// unless one was already pending before (that one is not ours to swallow).
ssize_t WriteWithoutSigpipe(int fd, const void* data, size_t n) {
  sigset_t pipe_set, old_set, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_set);
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ssize_t w = write(fd, data, n);
  const int saved = errno;
  if (w < 0 && saved == EPIPE && !was_pending) {
    const struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_set, nullptr);
  errno = saved;
  return w;
}

absl::Status SetNonBlocking(int fd, absl::string_view name) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
    return absl::InternalError(
        absl::StrCat(name, ": cannot make fd ", fd, " non-blocking: ", base::ErrnoText(errno)));
  }
  return absl::OkStatus();
}

}  // namespace

FdTransport::FdTransport(std::string name) : name_(std::move(name)) {}

FdTransport::~FdTransport() { Close(); }

absl::Status FdTransport::Attach(int read_fd, int write_fd, Ownership ownership) {
  const bool owned = ownership == Ownership::kOwned;
  auto close_given = [&] {
    if (!owned) return;
    if (read_fd >= 0) close(read_fd);
    if (write_fd >= 0 && write_fd != read_fd) close(write_fd);
  };
  if (read_fd < 0 || write_fd < 0) {
    close_given();
    return absl::InvalidArgumentError(
        absl::StrCat(name_, ": Attach needs two descriptors, got ", read_fd, " and ", write_fd));
  }
  absl::MutexLock lock(&mu_);
  if (read_fd_ >= 0 || closing_) {
    return absl::FailedPreconditionError(absl::StrCat(name_, ": descriptors already attached"));
  }
  absl::Status status = SetNonBlocking(read_fd, name_);
  if (status.ok() && write_fd != read_fd) status = SetNonBlocking(write_fd, name_);
  if (!status.ok()) {
    close_given();
    return status;
  }
  int wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake < 0) {
    int err = errno;
    close_given();
    return absl::InternalError(absl::StrCat(name_, ": eventfd: ", base::ErrnoText(err)));
  }
  read_fd_ = read_fd;
  write_fd_ = write_fd;
  wake_fd_ = wake;
  owned_ = owned;
  return absl::OkStatus();
}

absl::Status FdTransport::Open() {
  absl::MutexLock lock(&mu_);
  if (read_fd_ >= 0 && !closing_) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(name_, ": no descriptors attached (its owner must attach new ones)"));
}

bool FdTransport::is_open() const {
  absl::MutexLock lock(&mu_);
  return read_fd_ >= 0 && !closing_;
}

void FdTransport::Close() {
  absl::MutexLock lock(&mu_);
  if (read_fd_ < 0 || closing_) {
    // Not attached, or another thread is closing: wait for that Close to finish so that every
    // Close() returns with the descriptors closed.
    mu_.Await(absl::Condition(this, &FdTransport::NotClosing));
    return;
  }
  closing_ = true;
  const uint64_t one = 1;
  // The eventfd counter cannot overflow from a single increment, so this write cannot fail.
  (void)!write(wake_fd_, &one, sizeof(one));
  mu_.Await(absl::Condition(this, &FdTransport::Idle));
  if (owned_) {
    close(read_fd_);
    if (write_fd_ != read_fd_) close(write_fd_);
  }
  close(wake_fd_);
  read_fd_ = write_fd_ = wake_fd_ = -1;
  closing_ = false;
}

absl::StatusOr<FdTransport::Fds> FdTransport::Enter(absl::string_view op) {
  absl::MutexLock lock(&mu_);
  if (read_fd_ < 0 || closing_) {
    return absl::FailedPreconditionError(absl::StrCat(name_, ": ", op, " on a closed transport"));
  }
  ++active_;
  return Fds{read_fd_, write_fd_, wake_fd_};
}

void FdTransport::Leave() {
  absl::MutexLock lock(&mu_);
  --active_;
}

absl::StatusOr<size_t> FdTransport::Read(absl::Span<uint8_t> out, absl::Time deadline) {
  if (out.empty()) return absl::InvalidArgumentError(absl::StrCat(name_, ": Read into 0 bytes"));
  ASSIGN_OR_RETURN(const Fds fds, Enter("Read"));
  absl::Cleanup leave = [this] { Leave(); };
  for (;;) {
    struct pollfd p[2] = {{fds.read_fd, POLLIN, 0}, {fds.wake_fd, POLLIN, 0}};
    int r = PollUntil(p, 2, deadline);
    if (r < 0) return absl::InternalError(absl::StrCat(name_, ": ppoll: ", base::ErrnoText(errno)));
    if (p[1].revents != 0) {
      return absl::FailedPreconditionError(absl::StrCat(name_, ": closed while reading"));
    }
    if (r == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat(name_, ": nothing received before the deadline"));
    }
    if ((p[0].revents & POLLNVAL) != 0) {
      return absl::InternalError(absl::StrCat(name_, ": fd ", fds.read_fd, " is not open"));
    }
    // POLLIN, POLLHUP or POLLERR: read() tells which of data, end of file or an error it is. A
    // pipe can report POLLHUP while data written before the hangup is still buffered.
    ssize_t n = read(fds.read_fd, out.data(), out.size());
    if (n > 0) return static_cast<size_t>(n);
    if (n == 0) {
      return absl::UnavailableError(absl::StrCat(name_, ": closed by the board (end of file)"));
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      // Spurious readiness; but a hangup that yields neither data nor EOF would spin forever.
      if ((p[0].revents & (POLLHUP | POLLERR)) != 0) {
        return absl::UnavailableError(absl::StrCat(name_, ": closed by the board (hang-up)"));
      }
      continue;
    }
    if (IsHangup(err)) {
      return absl::UnavailableError(
          absl::StrCat(name_, ": closed by the board (", base::ErrnoText(err), ")"));
    }
    return absl::InternalError(absl::StrCat(name_, ": read: ", base::ErrnoText(err)));
  }
}

absl::Status FdTransport::Write(absl::string_view data, absl::Time deadline) {
  ASSIGN_OR_RETURN(const Fds fds, Enter("Write"));
  absl::Cleanup leave = [this] { Leave(); };
  size_t done = 0;
  while (done < data.size()) {
    struct pollfd p[2] = {{fds.write_fd, POLLOUT, 0}, {fds.wake_fd, POLLIN, 0}};
    int r = PollUntil(p, 2, deadline);
    if (r < 0) return absl::InternalError(absl::StrCat(name_, ": ppoll: ", base::ErrnoText(errno)));
    if (p[1].revents != 0) {
      return absl::FailedPreconditionError(absl::StrCat(name_, ": closed while writing (wrote ",
                                                        done, " of ", data.size(), " bytes)"));
    }
    if (r == 0) {
      return absl::DeadlineExceededError(
          absl::StrCat(name_, ": wrote ", done, " of ", data.size(), " bytes before the deadline"));
    }
    if ((p[0].revents & POLLNVAL) != 0) {
      return absl::InternalError(absl::StrCat(name_, ": fd ", fds.write_fd, " is not open"));
    }
    ssize_t w = WriteWithoutSigpipe(fds.write_fd, data.data() + done, data.size() - done);
    if (w > 0) {
      done += static_cast<size_t>(w);
      continue;
    }
    const int err = w < 0 ? errno : EAGAIN;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      if ((p[0].revents & (POLLHUP | POLLERR)) != 0) {
        return absl::UnavailableError(absl::StrCat(name_, ": closed by the board (hang-up; wrote ",
                                                   done, " of ", data.size(), " bytes)"));
      }
      continue;
    }
    if (IsHangup(err)) {
      return absl::UnavailableError(absl::StrCat(name_, ": closed by the board (",
                                                 base::ErrnoText(err), "; wrote ", done, " of ",
                                                 data.size(), " bytes)"));
    }
    return absl::InternalError(absl::StrCat(name_, ": write: ", base::ErrnoText(err)));
  }
  return absl::OkStatus();
}

}  // namespace benchfarm::device
