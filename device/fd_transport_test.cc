// Tests of FdTransport over pipes: round trips, deadlines, end of file, writes to a vanished
// reader (no SIGPIPE), Close() waking a blocked Read, and the attach/ownership rules.

#include "device/fd_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/os_error.h"

namespace benchfarm::device {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

bool IsOpenFd(int fd) { return fcntl(fd, F_GETFD) != -1; }

// Reads exactly n bytes, or returns the first error.
absl::StatusOr<std::string> ReadExactly(Transport& t, size_t n, absl::Time deadline) {
  std::string got;
  uint8_t buf[256];
  while (got.size() < n) {
    absl::StatusOr<size_t> r =
        t.Read(absl::MakeSpan(buf, std::min(sizeof(buf), n - got.size())), deadline);
    if (!r.ok()) return r.status();
    got.append(reinterpret_cast<const char*>(buf), *r);
  }
  return got;
}

// A transport over two pipes; the test holds the far ends.
class FdTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int to_transport[2], from_transport[2];
    ASSERT_EQ(pipe2(to_transport, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(from_transport, O_CLOEXEC), 0);
    feed_ = to_transport[1];
    drain_ = from_transport[0];
    ASSERT_TRUE(t_.Attach(to_transport[0], from_transport[1], FdTransport::Ownership::kOwned).ok());
  }
  void TearDown() override {
    if (feed_ >= 0) close(feed_);
    if (drain_ >= 0) close(drain_);
  }

  FdTransport t_{"pipes"};
  int feed_ = -1;   // written by the test, read by t_
  int drain_ = -1;  // written by t_, read by the test
};

TEST_F(FdTransportTest, RoundTripsBytes) {
  const std::string message("\x00\xff\xfe\xfd hello\r\n", 11);
  ASSERT_EQ(write(feed_, message.data(), message.size()), static_cast<ssize_t>(message.size()));
  auto got = ReadExactly(t_, message.size(), Soon());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, message);

  ASSERT_TRUE(t_.Write(message, Soon()).ok());
  char buf[64];
  ASSERT_EQ(read(drain_, buf, sizeof(buf)), static_cast<ssize_t>(message.size()));
  EXPECT_EQ(std::string(buf, message.size()), message);
  EXPECT_EQ(t_.Name(), "pipes");
  EXPECT_TRUE(t_.Open().ok());
}

TEST_F(FdTransportTest, ReadTimesOutAtTheDeadline) {
  uint8_t buf[8];
  const absl::Time start = absl::Now();
  auto r = t_.Read(absl::MakeSpan(buf), start + absl::Milliseconds(100));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "pipes: ")) << r.status();
  EXPECT_GE(took, absl::Milliseconds(90));
  EXPECT_LT(took, absl::Seconds(2));
  // Still usable afterwards.
  ASSERT_EQ(write(feed_, "x", 1), 1);
  auto again = t_.Read(absl::MakeSpan(buf), Soon());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, 1u);
}

TEST_F(FdTransportTest, WaitingDataIsReturnedEvenPastTheDeadline) {
  ASSERT_EQ(write(feed_, "abc", 3), 3);
  uint8_t buf[8];
  auto r = t_.Read(absl::MakeSpan(buf), absl::InfinitePast());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(*r, 3u);
}

TEST_F(FdTransportTest, EndOfFileIsUnavailable) {
  ASSERT_EQ(write(feed_, "z", 1), 1);
  close(feed_);
  feed_ = -1;
  uint8_t buf[8];
  auto first = t_.Read(absl::MakeSpan(buf), Soon());  // bytes sent before the close still arrive
  ASSERT_TRUE(first.ok()) << first.status();
  auto r = t_.Read(absl::MakeSpan(buf), Soon());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "pipes: closed by the board")) << r.status();
}

TEST_F(FdTransportTest, WriteToAVanishedReaderIsUnavailableWithoutSigpipe) {
  close(drain_);
  drain_ = -1;
  absl::Status s = t_.Write("hello", Soon());  // SIGPIPE would end the test process here
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "closed by the board")) << s;
}

