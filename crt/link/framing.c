/*
 * framing.c: the framer and unframer of framing.h.
 *
 * The unframer hands payload runs to the sink straight from the caller's
 * input (no copy, no packet buffer); only an escaped FF is passed as a
 * one-byte run of its own. Dropping a packet never needs to take bytes back
 * from the sink: it is told to discard them instead (packet_done(false)).
 */
#include <string.h>
#include <tvm/runtime/crt/link/crc16.h>
#include <tvm/runtime/crt/link/framing.h>

/* Stack buffer the framer escapes payload through; any size >= 2 works. */
#define ESCAPE_BUFFER_BYTES 64u

/* ---- Framer -----------------------------------------------------------------------------------
 */

void crt_framer_init(crt_framer_t* f, crt_framer_write_fn write, void* write_ctx) {
  f->write = write;
  f->write_ctx = write_ctx;
  f->payload_remaining = 0;
  f->crc = CRT_CRC16_INIT;
  f->state = kCrtFramerReset;
}

void crt_framer_reset(crt_framer_t* f) {
  f->payload_remaining = 0;
  f->state = kCrtFramerReset;
}

/* Writes data; on failure the peer may hold a partial packet, so the next one needs the preamble.
 */
static tvm_crt_error_t FramerWrite(crt_framer_t* f, const uint8_t* data, size_t n) {
  tvm_crt_error_t err = f->write(f->write_ctx, data, n);
  if (err != kTvmErrorNoError) {
    crt_framer_reset(f);
  }
  return err;
}

/* Appends b to buf at *len, doubled if it is the escape byte. buf needs 2 bytes of room. */
static void AppendEscaped(uint8_t* buf, size_t* len, uint8_t b) {
  buf[(*len)++] = b;
  if (b == CRT_FRAMING_ESCAPE_START) {
    buf[(*len)++] = CRT_FRAMING_ESCAPE_START;
  }
}

