// link_bench: throughput of the board link's framing layer (crt/link) beside
// memcpy, the ceiling for any code that moves bytes on this machine.
//
// Every row counts payload bytes (SetBytesProcessed), so rows of one size compare
// directly:
//   BM_Memcpy          the baseline: a plain copy of the payload;
//   BM_Crc16           crt_crc16_update alone;
//   BM_FramerEncode    crt_framer_write_packet: escaping, CRC, and a write
//                      callback that appends to a preallocated buffer;
//   BM_UnframerDecode  crt_unframer_write of a framed packet: unescaping, CRC,
//                      and a sink that copies the payload into a buffer.
// The `random` rows escape about one byte in 256; the `all_ff` rows are the worst
// case, every payload byte escaped (twice the bytes on the wire; `wire_bytes`
// shows the packet's size). Each benchmark checks its result once outside the
// timed loop and aborts with a message if it is wrong.
//
// Meaningful only with -c opt: `./farm bench link`.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tvm/runtime/crt/link/crc16.h"
#include "tvm/runtime/crt/link/framing.h"

namespace {

using Bytes = std::vector<uint8_t>;

enum class Payload { kRandom, kAllFF };

// A wrong result makes every number meaningless: stop the whole run.
void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "link_bench: check failed: %s\n", what);
    std::abort();
  }
}

size_t PayloadSize(const benchmark::State& state) { return static_cast<size_t>(state.range(0)); }

Bytes MakePayload(Payload kind, size_t n) {
  Bytes bytes(n, CRT_FRAMING_ESCAPE_START);
  if (kind == Payload::kRandom) {
    std::mt19937 rng(0x5eed);  // fixed seed: every run measures the same bytes
    std::uniform_int_distribution<int> byte(0, 255);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(byte(rng));
  }
  return bytes;
}

// Largest packet for an n-byte payload: [FE] FF FD, then length, payload and
// CRC with every byte escaped.
size_t WireCapacity(size_t n) {
  return 3 + 2 * (CRT_FRAMING_LENGTH_BYTES + n + CRT_FRAMING_CRC_BYTES);
}

// CRC-16/CCITT-FALSE by its bitwise definition, to check the table-driven code.
uint16_t ReferenceCrc16(const uint8_t* data, size_t n) {
  uint16_t crc = 0xFFFF;
  for (size_t i = 0; i < n; i++) {
    crc = static_cast<uint16_t>(crc ^ (data[i] << 8));
    for (int bit = 0; bit < 8; bit++) {
      crc = static_cast<uint16_t>((crc & 0x8000) ? (crc << 1) ^ 0x1021 : crc << 1);
    }
  }
  return crc;
}

// The framer's transport: appends to a buffer allocated once, so the timed loop
// measures the framer rather than the allocator. Refuses to overflow.
class BufferWriter {
 public:
  explicit BufferWriter(size_t capacity) : buffer_(capacity) {}

  static tvm_crt_error_t Write(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<BufferWriter*>(ctx);
    if (n > self->buffer_.size() - self->size_) return kTvmErrorWriteStreamShortWrite;
    std::memcpy(self->buffer_.data() + self->size_, data, n);
    self->size_ += n;
    return kTvmErrorNoError;
  }

  void Clear() { size_ = 0; }
  Bytes Contents() const { return Bytes(buffer_.begin(), buffer_.begin() + size_); }

 private:
  Bytes buffer_;
  size_t size_ = 0;
};

// The unframer's sink: copies each packet's payload into a buffer allocated
// once (what a receiver that needs the packet contiguous does) and counts the
// packets that ended valid. The unframer keeps a pointer to this object, so it
// is neither copied nor moved.
class CopySink {
 public:
  explicit CopySink(size_t capacity) : buffer_(capacity) {
    sink_.packet_start = &PacketStart;
    sink_.payload = &PayloadBytes;
    sink_.packet_done = &PacketDone;
    sink_.ctx = this;
  }
  CopySink(const CopySink&) = delete;
  CopySink& operator=(const CopySink&) = delete;

  const crt_unframer_sink_t* sink() const { return &sink_; }
  size_t valid_packets() const { return valid_packets_; }
  Bytes Payload() const { return Bytes(buffer_.begin(), buffer_.begin() + size_); }

 private:
  static tvm_crt_error_t PacketStart(void* ctx, uint32_t payload_len) {
    auto* self = static_cast<CopySink*>(ctx);
    if (payload_len > self->buffer_.size()) return kTvmErrorFramingPayloadOverflow;
    self->size_ = 0;
    return kTvmErrorNoError;
  }
  // The unframer never delivers more than packet_start announced, so this fits.
  static tvm_crt_error_t PayloadBytes(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<CopySink*>(ctx);
    std::memcpy(self->buffer_.data() + self->size_, data, n);
    self->size_ += n;
    return kTvmErrorNoError;
  }
  static tvm_crt_error_t PacketDone(void* ctx, bool valid) {
    if (valid) static_cast<CopySink*>(ctx)->valid_packets_++;
    return kTvmErrorNoError;
  }

  crt_unframer_sink_t sink_{};
  Bytes buffer_;
  size_t size_ = 0;
  size_t valid_packets_ = 0;
};

