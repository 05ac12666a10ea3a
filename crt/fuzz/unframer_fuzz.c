/*
 * unframer_fuzz: libFuzzer target for crt_unframer_write (framing.h), the
 * first layer every byte from the host goes through on the board.
 *
 * Input: [mode] [max_len] [fail_after] [n] [n split bytes] [stream...]
 *   mode bit 0     round trip: the stream is a list of payloads [len u8][bytes],
 *                  framed with crt_framer (payload written in fuzzed pieces) and
 *                  unframed in fuzzed pieces; every payload must come back intact.
 *   mode bits 1-2  packet_done returns an error for a good (bit 1) / dropped
 *                  (bit 2) packet.
 *   mode bit 3     also feed the stream to an unframer with an all-NULL sink.
 *   max_len        the sink refuses packets longer than max_len * 4 (255: none).
 *   fail_after     0: payload() never fails; else it fails once a packet's
 *                  payload passes fail_after - 1 bytes.
 * Otherwise the stream is raw wire bytes, fed twice: in the fuzzed pieces and
 * in one piece. Checked (abort on violation):
 *   - the sink contract: packet_start / payload / packet_done ordering, payload
 *     never past the declared length, exactly one packet_done per accepted
 *     start, packet_done(true) only with every byte delivered, payload runs
 *     taken from the piece being fed (zero-copy) unless a lone escaped FF;
 *   - crt_unframer_write's contract: consumed <= n, all consumed on success, only
 *     the documented errors, progress when the rest is passed in again;
 *   - the counters: after crt_unframer_reset, packets_ok + crc_failures +
 *     aborted + oversized + sink_errors == packet starts in the stream and
 *     junk_bytes == bytes outside packets (both from fuzz_common.h's reference
 *     model), bytes_consumed == stream length, and the counters agree with
 *     what the sink saw;
 *   - split independence: counters and the event log (starts, outcomes,
 *     payload hashes) are identical for the fuzzed pieces and for one piece.
 */
#include <tvm/runtime/crt/link/framing.h>

#include "fuzz_common.h"

/* Distinct codes, so a returned error can be traced to the callback that made it. */
#define REFUSE_ERROR kTvmErrorFramingPayloadOverflow
#define PAYLOAD_ERROR kTvmErrorWriteStreamShortWrite
#define DONE_ERROR kTvmErrorPlatformCheckFailure

typedef struct {
  /* Policy (from the input; independent of split points). */
  uint32_t max_len;
  uint32_t fail_after; /* UINT32_MAX: never */
  bool done_error_ok;
  bool done_error_bad;
  /* Contract state. */
  bool in_packet;
  bool sink_failed; /* payload() failed for the open packet */
  uint32_t declared;
  uint32_t received;
  const uint8_t* piece;
  size_t piece_len;
  /* Errors callbacks returned during the current write: the one it must report (refusal,
   * payload failure, packet_done after a good packet), and the first of any kind. */
  tvm_crt_error_t required_error;
  tvm_crt_error_t first_error;
  /* What the sink saw. */
  uint32_t accepted;
  uint32_t refused;
  uint32_t done_ok;
  uint32_t done_bad;
  uint32_t payload_errors;
  uint64_t log;         /* hash of events */
  uint64_t packet_hash; /* hash of the open packet's payload */
  /* Round trip: the payload of the open packet, and what the packets must be. */
  uint8_t* buffer;
  size_t buffer_size;
  const uint8_t* expected; /* [len u8][bytes] list */
  size_t expected_len;
  size_t expected_pos;
} Sink;

static void Returned(Sink* s, tvm_crt_error_t err, bool required) {
  if (s->first_error == kTvmErrorNoError) {
    s->first_error = err;
  }
  if (required) {
    CRT_FUZZ_CHECK(s->required_error == kTvmErrorNoError,
                   "a callback ran after one whose error stops crt_unframer_write");
    s->required_error = err;
  }
}

static tvm_crt_error_t OnStart(void* ctx, uint32_t len) {
  Sink* s = (Sink*)ctx;
  CRT_FUZZ_CHECK(!s->in_packet, "packet_start while a packet is open");
  s->log = crt_fuzz_fnv_u64(crt_fuzz_fnv(s->log, "S", 1), len);
  if (len > s->max_len) {
    s->refused++;
    s->log = crt_fuzz_fnv(s->log, "r", 1);
    Returned(s, REFUSE_ERROR, true);
    return REFUSE_ERROR;
  }
  s->accepted++;
  s->in_packet = true;
  s->sink_failed = false;
  s->declared = len;
  s->received = 0;
  s->packet_hash = CRT_FUZZ_FNV_INIT;
  return kTvmErrorNoError;
}

