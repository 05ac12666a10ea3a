/*
 * wire.h: MinRPC's byte encodings (docs/microtvm-reference.md section 3) in
 * one place — the little-endian integers, and the DLDevice and DLDataType
 * fields of packed arguments — for the board's MinRPC server, its time
 * evaluator and the libFuzzer harness that checks the server's replies.
 *
 * Three layers:
 *   - crt_wire_load_* / crt_wire_store_*: one fixed-width little-endian field
 *     at a pointer the caller has already bounds-checked.
 *   - crt_wire_reader_t: a cursor over a byte span. Every read either takes
 *     its whole field or fails; the first failure is sticky: that read and
 *     every later one return 0 (NULL for bytes) without moving the cursor, so
 *     a caller may read a whole group of fields and check
 *     crt_wire_reader_ok once. It never reads outside [data, data + len).
 *   - crt_wire_writer_t: the same over a buffer of fixed capacity; a write
 *     that does not fit fails, writes nothing, and every later write fails too.
 * Byte order and struct layout of the machine never matter: every field is
 * assembled byte by byte.
 *
 * Pure C99 over caller-owned memory: no allocation, no global state; a reader
 * or writer may be used from one thread at a time.
 */
#ifndef TVM_RUNTIME_CRT_WIRE_H_
#define TVM_RUNTIME_CRT_WIRE_H_

#include <dlpack/dlpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- fixed-offset fields: p must point at 4 or 8 accessible bytes ---------------------------- */

uint32_t crt_wire_load_u32(const uint8_t* p);
uint64_t crt_wire_load_u64(const uint8_t* p);
void crt_wire_store_u64(uint8_t* p, uint64_t v);

/* ---- reader ---------------------------------------------------------------------------------- */

/* Fields are private: use the functions below. */
typedef struct crt_wire_reader {
  const uint8_t* data;
  size_t len;
  size_t pos;
  bool ok;
} crt_wire_reader_t;

/* Starts a reader at data[0] over len bytes. data must not be NULL; it is borrowed. */
void crt_wire_reader_init(crt_wire_reader_t* r, const uint8_t* data, size_t len);

/* False once any read ran short. */
bool crt_wire_reader_ok(const crt_wire_reader_t* r);

/* Bytes not yet read. */
size_t crt_wire_reader_remaining(const crt_wire_reader_t* r);

/* Little-endian integers; the signed ones are two's complement. */
uint8_t crt_wire_read_u8(crt_wire_reader_t* r);
uint16_t crt_wire_read_u16(crt_wire_reader_t* r);
uint32_t crt_wire_read_u32(crt_wire_reader_t* r);
uint64_t crt_wire_read_u64(crt_wire_reader_t* r);
int32_t crt_wire_read_i32(crt_wire_reader_t* r);
int64_t crt_wire_read_i64(crt_wire_reader_t* r);

/* An IEEE-754 double sent as the u64 of its bits. */
double crt_wire_read_f64(crt_wire_reader_t* r);

/*
 * The next n raw bytes: a pointer into the span, or NULL when fewer than n
 * remain. n is a u64 so that a length taken off the wire needs no check first.
 */
const uint8_t* crt_wire_read_bytes(crt_wire_reader_t* r, uint64_t n);

/* DLDevice (8 bytes): i32 device_type, i32 device_id. */
DLDevice crt_wire_read_device(crt_wire_reader_t* r);

/* DLDataType (4 bytes): u8 code, u8 bits, u16 lanes. */
DLDataType crt_wire_read_dtype(crt_wire_reader_t* r);

/* ---- writer ---------------------------------------------------------------------------------- */

/* Fields are private: use the functions below. */
typedef struct crt_wire_writer {
  uint8_t* data;
  size_t cap;
  size_t len;
  bool ok;
} crt_wire_writer_t;

/* Starts an empty writer over data[0..cap). data must not be NULL; it is borrowed. */
void crt_wire_writer_init(crt_wire_writer_t* w, uint8_t* data, size_t cap);

/* False once any write did not fit. */
bool crt_wire_writer_ok(const crt_wire_writer_t* w);

/* Bytes written so far, from data[0]. */
size_t crt_wire_writer_len(const crt_wire_writer_t* w);

/* The encodings of the reads above. */
void crt_wire_write_u8(crt_wire_writer_t* w, uint8_t v);
void crt_wire_write_u16(crt_wire_writer_t* w, uint16_t v);
void crt_wire_write_u32(crt_wire_writer_t* w, uint32_t v);
void crt_wire_write_u64(crt_wire_writer_t* w, uint64_t v);
void crt_wire_write_i32(crt_wire_writer_t* w, int32_t v);
void crt_wire_write_i64(crt_wire_writer_t* w, int64_t v);
void crt_wire_write_f64(crt_wire_writer_t* w, double v);
/* Copies n bytes (bytes may be NULL when n is 0). */
void crt_wire_write_bytes(crt_wire_writer_t* w, const void* bytes, size_t n);
void crt_wire_write_device(crt_wire_writer_t* w, DLDevice v);
void crt_wire_write_dtype(crt_wire_writer_t* w, DLDataType v);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_WIRE_H_ */