TEST_F(FdTransportTest, WriteTimesOutWhenThePipeStaysFull) {
  const std::string big(4 << 20, 'x');  // larger than any pipe buffer
  const absl::Time start = absl::Now();
  absl::Status s = t_.Write(big, start + absl::Milliseconds(100));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "wrote ")) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(FdTransportTest, CloseWakesABlockedRead) {
  absl::Status read_status;
  absl::Notification started;
  std::thread reader([&] {
    uint8_t buf[8];
    started.Notify();
    read_status = t_.Read(absl::MakeSpan(buf), absl::InfiniteFuture()).status();
  });
  started.WaitForNotification();
  t_.Close();  // either wakes the Read or comes first; both make it fail FailedPrecondition
  reader.join();
  EXPECT_TRUE(absl::IsFailedPrecondition(read_status)) << read_status;
  EXPECT_FALSE(t_.is_open());
}

TEST_F(FdTransportTest, ClosedTransportFailsWithFailedPrecondition) {
  t_.Close();
  t_.Close();  // idempotent
  uint8_t buf[1];
  EXPECT_TRUE(absl::IsFailedPrecondition(t_.Read(absl::MakeSpan(buf), Soon()).status()));
  EXPECT_TRUE(absl::IsFailedPrecondition(t_.Write("x", Soon())));
  EXPECT_TRUE(absl::IsFailedPrecondition(t_.Open()));
}

TEST(FdTransport, AttachRules) {
  FdTransport t("t");
  EXPECT_FALSE(t.is_open());
  EXPECT_TRUE(absl::IsFailedPrecondition(t.Open()));
  EXPECT_TRUE(absl::IsInvalidArgument(t.Attach(-1, -1, FdTransport::Ownership::kBorrowed)));

  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  ASSERT_TRUE(t.Attach(fds[0], fds[1], FdTransport::Ownership::kBorrowed).ok());
  EXPECT_TRUE(t.Open().ok());
  EXPECT_TRUE(
      absl::IsFailedPrecondition(t.Attach(fds[0], fds[1], FdTransport::Ownership::kBorrowed)));
  uint8_t buf[1];
  EXPECT_TRUE(absl::IsInvalidArgument(t.Read(absl::Span<uint8_t>(buf, 0), Soon()).status()));
  t.Close();
  // Borrowed descriptors stay open for their owner; Attach works again after Close.
  EXPECT_TRUE(IsOpenFd(fds[0]));
  EXPECT_TRUE(IsOpenFd(fds[1]));
  ASSERT_TRUE(t.Attach(fds[0], fds[1], FdTransport::Ownership::kOwned).ok());
  ASSERT_TRUE(t.Write("q", Soon()).ok());
  auto r = t.Read(absl::MakeSpan(buf), Soon());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(buf[0], 'q');
  t.Close();
  EXPECT_FALSE(IsOpenFd(fds[0]));
  EXPECT_FALSE(IsOpenFd(fds[1]));
}

TEST(OpenErrorToStatus, MapsErrno) {
  EXPECT_TRUE(absl::IsNotFound(base::OpenErrorToStatus(ENOENT, "x")));
  EXPECT_TRUE(absl::IsPermissionDenied(base::OpenErrorToStatus(EACCES, "x")));
  EXPECT_TRUE(absl::IsUnavailable(base::OpenErrorToStatus(ENXIO, "x")));
  EXPECT_TRUE(absl::IsUnavailable(base::OpenErrorToStatus(EBUSY, "x")));
  absl::Status other = base::OpenErrorToStatus(EMFILE, "open(/dev/x)");
  EXPECT_TRUE(absl::IsInternal(other));
  EXPECT_EQ(other.message(), "open(/dev/x): " + base::ErrnoText(EMFILE));
}

}  // namespace
}  // namespace benchfarm::device