static tvm_crt_error_t OnPayload(void* ctx, const uint8_t* data, size_t n) {
  Sink* s = (Sink*)ctx;
  CRT_FUZZ_CHECK(s->in_packet, "payload outside a packet");
  CRT_FUZZ_CHECK(!s->sink_failed, "payload after the sink failed the packet");
  CRT_FUZZ_CHECK(n >= 1u && data != NULL, "empty payload run");
  CRT_FUZZ_CHECK(n <= s->declared - s->received, "payload past the declared length");
  if (!(n == 1u && data[0] == 0xFFu)) {
    CRT_FUZZ_CHECK(data >= s->piece && data + n <= s->piece + s->piece_len,
                   "payload run not taken from the piece being fed");
  }
  if (s->buffer != NULL) {
    CRT_FUZZ_CHECK(s->received + n <= s->buffer_size, "round trip payload overflow");
    memcpy(s->buffer + s->received, data, n);
  }
  if ((uint64_t)s->received + n > (uint64_t)s->fail_after) {
    s->sink_failed = true;
    s->payload_errors++;
    Returned(s, PAYLOAD_ERROR, true);
    return PAYLOAD_ERROR;
  }
  s->packet_hash = crt_fuzz_fnv(s->packet_hash, data, n);
  s->received += (uint32_t)n;
  return kTvmErrorNoError;
}

static tvm_crt_error_t OnDone(void* ctx, bool valid) {
  Sink* s = (Sink*)ctx;
  CRT_FUZZ_CHECK(s->in_packet, "packet_done without an accepted packet_start");
  s->in_packet = false;
  if (valid) {
    CRT_FUZZ_CHECK(!s->sink_failed, "packet_done(true) after payload() failed");
    CRT_FUZZ_CHECK(s->received == s->declared, "packet_done(true) before every byte arrived");
    s->done_ok++;
  } else {
    s->done_bad++;
  }
  s->log = crt_fuzz_fnv(s->log, valid ? "D1" : "D0", 2);
  /* A packet the sink failed has a split-dependent partial hash: leave it out. */
  s->log = crt_fuzz_fnv_u64(s->log, s->sink_failed ? 0u : s->packet_hash);
  if (valid && s->expected != NULL) {
    size_t len;
    CRT_FUZZ_CHECK(s->expected_pos < s->expected_len, "round trip: more packets than sent");
    len = s->expected[s->expected_pos];
    CRT_FUZZ_CHECK(s->received == len, "round trip: payload length differs");
    CRT_FUZZ_CHECK(memcmp(s->buffer, s->expected + s->expected_pos + 1u, len) == 0,
                   "round trip: payload differs");
    s->expected_pos += 1u + len;
  }
  if (valid ? s->done_error_ok : s->done_error_bad) {
    /* After a bad packet the unframer may ignore it (an abort reports its own code). */
    Returned(s, DONE_ERROR, valid);
    return DONE_ERROR;
  }
  return kTvmErrorNoError;
}

static void InitSink(Sink* s, uint8_t mode, uint8_t max_len, uint8_t fail_after) {
  memset(s, 0, sizeof(*s));
  s->max_len = max_len == 255u ? UINT32_MAX : 4u * max_len;
  s->fail_after = fail_after == 0u ? UINT32_MAX : (uint32_t)fail_after - 1u;
  s->done_error_ok = (mode & 2u) != 0u;
  s->done_error_bad = (mode & 4u) != 0u;
  s->log = CRT_FUZZ_FNV_INIT;
}

static void MakeUnframer(crt_unframer_t* u, Sink* s) {
  crt_unframer_sink_t sink;
  sink.packet_start = OnStart;
  sink.payload = OnPayload;
  sink.packet_done = OnDone;
  sink.ctx = s;
  crt_unframer_init(u, &sink);
}

/*
 * Feeds stream[0..len) in pieces (splits == NULL: one piece), each piece an
 * exact heap copy, passing the rest in again after every error as framing.h
 * says a caller may.
 */
