/*
 * framing.h: microTVM's framing layer — packets with a start marker, a length
 * and a CRC over a byte stream (UART, pipe, USB CDC).
 *
 * Wire format (docs/microtvm-reference.md section 1, "reference" below;
 * byte-identical to TVM v0.18 on the good path):
 *
 *   [FE]        only before the first packet after init/reset/a write error
 *   FF FD       packet start, raw
 *   LEN[4]      uint32 LE, unescaped payload length; escaped
 *   PAYLOAD     LEN bytes; escaped
 *   CRC[2]      uint16 LE; escaped; not covered by itself
 *
 * Escaping: only 0xFF is escaped, as FF FF. FF FE is a no-op (skipped), FF FD
 * starts a packet, FF followed by anything else is an error. The CRC is
 * CRC-16/CCITT-FALSE (crc16.h) over the wire bytes from the FF of FF FD to the
 * last payload byte, escape doublings (and any FF FE no-ops) included.
 *
 * Both the framer and the unframer are event-driven: they never block, never
 * allocate, and keep all state in the caller's struct. Neither is thread-safe;
 * one instance belongs to one thread (or one interrupt level) at a time.
 *
 * What benchfarm fixes relative to TVM (see crt/link/README.md): every packet
 * the unframer cannot deliver intact (bad CRC, aborted by a new start or a bad
 * escape, refused by the sink as too long, or failed by the sink) is dropped
 * whole: the sink is told to discard it, and a counter says why.
 */
#ifndef TVM_RUNTIME_CRT_LINK_FRAMING_H_
#define TVM_RUNTIME_CRT_LINK_FRAMING_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/crt/error_codes.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Control bytes (reference 1.1). */
#define CRT_FRAMING_ESCAPE_START ((uint8_t)0xFFu)
#define CRT_FRAMING_ESCAPE_NOP ((uint8_t)0xFEu)
#define CRT_FRAMING_PACKET_START ((uint8_t)0xFDu)

/* Bytes of the length and CRC fields before escaping. */
#define CRT_FRAMING_LENGTH_BYTES 4u
#define CRT_FRAMING_CRC_BYTES 2u
/* Unescaped overhead of one packet: start(2) + length(4) + CRC(2). */
#define CRT_FRAMING_OVERHEAD_BYTES 8u

/* ---- Framer (transmit) ------------------------------------------------------------------------
 */

/*
 * Writes n bytes to the transport. Must either write all n bytes and return
 * kTvmErrorNoError, or return an error (any non-zero tvm_crt_error_t, or a
 * negative system error); the error is passed back unchanged to the framer's
 * caller. Called only from the framer functions below, with n >= 1; data is
 * valid only during the call.
 */
typedef tvm_crt_error_t (*crt_framer_write_fn)(void* ctx, const uint8_t* data, size_t n);

/* Framer states (TVM's numbering). */
typedef enum {
  kCrtFramerReset = 0,      /* the next packet is preceded by the FE preamble */
  kCrtFramerIdle = 1,       /* between packets */
  kCrtFramerPacketOpen = 2, /* start_packet done; payload or finish expected */
} crt_framer_state_t;

/* A framer. Fields are private: use the functions below. */
typedef struct crt_framer {
  crt_framer_write_fn write;
  void* write_ctx;
  uint32_t payload_remaining;
  uint16_t crc;
  uint8_t state; /* crt_framer_state_t */
} crt_framer_t;

/*
 * Prepares f to write through write(write_ctx, ...). Sends nothing; the
 * framer starts in kCrtFramerReset, so its first packet carries the FE
 * preamble. write_ctx is borrowed and must outlive f's use.
 */
void crt_framer_init(crt_framer_t* f, crt_framer_write_fn write, void* write_ctx);

/*
 * Abandons any open packet (nothing more is written for it) and returns to
 * kCrtFramerReset, so the next packet carries the FE preamble. Call it when the
 * transport was reset or a partial packet may have been sent.
 */
