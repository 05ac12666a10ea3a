// Tests of Subprocess with /bin/sh children: streams, PATH lookup, start errors, resource limits,
// process groups, signal dispositions, and that nothing a child started outlives it.

#include "process/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace benchfarm::process {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

std::string WriteFile(const std::string& name, const std::string& content, mode_t mode) {
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::trunc) << content;
  chmod(path.c_str(), mode);
  return path;
}

// Everything the child writes to `fd` until end of file; closes `fd`.
std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  for (;;) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

// One line from `fd` (blocking), without the newline.
std::string ReadLine(int fd) {
  std::string line;
  char c;
  while (read(fd, &c, 1) == 1 && c != '\n') line.push_back(c);
  return line;
}

// A /proc file's content; "" if it cannot be read (its process may vanish while it is read, which
// std::ifstream reports by throwing).
std::string ReadProcFile(const std::string& path) {
  std::string content;
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return content;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) content.append(buf, static_cast<size_t>(n));
  close(fd);
  return n < 0 ? std::string() : content;
}

// True once `pid` is gone or a zombie (an orphan waits for init to reap it).
bool GoneOrZombie(pid_t pid) {
  if (kill(pid, 0) != 0) return errno == ESRCH;
  const std::string content = ReadProcFile(absl::StrCat("/proc/", pid, "/stat"));
  const size_t paren = content.rfind(')');
  return paren == std::string::npos || (paren + 2 < content.size() && content[paren + 2] == 'Z');
}

bool EventuallyGoneOrZombie(pid_t pid) {
  const absl::Time deadline = Soon();
  while (!GoneOrZombie(pid)) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

SubprocessOptions Shell(const std::string& script) {
  SubprocessOptions options;
  options.argv = {"/bin/sh", "-c", script};
  return options;
}

TEST(Subprocess, CapturesStdoutAndStderrAndTheExitCode) {
  SubprocessOptions options = Shell("echo out; echo err >&2; exit 7");
  options.stderr_to_stdout = true;
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_GT((*child)->pid(), 0);
  EXPECT_EQ((*child)->TakeStdin(), -1);  // kNull
  EXPECT_EQ(ReadAll((*child)->TakeStdout()), "out\nerr\n");
  EXPECT_EQ((*child)->TakeStdout(), -1);
  auto exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 7);
  ASSERT_TRUE((*child)->ExitStatus().has_value());
  EXPECT_EQ((*child)->ExitStatus()->exit_code, 7);
}

TEST(Subprocess, StdinPipeAndPathLookup) {
  SubprocessOptions options;
  options.argv = {"cat"};
  options.stdin_mode = StdioMode::kPipe;
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  const int in = (*child)->TakeStdin();
  ASSERT_GE(in, 0);
  ASSERT_EQ(write(in, "echo", 4), 4);
  close(in);
  EXPECT_EQ(ReadAll((*child)->TakeStdout()), "echo");
  auto exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 0);
}

// pass_fd: the child gets it as its descriptor 3 (a pipe the parent reads from), and no other
// descriptor of this process besides 0..3.
TEST(Subprocess, PassesOneDescriptorAsThree) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  SubprocessOptions options =
      Shell("echo through-3 >&3; ls /proc/self/fd | sort -n | tr '\\n' ' '");
  options.pass_fd = fds[1];
  auto child = Subprocess::Start(options);
  close(fds[1]);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(ReadAll(fds[0]), "through-3\n");  // and end of file: the child's copy closed at exit
  // The shell's own descriptors: 0, 1, 2, 3 and the one ls opens to list them.
  const std::string listed = ReadAll((*child)->TakeStdout());
  EXPECT_EQ(listed.rfind("0 1 2 3 ", 0), 0u) << listed;
  EXPECT_LE(std::count(listed.begin(), listed.end(), ' '), 5) << listed;
  auto exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 0);
  // A descriptor that is not open is refused.
  options.pass_fd = 1000;
  EXPECT_TRUE(absl::IsInvalidArgument(Subprocess::Start(options).status()));
}

