/*
 * session.h: microTVM's session layer — a handshake, a session id, and typed
 * messages (RPC traffic, logs) on top of the framing layer. The same code
 * serves both ends of the link (board and host).
 *
 * Every framed payload starts with a 3-byte header (docs/microtvm-reference.md
 * section 2.1; "reference" below):
 *
 *   byte 0-1  session id, uint16 LE: low byte = initiator nonce,
 *             high byte = responder nonce
 *   byte 2    message type (crt_session_message_type_t)
 *   byte 3..  body
 *
 *   type  name               body           session id sent
 *   0x00  StartSessionInit   01 (version)   initiator nonce, high byte 0
 *   0x01  StartSessionReply  01 (version)   initiator | responder << 8
 *   0x02  TerminateSession   empty          0x0000
 *   0x03  Log                UTF-8 text     0x0000
 *   0x10  Normal             MinRPC packet  the session id
 *
 * Handshake: the initiator sends Init with a fresh nonce, the responder
 * answers Reply with a fresh nonce of its own; both then use the id
 * initiator | responder << 8. If both sides send Init at once, the Init with
 * the lower nonce wins; equal nonces make the receiver start over with a new
 * one. Nonces follow TVM's update rule exactly (crt_session_next_nonce), which
 * the golden vectors depend on.
 *
 * Receiving: feed wire bytes to crt_session_receive (or wire the session's
 * unframer sink into your own unframer). Completed Log and Normal messages are
 * handed to the message callback from inside that call; there is no "busy"
 * buffer to clear and nothing can wedge the receiver. Large Normal bodies can
 * bypass the receive buffer through a body sink (crt_session_body_sink_t).
 *
 * What benchfarm fixes relative to TVM (reference section 9; crt/link/README.md):
 * traffic with a wrong session id is dropped and counted, never wedges the
 * receiver; a bad-CRC or aborted packet leaves nothing behind; a duplicate
 * Reply while established is ignored; an Init while established starts a new
 * session and notifies once; the version byte is always checked; over-long
 * messages are refused with kTvmErrorSessionReceiveBufferShortWrite and
 * counted; every error is the layer's own code.
 *
 * Thread-safety: none; one session belongs to one thread at a time. Sending
 * from inside a callback is allowed (the send and receive paths share no state
 * beyond the session state and id).
 */
#ifndef TVM_RUNTIME_CRT_LINK_SESSION_H_
#define TVM_RUNTIME_CRT_LINK_SESSION_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/link/framing.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Message types (reference 2.1). */
typedef enum {
  kCrtSessionStartSessionInit = 0x00,
  kCrtSessionStartSessionReply = 0x01,
  kCrtSessionTerminateSession = 0x02,
  kCrtSessionLog = 0x03,
  kCrtSessionNormal = 0x10,
} crt_session_message_type_t;

/* The version byte carried by Init and Reply. */
#define CRT_SESSION_VERSION ((uint8_t)0x01u)
/* Bytes of the session header. */
#define CRT_SESSION_HEADER_BYTES 3u
/* A nonce of 0 means "none" and never appears in a valid Init or Reply. */
#define CRT_SESSION_INVALID_NONCE ((uint8_t)0u)

/* Session states (TVM's numbering). */
typedef enum {
  kCrtSessionReset = 0, /* after crt_session_init; may send/receive Logs only */
  kCrtSessionNoSessionEstablished = 1,
  kCrtSessionStartSessionSent = 2, /* our Init is out, waiting for the Reply */
  kCrtSessionEstablished = 3,
} crt_session_state_t;

/*
 * Called for each delivered message and handshake event:
 *   (kCrtSessionLog, body, n), (kCrtSessionNormal, body, n): a complete message
 *       with a good CRC. body is in the receive buffer and is valid only until
 *       the callback returns (n may be 0; body may then be NULL).
 *   (kCrtSessionStartSessionReply, NULL, 0): a session was established (either
 *       side of the handshake; once per new session).
 *   (kCrtSessionTerminateSession, NULL, 0): the peer ended the established
 *       session (e.g. it rebooted).
 * The returned code is passed back unchanged from crt_session_receive (use
 * kTvmErrorNoError normally; e.g. kTvmErrorPlatformShutdown to stop a loop).
 */
