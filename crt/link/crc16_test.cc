// Tests of crc16.c: the CRC-16/CCITT-FALSE check value, the table against the
// bitwise definition, incremental use, and the CRCs of TVM's golden framing
// packets (reference sections 1.3 and 6.1), which cover the escaped wire bytes.

#include "tvm/runtime/crt/link/crc16.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#ifndef CRC16_TEST_TABLE_ONLY
extern "C" int crt_link_headers_compile_as_c(void);
#endif

namespace {

std::vector<uint8_t> Bytes(const std::string& s) {
  return std::vector<uint8_t>(s.begin(), s.end());
}

// The CRC computed one bit at a time, straight from the definition.
uint16_t BitwiseCrc(const std::vector<uint8_t>& data) {
  uint16_t crc = 0xFFFF;
  for (uint8_t b : data) {
    crc ^= static_cast<uint16_t>(b << 8);
    for (int i = 0; i < 8; i++) {
      crc = (crc & 0x8000) ? static_cast<uint16_t>((crc << 1) ^ 0x1021)
                           : static_cast<uint16_t>(crc << 1);
    }
  }
  return crc;
}

// The CRC a golden packet carries in its last two wire bytes (LE; an FF there is doubled).
uint16_t CrcOfGoldenWire(const std::vector<uint8_t>& wire, size_t crc_offset) {
  std::vector<uint8_t> crc;
  for (size_t i = crc_offset; i < wire.size(); i++) {
    crc.push_back(wire[i]);
    if (wire[i] == 0xFF) i++;  // the escape's second byte
  }
  return static_cast<uint16_t>(crc[0] | (crc[1] << 8));
}

TEST(Crc16Test, CheckValue) {
  const std::vector<uint8_t> data = Bytes("123456789");
  EXPECT_EQ(crt_crc16(data.data(), data.size()), 0x29B1);
  EXPECT_EQ(crt_crc16_update(CRT_CRC16_INIT, data.data(), data.size()), 0x29B1);
}

TEST(Crc16Test, EmptyInputIsInitialValue) {
  EXPECT_EQ(crt_crc16(nullptr, 0), 0xFFFF);
  EXPECT_EQ(crt_crc16_update(0x1234, nullptr, 0), 0x1234);
}

TEST(Crc16Test, TableMatchesBitwiseDefinition) {
  for (int b = 0; b < 256; b++) {
    const std::vector<uint8_t> one = {static_cast<uint8_t>(b)};
    EXPECT_EQ(crt_crc16(one.data(), 1), BitwiseCrc(one)) << "byte " << b;
  }
  std::vector<uint8_t> ramp;
  for (int i = 0; i < 1000; i++) ramp.push_back(static_cast<uint8_t>(i * 7 + 3));
  EXPECT_EQ(crt_crc16(ramp.data(), ramp.size()), BitwiseCrc(ramp));
}

TEST(Crc16Test, IncrementalEqualsWhole) {
  const std::vector<uint8_t> data =
      Bytes("the quick brown fox jumps over the lazy dog \xff\xfd\xfe");
  const uint16_t whole = crt_crc16(data.data(), data.size());
  for (size_t split = 0; split <= data.size(); split++) {
    uint16_t crc = crt_crc16_update(CRT_CRC16_INIT, data.data(), split);
    crc = crt_crc16_update(crc, data.data() + split, data.size() - split);
    EXPECT_EQ(crc, whole) << "split " << split;
  }
  uint16_t crc = CRT_CRC16_INIT;
  for (uint8_t b : data) crc = crt_crc16_update_byte(crc, b);
  EXPECT_EQ(crc, whole);
}

struct GoldenCrc {
  const char* name;
  std::vector<uint8_t> wire;
  size_t crc_offset;  // first wire byte of the (escaped) CRC
};

std::vector<GoldenCrc> GoldenPackets() {
  std::vector<GoldenCrc> out;
  out.push_back({"Packet1", {0xFF, 0xFD, 0x03, 0, 0, 0, 'o', 'n', 'e', 0x58, 0xF4}, 9});
  out.push_back({"Packet2", {0xFF, 0xFD, 0x04, 0, 0, 0, 't', 'w', 'o', '2', 0x13, 0x11}, 10});
  out.push_back({"Packet3", {0xFF, 0xFD, 0x05, 0, 0, 0, 't', 'h', 'r', 'e', 'e', 0x63, 0x9F}, 11});
  out.push_back({"ZeroLengthPacket", {0xFF, 0xFD, 0, 0, 0, 0, 0x83, 0x44}, 6});
  out.push_back(
      {"EscapePacket",
       {0xFF, 0xFD, 0x13, 0x00, 0x00, 0x00, 0x65, 0x73, 0x5F, 0xFF, 0xFF, 0x5F, 0x63, 0x61, 0x70,
        0x65, 0x69, 0x72, 0x2F, 0x5E, 0x3E, 0x74, 0x40, 0x22, 0x68, 0x72, 0xB4, 0xFF, 0xFF},
       26});
  std::string chunk = "this payload is exactly 255 characters long. chunk is 64 bytes. ";
  std::string payload = chunk + chunk + chunk + chunk.substr(0, 63);
  std::vector<uint8_t> wire = {0xFF, 0xFD, 0xFF, 0xFF, 0x00, 0x00, 0x00};
  wire.insert(wire.end(), payload.begin(), payload.end());
  const size_t crc_offset = wire.size();
  wire.push_back(0x36);
  wire.push_back(0x7E);
  out.push_back({"EscapeCodeInSizePacket", wire, crc_offset});
  return out;
}

// The golden CRCs cover the wire bytes from FF FD through the payload, escapes included.
TEST(Crc16Test, GoldenPacketCrcsCoverEscapedWireBytes) {
  for (const GoldenCrc& p : GoldenPackets()) {
    EXPECT_EQ(crt_crc16(p.wire.data(), p.crc_offset), CrcOfGoldenWire(p.wire, p.crc_offset))
        << p.name;
  }
}

// Over the unescaped bytes the CRC would not be the golden B4 FF (reference 1.3).
TEST(Crc16Test, EscapePacketUnescapedCrcDiffers) {
  const std::vector<uint8_t> unescaped = {0xFF, 0xFD, 0x13, 0x00, 0x00, 0x00, 0x65, 0x73, 0x5F,
                                          0xFF, 0x5F, 0x63, 0x61, 0x70, 0x65, 0x69, 0x72, 0x2F,
                                          0x5E, 0x3E, 0x74, 0x40, 0x22, 0x68, 0x72};
  EXPECT_NE(crt_crc16(unescaped.data(), unescaped.size()), 0xFFB4);
}

#ifndef CRC16_TEST_TABLE_ONLY  // crc16_nibble_test links crc16.c alone
TEST(LinkHeadersTest, CompileAsC) { EXPECT_EQ(crt_link_headers_compile_as_c(), 0x29B1); }
#endif

}  // namespace
