/*
 * session_fuzz: libFuzzer target for crt_session_receive (session.h): a board's
 * session (the responder, as the MinRPC server runs it) fed untrusted bytes.
 *
 * Input: [flags] [rx_size] [param] [seed] [n] [n split bytes] [stream...]
 *   flags bit 0  a body sink is installed (Normal bodies stream to it)
 *   flags bit 1  the sink's begin() declines odd body lengths (they are buffered)
 *   flags bit 2  the sink's chunk() fails once a body passes param bytes
 *   flags bit 3  the session also starts a handshake itself (crt_session_start)
 *   flags bit 4  every Normal message is echoed back from inside the callback
 *   flags bit 5  the message callback returns an error for Log messages
 *   flags bit 6  the transport fails every write after param * 4 bytes
 *   flags bit 7  a Log is sent after every piece
 *   rx_size      receive buffer of rx_size % 65 bytes (0: none), an exact heap block
 *   seed         the nonce seed given to crt_session_initialize
 * The stream is fed in the fuzzed pieces (fuzz_common.h), the rest passed in
 * again after every error. Checked (abort on violation):
 *   - nothing crashes or reads outside the buffers (ASan, UBSan);
 *   - the message callback: only the documented (type, body, len) shapes, a
 *     body inside the receive buffer, Normal only while established,
 *     Reply / Terminate only on a change to / from established;
 *   - the body sink: begin only for an established session, chunks adding up to
 *     at most the body length, exactly one finish (all bytes) or discard after
 *     an accepted begin, discard right after a failed chunk;
 *   - established <=> a session id with both nonces non-zero, and a Normal can be
 *     sent exactly when established; handshake types can never be sent;
 *   - counters: messages_delivered == messages handed on; every packet start
 *     ends once (fuzz_common.h's reference model);
 *   - while writes do not fail, everything the session sends is well framed:
 *     parsed by a second unframer, no packet is dropped and every one carries
 *     a session header of a known type.
 */
#include <tvm/runtime/crt/link/framing.h>
#include <tvm/runtime/crt/link/session.h>

#include "fuzz_common.h"

#define CHUNK_ERROR kTvmErrorWriteStreamLongWrite
#define CALLBACK_ERROR kTvmErrorPlatformCheckFailure
#define WRITE_ERROR kTvmErrorWriteStreamShortWrite

typedef struct Harness {
  crt_session_t session;
  uint8_t flags;
  uint8_t param;
  uint8_t* rx;
  size_t rx_size;
  /* Transport. */
  uint64_t written;
  uint64_t write_budget; /* UINT64_MAX: writes never fail */
  bool write_failed;
  /* Outgoing traffic checker. */
  crt_unframer_t out_unframer;
  uint32_t out_len;
  uint32_t out_received;
  uint8_t out_header[CRT_SESSION_HEADER_BYTES];
  uint32_t out_packets;
  /* Message callback. */
  uint32_t notified_messages; /* Log and Normal */
  uint64_t body_hash;
  /* Body sink. */
  bool streaming;
  bool chunk_failed;
  uint32_t stream_len;
  uint32_t stream_received;
  uint32_t streams_finished;
  uint32_t streams_discarded;
} Harness;

/* ---- outgoing traffic checker -----------------------------------------------------------------
 */

static tvm_crt_error_t OutStart(void* ctx, uint32_t len) {
  Harness* h = (Harness*)ctx;
  CRT_FUZZ_CHECK(len >= CRT_SESSION_HEADER_BYTES, "session sent a packet shorter than a header");
  h->out_len = len;
  h->out_received = 0;
  return kTvmErrorNoError;
}

static tvm_crt_error_t OutPayload(void* ctx, const uint8_t* data, size_t n) {
  Harness* h = (Harness*)ctx;
  size_t i;
  for (i = 0; i < n; i++, h->out_received++) {
    if (h->out_received < CRT_SESSION_HEADER_BYTES) {
      h->out_header[h->out_received] = data[i];
    }
  }
  return kTvmErrorNoError;
}

