/*
 * session.c: the session layer of session.h.
 *
 * Receiving is driven by the unframer's sink callbacks. The 3-byte header is
 * kept in the session struct; once it is complete the message is classified
 * (buffer it, stream it, keep the one control byte, or skip it), so traffic
 * that will be dropped anyway never touches the receive buffer, and the
 * buffer is free again as soon as a message has been handed on.
 */
#include <string.h>
#include <tvm/runtime/crt/link/session.h>

/* What the session does with the bytes of the message being received. */
enum {
  kRxIdle = 0,     /* no packet, or it was refused */
  kRxHeader,       /* collecting the 3-byte header */
  kRxBuffer,       /* Log/Normal body into rx_buffer */
  kRxStream,       /* Normal body to the body sink */
  kRxControl,      /* Init/Reply/Terminate: keep the first body byte */
  kRxWrongSession, /* skip; counted as wrong session at the end */
  kRxMalformed,    /* skip; counted as malformed at the end */
};

uint8_t crt_session_next_nonce(uint8_t nonce) {
  /* Not a rotate (that would be >> 3); TVM's formula, which the golden vectors encode. */
  const int n = nonce;
  uint8_t next = (uint8_t)((((n << 5) | (n >> 5)) + 1) & 0xFF);
  return next == CRT_SESSION_INVALID_NONCE ? (uint8_t)1u : next;
}

static uint16_t RxSessionId(const crt_session_t* s) {
  return (uint16_t)(s->rx_header[0] | (s->rx_header[1] << 8));
}

/* ---- Sending ----------------------------------------------------------------------------------
 */

static void PutHeader(uint8_t* out, uint16_t session_id, uint8_t type) {
  out[0] = (uint8_t)(session_id & 0xFFu);
  out[1] = (uint8_t)(session_id >> 8);
  out[2] = type;
}

/* A handshake/terminate packet: header + optional 1-byte body. */
static tvm_crt_error_t SendControl(crt_session_t* s, crt_session_message_type_t type,
                                   uint16_t session_id, bool with_version) {
  uint8_t packet[CRT_SESSION_HEADER_BYTES + 1];
  PutHeader(packet, session_id, (uint8_t)type);
  packet[CRT_SESSION_HEADER_BYTES] = CRT_SESSION_VERSION;
  return crt_framer_write_packet(&s->framer, packet,
                                 CRT_SESSION_HEADER_BYTES + (with_version ? 1u : 0u));
}

/* The id a user message goes out with, or an error if it may not be sent now. */
static tvm_crt_error_t UserMessageId(const crt_session_t* s, crt_session_message_type_t type,
                                     uint16_t* session_id) {
  if (type == kCrtSessionLog) {
    *session_id = 0; /* Logs never carry a session (reference 2.1) */
    return kTvmErrorNoError;
  }
  if (type == kCrtSessionNormal && s->state == kCrtSessionEstablished) {
    *session_id = s->session_id;
    return kTvmErrorNoError;
  }
  return kTvmErrorSessionInvalidState;
}

tvm_crt_error_t crt_session_start_message(crt_session_t* s, crt_session_message_type_t type,
                                          size_t body_len) {
  uint8_t header[CRT_SESSION_HEADER_BYTES];
  uint16_t session_id = 0;
  tvm_crt_error_t err = UserMessageId(s, type, &session_id);
  if (err != kTvmErrorNoError) {
    return err;
  }
  if ((uint64_t)body_len > (uint64_t)UINT32_MAX - CRT_SESSION_HEADER_BYTES) {
    return kTvmErrorFramingPayloadOverflow;
  }
  err = crt_framer_start_packet(&s->framer, (uint32_t)(body_len + CRT_SESSION_HEADER_BYTES));
  if (err != kTvmErrorNoError) {
    return err;
  }
  PutHeader(header, session_id, (uint8_t)type);
  return crt_framer_write_payload(&s->framer, header, sizeof(header));
}

tvm_crt_error_t crt_session_send_body_chunk(crt_session_t* s, const uint8_t* data, size_t n) {
  return crt_framer_write_payload(&s->framer, data, n);
}

tvm_crt_error_t crt_session_finish_message(crt_session_t* s) {
  return crt_framer_finish_packet(&s->framer);
}

