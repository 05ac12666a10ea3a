// FdTransport: the one read/write core every file-descriptor transport shares — a Transport over
// a pair of POSIX file descriptors (one fd for both directions, as for a tty, or two, as for a
// child's pipes), with absl::Time deadlines implemented with ppoll().
//
// It does not know where its descriptors come from: an owner (PtyTransport, ChildProcessTransport,
// SerialTransport, a test) opens them and hands them over with Attach(); Close() gives them back
// (closing them if they were handed over as owned). Open() therefore cannot create descriptors:
// it only reports whether some are attached.
//
// Errors (every message starts with the name given to the constructor):
//   Read   DeadlineExceeded    nothing arrived by the deadline (data already waiting is returned
//                              even when the deadline has passed).
//          Unavailable         end of file, or EIO/ENXIO/ENODEV/ECONNRESET/EPIPE: "<name>: closed
//                              by the board (...)".
//          FailedPrecondition  nothing attached, or Close() ran while the read was waiting.
//          InvalidArgument     `out` is empty.
//          Internal            any other errno, with strerror's text.
//   Write  DeadlineExceeded    not everything was written by the deadline (the message says how
//                              much was); the transport stays usable.
//          Unavailable         EPIPE/EIO/ENXIO/ENODEV/ECONNRESET: the other end is gone. Writing
//                              to a pipe whose reader exited never raises SIGPIPE in this process.
//          FailedPrecondition  nothing attached, or Close() ran while the write was waiting.
//          Internal            any other errno.
//
// Thread-safety: stronger than Transport's: one reader and one writer may run concurrently, and
// Close() may be called from any thread at any time — it wakes a Read or Write blocked in ppoll()
// (they return FailedPrecondition), waits for them to leave, and only then closes the
// descriptors, so a descriptor number is never used after it was closed. Attach() must not race
// with Read/Write.

#ifndef BENCHFARM_DEVICE_FD_TRANSPORT_H_
#define BENCHFARM_DEVICE_FD_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
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

class FdTransport final : public Transport {
 public:
  // Whether Close() closes the attached descriptors (kOwned) or leaves them to their owner
  // (kBorrowed, e.g. libserialport's handle, which sp_close() closes).
  enum class Ownership { kOwned, kBorrowed };

  // Starts closed, with nothing attached. `name` prefixes every error message and is Name().
  explicit FdTransport(std::string name);

  // Closes (see Close()).
  ~FdTransport() override;

  FdTransport(const FdTransport&) = delete;
  FdTransport& operator=(const FdTransport&) = delete;

  // Attaches `read_fd` and `write_fd` (they may be the same descriptor) and puts them in
  // non-blocking mode. With kOwned, the transport owns them from this call on, even if it fails.
  // Errors: InvalidArgument if a descriptor is negative; FailedPrecondition if descriptors are
  // already attached (nothing changes; owned ones passed in are NOT closed then); Internal if
  // fcntl() or eventfd() fails.
  absl::Status Attach(int read_fd, int write_fd, Ownership ownership);

  // OK if descriptors are attached; FailedPrecondition otherwise (this class cannot open anything
  // by itself: its owner must Attach() again).
  absl::Status Open() override;

  // Wakes pending reads and writes, waits for them to return, closes owned descriptors, and
  // detaches. Idempotent; never fails.
  void Close() override;

  absl::Status Write(absl::string_view data, absl::Time deadline) override;
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override;
  std::string Name() const override { return name_; }

  // True between a successful Attach() and Close().
  bool is_open() const;

 private:
  struct Fds {
    int read_fd;
    int write_fd;
    int wake_fd;
  };

  // Registers a Read/Write in progress; FailedPrecondition if nothing is attached or Close() has
  // begun. Every successful Enter() is paired with one Leave().
  absl::StatusOr<Fds> Enter(absl::string_view op);
  void Leave();

  // Conditions for mu_.Await().
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return active_ == 0; }
  bool NotClosing() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !closing_; }

  const std::string name_;
  mutable absl::Mutex mu_;
  int read_fd_ ABSL_GUARDED_BY(mu_) = -1;
  int write_fd_ ABSL_GUARDED_BY(mu_) = -1;
  // An eventfd Close() signals to wake ppoll() in pending operations.
  int wake_fd_ ABSL_GUARDED_BY(mu_) = -1;
  bool owned_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  int active_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_FD_TRANSPORT_H_
