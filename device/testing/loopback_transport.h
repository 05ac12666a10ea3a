// LoopbackTransport: an in-memory Transport pair for tests — what one end writes, the other end
// reads — with real deadlines, so code above the Transport interface can be tested without
// processes, ptys or hardware (wrap an end in FaultInjectingTransport for a bad link).
//
//   auto [host, board] = MakeLoopbackPair();
//   ASSERT_TRUE(host->Write("ping", absl::Now() + absl::Seconds(1)).ok());
//   uint8_t buf[4];
//   auto n = board->Read(absl::MakeSpan(buf), absl::Now() + absl::Seconds(1));  // n == 4
//
// Both ends start open. Close() on one end discards the bytes waiting to be read by it and makes
// the other end see the link as closed: its Read returns the bytes already sent to it, then
// Unavailable "<name>: closed by the peer"; its Write fails with Unavailable. Open() on the
// closed end restores the link (bytes written while it was closed are lost).
//
// Errors (messages start with Name(): "loopback:<name>"):
//   Read   DeadlineExceeded (nothing by the deadline), Unavailable (the peer is closed and
//          nothing is left), FailedPrecondition (this end is closed, also when Close() interrupts
//          a waiting Read), InvalidArgument (empty `out`).
//   Write  DeadlineExceeded (the peer's inbound buffer stayed full: see `capacity`; the bytes that
//          fit were sent), Unavailable (the peer is closed), FailedPrecondition (this end is
//          closed, or Close() interrupted the Write).
//   Open   never fails.
//
// Thread-safety: fully thread-safe (one mutex per pair); any number of threads may call any
// method, though Transport's contract only promises one reader plus one writer per end. Both
// ends may be destroyed in any order.

#ifndef BENCHFARM_DEVICE_TESTING_LOOPBACK_TRANSPORT_H_
#define BENCHFARM_DEVICE_TESTING_LOOPBACK_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "device/transport.h"

namespace benchfarm::device {

class LoopbackTransport final : public Transport {
 public:
  // State shared by both ends of a pair; defined in the .cc.
  struct Link;

  // Use MakeLoopbackPair(); `side` is 0 or 1.
  LoopbackTransport(std::shared_ptr<Link> link, int side);
  ~LoopbackTransport() override;

  LoopbackTransport(const LoopbackTransport&) = delete;
  LoopbackTransport& operator=(const LoopbackTransport&) = delete;

  absl::Status Open() override;
  void Close() override;
  absl::Status Write(absl::string_view data, absl::Time deadline) override;
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override;
  std::string Name() const override;

  // Bytes written to this end that its peer has not read yet.
  size_t PendingForPeer() const;

 private:
  std::shared_ptr<Link> link_;
  const int side_;  // 0 or 1; the peer is 1 - side_
};

// A connected pair, both open. Each direction buffers at most `capacity` unread bytes (a Write
// that does not fit waits for the reader). Names are "loopback:<name>.a" and "loopback:<name>.b".
std::pair<std::unique_ptr<LoopbackTransport>, std::unique_ptr<LoopbackTransport>> MakeLoopbackPair(
    absl::string_view name = "link", size_t capacity = std::numeric_limits<size_t>::max());

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_TESTING_LOOPBACK_TRANSPORT_H_