typedef tvm_crt_error_t (*crt_session_message_fn)(void* ctx, crt_session_message_type_t type,
                                                  const uint8_t* body, size_t body_len);

/*
 * Optional streaming receiver for Normal message bodies, so a body larger than
 * the receive buffer (e.g. a CopyToRemote payload bound for a tensor) needs no
 * buffering. For each Normal message of the established session:
 *   begin(ctx, body_len)  after the header checked out (right type, right id).
 *       Return true to take this body by streaming: then chunk() gets the
 *       body as it arrives and exactly one of finish()/discard() follows; the
 *       message callback is not called for it. Return false to have the session
 *       buffer it and call the message callback as usual (refused with
 *       kTvmErrorSessionReceiveBufferShortWrite if it does not fit).
 *   chunk(ctx, data, n)   the next n >= 1 body bytes, in order, before the CRC is
 *       known. An error drops the message (discard() follows) and is returned
 *       from crt_session_receive.
 *   finish(ctx)           the body is complete and its CRC was good: act on it.
 *       Its error is returned from crt_session_receive.
 *   discard(ctx)          the message was dropped (bad CRC, aborted, a chunk
 *       error): forget or roll back whatever chunk() received.
 * Data written before the CRC is checked (e.g. into a tensor) is what the
 * discard() contract exists for: the request is never acted on.
 */
typedef struct crt_session_body_sink {
  bool (*begin)(void* ctx, uint32_t body_len);
  tvm_crt_error_t (*chunk)(void* ctx, const uint8_t* data, size_t n);
  tvm_crt_error_t (*finish)(void* ctx);
  void (*discard)(void* ctx);
  void* ctx;
} crt_session_body_sink_t;

/*
 * What the session dropped or delivered since init (cumulative, wrapping at
 * 2^32). Framing-level drops (bad CRC, aborts) are in the unframer's counters.
 */
typedef struct crt_session_counters {
  uint32_t messages_delivered; /* Log and Normal messages handed on (buffered or streamed) */
  uint32_t
      dropped_wrong_session;    /* Normal with no session or a foreign id; Log with a foreign id */
  uint32_t dropped_oversized;   /* body longer than the receive buffer (and not streamed) */
  uint32_t dropped_bad_version; /* Init or Reply whose version byte is not 0x01 */
  uint32_t
      dropped_malformed; /* shorter than the header, unknown type, bad body length, zero nonce */
  uint32_t ignored_handshake; /* valid but unwanted: losing Init, stray or duplicate Reply */
} crt_session_counters_t;

/* A session. Fields are private: use the functions below. Must not move after crt_session_init. */
typedef struct crt_session {
  crt_framer_t framer;
  crt_unframer_t unframer;
  uint8_t* rx_buffer;
  size_t rx_buffer_size;
  crt_session_message_fn on_message;
  void* on_message_ctx;
  crt_session_body_sink_t body_sink;
  bool has_body_sink;
  crt_session_counters_t counters;
  uint16_t session_id;
  uint8_t state; /* crt_session_state_t */
  uint8_t local_nonce;
  /* Message being received. */
  uint32_t rx_body_len;
  uint32_t rx_body_received;
  uint8_t rx_header[CRT_SESSION_HEADER_BYTES];
  uint8_t rx_header_len;
  uint8_t rx_mode;
  uint8_t rx_control_body; /* the version byte of Init/Reply */
} crt_session_t;

/*
 * Prepares s. Sends nothing; the state is kCrtSessionReset, in which Logs can
 * already be sent and received.
 *   write, write_ctx  the transport, for the session's framer (framing.h).
 *   rx_buffer         caller-owned, rx_buffer_size bytes, holds one message
 *                     body (the header is kept apart); borrowed for s's life.
 *   on_message        required; on_message_ctx is passed to it.
 */
void crt_session_init(crt_session_t* s, crt_framer_write_fn write, void* write_ctx,
                      uint8_t* rx_buffer, size_t rx_buffer_size, crt_session_message_fn on_message,
                      void* on_message_ctx);

/*
 * Installs (or with NULL removes) a streaming receiver for Normal bodies.
 * Copied; sink->ctx is borrowed. Takes effect from the next message.
 */
