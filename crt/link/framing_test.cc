// Tests of framing.c: every case of TVM v0.18's tests/crt/framing_test.cc with its
// golden wire bytes (reference section 6.1), PacketTooLong adapted to benchfarm's
// fixed semantics (an oversized packet is dropped whole and counted), and the
// robustness cases TVM did not have: bad CRC, garbage, bad escapes, resets and
// random input never leave stale bytes or a stuck unframer.

#include "tvm/runtime/crt/link/framing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "tvm/runtime/crt/link/crc16.h"

namespace {

using Bytes = std::vector<uint8_t>;

Bytes Concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes Slice(const Bytes& b, size_t from, size_t to) {
  return Bytes(b.begin() + static_cast<std::ptrdiff_t>(from),
               b.begin() + static_cast<std::ptrdiff_t>(to));
}

// A transport that records what the framer writes; can be told to fail.
class CaptureWriter {
 public:
  static tvm_crt_error_t Write(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<CaptureWriter*>(ctx);
    EXPECT_GT(n, 0u);
    if (self->calls_until_failure == 0) return kTvmErrorWriteStreamShortWrite;
    if (self->calls_until_failure > 0) self->calls_until_failure--;
    self->bytes.insert(self->bytes.end(), data, data + n);
    return kTvmErrorNoError;
  }
  Bytes bytes;
  int calls_until_failure = -1;  // -1: never fail
};

// A sink that records each finished packet as (valid, payload bytes received).
struct PacketEvent {
  bool valid;
  std::string payload;
  bool operator==(const PacketEvent& o) const { return valid == o.valid && payload == o.payload; }
};

std::ostream& operator<<(std::ostream& os, const PacketEvent& e) {
  return os << "{valid=" << e.valid << " payload=\"" << e.payload << "\"}";
}

class RecordingSink {
 public:
  explicit RecordingSink(size_t capacity = SIZE_MAX, bool check_length_at_start = false)
      : capacity_(capacity), check_length_at_start_(check_length_at_start) {}

  crt_unframer_sink_t Sink() { return crt_unframer_sink_t{&Start, &Payload, &Done, this}; }

  static tvm_crt_error_t Start(void* ctx, uint32_t len) {
    auto* self = static_cast<RecordingSink*>(ctx);
    EXPECT_FALSE(self->open_) << "packet_start while a packet is open";
    if (self->check_length_at_start_ && len > self->capacity_) {
      return kTvmErrorWriteStreamShortWrite;
    }
    self->open_ = true;
    self->declared_ = len;
    self->current_.clear();
    self->starts.push_back(len);
    return kTvmErrorNoError;
  }
  static tvm_crt_error_t Payload(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<RecordingSink*>(ctx);
    EXPECT_TRUE(self->open_);
    EXPECT_GT(n, 0u);
    EXPECT_LE(self->current_.size() + n, self->declared_);
    if (self->current_.size() + n > self->capacity_) return kTvmErrorWriteStreamShortWrite;
    self->current_.append(reinterpret_cast<const char*>(data), n);
    return kTvmErrorNoError;
  }
  static tvm_crt_error_t Done(void* ctx, bool valid) {
    auto* self = static_cast<RecordingSink*>(ctx);
    EXPECT_TRUE(self->open_);
    self->open_ = false;
    self->events.push_back({valid, self->current_});
    self->current_.clear();
    return self->done_error;
  }

  std::vector<uint32_t> starts;
  std::vector<PacketEvent> events;
  tvm_crt_error_t done_error = kTvmErrorNoError;