tvm_crt_error_t crt_session_send(crt_session_t* s, crt_session_message_type_t type,
                                 const uint8_t* body, size_t body_len) {
  tvm_crt_error_t err = crt_session_start_message(s, type, body_len);
  if (err == kTvmErrorNoError) {
    err = crt_session_send_body_chunk(s, body, body_len);
  }
  if (err == kTvmErrorNoError) {
    err = crt_session_finish_message(s);
  }
  return err;
}

tvm_crt_error_t crt_session_terminate(crt_session_t* s) {
  s->session_id = 0;
  s->state = kCrtSessionNoSessionEstablished;
  return SendControl(s, kCrtSessionTerminateSession, 0, false);
}

tvm_crt_error_t crt_session_initialize(crt_session_t* s, uint8_t nonce_seed) {
  s->local_nonce = nonce_seed;
  return crt_session_terminate(s);
}

tvm_crt_error_t crt_session_start(crt_session_t* s) {
  tvm_crt_error_t err;
  if (s->state == kCrtSessionReset) {
    return kTvmErrorSessionInvalidState;
  }
  s->local_nonce = crt_session_next_nonce(s->local_nonce);
  err = SendControl(s, kCrtSessionStartSessionInit, s->local_nonce, true);
  if (err != kTvmErrorNoError) {
    return err;
  }
  s->session_id = 0;
  s->state = kCrtSessionStartSessionSent;
  return kTvmErrorNoError;
}

/* ---- Receiving --------------------------------------------------------------------------------
 */

static tvm_crt_error_t Notify(crt_session_t* s, crt_session_message_type_t type,
                              const uint8_t* body, size_t body_len) {
  return s->on_message(s->on_message_ctx, type, body, body_len);
}

/* Answers an Init: a new nonce, Reply sent, the session established, the user told once. */
static tvm_crt_error_t SendReply(crt_session_t* s, uint8_t initiator_nonce) {
  uint16_t session_id;
  tvm_crt_error_t err;
  s->local_nonce = crt_session_next_nonce(s->local_nonce);
  session_id = (uint16_t)(initiator_nonce | (s->local_nonce << 8));
  err = SendControl(s, kCrtSessionStartSessionReply, session_id, true);
  if (err != kTvmErrorNoError) {
    /* The peer did not get our half of the id: no session. It will retry its Init. */
    s->session_id = 0;
    s->state = kCrtSessionNoSessionEstablished;
    return err;
  }
  s->session_id = session_id;
  s->state = kCrtSessionEstablished;
  return Notify(s, kCrtSessionStartSessionReply, NULL, 0);
}

static tvm_crt_error_t HandleInit(crt_session_t* s) {
  const uint16_t id = RxSessionId(s);
  const uint8_t initiator = (uint8_t)(id & 0xFFu);
  if (s->rx_body_len != 1 || initiator == CRT_SESSION_INVALID_NONCE || (id >> 8) != 0) {
    s->counters.dropped_malformed++;
    return kTvmErrorNoError;
  }
  if (s->rx_control_body != CRT_SESSION_VERSION) {
    s->counters.dropped_bad_version++;
    return kTvmErrorNoError;
  }
  if (s->state == kCrtSessionStartSessionSent) {
    /* Both sides sent Init: the lower nonce wins; a tie means both pick again. */
    if (initiator > s->local_nonce) {
      s->counters.ignored_handshake++;
      return kTvmErrorNoError;
    }
    if (initiator == s->local_nonce) {
      return crt_session_start(s);
    }
  }
  /* Reset, no session, we lost the tie-break, or established (the peer restarted): reply. */
  return SendReply(s, initiator);
}

static tvm_crt_error_t HandleReply(crt_session_t* s) {
  const uint16_t id = RxSessionId(s);
  const uint8_t initiator = (uint8_t)(id & 0xFFu);
  const uint8_t responder = (uint8_t)(id >> 8);
  if (s->rx_body_len != 1 || initiator == CRT_SESSION_INVALID_NONCE ||
      responder == CRT_SESSION_INVALID_NONCE) {
    s->counters.dropped_malformed++;
    return kTvmErrorNoError;
  }
  if (s->rx_control_body != CRT_SESSION_VERSION) {
    s->counters.dropped_bad_version++;
    return kTvmErrorNoError;
  }
  if (s->state != kCrtSessionStartSessionSent || initiator != s->local_nonce) {
    /* Not an answer to our Init (stray, stale, or a duplicate while established). */
    s->counters.ignored_handshake++;
    return kTvmErrorNoError;
  }
  s->session_id = id;
  s->state = kCrtSessionEstablished;
  return Notify(s, kCrtSessionStartSessionReply, NULL, 0);
}