static void Feed(crt_unframer_t* u, Sink* s, const uint8_t* stream, size_t len,
                 crt_fuzz_splits_t* splits) {
  size_t pos = 0;
  while (pos < len) {
    size_t piece_len = splits != NULL ? crt_fuzz_splits_next(splits, len - pos) : len - pos;
    uint8_t* piece = crt_fuzz_copy(stream + pos, piece_len);
    size_t off = 0;
    int stalls = 0;
    while (off < piece_len) {
      size_t consumed = (size_t)-1;
      tvm_crt_error_t err;
      CRT_FUZZ_CHECK(crt_unframer_bytes_needed(u) >= 1u, "bytes_needed is 0");
      if (s != NULL) {
        s->piece = piece + off;
        s->piece_len = piece_len - off;
        s->required_error = kTvmErrorNoError;
        s->first_error = kTvmErrorNoError;
      }
      err = crt_unframer_write(u, piece + off, piece_len - off, &consumed);
      CRT_FUZZ_CHECK(consumed <= piece_len - off, "consumed more than given");
      if (s != NULL && s->required_error != kTvmErrorNoError) {
        CRT_FUZZ_CHECK(err == s->required_error, "a sink error was not passed back unchanged");
      } else if (err == kTvmErrorNoError) {
        CRT_FUZZ_CHECK(consumed == piece_len - off, "success without consuming everything");
      } else if (err != kTvmErrorFramingShortPacket && err != kTvmErrorFramingInvalidEscape) {
        CRT_FUZZ_CHECK(s != NULL && err == s->first_error,
                       "an error that is neither framing's nor one the sink returned");
      }
      stalls = consumed == 0u ? stalls + 1 : 0;
      CRT_FUZZ_CHECK(stalls < 2, "no progress when the rest is passed in again");
      off += consumed;
    }
    free(piece);
    pos += piece_len;
  }
  {
    size_t consumed = 1;
    CRT_FUZZ_CHECK(
        crt_unframer_write(u, stream, 0, &consumed) == kTvmErrorNoError && consumed == 0u,
        "an empty write is not a no-op");
  }
}

/* Resets u and checks its counters against the sink and the reference model. */
static void CheckCounters(crt_unframer_t* u, const Sink* s, const crt_fuzz_ref_unframer_t* ref,
                          size_t len) {
  const crt_unframer_counters_t* c = crt_unframer_counters(u);
  uint64_t ended;
  crt_unframer_reset(u);
  CRT_FUZZ_CHECK(crt_unframer_bytes_needed(u) == 1u, "bytes_needed after reset");
  ended = (uint64_t)c->packets_ok + c->crc_failures + c->aborted + c->oversized + c->sink_errors;
  CRT_FUZZ_CHECK(ended == ref->starts, "packet starts do not each end exactly once");
  CRT_FUZZ_CHECK(c->junk_bytes == (uint32_t)ref->junk, "junk_bytes differs from the model");
  CRT_FUZZ_CHECK(c->bytes_consumed == (uint32_t)len, "bytes_consumed differs from bytes fed");
  if (s == NULL) {
    CRT_FUZZ_CHECK(c->oversized == 0u && c->sink_errors == 0u, "a NULL sink refused something");
    return;
  }
  CRT_FUZZ_CHECK(!s->in_packet, "reset left the sink's packet open");
  CRT_FUZZ_CHECK(c->packets_ok == s->done_ok, "packets_ok != packet_done(true) calls");
  CRT_FUZZ_CHECK(c->oversized == s->refused, "oversized != refused starts");
  CRT_FUZZ_CHECK(c->sink_errors == s->payload_errors, "sink_errors != failed payload calls");
  CRT_FUZZ_CHECK(s->accepted == s->done_ok + s->done_bad, "accepted starts != packet_done calls");
  CRT_FUZZ_CHECK(s->done_bad >= c->crc_failures + c->sink_errors &&
                     s->done_bad - c->crc_failures - c->sink_errors <= c->aborted,
                 "packet_done(false) calls do not match crc_failures + sink_errors + aborts");
  CRT_FUZZ_CHECK((uint64_t)s->accepted + s->refused <= ref->starts,
                 "more packet_start calls than packet starts");
}

/* Collects the framer's output. */
typedef struct {
  uint8_t* data;
  size_t len;
  size_t cap;
} Output;

static tvm_crt_error_t CollectWrite(void* ctx, const uint8_t* data, size_t n) {
  Output* out = (Output*)ctx;
  CRT_FUZZ_CHECK(n >= 1u, "framer wrote 0 bytes");
  if (out->len + n > out->cap) {
    size_t cap = (out->len + n) * 2u;
    uint8_t* grown = (uint8_t*)realloc(out->data, cap);
    CRT_FUZZ_CHECK(grown != NULL, "out of host memory");
    out->data = grown;
    out->cap = cap;
  }
  memcpy(out->data + out->len, data, n);
  out->len += n;
  return kTvmErrorNoError;
}

