// Tests of the in-memory LoopbackTransport pair: both directions, deadlines, closing either end,
// reopening, a bounded buffer, and a threaded bulk transfer.

#include "device/testing/loopback_transport.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace benchfarm::device {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

TEST(LoopbackTransport, CarriesBytesBothWays) {
  auto [a, b] = MakeLoopbackPair("pair");
  EXPECT_EQ(a->Name(), "loopback:pair.a");
  EXPECT_EQ(b->Name(), "loopback:pair.b");
  ASSERT_TRUE(a->Write("ping", Soon()).ok());
  EXPECT_EQ(a->PendingForPeer(), 4u);
  uint8_t buf[8];
  auto n = b->Read(absl::MakeSpan(buf), Soon());
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *n), "ping");
  ASSERT_TRUE(b->Write("pong", Soon()).ok());
  n = a->Read(absl::MakeSpan(buf, 2), Soon());  // partial reads leave the rest
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *n), "po");
  n = a->Read(absl::MakeSpan(buf), Soon());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(reinterpret_cast<char*>(buf), *n), "ng");
}

TEST(LoopbackTransport, ReadTimesOut) {
  auto [a, b] = MakeLoopbackPair();
  uint8_t buf[1];
  const absl::Time start = absl::Now();
  auto r = a->Read(absl::MakeSpan(buf), start + absl::Milliseconds(50));
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(45));
}

TEST(LoopbackTransport, ClosingAnEnd) {
  auto [a, b] = MakeLoopbackPair();
  ASSERT_TRUE(a->Write("bye", Soon()).ok());
  a->Close();
  uint8_t buf[8];
  auto r = b->Read(absl::MakeSpan(buf), Soon());  // what was sent still arrives
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 3u);
  EXPECT_TRUE(absl::IsUnavailable(b->Read(absl::MakeSpan(buf), Soon()).status()));
  EXPECT_TRUE(absl::IsUnavailable(b->Write("x", Soon())));
  EXPECT_TRUE(absl::IsFailedPrecondition(a->Read(absl::MakeSpan(buf), Soon()).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(a->Write("x", Soon())));

  ASSERT_TRUE(a->Open().ok());
  ASSERT_TRUE(b->Write("back", Soon()).ok());
  r = a->Read(absl::MakeSpan(buf), Soon());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 4u);
}

TEST(LoopbackTransport, CloseWakesABlockedRead) {
  auto [a, b] = MakeLoopbackPair();
  absl::Status status;
  std::thread reader([&, a = a.get()] {
    uint8_t buf[1];
    status = a->Read(absl::MakeSpan(buf), absl::InfiniteFuture()).status();
  });
  a->Close();
  reader.join();
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;
}

TEST(LoopbackTransport, BoundedBufferMakesWritesWait) {
  auto [a, b] = MakeLoopbackPair("small", 4);
  absl::Status s = a->Write("abcdefgh", absl::Now() + absl::Milliseconds(30));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_EQ(a->PendingForPeer(), 4u);

  // With a reader draining, a large write completes.
  const std::string big(100000, 'z');
  std::string got;
  std::thread reader([&, b = b.get()] {
    uint8_t buf[64];
    while (got.size() < 4 + big.size()) {
      auto n = b->Read(absl::MakeSpan(buf), Soon());
      if (!n.ok()) return;
      got.append(reinterpret_cast<char*>(buf), *n);
    }
  });
  EXPECT_TRUE(a->Write(big, Soon()).ok());
  reader.join();
  EXPECT_EQ(got, "abcd" + big);
}

}  // namespace
}  // namespace benchfarm::device