void crt_session_set_body_sink(crt_session_t* s, const crt_session_body_sink_t* sink);

/*
 * TVM's Initialize(seed): stores the nonce seed (the first nonce used is
 * crt_session_next_nonce(seed)) and calls crt_session_terminate. A board calls
 * it once at boot, so its first transmission is FE + Terminate.
 * Returns kTvmErrorNoError or the framer's error.
 */
tvm_crt_error_t crt_session_initialize(crt_session_t* s, uint8_t nonce_seed);

/*
 * Ends any session: id 0, state kCrtSessionNoSessionEstablished, then sends
 * Terminate. Returns kTvmErrorNoError or the framer's error (the state changes anyway).
 */
tvm_crt_error_t crt_session_terminate(crt_session_t* s);

/*
 * Starts the handshake as initiator: a new nonce, Init sent, state
 * kCrtSessionStartSessionSent. Establishment is reported through the callback.
 * Returns kTvmErrorNoError;
 *   kTvmErrorSessionInvalidState  crt_session_initialize was never called;
 *   the framer's error            nothing changes except the nonce.
 */
tvm_crt_error_t crt_session_start(crt_session_t* s);

/*
 * Sends one message: kCrtSessionLog (any state; sent with id 0) or
 * kCrtSessionNormal (established only; sent with the session id).
 * Returns kTvmErrorNoError;
 *   kTvmErrorSessionInvalidState  Normal without a session, or any other type
 *                                 (handshake messages are the session's own);
 *   kTvmErrorFramingPayloadOverflow  the body does not fit a packet;
 *   the framer's error.
 */
tvm_crt_error_t crt_session_send(crt_session_t* s, crt_session_message_type_t type,
                                 const uint8_t* body, size_t body_len);

/*
 * The same, streamed: start_message declares the body length and sends the
 * header; send_body_chunk sends the next piece (repeatable);
 * finish_message sends the CRC. Errors as crt_session_send, plus those of
 * crt_framer_write_payload / crt_framer_finish_packet (e.g. more or fewer
 * bytes than declared).
 */
tvm_crt_error_t crt_session_start_message(crt_session_t* s, crt_session_message_type_t type,
                                          size_t body_len);
tvm_crt_error_t crt_session_send_body_chunk(crt_session_t* s, const uint8_t* data, size_t n);
tvm_crt_error_t crt_session_finish_message(crt_session_t* s);

/*
 * Feeds wire bytes to the session's unframer (crt_unframer_write semantics:
 * *consumed gets the bytes used; on an error the caller may pass the rest in
 * again, nothing is fatal). Callbacks run from inside this call.
 * Returns kTvmErrorNoError, a framing error (kTvmErrorFramingShortPacket,
 * kTvmErrorFramingInvalidEscape), kTvmErrorSessionReceiveBufferShortWrite for
 * a message refused as too long (dropped and counted), the framer's error if a
 * handshake Reply/Init could not be sent, or the error of a callback or body sink.
 */
tvm_crt_error_t crt_session_receive(crt_session_t* s, const uint8_t* data, size_t n,
                                    size_t* consumed);

/* Suggested read size for the transport (crt_unframer_bytes_needed). */
size_t crt_session_bytes_needed(const crt_session_t* s);

/*
 * The sink that feeds this session from an unframer, for callers that run
 * their own crt_unframer_t instead of crt_session_receive. Valid while s is.
 */
void crt_session_unframer_sink(crt_session_t* s, crt_unframer_sink_t* out);

/* True when a session is established (Normal messages can be sent). */
bool crt_session_is_established(const crt_session_t* s);

/* The current state and session id (0 when there is none). */
crt_session_state_t crt_session_state(const crt_session_t* s);
uint16_t crt_session_id(const crt_session_t* s);

/* Counters of the session layer and of its framing layer; pointers into s. */
const crt_session_counters_t* crt_session_counters(const crt_session_t* s);
const crt_unframer_counters_t* crt_session_unframer_counters(const crt_session_t* s);

/* TVM's nonce update: low8(((n << 5) | (n >> 5)) + 1), with 0 replaced by 1. */
uint8_t crt_session_next_nonce(uint8_t nonce);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_LINK_SESSION_H_ */
