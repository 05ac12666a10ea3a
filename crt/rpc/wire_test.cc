// Tests of wire.c: every field's little-endian bytes (golden, written out by hand), the
// reader's sticky failure that never reads past its span, and the writer's that never writes
// past its buffer.

#include "tvm/runtime/crt/wire.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

extern "C" int64_t crt_wire_test_c_round_trip(int64_t v);

namespace {

// Every field once: u8, u16, u32, u64, i32 -2, i64 -3, f64 1.0, DLDevice {1, 5}, float32x4.
const std::vector<uint8_t> kFields = {
    0x01,                                            // u8
    0x02, 0x01,                                      // u16 0x0102
    0x06, 0x05, 0x04, 0x03,                          // u32 0x03040506
    0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07,  // u64 0x0708090a0b0c0d0e
    0xfe, 0xff, 0xff, 0xff,                          // i32 -2
    0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // i64 -3
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf0, 0x3f,  // f64 1.0
    0x01, 0x00, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00,  // DLDevice {kDLCPU, 5}
    0x02, 0x20, 0x04, 0x00,                          // DLDataType {kDLFloat, 32, 4}
};

TEST(WireLoadStore, LittleEndian) {
  const uint8_t bytes[] = {0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07};
  EXPECT_EQ(crt_wire_load_u32(bytes), 0x0b0c0d0eu);
  EXPECT_EQ(crt_wire_load_u64(bytes), 0x0708090a0b0c0d0eull);
  uint8_t out[8] = {0};
  crt_wire_store_u64(out, 0x0708090a0b0c0d0eull);
  EXPECT_EQ(std::vector<uint8_t>(out, out + 8), std::vector<uint8_t>(bytes, bytes + 8));
}

TEST(WireReader, ReadsEveryField) {
  crt_wire_reader_t r;
  crt_wire_reader_init(&r, kFields.data(), kFields.size());
  EXPECT_EQ(crt_wire_read_u8(&r), 0x01u);
  EXPECT_EQ(crt_wire_read_u16(&r), 0x0102u);
  EXPECT_EQ(crt_wire_read_u32(&r), 0x03040506u);
  EXPECT_EQ(crt_wire_read_u64(&r), 0x0708090a0b0c0d0eull);
  EXPECT_EQ(crt_wire_read_i32(&r), -2);
  EXPECT_EQ(crt_wire_read_i64(&r), -3);
  EXPECT_EQ(crt_wire_read_f64(&r), 1.0);
  DLDevice device = crt_wire_read_device(&r);
  EXPECT_EQ(device.device_type, kDLCPU);
  EXPECT_EQ(device.device_id, 5);
  DLDataType dtype = crt_wire_read_dtype(&r);
  EXPECT_EQ(dtype.code, kDLFloat);
  EXPECT_EQ(dtype.bits, 32u);
  EXPECT_EQ(dtype.lanes, 4u);
  EXPECT_TRUE(crt_wire_reader_ok(&r));
  EXPECT_EQ(crt_wire_reader_remaining(&r), 0u);
}

TEST(WireReader, BytesPointIntoTheSpan) {
  crt_wire_reader_t r;
  crt_wire_reader_init(&r, kFields.data(), kFields.size());
  EXPECT_EQ(crt_wire_read_bytes(&r, 0), kFields.data());
  EXPECT_EQ(crt_wire_read_bytes(&r, 3), kFields.data());
  EXPECT_EQ(crt_wire_read_bytes(&r, 4), kFields.data() + 3);
  EXPECT_EQ(crt_wire_reader_remaining(&r), kFields.size() - 7);
  EXPECT_TRUE(crt_wire_reader_ok(&r));
}

TEST(WireReader, ShortReadFailsAndStaysFailed) {
  // Only the first 3 bytes of the span are the reader's: a u32 does not fit.
  crt_wire_reader_t r;
  crt_wire_reader_init(&r, kFields.data(), 3);
  EXPECT_EQ(crt_wire_read_u32(&r), 0u);
  EXPECT_FALSE(crt_wire_reader_ok(&r));
  EXPECT_EQ(crt_wire_reader_remaining(&r), 3u);
  // Later reads fail too, even ones that would fit.
  EXPECT_EQ(crt_wire_read_u8(&r), 0u);
  EXPECT_EQ(crt_wire_read_bytes(&r, 0), nullptr);
  EXPECT_EQ(crt_wire_reader_remaining(&r), 3u);
  EXPECT_FALSE(crt_wire_reader_ok(&r));
}

TEST(WireReader, HugeLengthDoesNotWrap) {
  crt_wire_reader_t r;
  crt_wire_reader_init(&r, kFields.data(), kFields.size());
  (void)crt_wire_read_u8(&r);
  EXPECT_EQ(crt_wire_read_bytes(&r, UINT64_MAX), nullptr);
  EXPECT_FALSE(crt_wire_reader_ok(&r));
  EXPECT_EQ(crt_wire_reader_remaining(&r), kFields.size() - 1);
}

TEST(WireReader, EveryTruncationOfAFieldFails) {
  for (size_t len = 0; len < 8; ++len) {
    crt_wire_reader_t r;
    crt_wire_reader_init(&r, kFields.data(), len);
    EXPECT_EQ(crt_wire_read_u64(&r), 0u) << len;
    EXPECT_FALSE(crt_wire_reader_ok(&r)) << len;
  }
}

TEST(WireWriter, WritesEveryField) {
  std::vector<uint8_t> buf(kFields.size() + 5, 0xaa);
  crt_wire_writer_t w;
  crt_wire_writer_init(&w, buf.data(), buf.size());
  crt_wire_write_u8(&w, 0x01);
  crt_wire_write_u16(&w, 0x0102);
  crt_wire_write_u32(&w, 0x03040506u);
  crt_wire_write_u64(&w, 0x0708090a0b0c0d0eull);
  crt_wire_write_i32(&w, -2);
  crt_wire_write_i64(&w, -3);
  crt_wire_write_f64(&w, 1.0);
  crt_wire_write_device(&w, DLDevice{kDLCPU, 5});
  crt_wire_write_dtype(&w, DLDataType{kDLFloat, 32, 4});
  const uint8_t tail[] = {0x10, 0x11, 0x12};
  crt_wire_write_bytes(&w, tail, sizeof(tail));
  crt_wire_write_bytes(&w, nullptr, 0);
  EXPECT_TRUE(crt_wire_writer_ok(&w));
  ASSERT_EQ(crt_wire_writer_len(&w), kFields.size() + 3);
  std::vector<uint8_t> expected = kFields;
  expected.insert(expected.end(), {0x10, 0x11, 0x12, 0xaa, 0xaa});
  EXPECT_EQ(buf, expected);
}

TEST(WireWriter, OverflowWritesNothingAndStaysFailed) {
  uint8_t buf[6];
  std::fill(buf, buf + sizeof(buf), 0xaa);
  crt_wire_writer_t w;
  crt_wire_writer_init(&w, buf, 5);  // the last byte is not the writer's
  crt_wire_write_u32(&w, 0x01020304u);
  crt_wire_write_u16(&w, 0x0506);  // 1 byte of room: nothing is written
  EXPECT_FALSE(crt_wire_writer_ok(&w));
  crt_wire_write_u8(&w, 0x07);  // would fit, but the writer has failed
  EXPECT_FALSE(crt_wire_writer_ok(&w));
  EXPECT_EQ(crt_wire_writer_len(&w), 4u);
  EXPECT_EQ(std::vector<uint8_t>(buf, buf + 6),
            (std::vector<uint8_t>{0x04, 0x03, 0x02, 0x01, 0xaa, 0xaa}));
}

TEST(WireHeaders, CompileAsC) {
  EXPECT_EQ(crt_wire_test_c_round_trip(-1234567890123), -1234567890123);
}

}  // namespace