tvm_crt_error_t crt_framer_start_packet(crt_framer_t* f, uint32_t payload_len) {
  /* [FE] FF FD + 4 length bytes, each possibly doubled. */
  uint8_t header[1 + 2 + 2 * CRT_FRAMING_LENGTH_BYTES];
  size_t len = 0;
  size_t crc_from;
  unsigned i;
  tvm_crt_error_t err;

  if (f->state == kCrtFramerReset) {
    header[len++] = CRT_FRAMING_ESCAPE_NOP;
  }
  crc_from = len;
  header[len++] = CRT_FRAMING_ESCAPE_START;
  header[len++] = CRT_FRAMING_PACKET_START;
  for (i = 0; i < CRT_FRAMING_LENGTH_BYTES; i++) {
    AppendEscaped(header, &len, (uint8_t)((payload_len >> (8u * i)) & 0xFFu));
  }
  err = FramerWrite(f, header, len);
  if (err != kTvmErrorNoError) {
    return err;
  }
  f->crc = crt_crc16(header + crc_from, len - crc_from);
  f->payload_remaining = payload_len;
  f->state = kCrtFramerPacketOpen;
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_framer_write_payload(crt_framer_t* f, const uint8_t* data, size_t n) {
  uint8_t buf[ESCAPE_BUFFER_BYTES];
  size_t len = 0;
  size_t i;
  tvm_crt_error_t err;

  if (f->state != kCrtFramerPacketOpen) {
    return kTvmErrorFramingInvalidState;
  }
  if (n > f->payload_remaining) {
    return kTvmErrorFramingPayloadOverflow;
  }
  for (i = 0; i < n; i++) {
    if (len + 2 > sizeof(buf)) {
      /* The CRC covers the escaped bytes, exactly as they go on the wire. */
      f->crc = crt_crc16_update(f->crc, buf, len);
      err = FramerWrite(f, buf, len);
      if (err != kTvmErrorNoError) {
        return err;
      }
      len = 0;
    }
    AppendEscaped(buf, &len, data[i]);
  }
  if (len > 0) {
    f->crc = crt_crc16_update(f->crc, buf, len);
    err = FramerWrite(f, buf, len);
    if (err != kTvmErrorNoError) {
      return err;
    }
  }
  f->payload_remaining -= (uint32_t)n;
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_framer_finish_packet(crt_framer_t* f) {
  uint8_t buf[2 * CRT_FRAMING_CRC_BYTES];
  size_t len = 0;
  tvm_crt_error_t err;

  if (f->state != kCrtFramerPacketOpen) {
    return kTvmErrorFramingInvalidState;
  }
  if (f->payload_remaining != 0) {
    return kTvmErrorFramingPayloadIncomplete;
  }
  AppendEscaped(buf, &len, (uint8_t)(f->crc & 0xFFu));
  AppendEscaped(buf, &len, (uint8_t)(f->crc >> 8));
  err = FramerWrite(f, buf, len);
  if (err != kTvmErrorNoError) {
    return err;
  }
  f->state = kCrtFramerIdle;
  return kTvmErrorNoError;
}

tvm_crt_error_t crt_framer_write_packet(crt_framer_t* f, const uint8_t* data, size_t n) {
  tvm_crt_error_t err;
#if SIZE_MAX > UINT32_MAX
  if (n > (size_t)UINT32_MAX) {
    return kTvmErrorFramingPayloadOverflow;
  }
#endif
  err = crt_framer_start_packet(f, (uint32_t)n);
  if (err == kTvmErrorNoError) {
    err = crt_framer_write_payload(f, data, n);
  }
  if (err == kTvmErrorNoError) {
    err = crt_framer_finish_packet(f);
  }
  return err;
}

/* ---- Unframer ---------------------------------------------------------------------------------
 */

/* An escaped FF, delivered to the sink as a one-byte payload run. */
static const uint8_t kLiteralEscape = CRT_FRAMING_ESCAPE_START;

void crt_unframer_init(crt_unframer_t* u, const crt_unframer_sink_t* sink) {
  memset(u, 0, sizeof(*u));
  if (sink != NULL) {
    u->sink = *sink;
  }
  u->state = kCrtUnframerFindPacketStart;
  u->crc = CRT_CRC16_INIT;
}

/* The sink accepted the current packet (packet_start succeeded) and it has not been dropped. */
static bool SinkHasPacket(const crt_unframer_t* u) {
  return !u->discarding &&
         (u->state == kCrtUnframerFindPacketCrc || u->state == kCrtUnframerFindCrcEnd);
}

static tvm_crt_error_t SinkDone(crt_unframer_t* u, bool valid) {
  if (u->sink.packet_done == NULL) {
    return kTvmErrorNoError;
  }
  return u->sink.packet_done(u->sink.ctx, valid);
}

/* Back to scanning for FF FD. Leaves saw_escape alone (the caller decides). */
static void ToFindStart(crt_unframer_t* u) {
  u->state = kCrtUnframerFindPacketStart;
  u->field_len = 0;
  u->payload_remaining = 0;
  u->discarding = false;
}

/* Drops the packet in progress: counted once, and the sink (if it had it) told to discard. */
static void AbortPacket(crt_unframer_t* u) {
  if (!u->discarding) {
    u->counters.aborted++;
    if (SinkHasPacket(u)) {
      (void)SinkDone(u, false); /* the abort's own code is what the caller needs */
    }
  }
  ToFindStart(u);
}

void crt_unframer_reset(crt_unframer_t* u) {
  if (u->state != kCrtUnframerFindPacketStart) {
    AbortPacket(u);
  }
  u->saw_escape = false;
}

/* FF FD has been consumed: a packet starts, its CRC covering the start pair. */
static void BeginPacket(crt_unframer_t* u) {
  static const uint8_t kStart[2] = {CRT_FRAMING_ESCAPE_START, CRT_FRAMING_PACKET_START};
  ToFindStart(u);
  u->state = kCrtUnframerFindPacketLength;
  u->crc = crt_crc16(kStart, sizeof(kStart));
}

/* One byte consumed while looking for FF FD. Any run of FFs followed by FD is a start. */
static void FindStartByte(crt_unframer_t* u, uint8_t b) {
  if (b == CRT_FRAMING_ESCAPE_START) {
    if (u->saw_escape) {
      u->counters.junk_bytes++; /* the previous FF */
    }
    u->saw_escape = true;
  } else if (u->saw_escape && b == CRT_FRAMING_PACKET_START) {
    u->saw_escape = false;
    BeginPacket(u);
  } else {
    u->counters.junk_bytes += u->saw_escape ? 2u : 1u;
    u->saw_escape = false;
  }
}

/* Raw wire bytes of length and payload are covered by the CRC; the CRC field is not. */
static void CrcRaw(crt_unframer_t* u, const uint8_t* raw, size_t n) {
  if (u->state != kCrtUnframerFindCrcEnd) {
    u->crc = crt_crc16_update(u->crc, raw, n);
  }
}

/*
 * Unescaped packet bytes: one length or CRC byte, or a payload run no longer
 * than payload_remaining. Returns a sink error to stop the caller's loop.
 */
static tvm_crt_error_t PacketBytes(crt_unframer_t* u, const uint8_t* p, size_t n) {
  tvm_crt_error_t err = kTvmErrorNoError;
  uint32_t value;

  switch (u->state) {
    case kCrtUnframerFindPacketLength:
      u->field[u->field_len++] = p[0];
      if (u->field_len < CRT_FRAMING_LENGTH_BYTES) {
        break;
      }
      value = (uint32_t)u->field[0] | ((uint32_t)u->field[1] << 8) | ((uint32_t)u->field[2] << 16) |
              ((uint32_t)u->field[3] << 24);
      u->field_len = 0;
      u->payload_remaining = value;
      u->state = value > 0 ? kCrtUnframerFindPacketCrc : kCrtUnframerFindCrcEnd;
      if (u->sink.packet_start != NULL) {
        err = u->sink.packet_start(u->sink.ctx, value);
      }
      if (err != kTvmErrorNoError) {
        u->counters.oversized++;
        u->discarding = true;
      }
      break;

    case kCrtUnframerFindPacketCrc:
      u->payload_remaining -= (uint32_t)n;
      if (u->payload_remaining == 0) {
        u->state = kCrtUnframerFindCrcEnd;
      }
      if (!u->discarding && u->sink.payload != NULL) {
        err = u->sink.payload(u->sink.ctx, p, n);
        if (err != kTvmErrorNoError) {
          u->counters.sink_errors++;
          (void)SinkDone(u, false); /* the payload error is the one to report */
          u->discarding = true;
        }
      }
      break;

    case kCrtUnframerFindCrcEnd:
      u->field[u->field_len++] = p[0];
      if (u->field_len < CRT_FRAMING_CRC_BYTES) {
        break;
      }
      if (u->discarding) {
        ToFindStart(u);
        break;
      }
      {
        const bool valid = ((uint16_t)(u->field[0] | (u->field[1] << 8))) == u->crc;
        ToFindStart(u);
        if (valid) {
          u->counters.packets_ok++;
        } else {
          u->counters.crc_failures++;
        }
        err = SinkDone(u, valid);
      }
      break;

    default:
      break;
  }
  return err;
}

tvm_crt_error_t crt_unframer_write(crt_unframer_t* u, const uint8_t* data, size_t n,
                                   size_t* consumed) {
  size_t i = 0;
  tvm_crt_error_t err = kTvmErrorNoError;

  while (i < n && err == kTvmErrorNoError) {
    const uint8_t b = data[i];

    if (u->state == kCrtUnframerFindPacketStart) {
      i++;
      FindStartByte(u, b);
      continue;
    }

    if (u->saw_escape) {
      /* Second byte of an escape inside a packet. */
      u->saw_escape = false;
      if (b == CRT_FRAMING_PACKET_START) {
        if (u->discarding) {
          /* Already dropped and reported: just start the new packet. */
          i++;
          BeginPacket(u);
          continue;
        }
        /* TVM-compatible: the FD is left unconsumed and starts the next packet. */
        AbortPacket(u);
        u->saw_escape = true;
        err = kTvmErrorFramingShortPacket;
        break;
      }
      i++;
      if (b == CRT_FRAMING_ESCAPE_NOP) {
        CrcRaw(u, &b, 1);
        continue;
      }
      if (b != CRT_FRAMING_ESCAPE_START) {
        if (u->discarding) {
          ToFindStart(u); /* garbage inside a dropped packet: resync quietly */
          continue;
        }
        AbortPacket(u);
        err = kTvmErrorFramingInvalidEscape;
        break;
      }
      CrcRaw(u, &b, 1);
      err = PacketBytes(u, &kLiteralEscape, 1);
      continue;
    }

    if (b == CRT_FRAMING_ESCAPE_START) {
      i++;
      CrcRaw(u, &b, 1);
      u->saw_escape = true;
      continue;
    }

    {
      /* A run of unescaped bytes: payload up to the next FF, or one field byte. */
      size_t run = 1;
      if (u->state == kCrtUnframerFindPacketCrc) {
        size_t limit = n - i;
        if ((uint64_t)limit > (uint64_t)u->payload_remaining) {
          limit = (size_t)u->payload_remaining;
        }
        while (run < limit && data[i + run] != CRT_FRAMING_ESCAPE_START) {
          run++;
        }
      }
      CrcRaw(u, data + i, run);
      i += run;
      err = PacketBytes(u, data + i - run, run);
    }
  }

  *consumed = i;
  u->counters.bytes_consumed += (uint32_t)i;
  return err;
}

size_t crt_unframer_bytes_needed(const crt_unframer_t* u) {
  switch (u->state) {
    case kCrtUnframerFindPacketLength:
      return CRT_FRAMING_LENGTH_BYTES - u->field_len;
    case kCrtUnframerFindPacketCrc:
      return u->payload_remaining > 0 ? (size_t)u->payload_remaining : 1u;
    case kCrtUnframerFindCrcEnd:
      return CRT_FRAMING_CRC_BYTES - u->field_len;
    default:
      return 1;
  }
}

const crt_unframer_counters_t* crt_unframer_counters(const crt_unframer_t* u) {
  return &u->counters;
}
