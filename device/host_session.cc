// HostSession: see host_session.h.
#include "device/host_session.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace benchfarm::device {
namespace {

void DefaultLogSink(absl::string_view board_id, absl::string_view text) {
  spdlog::info("[board {}] {}", std::string(board_id), std::string(text));
}

}  // namespace

HostSession::HostSession(Transport* transport, SessionOptions options)
    : transport_(transport),
      options_(std::move(options)),
      session_(std::make_unique<crt_session_t>()),
      rx_buffer_(options_.max_message_bytes),
      nonce_state_(std::random_device{}()) {
  if (!options_.log_sink) options_.log_sink = DefaultLogSink;
  crt_session_init(session_.get(), &HostSession::WriteThunk, this, rx_buffer_.data(),
                   rx_buffer_.size(), &HostSession::MessageThunk, this);
}

HostSession::~HostSession() = default;

// The framer hands over a message in pieces of at most 64 bytes; they are collected and written
// in one go (Flush), so a large message costs a few writes rather than thousands.
tvm_crt_error_t HostSession::WriteThunk(void* ctx, const uint8_t* data, size_t n) {
  auto* self = static_cast<HostSession*>(ctx);
  self->out_.append(reinterpret_cast<const char*>(data), n);
  if (self->out_.size() >= kFlushBytes && !self->Flush().ok()) {
    return kTvmErrorWriteStreamShortWrite;
  }
  return kTvmErrorNoError;
}

absl::Status HostSession::Flush() {
  if (out_.empty()) return absl::OkStatus();
  absl::Status s = transport_->Write(out_, write_deadline_);
  counters_.bytes_sent += s.ok() ? out_.size() : 0;
  out_.clear();
  if (!s.ok()) write_error_ = s;
  return s;
}

tvm_crt_error_t HostSession::MessageThunk(void* ctx, crt_session_message_type_t type,
                                          const uint8_t* body, size_t n) {
  auto* self = static_cast<HostSession*>(ctx);
  absl::string_view text(reinterpret_cast<const char*>(body), body == nullptr ? 0 : n);
  switch (type) {
    case kCrtSessionNormal:
      self->counters_.messages_received++;
      self->inbox_.emplace_back(text);
      break;
    case kCrtSessionLog:
      self->counters_.logs++;
      self->last_log_ = std::string(text);
      self->options_.log_sink(self->options_.board_id, text);
      break;
    case kCrtSessionStartSessionReply:
      self->counters_.handshakes++;
      break;
    case kCrtSessionTerminateSession:
      // The board ended an established session: it rebooted (its boot Terminate) or reset.
      self->counters_.resets++;
      self->reset_seen_ = true;
      break;
    default:
      break;
  }
  return kTvmErrorNoError;
}

absl::Status HostSession::SendHandshake() {
  // TVM's host seeds its nonces from rand_r(time()); any non-zero byte works.
  nonce_state_ = nonce_state_ * 1103515245u + 12345u;
  uint8_t seed = static_cast<uint8_t>(nonce_state_ >> 16);
  write_error_ = absl::OkStatus();
  tvm_crt_error_t err = crt_session_initialize(session_.get(), seed);
  if (err == kTvmErrorNoError) err = crt_session_start(session_.get());
  if (err == kTvmErrorNoError && !Flush().ok()) err = kTvmErrorWriteStreamShortWrite;
  if (err != kTvmErrorNoError) {
    if (!write_error_.ok()) return write_error_;
    return absl::InternalError(
        absl::StrFormat("%s: handshake send failed (crt error 0x%x)", options_.board_id, err));
  }
  return absl::OkStatus();
}

absl::Status HostSession::Pump(absl::Time deadline) {
  uint8_t buf[64 * 1024];
  absl::StatusOr<size_t> n;
  for (;;) {
    if (options_.interrupt != nullptr && options_.interrupt->load()) {
      return absl::CancelledError(absl::StrCat(
          options_.board_id, ": the call was abandoned (interrupted) (", transport_->Name(), ")"));
    }
    // Interruptible: the wait is cut into slices that look at the flag in between.
    const absl::Time until =
        options_.interrupt == nullptr ? deadline : std::min(deadline, absl::Now() + kInterruptPoll);
    n = transport_->Read(absl::MakeSpan(buf, sizeof(buf)), until);
    if (n.ok() || !absl::IsDeadlineExceeded(n.status()) || until >= deadline) break;
  }
  if (!n.ok()) {
    if (absl::IsDeadlineExceeded(n.status())) {
      return absl::DeadlineExceededError(
          absl::StrCat(options_.board_id, ": no reply from the board before the deadline (",
                       transport_->Name(), ")"));
    }
    return n.status();
  }
  counters_.bytes_received += *n;
  size_t pos = 0;
  write_deadline_ = deadline;
  write_error_ = absl::OkStatus();
  while (pos < *n) {
    size_t consumed = 0;
    crt_session_receive(session_.get(), buf + pos, *n - pos, &consumed);
    // Errors are reports (a dropped packet, counted by crt); only a failed write matters here.
    if (!write_error_.ok()) return write_error_;
    pos += consumed == 0 ? 1 : consumed;
  }
  return Flush();
}