static tvm_crt_error_t OutDone(void* ctx, bool valid) {
  Harness* h = (Harness*)ctx;
  uint8_t type = h->out_header[2];
  uint32_t body = h->out_len - CRT_SESSION_HEADER_BYTES;
  if (h->write_failed) {
    return kTvmErrorNoError; /* a cut-off packet is expected after a failed write */
  }
  CRT_FUZZ_CHECK(valid, "session sent a packet with a bad CRC");
  h->out_packets++;
  switch (type) {
    case kCrtSessionStartSessionInit:
    case kCrtSessionStartSessionReply:
      CRT_FUZZ_CHECK(body == 1u, "handshake message without its version byte");
      break;
    case kCrtSessionTerminateSession:
      CRT_FUZZ_CHECK(body == 0u && h->out_header[0] == 0u && h->out_header[1] == 0u,
                     "malformed Terminate sent");
      break;
    case kCrtSessionLog:
      CRT_FUZZ_CHECK(h->out_header[0] == 0u && h->out_header[1] == 0u, "Log sent with an id");
      break;
    case kCrtSessionNormal:
      CRT_FUZZ_CHECK(h->out_header[0] != 0u && h->out_header[1] != 0u,
                     "Normal sent without a session id");
      break;
    default:
      CRT_FUZZ_CHECK(false, "session sent an unknown message type");
  }
  return kTvmErrorNoError;
}

static tvm_crt_error_t Write(void* ctx, const uint8_t* data, size_t n) {
  Harness* h = (Harness*)ctx;
  size_t ok = n;
  size_t off = 0;
  CRT_FUZZ_CHECK(n >= 1u && data != NULL, "empty write");
  if (h->written + n > h->write_budget) {
    ok = h->written >= h->write_budget ? 0u : (size_t)(h->write_budget - h->written);
    h->write_failed = true;
  }
  h->written += ok;
  /* A failing transport may have sent part of the bytes. */
  while (off < ok) {
    size_t consumed = 0;
    (void)crt_unframer_write(&h->out_unframer, data + off, ok - off, &consumed);
    off += consumed == 0u ? 1u : consumed;
  }
  return ok == n ? kTvmErrorNoError : WRITE_ERROR;
}

/* ---- the session's callback and body sink -----------------------------------------------------
 */

static tvm_crt_error_t OnMessage(void* ctx, crt_session_message_type_t type, const uint8_t* body,
                                 size_t len) {
  Harness* h = (Harness*)ctx;
  crt_session_t* s = &h->session;
  CRT_FUZZ_CHECK(!h->streaming, "message callback while a streamed body is open");
  switch (type) {
    case kCrtSessionLog:
    case kCrtSessionNormal:
      CRT_FUZZ_CHECK(len <= h->rx_size, "message longer than the receive buffer");
      CRT_FUZZ_CHECK(len == 0u || (body >= h->rx && body + len <= h->rx + h->rx_size),
                     "message body outside the receive buffer");
      if (type == kCrtSessionNormal) {
        CRT_FUZZ_CHECK(crt_session_is_established(s), "Normal delivered without a session");
        if ((h->flags & 0x10u) != 0u) {
          tvm_crt_error_t err = crt_session_send(s, kCrtSessionNormal, body, len);
          CRT_FUZZ_CHECK(err == kTvmErrorNoError || err == WRITE_ERROR, "echo from the callback");
        }
      }
      if (len > 0u) {
        h->body_hash = crt_fuzz_fnv(h->body_hash, body, len);
      }
      h->notified_messages++;
      if (type == kCrtSessionLog && (h->flags & 0x20u) != 0u) {
        return CALLBACK_ERROR;
      }
      return kTvmErrorNoError;
    case kCrtSessionStartSessionReply:
      CRT_FUZZ_CHECK(body == NULL && len == 0u, "Reply event with a body");
      CRT_FUZZ_CHECK(crt_session_is_established(s), "Reply event without a session");
      return kTvmErrorNoError;
    case kCrtSessionTerminateSession:
      CRT_FUZZ_CHECK(body == NULL && len == 0u, "Terminate event with a body");
      CRT_FUZZ_CHECK(!crt_session_is_established(s), "Terminate event with a session");
      return kTvmErrorNoError;
    default:
      CRT_FUZZ_CHECK(false, "message callback with an unknown type");
      return kTvmErrorNoError;
  }
}

