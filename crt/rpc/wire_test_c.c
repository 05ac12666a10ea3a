/* Compiles wire.h as C99 and exercises it from C; wire_test.cc checks the result. */
#include <tvm/runtime/crt/wire.h>

/* Writes a DLDevice and an i64 and reads them back: the i64, or 0 if anything differs. */
int64_t crt_wire_test_c_round_trip(int64_t v);
int64_t crt_wire_test_c_round_trip(int64_t v) {
  uint8_t buf[16];
  crt_wire_writer_t w;
  crt_wire_reader_t r;
  DLDevice device = {kDLCPU, 7};
  DLDevice back;
  int64_t value;
  crt_wire_writer_init(&w, buf, sizeof(buf));
  crt_wire_write_device(&w, device);
  crt_wire_write_i64(&w, v);
  crt_wire_reader_init(&r, buf, crt_wire_writer_len(&w));
  back = crt_wire_read_device(&r);
  value = crt_wire_read_i64(&r);
  if (!crt_wire_writer_ok(&w) || !crt_wire_reader_ok(&r) || back.device_type != kDLCPU ||
      back.device_id != 7 || crt_wire_reader_remaining(&r) != 0u) {
    return 0;
  }
  return value;
}