absl::Status HostSession::Connect(absl::Time deadline) {
  inbox_.clear();
  reset_seen_ = false;
  absl::Time start = absl::Now();
  absl::Time give_up = std::min(deadline, start + options_.start_timeout);
  write_deadline_ = give_up;
  absl::Status s = SendHandshake();
  if (!s.ok()) return s;
  absl::Time next_retry = options_.retry_timeout > absl::ZeroDuration()
                              ? start + options_.retry_timeout
                              : absl::InfiniteFuture();
  while (!crt_session_is_established(session_.get())) {
    absl::Time until = std::min(give_up, next_retry);
    absl::Status p = Pump(until);
    if (p.ok()) continue;
    if (!absl::IsDeadlineExceeded(p)) return p;
    absl::Time now = absl::Now();
    if (now >= give_up) {
      return absl::DeadlineExceededError(
          absl::StrCat(options_.board_id, ": session start handshake failed after ",
                       absl::FormatDuration(now - start), " (", transport_->Name(), ")"));
    }
    if (now >= next_retry) {
      write_deadline_ = give_up;
      s = SendHandshake();
      if (!s.ok()) return s;
      next_retry = now + options_.retry_timeout;
    }
  }
  // The board's own boot Terminate may have arrived before our Init was answered; that is no
  // reset of the session we just made.
  reset_seen_ = false;
  return absl::OkStatus();
}

bool HostSession::established() const { return crt_session_is_established(session_.get()); }

absl::Status HostSession::Send(absl::string_view body, absl::Time deadline) {
  if (reset_seen_) {
    return absl::AbortedError(absl::StrCat(options_.board_id, ": the board reset"));
  }
  if (!established()) {
    return absl::FailedPreconditionError(
        absl::StrCat(options_.board_id, ": no session with the board (Connect first)"));
  }
  write_deadline_ = deadline;
  write_error_ = absl::OkStatus();
  last_log_.clear();  // a reset during this request is explained by logs from now on
  tvm_crt_error_t err =
      crt_session_send(session_.get(), kCrtSessionNormal,
                       reinterpret_cast<const uint8_t*>(body.data()), body.size());
  if (err == kTvmErrorNoError && !Flush().ok()) err = kTvmErrorWriteStreamShortWrite;
  if (err != kTvmErrorNoError) {
    out_.clear();  // never let half a packet out later
    if (!write_error_.ok()) return write_error_;
    return absl::InternalError(
        absl::StrFormat("%s: send failed (crt error 0x%x)", options_.board_id, err));
  }
  counters_.messages_sent++;
  return absl::OkStatus();
}

absl::StatusOr<std::string> HostSession::Receive(absl::Time deadline) {
  while (inbox_.empty()) {
    if (reset_seen_) {
      // A board that faults says why in a Log message before it resets (crt/boards): keep it.
      return absl::AbortedError(absl::StrCat(
          options_.board_id, ": the board reset (", transport_->Name(), ")",
          last_log_.empty() ? std::string() : absl::StrCat("; its last log: ", last_log_)));
    }
    if (!established()) {
      return absl::FailedPreconditionError(
          absl::StrCat(options_.board_id, ": no session with the board"));
    }
    absl::Status s = Pump(deadline);
    if (!s.ok()) return s;
  }
  std::string body = std::move(inbox_.front());
  inbox_.pop_front();
  return body;
}

size_t HostSession::DiscardPending() {
  size_t n = inbox_.size();
  inbox_.clear();
  return n;
}

LinkCounters HostSession::counters() const {
  LinkCounters c = counters_;
  const crt_unframer_counters_t* u = crt_session_unframer_counters(session_.get());
  const crt_session_counters_t* s = crt_session_counters(session_.get());
  c.packets_ok = u->packets_ok;
  c.crc_failures = u->crc_failures;
  c.packets_dropped = static_cast<uint64_t>(u->aborted) + u->oversized + u->sink_errors +
                      s->dropped_wrong_session + s->dropped_oversized + s->dropped_bad_version +
                      s->dropped_malformed;
  return c;
}

}  // namespace benchfarm::device