TEST(Subprocess, StderrToAFile) {
  const std::string log = TempDir() + "/stderr.log";
  unlink(log.c_str());
  SubprocessOptions options = Shell("echo to-the-log >&2");
  options.stderr_path = log;
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE((*child)->WaitExit(Soon()).ok());
  std::ifstream in(log);
  std::stringstream content;
  content << in.rdbuf();
  EXPECT_EQ(content.str(), "to-the-log\n");
}

TEST(Subprocess, StartErrors) {
  SubprocessOptions options;
  auto s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();

  options.argv = {"/nonexistent/benchfarm-tool"};
  s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsNotFound(s.status())) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "/nonexistent/benchfarm-tool")) << s.status();

  options.argv = {"benchfarm-no-such-tool"};
  s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsNotFound(s.status())) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "PATH")) << s.status();

  options.argv = {WriteFile("not-executable", "#!/bin/sh\n", 0644)};
  s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsPermissionDenied(s.status())) << s.status();

  options.argv = {WriteFile("no-shebang", "echo not a binary\n", 0755)};
  s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsFailedPrecondition(s.status())) << s.status();

  options = Shell("true");
  options.working_dir = TempDir() + "/no-such-dir";
  s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsNotFound(s.status())) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), "working directory")) << s.status();

  options = Shell("true");
  options.stderr_to_stdout = true;
  options.stderr_path = TempDir() + "/x.log";
  s = Subprocess::Start(options);
  EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
}

TEST(Subprocess, WorkingDirectory) {
  SubprocessOptions options = Shell("pwd -P");
  options.working_dir = TempDir();
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  char real[4096];
  ASSERT_NE(realpath(TempDir().c_str(), real), nullptr);
  EXPECT_EQ(ReadAll((*child)->TakeStdout()), std::string(real) + "\n");
}

TEST(Subprocess, AppliesResourceLimitsInTheChild) {
  SubprocessOptions options = Shell("ulimit -v; ulimit -n; ulimit -t; ulimit -c");
  options.limits.max_address_space_bytes = 256ull << 20;
  options.limits.max_open_files = 64;
  options.limits.max_cpu_seconds = 7;
  options.limits.core_dumps = false;
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  // ulimit -v is in KiB.
  EXPECT_EQ(ReadAll((*child)->TakeStdout()), "262144\n64\n7\n0\n");

  // Hard limits too: the child cannot raise them back.
  options = Shell("ulimit -H -v; ulimit -v 1048576 2>/dev/null && echo raised || echo refused");
  options.limits.max_address_space_bytes = 256ull << 20;
  child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  EXPECT_EQ(ReadAll((*child)->TakeStdout()), "262144\nrefused\n");
}

TEST(Subprocess, LeadsItsOwnProcessGroup) {
  SubprocessOptions options = Shell("echo ready; exec sleep 30");
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  EXPECT_EQ(ReadLine(out), "ready");
  EXPECT_EQ(getpgid((*child)->pid()), (*child)->pid());
  EXPECT_NE(getpgid((*child)->pid()), getpgrp());
  EXPECT_FALSE((*child)->ExitStatus().has_value());
  close(out);
}

TEST(Subprocess, ResetsIgnoredSignalsAndTheMask) {
  struct sigaction ignore = {}, saved_action = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(sigaction(SIGINT, &ignore, &saved_action), 0);
  sigset_t block, saved_mask;
  sigemptyset(&block);
  sigaddset(&block, SIGUSR1);
  ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &saved_mask), 0);

  auto child = Subprocess::Start(Shell("kill -INT $$; echo survived"));
  auto usr1 = Subprocess::Start(Shell("kill -USR1 $$; echo survived"));

  sigaction(SIGINT, &saved_action, nullptr);
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  ASSERT_TRUE(child.ok()) << child.status();
  ASSERT_TRUE(usr1.ok()) << usr1.status();
  EXPECT_EQ(ReadAll((*child)->TakeStdout()), "");
  auto exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGINT);
  EXPECT_EQ(ReadAll((*usr1)->TakeStdout()), "");
  exit = (*usr1)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGUSR1);
}

