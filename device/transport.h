// Transport: a byte stream to one board — a USB-serial port, a pseudo-terminal, or a
// host-process board's pipes — with deadlines and typed errors.
//
// Everything above it (the host session, the RPC client, the agent) sees only this interface,
// so tests swap in pipes, a pty, or a FaultInjectingTransport around either.
//
// Errors (absl::Status codes, every message naming the port):
//   DeadlineExceeded   nothing arrived (Read) or not everything could be written (Write) by the
//                      deadline; the transport stays open and usable.
//   Unavailable        the port is gone or closed at the other end (USB unplugged, board process
//                      exited, end of file); Close() and Open() again once it is back.
//   FailedPrecondition the transport is not open.
//   NotFound           Open(): the port does not exist.
//   PermissionDenied   Open(): the port exists but cannot be opened by this user.
//   Internal           any other OS or library error, with its own message.
//
// Thread-safety: one thread reads while another writes is allowed; two concurrent readers (or
// writers) are not. Open/Close must not race with Read/Write.

#ifndef BENCHFARM_DEVICE_TRANSPORT_H_
#define BENCHFARM_DEVICE_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace benchfarm::device {

class Transport {
 public:
  virtual ~Transport() = default;

  // Opens the link (again, after Close or after Unavailable). Opening an open transport is OK and
  // does nothing.
  virtual absl::Status Open() = 0;

  // Closes the link; idempotent. Pending reads and writes in other threads fail.
  virtual void Close() = 0;

  // Writes every byte of `data`, or fails; returns at the deadline at the latest.
  virtual absl::Status Write(absl::string_view data, absl::Time deadline) = 0;

  // Waits until at least one byte is available (or the deadline), then returns up to out.size()
  // bytes (>= 1) that are available without further waiting.
  virtual absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) = 0;

  // Human-readable name for logs and errors, e.g. "serial:/dev/ttyACM0@115200", "pty:/dev/pts/4".
  virtual std::string Name() const = 0;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_TRANSPORT_H_