 private:
  size_t capacity_;
  bool check_length_at_start_;
  bool open_ = false;
  uint32_t declared_ = 0;
  std::string current_;
};

// ---- Golden packets (reference 6.1)
// --------------------------------------------------------------

struct GoldenPacket {
  std::string name;
  std::string payload;
  Bytes wire;
};

std::ostream& operator<<(std::ostream& os, const GoldenPacket& p) { return os << p.name; }

std::string EscapeCodeInSizePayload() {
  const std::string chunk = "this payload is exactly 255 characters long. chunk is 64 bytes. ";
  return chunk + chunk + chunk + chunk.substr(0, 63);
}

const GoldenPacket kPacket1 = {
    "Packet1", "one", {0xFF, 0xFD, 0x03, 0, 0, 0, 'o', 'n', 'e', 0x58, 0xF4}};
const GoldenPacket kPacket2 = {
    "Packet2", "two2", {0xFF, 0xFD, 0x04, 0, 0, 0, 't', 'w', 'o', '2', 0x13, 0x11}};
const GoldenPacket kPacket3 = {
    "Packet3", "three", {0xFF, 0xFD, 0x05, 0, 0, 0, 't', 'h', 'r', 'e', 'e', 0x63, 0x9F}};
const GoldenPacket kZeroLengthPacket = {
    "ZeroLengthPacket", "", {0xFF, 0xFD, 0, 0, 0, 0, 0x83, 0x44}};
const GoldenPacket kEscapePacket = {
    "EscapePacket",
    std::string("es_\xff_capeir/^>t@\"hr"),
    {0xFF, 0xFD, 0x13, 0x00, 0x00, 0x00, 0x65, 0x73, 0x5F, 0xFF, 0xFF, 0x5F, 0x63, 0x61, 0x70,
     0x65, 0x69, 0x72, 0x2F, 0x5E, 0x3E, 0x74, 0x40, 0x22, 0x68, 0x72, 0xB4, 0xFF, 0xFF}};

GoldenPacket EscapeCodeInSizePacket() {
  GoldenPacket p;
  p.name = "EscapeCodeInSizePacket";
  p.payload = EscapeCodeInSizePayload();
  p.wire = {0xFF, 0xFD, 0xFF, 0xFF, 0x00, 0x00, 0x00};
  p.wire.insert(p.wire.end(), p.payload.begin(), p.payload.end());
  p.wire.push_back(0x36);
  p.wire.push_back(0x7E);
  return p;
}

std::vector<GoldenPacket> AllGoldenPackets() {
  return {kPacket1, kPacket2, kPacket3, EscapeCodeInSizePacket(), kZeroLengthPacket, kEscapePacket};
}

// ---- Framer ------------------------------------------------------------------------------------

class FramerTest : public ::testing::Test {
 protected:
  void SetUp() override { crt_framer_init(&framer_, &CaptureWriter::Write, &out_); }
  tvm_crt_error_t Write(const std::string& payload) {
    return crt_framer_write_packet(&framer_, reinterpret_cast<const uint8_t*>(payload.data()),
                                   payload.size());
  }
  CaptureWriter out_;
  crt_framer_t framer_;
};

TEST_F(FramerTest, ValidPacketTrain) {
  ASSERT_EQ(Write(kPacket1.payload), kTvmErrorNoError);
  ASSERT_EQ(Write(kPacket2.payload), kTvmErrorNoError);
  crt_framer_reset(&framer_);
  ASSERT_EQ(Write(kPacket3.payload), kTvmErrorNoError);
  Bytes expected = Concat(Concat(Bytes{0xFE}, kPacket1.wire), kPacket2.wire);
  expected = Concat(Concat(expected, Bytes{0xFE}), kPacket3.wire);
  EXPECT_EQ(out_.bytes, expected);
}

TEST_F(FramerTest, ZeroLengthPacket) {
  ASSERT_EQ(Write(""), kTvmErrorNoError);
  EXPECT_EQ(out_.bytes, Concat(Bytes{0xFE}, kZeroLengthPacket.wire));
}

TEST_F(FramerTest, Escapes) {
  ASSERT_EQ(Write(kEscapePacket.payload), kTvmErrorNoError);
  EXPECT_EQ(out_.bytes, Concat(Bytes{0xFE}, kEscapePacket.wire));
}

TEST_F(FramerTest, EscapeCodeInSize) {
  const GoldenPacket p = EscapeCodeInSizePacket();
  ASSERT_EQ(Write(p.payload), kTvmErrorNoError);
  EXPECT_EQ(out_.bytes, Concat(Bytes{0xFE}, p.wire));
}

// Streaming the payload in pieces of any size gives the same wire bytes.
TEST_F(FramerTest, StreamedPayloadMatchesWholePacket) {
  std::string payload;
  for (int i = 0; i < 700; i++) payload.push_back(static_cast<char>((i % 3 == 0) ? 0xFF : i));
  ASSERT_EQ(Write(payload), kTvmErrorNoError);
  const Bytes whole = out_.bytes;
  for (size_t piece : {1u, 2u, 7u, 63u, 64u, 65u, 128u, 699u}) {
    CaptureWriter out;
    crt_framer_t f;
    crt_framer_init(&f, &CaptureWriter::Write, &out);
    ASSERT_EQ(crt_framer_start_packet(&f, static_cast<uint32_t>(payload.size())), kTvmErrorNoError);
    for (size_t at = 0; at < payload.size(); at += piece) {
      const size_t n = std::min(piece, payload.size() - at);
      ASSERT_EQ(
          crt_framer_write_payload(&f, reinterpret_cast<const uint8_t*>(payload.data()) + at, n),
          kTvmErrorNoError);
    }
    ASSERT_EQ(crt_framer_finish_packet(&f), kTvmErrorNoError);
    EXPECT_EQ(out.bytes, whole) << "piece " << piece;
  }
}

TEST_F(FramerTest, MisuseIsReportedAndWritesNothing) {
  const uint8_t data[4] = {1, 2, 3, 4};
  EXPECT_EQ(crt_framer_write_payload(&framer_, data, 1), kTvmErrorFramingInvalidState);
  EXPECT_EQ(crt_framer_finish_packet(&framer_), kTvmErrorFramingInvalidState);
  EXPECT_TRUE(out_.bytes.empty());

  ASSERT_EQ(crt_framer_start_packet(&framer_, 3), kTvmErrorNoError);
  const size_t header_bytes = out_.bytes.size();
  EXPECT_EQ(crt_framer_write_payload(&framer_, data, 4), kTvmErrorFramingPayloadOverflow);
  EXPECT_EQ(out_.bytes.size(), header_bytes);
  ASSERT_EQ(crt_framer_write_payload(&framer_, data, 2), kTvmErrorNoError);
  EXPECT_EQ(crt_framer_finish_packet(&framer_), kTvmErrorFramingPayloadIncomplete);
  EXPECT_EQ(crt_framer_write_payload(&framer_, data, 2), kTvmErrorFramingPayloadOverflow);
  ASSERT_EQ(crt_framer_write_payload(&framer_, data + 2, 1), kTvmErrorNoError);
  ASSERT_EQ(crt_framer_finish_packet(&framer_), kTvmErrorNoError);
  EXPECT_EQ(crt_framer_finish_packet(&framer_), kTvmErrorFramingInvalidState);
  const Bytes expected = {0xFE, 0xFF, 0xFD, 3, 0, 0, 0, 1, 2, 3};
  EXPECT_EQ(Slice(out_.bytes, 0, expected.size()), expected);
  EXPECT_EQ(out_.bytes.size(), expected.size() + 2);
}

// A failed write may leave the peer inside a packet: the next packet carries the FE preamble.
TEST_F(FramerTest, WriteErrorIsReturnedAndNextPacketHasPreamble) {
  ASSERT_EQ(Write(kPacket1.payload), kTvmErrorNoError);
  out_.bytes.clear();
  out_.calls_until_failure = 1;  // header goes out, payload fails
  EXPECT_EQ(Write(kPacket2.payload), kTvmErrorWriteStreamShortWrite);
  out_.calls_until_failure = -1;
  out_.bytes.clear();
  ASSERT_EQ(Write(kPacket3.payload), kTvmErrorNoError);
  EXPECT_EQ(out_.bytes, Concat(Bytes{0xFE}, kPacket3.wire));
}

// ---- Unframer: TVM's cases
// -----------------------------------------------------------------------

class UnframerTest : public ::testing::Test {
 protected:
  void Init(RecordingSink* sink) {
    sink_ = sink->Sink();
    crt_unframer_init(&unframer_, &sink_);
  }
  tvm_crt_error_t Write(const Bytes& data, size_t* consumed) {
    return crt_unframer_write(&unframer_, data.data(), data.size(), consumed);
  }
  const crt_unframer_counters_t& Counters() { return *crt_unframer_counters(&unframer_); }

