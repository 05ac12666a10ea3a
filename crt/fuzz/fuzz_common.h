/*
 * fuzz_common.h: what crt/'s libFuzzer harnesses share — the check macro,
 * input slicing (fuzzed split points), an exact-size copy of each piece so
 * AddressSanitizer sees any read past it, FNV-1a for event logs, and a
 * reference model of the unframer's packet-start and junk-byte counting
 * (framing.h), written from the wire format rather than from framing.c.
 *
 * Harness code, not crt code: stdio, malloc and abort are fine here. Header
 * only (static functions), C99; each harness is one translation unit.
 *
 * Input layout shared by the harnesses (after each one's own config bytes):
 *   [n] [n split bytes] [stream...]
 * The stream is fed in pieces of (split byte + 1) bytes, cycling through the
 * split bytes; n == 0 feeds the whole stream in one piece. Keeping the split
 * bytes apart from the stream keeps the stream contiguous, so a seed that is
 * a valid wire capture stays valid whatever the splits are.
 */
#ifndef CRT_FUZZ_FUZZ_COMMON_H_
#define CRT_FUZZ_FUZZ_COMMON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tvm/runtime/crt/wire.h>

/* Aborts (a libFuzzer crash) with the file, line and a message when cond is false. */
#define CRT_FUZZ_CHECK(cond, msg)                                                              \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      fprintf(stderr, "crt fuzz: CHECK failed at %s:%d: %s (%s)\n", __FILE__, __LINE__, (msg), \
              #cond);                                                                          \
      abort();                                                                                 \
    }                                                                                          \
  } while (0)

/* ---- input slicing ----------------------------------------------------------------------------
 */

/* Reads one byte from the front of the input, or 0 when it is empty. */
static inline uint8_t crt_fuzz_take_byte(const uint8_t** data, size_t* size) {
  uint8_t b = 0;
  if (*size > 0u) {
    b = **data;
    (*data)++;
    (*size)--;
  }
  return b;
}

/* Split points: piece sizes taken from the input. */
typedef struct {
  const uint8_t* sizes;
  size_t count;
  size_t next;
} crt_fuzz_splits_t;

/* Takes [n][n bytes] from the front of the input (fewer if it runs out). */
static inline void crt_fuzz_splits_take(crt_fuzz_splits_t* s, const uint8_t** data, size_t* size) {
  size_t n = crt_fuzz_take_byte(data, size);
  if (n > *size) {
    n = *size;
  }
  s->sizes = *data;
  s->count = n;
  s->next = 0;
  *data += n;
  *size -= n;
}

/* The next piece size, 1..remaining (the whole rest when there are no split bytes). */
static inline size_t crt_fuzz_splits_next(crt_fuzz_splits_t* s, size_t remaining) {
  size_t piece;
  if (s->count == 0u) {
    return remaining;
  }
  piece = (size_t)s->sizes[s->next] + 1u;
  s->next = (s->next + 1u) % s->count;
  return piece < remaining ? piece : remaining;
}

/* A heap copy of exactly n bytes (n may be 0), so ASan flags any access past the piece. */
static inline uint8_t* crt_fuzz_copy(const uint8_t* data, size_t n) {
  uint8_t* p = (uint8_t*)malloc(n == 0u ? 1u : n);
  CRT_FUZZ_CHECK(p != NULL, "out of host memory");
  if (n > 0u) {
    memcpy(p, data, n);
  }
  return p;
}

/* ---- FNV-1a -----------------------------------------------------------------------------------
 */

#define CRT_FUZZ_FNV_INIT 0xcbf29ce484222325ull