static tvm_crt_error_t HandleTerminate(crt_session_t* s) {
  if (s->rx_body_len != 0 || RxSessionId(s) != 0) {
    s->counters.dropped_malformed++;
    return kTvmErrorNoError;
  }
  if (s->state != kCrtSessionEstablished) {
    return kTvmErrorNoError; /* e.g. the peer's boot Terminate while we are starting */
  }
  s->session_id = 0;
  s->state = kCrtSessionNoSessionEstablished;
  return Notify(s, kCrtSessionTerminateSession, NULL, 0);
}

/* The header is complete: decide where the body goes. Errors refuse the message. */
static tvm_crt_error_t ClassifyMessage(crt_session_t* s) {
  const uint16_t id = RxSessionId(s);
  const uint8_t type = s->rx_header[2];
  bool ours;

  switch (type) {
    case kCrtSessionStartSessionInit:
    case kCrtSessionStartSessionReply:
    case kCrtSessionTerminateSession:
      s->rx_mode = kRxControl;
      return kTvmErrorNoError;
    case kCrtSessionLog:
      ours = id == 0 || (s->state == kCrtSessionEstablished && id == s->session_id);
      break;
    case kCrtSessionNormal:
      ours = s->state == kCrtSessionEstablished && id == s->session_id;
      if (ours && s->has_body_sink && s->body_sink.begin != NULL &&
          s->body_sink.begin(s->body_sink.ctx, s->rx_body_len)) {
        s->rx_mode = kRxStream;
        return kTvmErrorNoError;
      }
      break;
    default:
      s->rx_mode = kRxMalformed;
      return kTvmErrorNoError;
  }
  if (!ours) {
    s->rx_mode = kRxWrongSession;
    return kTvmErrorNoError;
  }
  if (s->rx_body_len > s->rx_buffer_size) {
    s->counters.dropped_oversized++;
    s->rx_mode = kRxIdle;
    return kTvmErrorSessionReceiveBufferShortWrite;
  }
  s->rx_mode = kRxBuffer;
  return kTvmErrorNoError;
}

static tvm_crt_error_t OnPacketStart(void* ctx, uint32_t payload_len) {
  crt_session_t* s = (crt_session_t*)ctx;
  s->rx_header_len = 0;
  s->rx_body_received = 0;
  s->rx_control_body = 0;
  if (payload_len < CRT_SESSION_HEADER_BYTES) {
    s->rx_body_len = payload_len; /* skipped as body bytes, dropped at the end */
    s->rx_mode = kRxMalformed;
    return kTvmErrorNoError;
  }
  s->rx_body_len = payload_len - CRT_SESSION_HEADER_BYTES;
  s->rx_mode = kRxHeader;
  if (!s->has_body_sink && s->rx_body_len > s->rx_buffer_size) {
    /* Cannot be buffered and nothing could stream it: refuse before any byte arrives. */
    s->counters.dropped_oversized++;
    s->rx_mode = kRxIdle;
    return kTvmErrorSessionReceiveBufferShortWrite;
  }
  return kTvmErrorNoError;
}

static tvm_crt_error_t OnPayload(void* ctx, const uint8_t* data, size_t n) {
  crt_session_t* s = (crt_session_t*)ctx;
  tvm_crt_error_t err = kTvmErrorNoError;

  while (n > 0 && err == kTvmErrorNoError) {
    size_t take = n;
    if (s->rx_mode == kRxHeader) {
      take = CRT_SESSION_HEADER_BYTES - s->rx_header_len;
      if (take > n) {
        take = n;
      }
      memcpy(s->rx_header + s->rx_header_len, data, take);
      s->rx_header_len = (uint8_t)(s->rx_header_len + take);
      if (s->rx_header_len == CRT_SESSION_HEADER_BYTES) {
        err = ClassifyMessage(s);
      }
    } else {
      /* Body bytes. The unframer never passes more than the declared length; check anyway. */
      if (take > s->rx_body_len - s->rx_body_received) {
        s->counters.dropped_oversized++;
        s->rx_mode = kRxIdle;
        return kTvmErrorSessionReceiveBufferShortWrite;
      }
      switch (s->rx_mode) {
        case kRxBuffer:
          memcpy(s->rx_buffer + s->rx_body_received, data, take);
          break;
        case kRxStream:
          if (s->body_sink.chunk != NULL) {
            err = s->body_sink.chunk(s->body_sink.ctx, data, take);
          }
          break;
        case kRxControl:
          if (s->rx_body_received == 0) {
            s->rx_control_body = data[0];
          }
          break;
        default: /* skipping a message that will be dropped */
          break;
      }
      s->rx_body_received += (uint32_t)take;
    }
    data += take;
    n -= take;
  }
  return err;
}