  crt_unframer_sink_t sink_;
  crt_unframer_t unframer_;
};

Bytes TooLongPayload() {
  Bytes payload;
  for (int i = 0; i < 301; i++) payload.push_back(static_cast<uint8_t>((i & 0xFF) == 0xFF ? 0 : i));
  return payload;
}

// TVM: a 301-byte packet into a 300-byte stream gives ShortWrite and leaves 300 bytes behind.
// benchfarm: the sink refuses the length at packet_start, with its own error; the packet
// is skipped whole (escape-aware, so its CRC is not mistaken for junk), counted, and the
// next packet arrives intact.
TEST_F(UnframerTest, PacketTooLong) {
  RecordingSink sink(300, /*check_length_at_start=*/true);
  Init(&sink);
  size_t consumed = 0;
  EXPECT_EQ(Write({0xFF, 0xFD, 0x2D, 0x01, 0x00, 0x00}, &consumed), kTvmErrorWriteStreamShortWrite);
  EXPECT_EQ(consumed, 6u);
  EXPECT_EQ(Write(TooLongPayload(), &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, 301u);
  EXPECT_EQ(Write({0x12, 0x34}, &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, 2u);
  EXPECT_TRUE(sink.events.empty());
  EXPECT_TRUE(sink.starts.empty());
  EXPECT_EQ(Counters().oversized, 1u);
  EXPECT_EQ(crt_unframer_bytes_needed(&unframer_), 1u);  // between packets again

  EXPECT_EQ(Write(kPacket1.wire, &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, kPacket1.wire.size());
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0], (PacketEvent{true, "one"}));
  EXPECT_EQ(Counters().packets_ok, 1u);
}

// The same when the sink only notices mid-payload: its error is returned, it is told to
// discard what it got, the rest of the packet is skipped, and the next packet is intact.
TEST_F(UnframerTest, PacketTooLongRefusedMidPayload) {
  RecordingSink sink(300);
  Init(&sink);
  const Bytes head = {0xFF, 0xFD, 0x2D, 0x01, 0x00, 0x00};
  const Bytes wire = Concat(Concat(head, TooLongPayload()), Bytes{0x12, 0x34});
  size_t consumed = 0;
  EXPECT_EQ(Write(wire, &consumed), kTvmErrorWriteStreamShortWrite);
  EXPECT_EQ(consumed, head.size() + 301);  // the failed run was consumed
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_FALSE(sink.events[0].valid);
  EXPECT_EQ(Write(Slice(wire, consumed, wire.size()), &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, 2u);
  EXPECT_EQ(Counters().sink_errors, 1u);
  EXPECT_EQ(Counters().crc_failures, 0u);

  EXPECT_EQ(Write(kPacket1.wire, &consumed), kTvmErrorNoError);
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[1], (PacketEvent{true, "one"}));
}

class UnframerTestParameterized : public UnframerTest,
                                  public ::testing::WithParamInterface<GoldenPacket> {};

TEST_P(UnframerTestParameterized, TestFullPacket) {
  const GoldenPacket& p = GetParam();
  RecordingSink sink;
  Init(&sink);
  size_t consumed = 0;
  EXPECT_EQ(Write(p.wire, &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, p.wire.size());
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0], (PacketEvent{true, p.payload}));
  EXPECT_EQ(Counters().packets_ok, 1u);
  EXPECT_EQ(Counters().bytes_consumed, p.wire.size());
  EXPECT_EQ(Counters().junk_bytes, 0u);
}

TEST_P(UnframerTestParameterized, TestByteAtATime) {
  const GoldenPacket& p = GetParam();
  RecordingSink sink;
  Init(&sink);
  for (size_t i = 0; i < p.wire.size(); i++) {
    size_t consumed = 0;
    EXPECT_EQ(Write({p.wire[i]}, &consumed), kTvmErrorNoError) << "byte " << i;
    EXPECT_EQ(consumed, 1u);
    EXPECT_EQ(sink.events.size(), i + 1 == p.wire.size() ? 1u : 0u) << "byte " << i;
  }
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0], (PacketEvent{true, p.payload}));
}

