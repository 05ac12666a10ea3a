// HostSession: the host end of the board link's session layer over a Transport.
//
// It links crt's own framing and session C code (crt/link) — the same code the board runs — and
// adds what the host needs: a handshake with retry and overall timeouts, deadlines on every
// receive, board resets detected and reported, board log messages forwarded to a sink with the
// board id, and per-link counters.
//
// Handshake (reference 2.7, TVM's semantics): Terminate + Init are sent; if no Reply arrives
// within retry_timeout they are sent again with a fresh nonce, until start_timeout has passed
// (then DeadlineExceeded "session start handshake failed after <t>").
//
// Errors of Connect/Send/Receive/Call:
//   DeadlineExceeded  no reply by the deadline (the link stays usable; a late reply to an
//                     abandoned request stays queued: DiscardPending drops it).
//   Aborted           the board reset: it sent Terminate (its boot signature) while a session
//                     was up. Reconnect with Connect(). counters().resets counts these. The
//                     message ends "; its last log: <text>" when the board sent a Log message
//                     since the last Send (a faulting firmware names the fault there).
//   Unavailable       the transport is gone (port vanished, board process exited).
//   FailedPrecondition Send/Receive without an established session.
//   Internal          a write the session layer refused (e.g. a message too large).
//   Cancelled         SessionOptions::interrupt was set: the wait for the board was abandoned
//                     (within kInterruptPoll); the board may still be busy with the request.
//
// Thread-safety: none; one thread drives a HostSession (another may set the interrupt flag).

#ifndef BENCHFARM_DEVICE_HOST_SESSION_H_
#define BENCHFARM_DEVICE_HOST_SESSION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "device/transport.h"
#include "tvm/runtime/crt/link/session.h"

namespace benchfarm::device {

struct SessionOptions {
  // Shown in logs and errors.
  std::string board_id = "board";
  // Resend Terminate+Init after this long without a Reply (0: never resend).
  absl::Duration retry_timeout = absl::Seconds(1);
  // Give up the handshake after this long overall.
  absl::Duration start_timeout = absl::Seconds(10);
  // Largest message body the host accepts from the board (a CopyFromRemote reply carries the
  // whole tensor); allocated once. RpcClient splits larger reads.
  size_t max_message_bytes = 8u << 20;
  // Where board Log messages go (text, without trailing newline). Default: spdlog's info as
  // "[board <id>] <text>".
  std::function<void(absl::string_view board_id, absl::string_view text)> log_sink;
  // Borrowed; null: none. While it is true, every wait for the board (Connect, Receive) ends
  // with Cancelled: the owner abandons a call in flight from another thread (Board::Interrupt).
  const std::atomic<bool>* interrupt = nullptr;
};

// How often a wait for the board looks at SessionOptions::interrupt.
inline constexpr absl::Duration kInterruptPoll = absl::Milliseconds(20);

// What the link saw since construction. Monotonic.
struct LinkCounters {
  uint64_t bytes_sent = 0;
  uint64_t bytes_received = 0;
  uint64_t messages_sent = 0;
  uint64_t messages_received = 0;  // Normal messages delivered
  uint64_t packets_ok = 0;         // framing: good packets
  uint64_t crc_failures = 0;       // framing: dropped for a bad CRC
  uint64_t packets_dropped = 0;  // framing + session: aborted, oversized, wrong session, malformed
  uint64_t resets = 0;           // board resets detected while a session was up
  uint64_t handshakes = 0;       // sessions established
  uint64_t logs = 0;             // Log messages from the board
};

class HostSession {
 public:
  // `transport` is borrowed and must outlive the session; it must be open.
  HostSession(Transport* transport, SessionOptions options);
  ~HostSession();
  HostSession(const HostSession&) = delete;
  HostSession& operator=(const HostSession&) = delete;

  // Runs the handshake (see above). Any earlier session is dropped first.
  absl::Status Connect(absl::Time deadline);

  bool established() const;

  // Sends one Normal message.
  absl::Status Send(absl::string_view body, absl::Time deadline);

  // The next Normal message body from the board.
  absl::StatusOr<std::string> Receive(absl::Time deadline);

  // Discards messages that arrived but were not received yet (e.g. a late reply to a request
  // whose deadline passed). Returns how many.
  size_t DiscardPending();

  LinkCounters counters() const;
  // The board's last Log message since the last Send ("" if none): a board that faults names the
  // fault there before it resets or dies.
  const std::string& last_log() const { return last_log_; }
  const SessionOptions& options() const { return options_; }
  Transport* transport() const { return transport_; }

 private:
  static tvm_crt_error_t WriteThunk(void* ctx, const uint8_t* data, size_t n);
  static tvm_crt_error_t MessageThunk(void* ctx, crt_session_message_type_t type,
                                      const uint8_t* body, size_t n);
  // Reads once from the transport and feeds the session. Errors as Receive.
  absl::Status Pump(absl::Time deadline);
  absl::Status SendHandshake();
  // Writes what the framer produced since the last flush.
  absl::Status Flush();
  static constexpr size_t kFlushBytes = 256 * 1024;

  Transport* transport_;
  SessionOptions options_;
  std::unique_ptr<crt_session_t> session_;
  std::vector<uint8_t> rx_buffer_;
  std::deque<std::string> inbox_;
  std::string out_;  // framed bytes not yet written
  absl::Time write_deadline_ = absl::InfiniteFuture();
  absl::Status write_error_;
  bool reset_seen_ = false;
  std::string last_log_;  // the board's last Log message since the last Send
  LinkCounters counters_;
  uint32_t nonce_state_;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_HOST_SESSION_H_