static bool SinkBegin(void* ctx, uint32_t len) {
  Harness* h = (Harness*)ctx;
  CRT_FUZZ_CHECK(!h->streaming, "begin while a streamed body is open");
  CRT_FUZZ_CHECK(crt_session_is_established(&h->session), "begin without a session");
  if ((h->flags & 0x02u) != 0u && (len & 1u) != 0u) {
    return false;
  }
  h->streaming = true;
  h->chunk_failed = false;
  h->stream_len = len;
  h->stream_received = 0;
  return true;
}

static tvm_crt_error_t SinkChunk(void* ctx, const uint8_t* data, size_t n) {
  Harness* h = (Harness*)ctx;
  CRT_FUZZ_CHECK(h->streaming && !h->chunk_failed, "chunk outside an accepted body");
  CRT_FUZZ_CHECK(n >= 1u && data != NULL, "empty chunk");
  CRT_FUZZ_CHECK(n <= h->stream_len - h->stream_received, "chunk past the body length");
  h->body_hash = crt_fuzz_fnv(h->body_hash, data, n);
  h->stream_received += (uint32_t)n;
  if ((h->flags & 0x04u) != 0u && h->stream_received > h->param) {
    h->chunk_failed = true;
    return CHUNK_ERROR;
  }
  return kTvmErrorNoError;
}

static tvm_crt_error_t SinkFinish(void* ctx) {
  Harness* h = (Harness*)ctx;
  CRT_FUZZ_CHECK(h->streaming && !h->chunk_failed, "finish outside an accepted body");
  CRT_FUZZ_CHECK(h->stream_received == h->stream_len, "finish before the whole body");
  h->streaming = false;
  h->streams_finished++;
  return kTvmErrorNoError;
}

static void SinkDiscard(void* ctx) {
  Harness* h = (Harness*)ctx;
  CRT_FUZZ_CHECK(h->streaming, "discard outside an accepted body");
  h->streaming = false;
  h->streams_discarded++;
}

/* ---- the run ----------------------------------------------------------------------------------
 */

static void CheckState(Harness* h) {
  crt_session_t* s = &h->session;
  uint16_t id = crt_session_id(s);
  bool established = crt_session_is_established(s);
  tvm_crt_error_t err;
  CRT_FUZZ_CHECK(established == (crt_session_state(s) == kCrtSessionEstablished), "state");
  if (established) {
    CRT_FUZZ_CHECK((id & 0xFFu) != 0u && (id >> 8) != 0u, "established with a zero nonce");
  } else {
    CRT_FUZZ_CHECK(id == 0u, "a session id without a session");
  }
  CRT_FUZZ_CHECK(
      crt_session_send(s, kCrtSessionStartSessionInit, NULL, 0) == kTvmErrorSessionInvalidState,
      "a handshake message could be sent by hand");
  err = crt_session_send(s, kCrtSessionNormal, (const uint8_t*)"ping", 4);
  if (established) {
    CRT_FUZZ_CHECK(err == kTvmErrorNoError || err == WRITE_ERROR, "Normal refused in a session");
  } else {
    CRT_FUZZ_CHECK(err == kTvmErrorSessionInvalidState, "Normal sent without a session");
  }
}

