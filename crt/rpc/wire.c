/* wire.c: MinRPC's byte encodings (wire.h). */
#include <string.h>
#include <tvm/runtime/crt/wire.h>

/* The n-byte little-endian unsigned integer at p (n <= 8). */
static uint64_t LoadLE(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  while (n > 0u) {
    v = (v << 8) | p[--n];
  }
  return v;
}

/* Stores the low n bytes of v at p, least significant first (n <= 8). */
static void StoreLE(uint8_t* p, uint64_t v, size_t n) {
  size_t i;
  for (i = 0; i < n; i++) {
    p[i] = (uint8_t)(v >> (8u * i));
  }
}

uint32_t crt_wire_load_u32(const uint8_t* p) { return (uint32_t)LoadLE(p, 4); }

uint64_t crt_wire_load_u64(const uint8_t* p) { return LoadLE(p, 8); }

void crt_wire_store_u64(uint8_t* p, uint64_t v) { StoreLE(p, v, 8); }

/* ---- reader ---------------------------------------------------------------------------------- */

void crt_wire_reader_init(crt_wire_reader_t* r, const uint8_t* data, size_t len) {
  r->data = data;
  r->len = len;
  r->pos = 0;
  r->ok = true;
}

bool crt_wire_reader_ok(const crt_wire_reader_t* r) { return r->ok; }

size_t crt_wire_reader_remaining(const crt_wire_reader_t* r) { return r->len - r->pos; }

const uint8_t* crt_wire_read_bytes(crt_wire_reader_t* r, uint64_t n) {
  const uint8_t* p;
  if (!r->ok || n > (uint64_t)(r->len - r->pos)) {
    r->ok = false;
    return NULL;
  }
  p = r->data + r->pos;
  r->pos += (size_t)n;
  return p;
}

/* The next n-byte little-endian field, or 0 when it does not fit. */
static uint64_t ReadLE(crt_wire_reader_t* r, size_t n) {
  const uint8_t* p = crt_wire_read_bytes(r, n);
  return p == NULL ? 0u : LoadLE(p, n);
}

uint8_t crt_wire_read_u8(crt_wire_reader_t* r) { return (uint8_t)ReadLE(r, 1); }

uint16_t crt_wire_read_u16(crt_wire_reader_t* r) { return (uint16_t)ReadLE(r, 2); }

uint32_t crt_wire_read_u32(crt_wire_reader_t* r) { return (uint32_t)ReadLE(r, 4); }

uint64_t crt_wire_read_u64(crt_wire_reader_t* r) { return ReadLE(r, 8); }

int32_t crt_wire_read_i32(crt_wire_reader_t* r) { return (int32_t)crt_wire_read_u32(r); }

int64_t crt_wire_read_i64(crt_wire_reader_t* r) { return (int64_t)crt_wire_read_u64(r); }

double crt_wire_read_f64(crt_wire_reader_t* r) {
  uint64_t bits = crt_wire_read_u64(r);
  double v;
  memcpy(&v, &bits, sizeof(v));
  return v;
}

DLDevice crt_wire_read_device(crt_wire_reader_t* r) {
  DLDevice d;
  d.device_type = (DLDeviceType)crt_wire_read_i32(r);
  d.device_id = crt_wire_read_i32(r);
  return d;
}

DLDataType crt_wire_read_dtype(crt_wire_reader_t* r) {
  DLDataType t;
  t.code = crt_wire_read_u8(r);
  t.bits = crt_wire_read_u8(r);
  t.lanes = crt_wire_read_u16(r);
  return t;
}

/* ---- writer ---------------------------------------------------------------------------------- */

void crt_wire_writer_init(crt_wire_writer_t* w, uint8_t* data, size_t cap) {
  w->data = data;
  w->cap = cap;
  w->len = 0;
  w->ok = true;
}

bool crt_wire_writer_ok(const crt_wire_writer_t* w) { return w->ok; }

size_t crt_wire_writer_len(const crt_wire_writer_t* w) { return w->len; }

/* Room for the next n bytes: where they go, or NULL (and the writer fails) when they do not fit. */
static uint8_t* Reserve(crt_wire_writer_t* w, size_t n) {
  uint8_t* p;
  if (!w->ok || n > w->cap - w->len) {
    w->ok = false;
    return NULL;
  }
  p = w->data + w->len;
  w->len += n;
  return p;
}

static void WriteLE(crt_wire_writer_t* w, uint64_t v, size_t n) {
  uint8_t* p = Reserve(w, n);
  if (p != NULL) StoreLE(p, v, n);
}

void crt_wire_write_u8(crt_wire_writer_t* w, uint8_t v) { WriteLE(w, v, 1); }

void crt_wire_write_u16(crt_wire_writer_t* w, uint16_t v) { WriteLE(w, v, 2); }

void crt_wire_write_u32(crt_wire_writer_t* w, uint32_t v) { WriteLE(w, v, 4); }

void crt_wire_write_u64(crt_wire_writer_t* w, uint64_t v) { WriteLE(w, v, 8); }

void crt_wire_write_i32(crt_wire_writer_t* w, int32_t v) { WriteLE(w, (uint32_t)v, 4); }

void crt_wire_write_i64(crt_wire_writer_t* w, int64_t v) { WriteLE(w, (uint64_t)v, 8); }

void crt_wire_write_f64(crt_wire_writer_t* w, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof(bits));
  WriteLE(w, bits, 8);
}

void crt_wire_write_bytes(crt_wire_writer_t* w, const void* bytes, size_t n) {
  uint8_t* p = Reserve(w, n);
  if (p != NULL && n > 0u) memcpy(p, bytes, n);
}

void crt_wire_write_device(crt_wire_writer_t* w, DLDevice v) {
  crt_wire_write_i32(w, (int32_t)v.device_type);
  crt_wire_write_i32(w, v.device_id);
}

void crt_wire_write_dtype(crt_wire_writer_t* w, DLDataType v) {
  crt_wire_write_u8(w, v.code);
  crt_wire_write_u8(w, v.bits);
  crt_wire_write_u16(w, v.lanes);
}