// Decodes wire with a fresh unframer and checks it holds exactly one valid
// packet carrying payload.
void CheckDecodesTo(const Bytes& wire, const Bytes& payload, const char* what) {
  CopySink sink(payload.size());
  crt_unframer_t unframer;
  crt_unframer_init(&unframer, sink.sink());
  size_t consumed = 0;
  Check(crt_unframer_write(&unframer, wire.data(), wire.size(), &consumed) == kTvmErrorNoError,
        what);
  Check(consumed == wire.size(), what);
  Check(sink.valid_packets() == 1, what);
  Check(sink.Payload() == payload, what);
}

// The packet a framer sends between packets (no FE preamble): what a receiver
// sees in steady state.
Bytes FramePacket(const Bytes& payload) {
  BufferWriter writer(WireCapacity(payload.size()));
  crt_framer_t framer;
  crt_framer_init(&framer, &BufferWriter::Write, &writer);
  Check(crt_framer_write_packet(&framer, payload.data(), payload.size()) == kTvmErrorNoError,
        "framing the first packet");
  writer.Clear();
  Check(crt_framer_write_packet(&framer, payload.data(), payload.size()) == kTvmErrorNoError,
        "framing the second packet");
  return writer.Contents();
}

void BM_Memcpy(benchmark::State& state) {
  const size_t n = PayloadSize(state);
  const Bytes src = MakePayload(Payload::kRandom, n);
  Bytes dst(n);
  for (auto _ : state) {
    benchmark::DoNotOptimize(src.data());
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();  // the copy must reach memory every iteration
  }
  Check(dst == src, "memcpy copies the buffer");
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_Crc16(benchmark::State& state) {
  const size_t n = PayloadSize(state);
  const Bytes data = MakePayload(Payload::kRandom, n);
  static const uint8_t kCheck[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
  Check(crt_crc16_update(CRT_CRC16_INIT, kCheck, sizeof(kCheck)) == 0x29B1,
        "crt_crc16_update gives the check value 0x29B1 for \"123456789\"");
  Check(crt_crc16_update(CRT_CRC16_INIT, data.data(), n) == ReferenceCrc16(data.data(), n),
        "crt_crc16_update matches the bitwise CRC");
  for (auto _ : state) {
    benchmark::DoNotOptimize(data.data());
    uint16_t crc = crt_crc16_update(CRT_CRC16_INIT, data.data(), n);
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
}

void BM_FramerEncode(benchmark::State& state, Payload kind) {
  const size_t n = PayloadSize(state);
  const Bytes payload = MakePayload(kind, n);
  const Bytes wire = FramePacket(payload);
  CheckDecodesTo(wire, payload, "the framed packet decodes to its payload");
  if (kind == Payload::kAllFF) {
    Check(wire.size() >= 2 + CRT_FRAMING_LENGTH_BYTES + 2 * n + CRT_FRAMING_CRC_BYTES,
          "every 0xFF payload byte is escaped");
  }

  BufferWriter writer(WireCapacity(n));
  crt_framer_t framer;
  crt_framer_init(&framer, &BufferWriter::Write, &writer);
  for (auto _ : state) {
    writer.Clear();
    tvm_crt_error_t err = crt_framer_write_packet(&framer, payload.data(), n);
    benchmark::DoNotOptimize(err);
    benchmark::ClobberMemory();  // the packet must reach the buffer every iteration
    if (err != kTvmErrorNoError) {
      state.SkipWithError("crt_framer_write_packet failed");
      break;
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["wire_bytes"] = static_cast<double>(wire.size());
}

void BM_UnframerDecode(benchmark::State& state, Payload kind) {
  const size_t n = PayloadSize(state);
  const Bytes payload = MakePayload(kind, n);
  const Bytes wire = FramePacket(payload);
  CheckDecodesTo(wire, payload, "the framed packet decodes to its payload");

  CopySink sink(n);
  crt_unframer_t unframer;
  crt_unframer_init(&unframer, sink.sink());
  for (auto _ : state) {
    size_t consumed = 0;
    tvm_crt_error_t err = crt_unframer_write(&unframer, wire.data(), wire.size(), &consumed);
    benchmark::DoNotOptimize(err);
    benchmark::ClobberMemory();  // the payload must reach the sink's buffer every iteration
    if (err != kTvmErrorNoError || consumed != wire.size()) {
      state.SkipWithError("crt_unframer_write failed");
      break;
    }
  }
  if (!state.error_occurred()) {
    Check(sink.valid_packets() == static_cast<size_t>(state.iterations()),
          "every timed packet decodes valid");
    Check(sink.Payload() == payload, "the last timed packet decodes to its payload");
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * n));
  state.counters["wire_bytes"] = static_cast<double>(wire.size());
}

// 64 B (a small RPC), 2 KiB (a typical board packet), 64 KiB (a tensor upload).
void PayloadSizes(benchmark::internal::Benchmark* b) { b->Arg(64)->Arg(2 << 10)->Arg(64 << 10); }

BENCHMARK(BM_Memcpy)->Apply(PayloadSizes);
BENCHMARK(BM_Crc16)->Apply(PayloadSizes);
BENCHMARK_CAPTURE(BM_FramerEncode, random, Payload::kRandom)->Apply(PayloadSizes);
BENCHMARK_CAPTURE(BM_FramerEncode, all_ff, Payload::kAllFF)->Apply(PayloadSizes);
BENCHMARK_CAPTURE(BM_UnframerDecode, random, Payload::kRandom)->Apply(PayloadSizes);
BENCHMARK_CAPTURE(BM_UnframerDecode, all_ff, Payload::kAllFF)->Apply(PayloadSizes);

}  // namespace