TEST_P(UnframerTestParameterized, TestArbitraryBoundary) {
  const GoldenPacket& p = GetParam();
  for (size_t i = 1; i < p.wire.size(); i++) {
    RecordingSink sink;
    Init(&sink);
    size_t consumed = 0;
    EXPECT_EQ(Write(Slice(p.wire, 0, i), &consumed), kTvmErrorNoError) << "split " << i;
    EXPECT_EQ(consumed, i);
    EXPECT_TRUE(sink.events.empty()) << "split " << i;
    EXPECT_EQ(Write(Slice(p.wire, i, p.wire.size()), &consumed), kTvmErrorNoError);
    EXPECT_EQ(consumed, p.wire.size() - i);
    ASSERT_EQ(sink.events.size(), 1u) << "split " << i;
    EXPECT_EQ(sink.events[0], (PacketEvent{true, p.payload})) << "split " << i;
  }
}

// A device reset in mid-packet: the re-sent packet is found, with TVM's error codes and
// consumed counts; benchfarm also tells the sink to discard the cut packet.
TEST_P(UnframerTestParameterized, TestArbitraryPacketReset) {
  const GoldenPacket& p = GetParam();
  size_t consumed = 0;
  {
    // A stray FF before the packet: FF FF FD still starts it.
    RecordingSink sink;
    Init(&sink);
    EXPECT_EQ(Write({0xFF}, &consumed), kTvmErrorNoError);
    EXPECT_EQ(consumed, 1u);
    EXPECT_EQ(Write(p.wire, &consumed), kTvmErrorNoError);
    EXPECT_EQ(consumed, p.wire.size());
    ASSERT_EQ(sink.events.size(), 1u);
    EXPECT_EQ(sink.events[0], (PacketEvent{true, p.payload}));
  }
  // Cut after i bytes (TVM tests i = 2; every cut that does not end on an unpaired FF here).
  for (size_t i = 2; i < p.wire.size(); i++) {
    if (p.wire[i - 1] == 0xFF) continue;
    {
      // Re-sent byte by byte: FF is consumed, FD is refused (ShortPacket, 0 consumed).
      RecordingSink sink;
      Init(&sink);
      ASSERT_EQ(Write(Slice(p.wire, 0, i), &consumed), kTvmErrorNoError);
      EXPECT_EQ(Write({0xFF}, &consumed), kTvmErrorNoError);
      EXPECT_EQ(consumed, 1u);
      EXPECT_EQ(Write({0xFD}, &consumed), kTvmErrorFramingShortPacket) << "cut " << i;
      EXPECT_EQ(consumed, 0u);
      EXPECT_EQ(Write(Slice(p.wire, 1, p.wire.size()), &consumed), kTvmErrorNoError);
      EXPECT_EQ(consumed, p.wire.size() - 1);
      ASSERT_FALSE(sink.events.empty());
      EXPECT_EQ(sink.events.back(), (PacketEvent{true, p.payload})) << "cut " << i;
      for (size_t e = 0; e + 1 < sink.events.size(); e++) EXPECT_FALSE(sink.events[e].valid);
      EXPECT_EQ(Counters().aborted, 1u);
      EXPECT_EQ(Counters().packets_ok, 1u);
    }
    {
      // Re-sent whole: ShortPacket with 1 consumed, then the rest from the FD.
      RecordingSink sink;
      Init(&sink);
      ASSERT_EQ(Write(Slice(p.wire, 0, i), &consumed), kTvmErrorNoError);
      EXPECT_EQ(Write(p.wire, &consumed), kTvmErrorFramingShortPacket) << "cut " << i;
      EXPECT_EQ(consumed, 1u);
      EXPECT_EQ(Write(Slice(p.wire, 1, p.wire.size()), &consumed), kTvmErrorNoError);
      EXPECT_EQ(consumed, p.wire.size() - 1);
      ASSERT_FALSE(sink.events.empty());
      EXPECT_EQ(sink.events.back(), (PacketEvent{true, p.payload})) << "cut " << i;
      EXPECT_EQ(Counters().aborted, 1u);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(UnframerTests, UnframerTestParameterized,
                         ::testing::ValuesIn(AllGoldenPackets()));

// ---- Unframer: benchfarm's robustness cases
// --------------------------------------------------------

TEST_F(UnframerTest, BadCrcIsDroppedCountedAndLeavesNothingBehind) {
  RecordingSink sink;
  Init(&sink);
  Bytes corrupt = kPacket1.wire;
  corrupt.back() ^= 0x01;
  size_t consumed = 0;
  EXPECT_EQ(Write(Concat(corrupt, kPacket2.wire), &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, corrupt.size() + kPacket2.wire.size());
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_FALSE(sink.events[0].valid);                      // told to discard "one"
  EXPECT_EQ(sink.events[1], (PacketEvent{true, "two2"}));  // no stale bytes in front
  EXPECT_EQ(Counters().crc_failures, 1u);
  EXPECT_EQ(Counters().packets_ok, 1u);
}

TEST_F(UnframerTest, CorruptPayloadByteFailsCrc) {
  RecordingSink sink;
  Init(&sink);
  Bytes corrupt = kPacket3.wire;
  corrupt[8] = 'X';
  size_t consumed = 0;
  EXPECT_EQ(Write(corrupt, &consumed), kTvmErrorNoError);
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_FALSE(sink.events[0].valid);
  EXPECT_EQ(Counters().crc_failures, 1u);
}

TEST_F(UnframerTest, GarbageBetweenPacketsIsSkipped) {
  RecordingSink sink;
  Init(&sink);
  const Bytes garbage1 = {'n', 'o', 'i', 's', 'e', 0x00, 0xFE, 0xFF, 0x41, 0xFD, 0xFF, 0xFF};
  const Bytes garbage2 = {0xFD, 0xFE, 0x13, 0xFF, 0xFE, 0x01};
  const Bytes wire =
      Concat(Concat(Concat(Concat(garbage1, kPacket1.wire), garbage2), kPacket2.wire), garbage1);
  size_t consumed = 0;
  EXPECT_EQ(Write(wire, &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, wire.size());
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[0], (PacketEvent{true, "one"}));
  EXPECT_EQ(sink.events[1], (PacketEvent{true, "two2"}));
  // Everything outside the two packets is junk, except the final FF still pending.
  EXPECT_EQ(Counters().junk_bytes, garbage1.size() * 2 + garbage2.size() - 1);
}

// TVM's verified case: FF 41 inside a packet is InvalidEscape with 9 bytes consumed.
TEST_F(UnframerTest, InvalidEscapeInPayloadDropsPacket) {
  RecordingSink sink;
  Init(&sink);
  const Bytes wire = {0xFF, 0xFD, 0x03, 0, 0, 0, 'o', 0xFF, 0x41, 'n', 'e', 0x58, 0xF4};
  size_t consumed = 0;
  EXPECT_EQ(Write(wire, &consumed), kTvmErrorFramingInvalidEscape);
  EXPECT_EQ(consumed, 9u);
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0], (PacketEvent{false, "o"}));
  EXPECT_EQ(Write(Slice(wire, 9, wire.size()), &consumed), kTvmErrorNoError);  // junk
  EXPECT_EQ(consumed, 4u);
  EXPECT_EQ(Write(kPacket2.wire, &consumed), kTvmErrorNoError);
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[1], (PacketEvent{true, "two2"}));
  EXPECT_EQ(Counters().aborted, 1u);
}

TEST_F(UnframerTest, InvalidEscapeInLengthOrCrc) {
  RecordingSink sink;
  Init(&sink);
  size_t consumed = 0;
  EXPECT_EQ(Write({0xFF, 0xFD, 0x03, 0xFF, 0x00}, &consumed), kTvmErrorFramingInvalidEscape);
  EXPECT_EQ(consumed, 5u);
  EXPECT_TRUE(sink.events.empty());  // the sink never heard of it
  Bytes bad_crc = Slice(kPacket1.wire, 0, 9);
  bad_crc.push_back(0xFF);
  bad_crc.push_back(0x10);
  EXPECT_EQ(Write(bad_crc, &consumed), kTvmErrorFramingInvalidEscape);
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_FALSE(sink.events[0].valid);
  EXPECT_EQ(Counters().aborted, 2u);
  EXPECT_EQ(Write(kPacket1.wire, &consumed), kTvmErrorNoError);
  EXPECT_EQ(sink.events.back(), (PacketEvent{true, "one"}));
}

// FF FE inside a packet is skipped, but covered by the CRC like every raw byte (reference 1.3).
TEST_F(UnframerTest, NopInsidePacketIsSkippedAndCovered) {
  RecordingSink sink;
  Init(&sink);
  Bytes wire = {0xFF, 0xFD, 0x03, 0xFF, 0xFE, 0, 0, 0, 'o', 0xFF, 0xFE, 'n', 'e'};
  const uint16_t crc = crt_crc16(wire.data(), wire.size());
  wire.push_back(static_cast<uint8_t>(crc & 0xFF));
  wire.push_back(static_cast<uint8_t>(crc >> 8));
  ASSERT_NE(wire[wire.size() - 1], 0xFF);
  ASSERT_NE(wire[wire.size() - 2], 0xFF);
  size_t consumed = 0;
  EXPECT_EQ(Write(Concat(Bytes{0xFE}, wire), &consumed), kTvmErrorNoError);
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0], (PacketEvent{true, "one"}));
}