static void RoundTrip(const uint8_t* list, size_t len, crt_fuzz_splits_t* splits) {
  crt_framer_t framer;
  crt_unframer_t u;
  Sink sink;
  Output out;
  size_t pos = 0;
  uint32_t packets = 0;
  const crt_unframer_counters_t* c;

  memset(&out, 0, sizeof(out));
  crt_framer_init(&framer, CollectWrite, &out);
  while (pos < len) {
    size_t n = list[pos];
    size_t written = 0;
    if (n > len - pos - 1u) {
      break; /* the last payload is cut short: the list ends before it */
    }
    CRT_FUZZ_CHECK(crt_framer_start_packet(&framer, (uint32_t)n) == kTvmErrorNoError, "start");
    while (written < n) {
      size_t k = crt_fuzz_splits_next(splits, n - written);
      CRT_FUZZ_CHECK(
          crt_framer_write_payload(&framer, list + pos + 1u + written, k) == kTvmErrorNoError,
          "write_payload");
      written += k;
    }
    CRT_FUZZ_CHECK(crt_framer_write_payload(&framer, list, 1) == kTvmErrorFramingPayloadOverflow,
                   "write_payload past the declared length");
    CRT_FUZZ_CHECK(crt_framer_finish_packet(&framer) == kTvmErrorNoError, "finish");
    pos += 1u + n;
    packets++;
  }
  CRT_FUZZ_CHECK(crt_framer_finish_packet(&framer) == kTvmErrorFramingInvalidState,
                 "finish with no packet open");

  InitSink(&sink, 0, 255, 0);
  sink.buffer_size = 256;
  sink.buffer = (uint8_t*)malloc(sink.buffer_size);
  CRT_FUZZ_CHECK(sink.buffer != NULL, "out of host memory");
  sink.expected = list;
  sink.expected_len = pos;
  MakeUnframer(&u, &sink);
  Feed(&u, &sink, out.data, out.len, splits);
  c = crt_unframer_counters(&u);
  CRT_FUZZ_CHECK(c->packets_ok == packets && sink.expected_pos == pos, "round trip lost packets");
  CRT_FUZZ_CHECK(
      c->crc_failures == 0u && c->aborted == 0u && c->oversized == 0u && c->sink_errors == 0u,
      "round trip dropped a packet");
  CRT_FUZZ_CHECK(c->junk_bytes == (packets > 0u ? 1u : 0u), "round trip: junk besides the FE");
  CRT_FUZZ_CHECK(!sink.in_packet, "round trip ended inside a packet");
  free(sink.buffer);
  free(out.data);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t mode = crt_fuzz_take_byte(&data, &size);
  uint8_t max_len = crt_fuzz_take_byte(&data, &size);
  uint8_t fail_after = crt_fuzz_take_byte(&data, &size);
  crt_fuzz_splits_t splits;
  crt_fuzz_ref_unframer_t ref;
  crt_unframer_t split_u, whole_u;
  Sink split_sink, whole_sink;
  size_t i;

  crt_fuzz_splits_take(&splits, &data, &size);
  if ((mode & 1u) != 0u) {
    RoundTrip(data, size, &splits);
    return 0;
  }

  crt_fuzz_ref_init(&ref);
  for (i = 0; i < size; i++) {
    crt_fuzz_ref_byte(&ref, data[i]);
  }

  InitSink(&split_sink, mode, max_len, fail_after);
  MakeUnframer(&split_u, &split_sink);
  Feed(&split_u, &split_sink, data, size, &splits);
  CheckCounters(&split_u, &split_sink, &ref, size);

  InitSink(&whole_sink, mode, max_len, fail_after);
  MakeUnframer(&whole_u, &whole_sink);
  Feed(&whole_u, &whole_sink, data, size, NULL);
  CheckCounters(&whole_u, &whole_sink, &ref, size);

  CRT_FUZZ_CHECK(memcmp(crt_unframer_counters(&split_u), crt_unframer_counters(&whole_u),
                        sizeof(crt_unframer_counters_t)) == 0,
                 "counters depend on where the stream was split");
  CRT_FUZZ_CHECK(split_sink.log == whole_sink.log,
                 "sink events depend on where the stream was split");

  if ((mode & 8u) != 0u) {
    crt_unframer_t bare;
    crt_unframer_init(&bare, NULL);
    splits.next = 0;
    Feed(&bare, NULL, data, size, &splits);
    CheckCounters(&bare, NULL, &ref, size);
  }
  return 0;
}