TEST(Subprocess, ANewSessionHasNoControllingTerminal) {
  SubprocessOptions options = Shell("echo ready; exec sleep 30");
  options.new_session = true;
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  EXPECT_EQ(ReadLine(out), "ready");
  EXPECT_EQ(getsid((*child)->pid()), (*child)->pid());
  EXPECT_EQ(getpgid((*child)->pid()), (*child)->pid());
  close(out);
  auto stopped = (*child)->Stop(absl::Seconds(1), Soon());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->signal, SIGTERM);
}

TEST(Subprocess, ALauncherOutlivesSigtermAndReportsItsCommandsSignal) {
  // A launcher ignores SIGTERM (its command decides); a group SIGTERM does not end this one.
  SubprocessOptions options = Shell("echo ready; sleep 0.3; exit 5");
  options.launcher = true;
  auto child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  EXPECT_EQ(ReadLine(out), "ready");
  (*child)->Signal(SIGTERM);
  auto exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 5);
  close(out);
  // Exit code 128+N is how a launcher reports its command's death by signal N.
  options = Shell("exit 139");
  options.launcher = true;
  child = Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGSEGV);
  EXPECT_EQ(exit->ToString(), "killed by signal 11 (Segmentation fault)");
  // Not for other programs.
  child = Subprocess::Start(Shell("exit 139"));
  ASSERT_TRUE(child.ok()) << child.status();
  exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 139);
}

TEST(Subprocess, StopEndsTheWholeGroup) {
  auto child = Subprocess::Start(Shell("sleep 30 & echo $!; wait"));
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(ReadLine(out), &grandchild));
  auto exit = (*child)->Stop(absl::Seconds(1), Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGTERM) << exit->ToString();
  EXPECT_TRUE(EventuallyGoneOrZombie(grandchild));
  // Stopping again reports the same end; Signal is a no-op now.
  (*child)->Signal(SIGKILL);
  exit = (*child)->Stop(absl::Seconds(1), Soon());
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->signal, SIGTERM);
  close(out);
}

TEST(Subprocess, StopKillsAChildThatIgnoresSigterm) {
  auto child = Subprocess::Start(Shell("trap '' TERM; echo ready; while :; do sleep 0.05; done"));
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  EXPECT_EQ(ReadLine(out), "ready");
  const absl::Time start = absl::Now();
  auto exit = (*child)->Stop(absl::Milliseconds(200), Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(190));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  close(out);
}

TEST(Subprocess, WhatAChildLeavesBehindIsKilledWhenItIsReaped) {
  auto child = Subprocess::Start(Shell("sleep 30 & echo $!"));
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  int grandchild = 0;
  ASSERT_TRUE(absl::SimpleAtoi(ReadLine(out), &grandchild));
  auto exit = (*child)->WaitExit(Soon());
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 0);
  EXPECT_TRUE(EventuallyGoneOrZombie(grandchild));
  EXPECT_EQ(ReadAll(out), "");  // the pipe's last writer is gone: end of file
}

TEST(Subprocess, WaitExitTimesOut) {
  auto child = Subprocess::Start(Shell("exec sleep 30"));
  ASSERT_TRUE(child.ok()) << child.status();
  auto exit = (*child)->WaitExit(absl::Now() + absl::Milliseconds(50));
  EXPECT_TRUE(absl::IsDeadlineExceeded(exit.status())) << exit.status();
}

TEST(Subprocess, DestructorKillsAndReaps) {
  pid_t pid;
  {
    auto child = Subprocess::Start(Shell("exec sleep 30"));
    ASSERT_TRUE(child.ok()) << child.status();
    pid = (*child)->pid();
  }
  EXPECT_NE(kill(pid, 0), 0);
  EXPECT_EQ(errno, ESRCH);
}

}  // namespace
}  // namespace benchfarm::process