TEST_F(UnframerTest, ShortPacketTellsSinkToDiscard) {
  RecordingSink sink;
  Init(&sink);
  size_t consumed = 0;
  const Bytes cut = Slice(kPacket3.wire, 0, 8);  // "th" delivered
  const Bytes wire = Concat(cut, kPacket1.wire);
  EXPECT_EQ(Write(wire, &consumed), kTvmErrorFramingShortPacket);
  EXPECT_EQ(consumed, cut.size() + 1);
  EXPECT_EQ(Write(Slice(wire, consumed, wire.size()), &consumed), kTvmErrorNoError);
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[0], (PacketEvent{false, "th"}));
  EXPECT_EQ(sink.events[1], (PacketEvent{true, "one"}));
}

TEST_F(UnframerTest, ResetMidPacketTellsSinkToDiscard) {
  RecordingSink sink;
  Init(&sink);
  size_t consumed = 0;
  EXPECT_EQ(Write(Slice(kPacket3.wire, 0, 9), &consumed), kTvmErrorNoError);
  crt_unframer_reset(&unframer_);
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0], (PacketEvent{false, "thr"}));
  EXPECT_EQ(Counters().aborted, 1u);
  EXPECT_EQ(Write(kPacket1.wire, &consumed), kTvmErrorNoError);
  EXPECT_EQ(sink.events.back(), (PacketEvent{true, "one"}));
}

