// Tests of FaultInjectingTransport over a LoopbackTransport pair: zero rates are transparent,
// flips touch exactly one bit, drop and duplicate rates act at the requested rate, the same seed
// reproduces the same output whatever the chunking, and injected delays respect deadlines.

#include "device/fault_injecting_transport.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "device/testing/loopback_transport.h"

namespace benchfarm::device {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

std::string RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// Everything readable from `t` until it stays quiet for `quiet`.
std::string Drain(Transport& t, absl::Duration quiet = absl::Milliseconds(20)) {
  std::string got;
  uint8_t buf[4096];
  for (;;) {
    auto n = t.Read(absl::MakeSpan(buf), absl::Now() + quiet);
    if (!n.ok()) return got;
    got.append(reinterpret_cast<const char*>(buf), *n);
  }
}

// Writes `data` through a fresh FaultInjectingTransport (write side only) in chunks of `chunk`
// bytes and returns what arrives at the far end.
std::string ThroughWriteSide(const std::string& data, FaultOptions options, size_t chunk,
                             FaultCounters* counters = nullptr) {
  auto [near, far] = MakeLoopbackPair();
  options.on_read = false;
  FaultInjectingTransport faulty(near.get(), options);
  for (size_t i = 0; i < data.size(); i += chunk) {
    EXPECT_TRUE(faulty.Write(absl::string_view(data).substr(i, chunk), Soon()).ok());
  }
  if (counters != nullptr) *counters = faulty.counters();
  return Drain(*far);
}

// Sends `data` from the far end and reads it through a fresh FaultInjectingTransport (read side
// only) with reads of at most `chunk` bytes.
std::string ThroughReadSide(const std::string& data, FaultOptions options, size_t chunk) {
  auto [near, far] = MakeLoopbackPair();
  options.on_write = false;
  FaultInjectingTransport faulty(std::move(near), options);
  EXPECT_TRUE(far->Write(data, Soon()).ok());
  std::string got;
  std::vector<uint8_t> buf(chunk);
  for (;;) {
    auto n = faulty.Read(absl::MakeSpan(buf), absl::Now() + absl::Milliseconds(20));
    if (!n.ok()) return got;
    got.append(reinterpret_cast<const char*>(buf.data()), *n);
  }
}

TEST(FaultInjectingTransport, ZeroRatesPassBytesUnchanged) {
  auto [near, far] = MakeLoopbackPair();
  FaultInjectingTransport faulty(near.get(), FaultOptions{});
  EXPECT_EQ(faulty.Name(), "faulty:loopback:link.a");
  const std::string data = RandomBytes(4096, 1);
  ASSERT_TRUE(faulty.Write(data, Soon()).ok());
  EXPECT_EQ(Drain(*far), data);
  ASSERT_TRUE(far->Write(data, Soon()).ok());
  EXPECT_EQ(Drain(faulty), data);
  const FaultCounters c = faulty.counters();
  EXPECT_EQ(c.dropped + c.flipped + c.duplicated + c.delayed, 0u);
}

TEST(FaultInjectingTransport, FlipRateOneFlipsOneBitOfEveryByte) {
  const std::string data = RandomBytes(2000, 2);
  FaultOptions options;
  options.flip_rate = 1.0;
  FaultCounters counters;
  const std::string out = ThroughWriteSide(data, options, 100, &counters);
  ASSERT_EQ(out.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    const unsigned diff = static_cast<uint8_t>(data[i] ^ out[i]);
    EXPECT_EQ(__builtin_popcount(diff), 1) << "byte " << i;
  }
  EXPECT_EQ(counters.flipped, data.size());

  const std::string read_out = ThroughReadSide(data, options, 64);
  ASSERT_EQ(read_out.size(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(__builtin_popcount(static_cast<uint8_t>(data[i] ^ read_out[i])), 1) << i;
  }
}

TEST(FaultInjectingTransport, DropRateDropsThatShareReproducibly) {
  const std::string data = RandomBytes(20000, 3);
  FaultOptions options;
  options.drop_rate = 0.1;
  options.seed = 42;
  FaultCounters counters;
  const std::string once = ThroughWriteSide(data, options, data.size(), &counters);
  // 2000 expected drops; the binomial standard deviation is ~42, so +-300 is ~7 sigma.
  EXPECT_NEAR(static_cast<double>(data.size() - once.size()), 2000.0, 300.0);
  EXPECT_EQ(counters.dropped, data.size() - once.size());

  // The same seed gives the same output, whatever the chunking and in either direction.
  EXPECT_EQ(ThroughWriteSide(data, options, data.size()), once);
  EXPECT_EQ(ThroughWriteSide(data, options, 7), once);
  const std::string read_once = ThroughReadSide(data, options, 4096);
  EXPECT_EQ(ThroughReadSide(data, options, 13), read_once);
  EXPECT_NEAR(static_cast<double>(data.size() - read_once.size()), 2000.0, 300.0);

  // A different seed drops different bytes.
  options.seed = 43;
  EXPECT_NE(ThroughWriteSide(data, options, data.size()), once);
}

TEST(FaultInjectingTransport, DuplicateRateOneDoublesEveryByte) {
  FaultOptions options;
  options.duplicate_rate = 1.0;
  FaultCounters counters;
  EXPECT_EQ(ThroughWriteSide("abc", options, 3, &counters), "aabbcc");
  EXPECT_EQ(counters.duplicated, 3u);
}

TEST(FaultInjectingTransport, RatesAreClamped) {
  FaultOptions options;
  options.drop_rate = 5.0;
  options.flip_rate = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(ThroughWriteSide("abcdef", options, 6), "");
  options.drop_rate = -1.0;
  EXPECT_EQ(ThroughWriteSide("abcdef", options, 6), "abcdef");
}

TEST(FaultInjectingTransport, WriteDelaysKeepBytesInOrder) {
  FaultOptions options;
  options.delay_rate = 1.0;
  options.max_delay = absl::Milliseconds(10);
  FaultCounters counters;
  const absl::Time start = absl::Now();
  EXPECT_EQ(ThroughWriteSide("0123456789abcdefghij", options, 20, &counters),
            "0123456789abcdefghij");
  // 20 delays of U[0, 10 ms] sum to ~100 ms; below 20 ms is vanishingly unlikely.
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(20));
  EXPECT_EQ(counters.delayed, 20u);
}

TEST(FaultInjectingTransport, ReadDelayHonoursTheDeadline) {
  auto [near, far] = MakeLoopbackPair();
  FaultOptions options;
  options.delay_rate = 1.0;
  options.max_delay = absl::Seconds(1);
  options.on_write = false;
  FaultInjectingTransport faulty(near.get(), options);
  ASSERT_TRUE(far->Write("x", Soon()).ok());
  uint8_t buf[4];
  // The byte is held back for U[0, 1 s]: a Read with no time left cannot have it.
  auto early = faulty.Read(absl::MakeSpan(buf), absl::Now());
  EXPECT_TRUE(absl::IsDeadlineExceeded(early.status())) << early.status();
  auto later = faulty.Read(absl::MakeSpan(buf), Soon());
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_EQ(*later, 1u);
  EXPECT_EQ(buf[0], 'x');
}

TEST(FaultInjectingTransport, CloseInterruptsAnInjectedDelay) {
  auto [near, far] = MakeLoopbackPair();
  FaultOptions options;
  options.delay_rate = 1.0;
  options.max_delay = absl::Seconds(60);
  options.on_write = false;
  options.seed = 7;
  FaultInjectingTransport faulty(near.get(), options);
  ASSERT_TRUE(far->Write("x", Soon()).ok());
  absl::Status status;
  const absl::Time start = absl::Now();
  std::thread reader([&] {
    uint8_t buf[4];
    status = faulty.Read(absl::MakeSpan(buf), start + absl::Seconds(120)).status();
  });
  faulty.Close();
  reader.join();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

TEST(FaultInjectingTransport, InnerErrorsPassThrough) {
  auto [near, far] = MakeLoopbackPair();
  FaultOptions options;
  options.flip_rate = 0.5;
  FaultInjectingTransport faulty(near.get(), options);
  far->Close();
  uint8_t buf[4];
  EXPECT_TRUE(absl::IsUnavailable(faulty.Read(absl::MakeSpan(buf), Soon()).status()));
  EXPECT_TRUE(absl::IsUnavailable(faulty.Write("abc", Soon())));
  faulty.Close();
  EXPECT_TRUE(absl::IsFailedPrecondition(faulty.Write("abc", Soon())));
  ASSERT_TRUE(faulty.Open().ok());
  ASSERT_TRUE(far->Open().ok());
  EXPECT_TRUE(faulty.Write("abc", Soon()).ok());
}

}  // namespace
}  // namespace benchfarm::device