void crt_framer_reset(crt_framer_t* f);

/*
 * Writes [FE] FF FD and the escaped length, and opens a packet of exactly
 * payload_len bytes. An open packet that was not finished is abandoned (the
 * receiver drops it when it sees the new start).
 * Returns kTvmErrorNoError, or the write callback's error (the framer then
 * returns to kCrtFramerReset, so the next packet carries the FE preamble).
 */
tvm_crt_error_t crt_framer_start_packet(crt_framer_t* f, uint32_t payload_len);

/*
 * Escapes and writes the next n payload bytes of the open packet; call it as
 * often as needed. n == 0 is a no-op.
 * Returns kTvmErrorNoError;
 *   kTvmErrorFramingInvalidState    no packet is open (nothing written);
 *   kTvmErrorFramingPayloadOverflow n exceeds what remains of payload_len
 *                                   (nothing written, the packet stays open);
 *   the write callback's error      the framer returns to kCrtFramerReset.
 */
tvm_crt_error_t crt_framer_write_payload(crt_framer_t* f, const uint8_t* data, size_t n);

/*
 * Writes the escaped CRC and closes the packet.
 * Returns kTvmErrorNoError (state kCrtFramerIdle);
 *   kTvmErrorFramingInvalidState      no packet is open;
 *   kTvmErrorFramingPayloadIncomplete fewer than payload_len bytes were written
 *                                     (nothing written, the packet stays open);
 *   the write callback's error        the framer returns to kCrtFramerReset.
 */
tvm_crt_error_t crt_framer_finish_packet(crt_framer_t* f);

/*
 * start_packet(n) + write_payload(data, n) + finish_packet(). Returns the first
 * error of those, or kTvmErrorFramingPayloadOverflow if n does not fit the
 * 32-bit length field.
 */
tvm_crt_error_t crt_framer_write_packet(crt_framer_t* f, const uint8_t* data, size_t n);

/* ---- Unframer (receive) -----------------------------------------------------------------------
 */

/*
 * Where the unframer delivers packets. Every callback is optional (NULL: the
 * event is accepted and ignored). ctx is passed to each call.
 *
 * Per packet the order is: packet_start(len), then zero or more payload()
 * calls whose sizes add up to at most len, then exactly one packet_done(valid)
 * — unless packet_start itself failed, in which case nothing else is called
 * for that packet. packet_done(false) means "discard everything received since
 * packet_start": the packet had a bad CRC, was aborted (new start, bad escape,
 * crt_unframer_reset), or a payload() call failed. Payload bytes are passed on
 * before the CRC is known (so large payloads need no buffer), which is why a
 * sink must not act on a packet before packet_done(true).
 */
typedef struct crt_unframer_sink {
  /*
   * A packet declaring payload_len bytes has started. Return kTvmErrorNoError
   * to accept it, or an error to refuse it (e.g. too long for the receiver):
   * the unframer then skips the packet, counts it in `oversized`, and returns
   * this error from crt_unframer_write.
   */
  tvm_crt_error_t (*packet_start)(void* ctx, uint32_t payload_len);
  /*
   * The next n (>= 1) unescaped payload bytes; data is valid only during the
   * call. An error drops the packet (packet_done(false) follows at once, the
   * rest of the packet is skipped, `sink_errors` counts it) and is returned
   * from crt_unframer_write.
   */
  tvm_crt_error_t (*payload)(void* ctx, const uint8_t* data, size_t n);
  /*
   * The packet has ended. valid: CRC good and every byte delivered. After a
   * complete packet (good or bad CRC) an error returned here is returned from
   * crt_unframer_write, with the unframer already between packets; after an
   * abort or a payload() error it is ignored (that event's own code is reported).
   */
  tvm_crt_error_t (*packet_done)(void* ctx, bool valid);
  void* ctx;
} crt_unframer_sink_t;

