// Tests of PtyTransport: against a pseudo-terminal made here (posix_openpt; the master side is
// driven through an FdTransport), and against the host-process board started with --pty.

#include "device/pty_transport.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "device/fd_transport.h"
#include "device/pipe_transport.h"

namespace benchfarm::device {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

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

std::string BoardPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") +
         "/crt/host/board";
}

// Bytes a cooked terminal would mangle: ^C, ^D, XON/XOFF, CR, LF, DEL, 0x00, 0xFF.
const std::string kAwkward("\x03\x04\x11\x13\r\n\x7f\x00\xff\xfe\xfdok", 14);

class PtyPairTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    ASSERT_GE(master, 0);
    ASSERT_EQ(grantpt(master), 0);
    ASSERT_EQ(unlockpt(master), 0);
    path_ = ptsname(master);
    ASSERT_TRUE(master_.Attach(master, master, FdTransport::Ownership::kOwned).ok());
  }

  FdTransport master_{"master"};
  std::string path_;
};

TEST_F(PtyPairTest, RoundTripsBytesRaw) {
  PtyTransport pty(path_);
  ASSERT_TRUE(pty.Open().ok());
  EXPECT_EQ(pty.Name(), "pty:" + path_);

  ASSERT_TRUE(master_.Write(kAwkward, Soon()).ok());
  auto got = ReadExactly(pty, kAwkward.size(), Soon());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, kAwkward);

  ASSERT_TRUE(pty.Write(kAwkward, Soon()).ok());
  auto back = ReadExactly(master_, kAwkward.size(), Soon());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, kAwkward);  // no echo, no CR/LF translation
}

TEST_F(PtyPairTest, ReadTimesOutAtTheDeadline) {
  PtyTransport pty(path_);
  ASSERT_TRUE(pty.Open().ok());
  uint8_t buf[4];
  const absl::Time start = absl::Now();
  auto r = pty.Read(absl::MakeSpan(buf), start + absl::Milliseconds(100));
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(r.status())) << r.status();
  EXPECT_TRUE(absl::StartsWith(r.status().message(), "pty:" + path_)) << r.status();
  EXPECT_GE(took, absl::Milliseconds(90));
  EXPECT_LT(took, absl::Seconds(2));
}

TEST_F(PtyPairTest, ClosingTheOtherSideIsUnavailable) {
  PtyTransport pty(path_);
  ASSERT_TRUE(pty.Open().ok());
  master_.Close();
  uint8_t buf[4];
  auto r = pty.Read(absl::MakeSpan(buf), Soon());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), path_)) << r.status();
  absl::Status w = pty.Write("x", Soon());
  EXPECT_TRUE(absl::IsUnavailable(w)) << w;
  // Once every side is closed the pty is gone: reopening it is NotFound.
  pty.Close();
  absl::Status reopen = pty.Open();
  EXPECT_FALSE(reopen.ok());
  EXPECT_TRUE(absl::IsNotFound(reopen) || absl::IsUnavailable(reopen)) << reopen;
}

TEST_F(PtyPairTest, ReopenWorks) {
  PtyTransport pty(path_, PtyOptions{115200});
  ASSERT_TRUE(pty.Open().ok());
  ASSERT_TRUE(pty.Open().ok());  // no-op when open
  pty.Close();
  pty.Close();
  uint8_t buf[4];
  EXPECT_TRUE(absl::IsFailedPrecondition(pty.Read(absl::MakeSpan(buf), Soon()).status()));
  ASSERT_TRUE(pty.Open().ok());
  ASSERT_TRUE(master_.Write("again", Soon()).ok());
  auto got = ReadExactly(pty, 5, Soon());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "again");
}

TEST_F(PtyPairTest, RejectsABaudTermiosDoesNotKnow) {
  PtyTransport pty(path_, PtyOptions{12345});
  absl::Status s = pty.Open();
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "12345")) << s;
}

TEST(PtyTransport, OpenErrors) {
  PtyTransport missing("/dev/ttyBENCHFARM_NONE");
  absl::Status s = missing.Open();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/dev/ttyBENCHFARM_NONE")) << s;

  PtyTransport not_a_tty("/dev/null");
  s = not_a_tty.Open();
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "not a terminal")) << s;
}

// The board prints "pty: <path>" on stdout, then serves the link on that pty: opening it reads
// the boot signature (the FE preamble, then a session StartSession packet).
TEST(PtyTransport, ReadsTheBoardBootSignature) {
  ChildProcessTransport board({BoardPath(), "--pty"});
  ASSERT_TRUE(board.Open().ok());
  std::string line;
  const absl::Time deadline = Soon();
  while (line.find('\n') == std::string::npos) {
    uint8_t buf[64];
    auto n = board.Read(absl::MakeSpan(buf), deadline);
    ASSERT_TRUE(n.ok()) << n.status();
    line.append(reinterpret_cast<const char*>(buf), *n);
  }
  ASSERT_TRUE(absl::StartsWith(line, "pty: ")) << line;
  const std::string path = line.substr(5, line.find('\n') - 5);

  PtyTransport pty(path, PtyOptions{115200});
  ASSERT_TRUE(pty.Open().ok());
  auto boot = ReadExactly(pty, 12, Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, std::string("\xFE\xFF\xFD\x03\x00\x00\x00\x00\x00\x02\x66\x77", 12));

  // The board keeps its own slave open: the pty survives our close and reopens.
  pty.Close();
  ASSERT_TRUE(pty.Open().ok());
  uint8_t buf[4];
  EXPECT_TRUE(absl::IsDeadlineExceeded(
      pty.Read(absl::MakeSpan(buf), absl::Now() + absl::Milliseconds(50)).status()));

  board.Close();
  auto r = pty.Read(absl::MakeSpan(buf), Soon());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
}

}  // namespace
}  // namespace benchfarm::device