TEST_F(UnframerTest, TwoPacketsInOneWrite) {
  RecordingSink sink;
  Init(&sink);
  size_t consumed = 0;
  EXPECT_EQ(Write(Concat(kPacket1.wire, kPacket2.wire), &consumed), kTvmErrorNoError);
  EXPECT_EQ(consumed, 23u);
  ASSERT_EQ(sink.events.size(), 2u);
}

// A sink error at packet end stops the call right after that packet.
TEST_F(UnframerTest, PacketDoneErrorIsReturnedAfterThePacket) {
  RecordingSink sink;
  Init(&sink);
  sink.done_error = kTvmErrorPlatformShutdown;
  size_t consumed = 0;
  const Bytes wire = Concat(kPacket1.wire, kPacket2.wire);
  EXPECT_EQ(Write(wire, &consumed), kTvmErrorPlatformShutdown);
  EXPECT_EQ(consumed, kPacket1.wire.size());
  sink.done_error = kTvmErrorNoError;
  EXPECT_EQ(Write(Slice(wire, consumed, wire.size()), &consumed), kTvmErrorNoError);
  ASSERT_EQ(sink.events.size(), 2u);
  EXPECT_EQ(sink.events[1], (PacketEvent{true, "two2"}));
}

TEST_F(UnframerTest, BytesNeededProgression) {
  RecordingSink sink;
  Init(&sink);
  std::vector<size_t> needed;
  for (uint8_t b : kPacket1.wire) {
    needed.push_back(crt_unframer_bytes_needed(&unframer_));
    size_t consumed = 0;
    ASSERT_EQ(Write({b}, &consumed), kTvmErrorNoError);
  }
  needed.push_back(crt_unframer_bytes_needed(&unframer_));
  EXPECT_EQ(needed, (std::vector<size_t>{1, 1, 4, 3, 2, 1, 3, 2, 1, 2, 1, 1}));
}