static inline uint64_t crt_fuzz_fnv(uint64_t h, const void* data, size_t n) {
  const uint8_t* p = (const uint8_t*)data;
  size_t i;
  for (i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* Hashes v's 8 little-endian bytes. */
static inline uint64_t crt_fuzz_fnv_u64(uint64_t h, uint64_t v) {
  uint8_t b[8];
  crt_wire_store_u64(b, v);
  return crt_fuzz_fnv(h, b, sizeof(b));
}

/* ---- reference model of packet-start and junk counting ----------------------------------------
 */

/*
 * Follows the wire format of framing.h byte by byte: outside a packet, any
 * run of FF followed by FD starts one (the FFs before the last are junk, as is
 * any other byte); inside one, FF FF is a literal FF, FF FE a no-op, FF FD a
 * new start (the old packet is abandoned), FF + anything else ends the packet;
 * a packet is 4 length bytes, that many payload bytes and 2 CRC bytes, all
 * unescaped counts. What happens to a packet's contents (CRC, sink refusal) does
 * not change where packets start and end, so this needs no sink.
 */
typedef enum {
  kCrtFuzzRefFind = 0,
  kCrtFuzzRefLength = 1,
  kCrtFuzzRefPayload = 2,
  kCrtFuzzRefCrc = 3,
} crt_fuzz_ref_state_t;

typedef struct {
  crt_fuzz_ref_state_t state;
  bool escape;        /* the last byte was an unpaired FF */
  uint32_t field;     /* length or CRC bytes so far */
  uint32_t length;    /* length being assembled */
  uint32_t remaining; /* payload bytes still to come */
  uint64_t starts;    /* FF FD pairs that started a packet */
  uint64_t junk;      /* bytes skipped outside packets */
} crt_fuzz_ref_unframer_t;

static inline void crt_fuzz_ref_init(crt_fuzz_ref_unframer_t* r) { memset(r, 0, sizeof(*r)); }

static inline void crt_fuzz_ref_begin(crt_fuzz_ref_unframer_t* r) {
  r->starts++;
  r->state = kCrtFuzzRefLength;
  r->field = 0;
  r->length = 0;
  r->remaining = 0;
}

/* One unescaped byte of a packet (length, payload or CRC). */
static inline void crt_fuzz_ref_packet_byte(crt_fuzz_ref_unframer_t* r, uint8_t b) {
  switch (r->state) {
    case kCrtFuzzRefLength:
      r->length |= (uint32_t)b << (8u * r->field);
      if (++r->field == 4u) {
        r->field = 0;
        r->remaining = r->length;
        r->state = r->length > 0u ? kCrtFuzzRefPayload : kCrtFuzzRefCrc;
      }
      break;
    case kCrtFuzzRefPayload:
      if (--r->remaining == 0u) {
        r->state = kCrtFuzzRefCrc;
      }
      break;
    case kCrtFuzzRefCrc:
      if (++r->field == 2u) {
        r->field = 0;
        r->state = kCrtFuzzRefFind;
      }
      break;
    default:
      break;
  }
}

static inline void crt_fuzz_ref_byte(crt_fuzz_ref_unframer_t* r, uint8_t b) {
  if (r->state == kCrtFuzzRefFind) {
    if (b == 0xFFu) {
      if (r->escape) {
        r->junk++;
      }
      r->escape = true;
    } else if (r->escape && b == 0xFDu) {
      r->escape = false;
      crt_fuzz_ref_begin(r);
    } else {
      r->junk += r->escape ? 2u : 1u;
      r->escape = false;
    }
    return;
  }
  if (r->escape) {
    r->escape = false;
    if (b == 0xFDu) {
      crt_fuzz_ref_begin(r);
    } else if (b == 0xFFu) {
      crt_fuzz_ref_packet_byte(r, b);
    } else if (b != 0xFEu) {
      r->state = kCrtFuzzRefFind;
    }
    return;
  }
  if (b == 0xFFu) {
    r->escape = true;
    return;
  }
  crt_fuzz_ref_packet_byte(r, b);
}

/* Inside a packet (not between packets) after the bytes so far. */
static inline bool crt_fuzz_ref_in_packet(const crt_fuzz_ref_unframer_t* r) {
  return r->state != kCrtFuzzRefFind;
}

#endif /* CRT_FUZZ_FUZZ_COMMON_H_ */