static tvm_crt_error_t OnPacketDone(void* ctx, bool valid) {
  crt_session_t* s = (crt_session_t*)ctx;
  const uint8_t mode = s->rx_mode;
  s->rx_mode = kRxIdle;

  if (!valid) {
    /* Dropped whole by the framing layer: nothing of it stays behind. */
    if (mode == kRxStream && s->body_sink.discard != NULL) {
      s->body_sink.discard(s->body_sink.ctx);
    }
    return kTvmErrorNoError;
  }
  switch (mode) {
    case kRxBuffer:
      s->counters.messages_delivered++;
      return Notify(s, (crt_session_message_type_t)s->rx_header[2], s->rx_buffer, s->rx_body_len);
    case kRxStream:
      s->counters.messages_delivered++;
      return s->body_sink.finish != NULL ? s->body_sink.finish(s->body_sink.ctx) : kTvmErrorNoError;
    case kRxControl:
      switch (s->rx_header[2]) {
        case kCrtSessionStartSessionInit:
          return HandleInit(s);
        case kCrtSessionStartSessionReply:
          return HandleReply(s);
        default:
          return HandleTerminate(s);
      }
    case kRxWrongSession:
      s->counters.dropped_wrong_session++;
      return kTvmErrorNoError;
    case kRxIdle:
      return kTvmErrorNoError;
    default: /* kRxMalformed, or a header that never completed */
      s->counters.dropped_malformed++;
      return kTvmErrorNoError;
  }
}

/* ---- Set-up and queries -----------------------------------------------------------------------
 */

void crt_session_unframer_sink(crt_session_t* s, crt_unframer_sink_t* out) {
  out->packet_start = OnPacketStart;
  out->payload = OnPayload;
  out->packet_done = OnPacketDone;
  out->ctx = s;
}

void crt_session_init(crt_session_t* s, crt_framer_write_fn write, void* write_ctx,
                      uint8_t* rx_buffer, size_t rx_buffer_size, crt_session_message_fn on_message,
                      void* on_message_ctx) {
  crt_unframer_sink_t sink;
  memset(s, 0, sizeof(*s));
  crt_framer_init(&s->framer, write, write_ctx);
  crt_session_unframer_sink(s, &sink);
  crt_unframer_init(&s->unframer, &sink);
  s->rx_buffer = rx_buffer;
  s->rx_buffer_size = rx_buffer != NULL ? rx_buffer_size : 0;
  s->on_message = on_message;
  s->on_message_ctx = on_message_ctx;
  s->state = kCrtSessionReset;
  s->rx_mode = kRxIdle;
}

void crt_session_set_body_sink(crt_session_t* s, const crt_session_body_sink_t* sink) {
  if (sink == NULL) {
    memset(&s->body_sink, 0, sizeof(s->body_sink));
    s->has_body_sink = false;
  } else {
    s->body_sink = *sink;
    s->has_body_sink = true;
  }
}

tvm_crt_error_t crt_session_receive(crt_session_t* s, const uint8_t* data, size_t n,
                                    size_t* consumed) {
  return crt_unframer_write(&s->unframer, data, n, consumed);
}

size_t crt_session_bytes_needed(const crt_session_t* s) {
  return crt_unframer_bytes_needed(&s->unframer);
}

bool crt_session_is_established(const crt_session_t* s) {
  return s->state == kCrtSessionEstablished;
}

crt_session_state_t crt_session_state(const crt_session_t* s) {
  return (crt_session_state_t)s->state;
}

uint16_t crt_session_id(const crt_session_t* s) { return s->session_id; }

const crt_session_counters_t* crt_session_counters(const crt_session_t* s) { return &s->counters; }

const crt_unframer_counters_t* crt_session_unframer_counters(const crt_session_t* s) {
  return crt_unframer_counters(&s->unframer);
}