// Framer -> unframer with random payloads (rich in FF/FE/FD) and random chunking.
TEST(FramingRoundTripTest, RandomPayloadsAndChunks) {
  std::mt19937 rng(1234);
  CaptureWriter out;
  crt_framer_t framer;
  crt_framer_init(&framer, &CaptureWriter::Write, &out);
  std::vector<std::string> sent;
  for (int i = 0; i < 200; i++) {
    std::string payload(rng() % 300, '\0');
    for (char& c : payload) {
      const uint32_t r = rng() % 8;
      c = static_cast<char>(r < 3 ? 0xFC + r + 1 : rng() & 0xFF);
    }
    sent.push_back(payload);
    ASSERT_EQ(crt_framer_write_packet(&framer, reinterpret_cast<const uint8_t*>(payload.data()),
                                      payload.size()),
              kTvmErrorNoError);
  }
  RecordingSink sink;
  crt_unframer_sink_t s = sink.Sink();
  crt_unframer_t u;
  crt_unframer_init(&u, &s);
  for (size_t at = 0; at < out.bytes.size();) {
    const size_t n = std::min<size_t>(1 + rng() % 97, out.bytes.size() - at);
    size_t consumed = 0;
    ASSERT_EQ(crt_unframer_write(&u, out.bytes.data() + at, n, &consumed), kTvmErrorNoError);
    ASSERT_EQ(consumed, n);
    at += n;
  }
  ASSERT_EQ(sink.events.size(), sent.size());
  for (size_t i = 0; i < sent.size(); i++) {
    EXPECT_EQ(sink.events[i], (PacketEvent{true, sent[i]})) << "packet " << i;
  }
  EXPECT_EQ(crt_unframer_counters(&u)->packets_ok, sent.size());
  EXPECT_EQ(crt_unframer_counters(&u)->junk_bytes, 1u);  // the FE preamble
}