static void Receive(Harness* h, const uint8_t* piece, size_t len) {
  size_t off = 0;
  int stalls = 0;
  while (off < len) {
    size_t consumed = (size_t)-1;
    tvm_crt_error_t err;
    CRT_FUZZ_CHECK(crt_session_bytes_needed(&h->session) >= 1u, "bytes_needed is 0");
    err = crt_session_receive(&h->session, piece + off, len - off, &consumed);
    CRT_FUZZ_CHECK(consumed <= len - off, "consumed more than given");
    CRT_FUZZ_CHECK(err != kTvmErrorNoError || consumed == len - off,
                   "success without consuming everything");
    CRT_FUZZ_CHECK(err == kTvmErrorNoError || err == kTvmErrorFramingShortPacket ||
                       err == kTvmErrorFramingInvalidEscape ||
                       err == kTvmErrorSessionReceiveBufferShortWrite || err == WRITE_ERROR ||
                       err == CHUNK_ERROR || err == CALLBACK_ERROR,
                   "an undocumented error from crt_session_receive");
    stalls = consumed == 0u ? stalls + 1 : 0;
    CRT_FUZZ_CHECK(stalls < 2, "no progress when the rest is passed in again");
    off += consumed;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Harness h; /* static: the session must not move while in use */
  crt_session_body_sink_t sink;
  crt_unframer_sink_t out_sink;
  crt_fuzz_splits_t splits;
  crt_fuzz_ref_unframer_t ref;
  const crt_session_counters_t* sc;
  const crt_unframer_counters_t* uc;
  uint64_t ended;
  size_t pos = 0;
  size_t i;
  uint8_t rx_size;
  uint8_t seed;

  memset(&h, 0, sizeof(h));
  h.flags = crt_fuzz_take_byte(&data, &size);
  rx_size = (uint8_t)(crt_fuzz_take_byte(&data, &size) % 65u);
  h.param = crt_fuzz_take_byte(&data, &size);
  seed = crt_fuzz_take_byte(&data, &size);
  crt_fuzz_splits_take(&splits, &data, &size);

  h.rx_size = rx_size;
  h.rx = rx_size > 0u ? (uint8_t*)malloc(rx_size) : NULL;
  h.write_budget = (h.flags & 0x40u) != 0u ? 4u * (uint64_t)h.param : UINT64_MAX;
  h.body_hash = CRT_FUZZ_FNV_INIT;
  out_sink.packet_start = OutStart;
  out_sink.payload = OutPayload;
  out_sink.packet_done = OutDone;
  out_sink.ctx = &h;
  crt_unframer_init(&h.out_unframer, &out_sink);

  crt_session_init(&h.session, Write, &h, h.rx, h.rx_size, OnMessage, &h);
  if ((h.flags & 0x01u) != 0u) {
    sink.begin = SinkBegin;
    sink.chunk = SinkChunk;
    sink.finish = SinkFinish;
    sink.discard = SinkDiscard;
    sink.ctx = &h;
    crt_session_set_body_sink(&h.session, &sink);
  }
  (void)crt_session_initialize(&h.session, seed);
  if ((h.flags & 0x08u) != 0u) {
    (void)crt_session_start(&h.session);
  }

  crt_fuzz_ref_init(&ref);
  while (pos < size) {
    size_t piece_len = crt_fuzz_splits_next(&splits, size - pos);
    uint8_t* piece = crt_fuzz_copy(data + pos, piece_len);
    for (i = 0; i < piece_len; i++) {
      crt_fuzz_ref_byte(&ref, piece[i]);
    }
    Receive(&h, piece, piece_len);
    free(piece);
    pos += piece_len;
    if ((h.flags & 0x80u) != 0u) {
      tvm_crt_error_t err = crt_session_send(&h.session, kCrtSessionLog, (const uint8_t*)"log", 3);
      CRT_FUZZ_CHECK(err == kTvmErrorNoError || err == WRITE_ERROR, "Log send failed");
    }
  }
  CheckState(&h);

  sc = crt_session_counters(&h.session);
  uc = crt_session_unframer_counters(&h.session);
  CRT_FUZZ_CHECK(sc->messages_delivered == h.notified_messages + h.streams_finished,
                 "messages_delivered != messages handed on");
  ended =
      (uint64_t)uc->packets_ok + uc->crc_failures + uc->aborted + uc->oversized + uc->sink_errors;
  if (crt_fuzz_ref_in_packet(&ref)) {
    /* The open packet is counted already if it was refused or its sink failed. */
    CRT_FUZZ_CHECK(ended + 1u == ref.starts || ended == ref.starts, "packet starts vs ends");
  } else {
    CRT_FUZZ_CHECK(ended == ref.starts, "packet starts do not each end exactly once");
  }
  CRT_FUZZ_CHECK(uc->bytes_consumed == (uint32_t)size, "bytes_consumed differs from bytes fed");
  if (!h.write_failed) {
    const crt_unframer_counters_t* oc = crt_unframer_counters(&h.out_unframer);
    CRT_FUZZ_CHECK(oc->crc_failures == 0u && oc->aborted == 0u && oc->oversized == 0u &&
                       oc->sink_errors == 0u && oc->packets_ok == h.out_packets,
                   "the session's own output is badly framed");
  }
  free(h.rx);
  return 0;
}