/*
 * What the unframer has seen since init. Counters are cumulative and wrap at
 * 2^32. Every packet start it finds ends in exactly one of packets_ok,
 * crc_failures, aborted, oversized or sink_errors.
 */
typedef struct crt_unframer_counters {
  uint32_t packets_ok;     /* delivered with a good CRC */
  uint32_t crc_failures;   /* complete, but the CRC did not match: dropped */
  uint32_t aborted;        /* cut short by FF FD, a bad escape or reset: dropped */
  uint32_t oversized;      /* refused by the sink's packet_start: skipped */
  uint32_t sink_errors;    /* the sink's payload() failed: dropped */
  uint32_t bytes_consumed; /* every byte crt_unframer_write consumed */
  uint32_t junk_bytes;     /* bytes outside any packet, skipped while looking for FF FD */
} crt_unframer_counters_t;

/* Unframer states (TVM's numbering, reference 1.5). */
typedef enum {
  kCrtUnframerFindPacketStart = 0,
  kCrtUnframerFindPacketLength = 1,
  kCrtUnframerFindPacketCrc = 2, /* receiving payload */
  kCrtUnframerFindCrcEnd = 3,    /* receiving the CRC */
} crt_unframer_state_t;

/* An unframer. Fields are private: use the functions below. */
typedef struct crt_unframer {
  crt_unframer_sink_t sink;
  crt_unframer_counters_t counters;
  uint32_t payload_remaining;
  uint16_t crc;
  uint8_t state;    /* crt_unframer_state_t */
  uint8_t field[4]; /* length or CRC bytes so far, unescaped */
  uint8_t field_len;
  bool saw_escape; /* the last byte consumed was an unpaired FF */
  bool discarding; /* the current packet was already dropped; skip to its end */
} crt_unframer_t;

/* Prepares u to deliver to sink (copied; sink->ctx is borrowed). Counters start at 0. */
void crt_unframer_init(crt_unframer_t* u, const crt_unframer_sink_t* sink);

/*
 * Forgets any packet in progress (the sink gets packet_done(false) if it had
 * accepted one, and it is counted as aborted) and any pending FF. Counters are kept.
 */
void crt_unframer_reset(crt_unframer_t* u);

/*
 * Consumes data[0..n) (any split of the stream is fine, down to one byte per
 * call), delivering packets to the sink. Processing stops at the first error;
 * *consumed (required) gets the number of bytes used, and the caller passes
 * the rest in again whenever it likes — the unframer is always left in a
 * consistent state, so no error is fatal to the link.
 * Returns kTvmErrorNoError when all n bytes were consumed (bad-CRC packets are
 * not an error of the call: they are dropped and counted), or:
 *   kTvmErrorFramingShortPacket   FF FD inside a packet: the packet is dropped;
 *                                 the FF is consumed, the FD is not, and the
 *                                 next call starting at the FD opens the new
 *                                 packet (TVM-compatible counts);
 *   kTvmErrorFramingInvalidEscape FF + a byte other than FF/FE/FD inside a
 *                                 packet: dropped, the bad byte consumed;
 *   a sink error                  from packet_start, payload or packet_done,
 *                                 unchanged (see crt_unframer_sink_t).
 */
tvm_crt_error_t crt_unframer_write(crt_unframer_t* u, const uint8_t* data, size_t n,
                                   size_t* consumed);

/*
 * A lower bound on the bytes needed to make progress (never 0): 1 while
 * looking for a start, the rest of the length or CRC field, or the rest of
 * the payload. Suits a transport read size. Matches TVM's BytesNeeded().
 */
size_t crt_unframer_bytes_needed(const crt_unframer_t* u);

/* The counters (pointer into u, valid while u is). */
const crt_unframer_counters_t* crt_unframer_counters(const crt_unframer_t* u);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_LINK_FRAMING_H_ */