// Random garbage never wedges the unframer: every error leaves it usable, every packet it
// starts is accounted for exactly once, and an FE-preambled packet always gets through.
TEST(FramingRoundTripTest, RandomGarbageNeverWedges) {
  std::mt19937 rng(99);
  for (int round = 0; round < 300; round++) {
    RecordingSink sink(64, /*check_length_at_start=*/(round % 2) == 0);
    crt_unframer_sink_t s = sink.Sink();
    crt_unframer_t u;
    crt_unframer_init(&u, &s);
    Bytes garbage(rng() % 200);
    for (uint8_t& b : garbage) {
      const uint32_t r = rng() % 6;
      b = static_cast<uint8_t>(r < 3 ? 0xFD + r : rng() & 0xFF);
    }
    CaptureWriter out;
    crt_framer_t framer;
    crt_framer_init(&framer, &CaptureWriter::Write, &out);
    ASSERT_EQ(crt_framer_write_packet(&framer, reinterpret_cast<const uint8_t*>("ok"), 2),
              kTvmErrorNoError);
    const Bytes wire = Concat(garbage, out.bytes);
    size_t at = 0;
    int calls = 0;
    while (at < wire.size()) {
      ASSERT_LT(++calls, 10000);
      const size_t n = std::min<size_t>(1 + rng() % 16, wire.size() - at);
      size_t consumed = 0;
      crt_unframer_write(&u, wire.data() + at, n, &consumed);
      ASSERT_LE(consumed, n);
      at += consumed;
    }
    ASSERT_FALSE(sink.events.empty()) << "round " << round;
    EXPECT_EQ(sink.events.back(), (PacketEvent{true, "ok"})) << "round " << round;
    const crt_unframer_counters_t& c = *crt_unframer_counters(&u);
    EXPECT_EQ(c.bytes_consumed, wire.size());
    // Every delivered-or-dropped packet the sink heard of ended exactly once.
    EXPECT_EQ(sink.events.size(), sink.starts.size());
    size_t valid = 0;
    for (const PacketEvent& e : sink.events) valid += e.valid ? 1 : 0;
    EXPECT_EQ(valid, c.packets_ok);
  }
}

}  // namespace
