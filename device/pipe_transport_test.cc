// Tests of ChildProcessTransport: /bin/cat as an echo, the host-process board's boot signature
// and its death by SIGKILL, exit codes, start-up errors, stderr redirection and Close()'s
// SIGTERM-then-SIGKILL.

#include "device/pipe_transport.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

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

std::string TmpDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

TEST(ChildProcessTransport, CatEchoes) {
  ChildProcessTransport cat({"/bin/cat"});
  EXPECT_EQ(cat.Name(), "process:/bin/cat");
  EXPECT_EQ(cat.pid(), -1);
  ASSERT_TRUE(cat.Open().ok());
  ASSERT_GT(cat.pid(), 0);
  EXPECT_EQ(getpgid(cat.pid()), cat.pid());  // its own process group
  ASSERT_TRUE(cat.Open().ok());              // no-op while running

  const std::string message("\x00\xff hello\n", 9);
  ASSERT_TRUE(cat.Write(message, Soon()).ok());
  auto got = ReadExactly(cat, message.size(), Soon());
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, message);

  EXPECT_FALSE(cat.ExitStatus().has_value());
  auto running = cat.WaitExit(absl::Now() + absl::Milliseconds(50));
  EXPECT_TRUE(absl::IsDeadlineExceeded(running.status())) << running.status();

  cat.Close();
  EXPECT_TRUE(cat.ExitStatus().has_value());
  uint8_t buf[1];
  EXPECT_TRUE(absl::IsFailedPrecondition(cat.Read(absl::MakeSpan(buf), Soon()).status()));

  // Reopening starts a fresh child.
  const pid_t first = cat.pid();
  ASSERT_TRUE(cat.Open().ok());
  EXPECT_NE(cat.pid(), first);
  EXPECT_FALSE(cat.ExitStatus().has_value());
  ASSERT_TRUE(cat.Write("2", Soon()).ok());
  auto again = ReadExactly(cat, 1, Soon());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*again, "2");
}

TEST(ChildProcessTransport, BoardBootSignatureThenKill9) {
  ChildProcessTransport board({BoardPath()});
  ASSERT_TRUE(board.Open().ok());
  auto boot = ReadExactly(board, 12, Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, std::string("\xFE\xFF\xFD\x03\x00\x00\x00\x00\x00\x02\x66\x77", 12));

  ASSERT_EQ(kill(board.pid(), SIGKILL), 0);
  uint8_t buf[16];
  auto r = board.Read(absl::MakeSpan(buf), Soon());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "signal 9")) << r.status();

  auto exit = board.WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->signaled());
  EXPECT_FALSE(exit->exited());
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_TRUE(absl::StartsWith(exit->ToString(), "killed by signal 9")) << exit->ToString();

  // Writing to the dead board is Unavailable too, and must not raise SIGPIPE here.
  absl::Status w = board.Write("ping", Soon());
  EXPECT_TRUE(absl::IsUnavailable(w)) << w;
}

TEST(ChildProcessTransport, ReportsTheExitCode) {
  ChildProcessTransport sh({"sh", "-c", "exit 3"});
  ASSERT_TRUE(sh.Open().ok());
  uint8_t buf[4];
  auto r = sh.Read(absl::MakeSpan(buf), Soon());
  EXPECT_TRUE(absl::IsUnavailable(r.status())) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "exit code 3")) << r.status();
  auto exit = sh.WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_TRUE(exit->exited());
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->ToString(), "exit code 3");
  ASSERT_TRUE(sh.ExitStatus().has_value());
  EXPECT_EQ(sh.ExitStatus()->exit_code, 3);
}

TEST(ChildProcessTransport, WaitExitBeforeOpenIsFailedPrecondition) {
  ChildProcessTransport never({"/bin/true"});
  EXPECT_TRUE(absl::IsFailedPrecondition(never.WaitExit(Soon()).status()));
  EXPECT_FALSE(never.ExitStatus().has_value());
  uint8_t buf[1];
  EXPECT_TRUE(absl::IsFailedPrecondition(never.Read(absl::MakeSpan(buf), Soon()).status()));
}

TEST(ChildProcessTransport, StartErrors) {
  EXPECT_TRUE(absl::IsInvalidArgument(ChildProcessTransport({}).Open()));

  absl::Status s = ChildProcessTransport({"/nonexistent/benchfarm-board"}).Open();
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "/nonexistent/benchfarm-board")) << s;

  s = ChildProcessTransport({"benchfarm-no-such-program"}).Open();  // PATH lookup
  EXPECT_TRUE(absl::IsNotFound(s)) << s;

  const std::string not_executable = TmpDir() + "/not_executable";
  std::ofstream(not_executable) << "#!/bin/sh\n";
  ASSERT_EQ(chmod(not_executable.c_str(), 0644), 0);
  s = ChildProcessTransport({not_executable}).Open();
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
}

TEST(ChildProcessTransport, StderrGoesToTheGivenFile) {
  const std::string log = TmpDir() + "/child_stderr.log";
  ChildProcessOptions options;
  options.stderr_path = log;
  ChildProcessTransport sh({"sh", "-c", "echo oops >&2"}, options);
  ASSERT_TRUE(sh.Open().ok());
  auto exit = sh.WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  EXPECT_EQ(text.str(), "oops\n");

  ChildProcessOptions bad;
  bad.stderr_path = "/nonexistent/dir/log";
  EXPECT_TRUE(absl::IsNotFound(ChildProcessTransport({"/bin/true"}, bad).Open()));
}

TEST(ChildProcessTransport, CloseKillsAChildThatIgnoresSigterm) {
  ChildProcessOptions options;
  options.term_grace = absl::Milliseconds(100);
  ChildProcessTransport stubborn(
      {"sh", "-c", "trap '' TERM; echo ready; while :; do sleep 1; done"}, options);
  ASSERT_TRUE(stubborn.Open().ok());
  auto ready = ReadExactly(stubborn, 6, Soon());  // the trap is in place
  ASSERT_TRUE(ready.ok()) << ready.status();
  const absl::Time start = absl::Now();
  stubborn.Close();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  auto exit = stubborn.ExitStatus();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->signal, SIGKILL) << exit->ToString();
}

TEST(ChildProcessTransport, CloseEndsTheBoardGracefully) {
  ChildProcessTransport board({BoardPath()});
  ASSERT_TRUE(board.Open().ok());
  ASSERT_TRUE(ReadExactly(board, 12, Soon()).ok());
  board.Close();  // end of input and SIGTERM: the board exits 0 on either
  auto exit = board.ExitStatus();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0) << exit->ToString();
}

}  // namespace
}  // namespace benchfarm::device
