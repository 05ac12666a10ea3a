// The sandbox (bubblewrap) as the agent uses it: what a sandboxed command can see, write, reach
// and start, who it runs as, its limits, and that nothing of it outlives it. Every check here
// would fail if the containment broke.

#include "process/sandbox.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "process/run_command.h"
#include "process/subprocess.h"

namespace benchfarm::process {
namespace {

std::string TempDir(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path = absl::StrCat(dir != nullptr ? dir : "/tmp", "/", name);
  mkdir(path.c_str(), 0755);
  return path;
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path, std::ios::trunc) << content;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// Runs `command` sandboxed; returns its output (stdout + stderr); `exit` gets how it ended.
std::string RunIn(const SandboxOptions& options, const std::vector<std::string>& command,
                  base::ProcessExit* exit = nullptr) {
  absl::StatusOr<SandboxCommand> sandboxed = MakeSandboxCommand(options, command);
  EXPECT_TRUE(sandboxed.ok()) << sandboxed.status();
  if (!sandboxed.ok()) return "";
  RunCommandOptions run;
  run.argv = sandboxed->argv;
  run.time_limit = absl::Seconds(60);
  absl::StatusOr<CommandRun> ran = RunCommand(run, absl::InfiniteFuture(), "sandboxed");
  EXPECT_TRUE(ran.ok()) << ran.status();
  if (!ran.ok()) return "";
  EXPECT_FALSE(ran->timed_out);
  if (exit != nullptr && ran->exit) *exit = *ran->exit;
  return ran->output;
}

std::string Sh(const SandboxOptions& options, const std::string& script,
               base::ProcessExit* exit = nullptr) {
  return RunIn(options, {"/bin/sh", "-c", script}, exit);
}

// Processes whose command line contains `marker`.
int ProcessesWith(const std::string& marker) {
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  while (struct dirent* e = readdir(proc)) {
    int pid;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    if (absl::StrContains(s.str(), marker)) ++found;
  }
  closedir(proc);
  return found;
}

TEST(Sandbox, IsAvailable) {
  absl::Status s = CheckSandbox();
  ASSERT_TRUE(s.ok()) << s;
  std::cerr << "sandbox: " << DescribeSandbox() << "\n";
}

TEST(Sandbox, WithoutBwrapTheErrorSaysWhatToInstall) {
  const std::string empty = TempDir("no-bwrap-here");
  absl::StatusOr<std::string> bwrap = FindBwrap(empty);
  ASSERT_FALSE(bwrap.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(bwrap.status())) << bwrap.status();
  EXPECT_TRUE(absl::StrContains(bwrap.status().message(), "apt install bubblewrap"))
      << bwrap.status();
  ASSERT_TRUE(FindBwrap().ok()) << FindBwrap().status();
}

TEST(Sandbox, SeesItsBindsAndTheSystemButNoOtherHostFile) {
  const std::string in = TempDir("visible");
  WriteFile(in + "/f", "bound-content\n");
  const std::string secret = TempDir("hidden") + "/secret";
  WriteFile(secret, "SECRET-8d1f\n");
  SandboxOptions o;
  o.binds = {{in, "/in"}};
  const std::string out =
      Sh(o, absl::StrCat("cat /in/f; cat ", secret, " 2>&1; cat /etc/shadow 2>&1; ls /etc; ",
                         "test -x /usr/bin/cc && echo has-cc; test -d ", TempDir(""),
                         " || echo no-test-dir; env | sort"));
  EXPECT_TRUE(absl::StrContains(out, "bound-content")) << out;
  EXPECT_FALSE(absl::StrContains(out, "SECRET-8d1f")) << out;
  EXPECT_TRUE(absl::StrContains(out, "/etc/shadow: No such file")) << out;
  EXPECT_TRUE(absl::StrContains(out, "has-cc")) << out;
  EXPECT_TRUE(absl::StrContains(out, "no-test-dir")) << out;
  // /etc holds only what the compiler and loader need.
  EXPECT_FALSE(absl::StrContains(out, "passwd")) << out;
  EXPECT_TRUE(absl::StrContains(out, "alternatives")) << out;
  // The environment is the sandbox's own: nothing of this process's (TEST_TMPDIR, ...).
  EXPECT_FALSE(absl::StrContains(out, "TEST_")) << out;
  // Nor in what the sandbox's init (bwrap) shows of itself.
  const std::string init = Sh(o,
                              "tr '\\0' '\\n' < /proc/1/environ 2>&1; echo; cat /proc/1/cmdline "
                              ">/dev/null && echo read-cmdline");
  EXPECT_FALSE(absl::StrContains(init, "TEST_")) << init;
  EXPECT_FALSE(absl::StrContains(init, "PATH=")) << init;
  EXPECT_TRUE(absl::StrContains(out, "HOME=/tmp")) << out;
}

TEST(Sandbox, WritesOnlyToItsWritableBindsAndItsPrivateTmp) {
  const std::string rw = TempDir("writable");
  const std::string ro = TempDir("readonly");
  SandboxOptions o;
  o.binds = {{rw, "/out", true}, {ro, "/in"}};
  o.tmpfs_bytes = 1 << 20;
  const std::string tmp_file = absl::StrCat("/tmp/sandbox-escape-", getpid());
  unlink(tmp_file.c_str());
  const std::string out = Sh(
      o,
      absl::StrCat("for p in /out/a /in/b /newfile /usr/c /etc/d ", tmp_file,
                   " /proc/f /dev/g; do "
                   "(echo x > $p) 2>/dev/null && echo \"wrote $p\" || echo \"denied $p\"; done"));
  EXPECT_TRUE(absl::StrContains(out, "wrote /out/a")) << out;
  EXPECT_TRUE(absl::StrContains(out, "wrote " + tmp_file)) << out;
  for (const char* p : {"/in/b", "/newfile", "/usr/c", "/etc/d", "/proc/f", "/dev/g"}) {
    EXPECT_TRUE(absl::StrContains(out, absl::StrCat("denied ", p))) << out;
  }
  EXPECT_TRUE(Exists(rw + "/a"));
  EXPECT_FALSE(Exists(ro + "/b"));
  EXPECT_FALSE(Exists("/newfile"));
  EXPECT_FALSE(Exists("/usr/c"));
  EXPECT_FALSE(Exists(tmp_file));  // the private /tmp is the sandbox's alone
}

TEST(Sandbox, RunsAsAnUnprivilegedUserWithoutCapabilities) {
  SandboxOptions o;
  const std::string out = Sh(o, "id -u; grep -E '^Cap(Eff|Prm|Bnd):' /proc/self/status");
  int64_t uid = -1;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(out.substr(0, out.find('\n'))), &uid))
      << out;
  EXPECT_NE(uid, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "CapEff:\t0000000000000000")) << out;
  EXPECT_TRUE(absl::StrContains(out, "CapPrm:\t0000000000000000")) << out;
  absl::StatusOr<SandboxCommand> c = MakeSandboxCommand(o, {"/bin/true"});
  ASSERT_TRUE(c.ok()) << c.status();
  if (c->root_mode) {
    // A uid of its own, from the sandbox range, and no capabilities left to regain any.
    EXPECT_GE(uid, 0x70000000) << out;
    EXPECT_TRUE(absl::StrContains(out, "CapBnd:\t0000000000000000")) << out;
    absl::StatusOr<SandboxCommand> other = MakeSandboxCommand(o, {"/bin/true"});
    ASSERT_TRUE(other.ok());
    EXPECT_NE(other->uid, c->uid);
  } else {
    EXPECT_EQ(uid, 65534) << out;
  }
}

TEST(Sandbox, HasNoNetwork) {
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int port = ntohs(addr.sin_port);
  SandboxOptions o;
  const std::string out = RunIn(
      o, {"/bin/bash", "-c",
          absl::StrCat("(exec 3<>/dev/tcp/127.0.0.1/", port,
                       ") 2>/dev/null && echo connected || echo refused; ls /sys/class/net 2>&1; ",
                       "cat /proc/net/dev | tail -n +3 | cut -d: -f1")});
  EXPECT_TRUE(absl::StrContains(out, "refused")) << out;
  EXPECT_FALSE(absl::StrContains(out, "eth")) << out;
  EXPECT_EQ(accept(listener, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EAGAIN);
  close(listener);
}

TEST(Sandbox, AppliesItsResourceLimits) {
  SandboxOptions o;
  o.limits.max_open_files = 48;
  o.limits.max_address_space_bytes = 512ull << 20;
  o.limits.max_cpu_seconds = 9;
  o.limits.max_file_size_bytes = 1 << 20;
  o.limits.max_processes = 33;
  const std::string out = RunIn(
      o, {"/bin/bash", "-c", "ulimit -n; ulimit -v; ulimit -t; ulimit -f; ulimit -c; ulimit -u"});
  EXPECT_EQ(out, "48\n524288\n9\n1024\n0\n33\n");  // -v and -f in KiB
}

TEST(Sandbox, BoundsTheNumberOfProcesses) {
  SandboxOptions o;
  o.limits.max_processes = 16;
  absl::StatusOr<SandboxCommand> c = MakeSandboxCommand(o, {"/bin/true"});
  ASSERT_TRUE(c.ok()) << c.status();
  if (!c->bounds_processes) GTEST_SKIP() << DescribeSandbox();
  const std::string out = RunIn(o, {"/usr/bin/python3", "-c",
                                    "import os, time\n"
                                    "n = 0\n"
                                    "for i in range(300):\n"
                                    "    try:\n"
                                    "        pid = os.fork()\n"
                                    "    except OSError:\n"
                                    "        break\n"
                                    "    if pid == 0:\n"
                                    "        time.sleep(30)\n"
                                    "        os._exit(0)\n"
                                    "    n += 1\n"
                                    "print('forked', n)\n"});
  int forked = -1;
  ASSERT_TRUE(absl::StartsWith(out, "forked ")) << out;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(out.substr(7)), &forked)) << out;
  EXPECT_LT(forked, 16) << out;
}

TEST(Sandbox, NothingItStartedOutlivesIt) {
  absl::BitGen gen;
  const std::string suffix = absl::StrCat(absl::Uniform<uint32_t>(gen, 1, 1u << 30));
  // Put together in the shell, so that only the daemons' command lines hold it.
  const std::string marker = absl::StrCat("1000.", suffix);
  SandboxOptions o;
  SubprocessOptions so;
  so.argv = {"/bin/sh", "-c",
             absl::StrCat("m=1000.; m=${m}", suffix,
                          "; setsid /bin/sleep $m </dev/null >/dev/null 2>&1 & ",
                          "(setsid /bin/sh -c \"/bin/sleep $m\" &) ; echo started; ",
                          "exec /bin/sleep 1000")};
  absl::StatusOr<SubprocessOptions> sandboxed = SandboxedSubprocess(o, so);
  ASSERT_TRUE(sandboxed.ok()) << sandboxed.status();
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(*sandboxed);
  ASSERT_TRUE(p.ok()) << p.status();
  const int out = (*p)->TakeStdout();
  char buf[16];
  ASSERT_GT(read(out, buf, sizeof(buf)), 0);
  close(out);
  // The daemons run while the sandbox does (counted at their most: setsid may fork and exit,
  // and a shell may exec its command, so a single reading can catch one between two states).
  const absl::Time until = absl::Now() + absl::Seconds(5);
  int seen = 0;
  while (seen < 2 && absl::Now() < until) {
    seen = std::max(seen, ProcessesWith(marker));
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_GE(seen, 2);
  absl::StatusOr<base::ProcessExit> ended =
      (*p)->Stop(absl::Seconds(1), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(ended.ok()) << ended.status();
  const absl::Time gone = absl::Now() + absl::Seconds(5);
  while (ProcessesWith(marker) > 0 && absl::Now() < gone) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_EQ(ProcessesWith(marker), 0);
}

TEST(Sandbox, CannotSignalAnythingOutside) {
  SandboxOptions o;
  const std::string out =
      Sh(o, absl::StrCat("kill -TERM ", getpid(), " 2>&1 && echo signalled-test || echo no-test; ",
                         "echo parent $PPID; kill -KILL -1 2>&1; echo done"));
  EXPECT_TRUE(absl::StrContains(out, "no-test")) << out;
  EXPECT_TRUE(absl::StrContains(out, "done")) << out;
  EXPECT_FALSE(absl::StrContains(out, absl::StrCat("parent ", getpid()))) << out;
}

TEST(Sandbox, AGroupSignalReachesTheCommandAndItsEndIsReported) {
  SandboxOptions o;
  SubprocessOptions so;
  so.argv = {"/bin/sh", "-c", "trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done"};
  absl::StatusOr<SubprocessOptions> sandboxed = SandboxedSubprocess(o, so);
  ASSERT_TRUE(sandboxed.ok()) << sandboxed.status();
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(*sandboxed);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(getpgid((*p)->pid()), (*p)->pid());
  EXPECT_EQ(getsid((*p)->pid()), (*p)->pid());  // its own session: no controlling terminal
  const int out = (*p)->TakeStdout();
  char buf[16];
  ASSERT_GT(read(out, buf, sizeof(buf)), 0);
  close(out);
  absl::StatusOr<base::ProcessExit> ended =
      (*p)->Stop(absl::Seconds(5), absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->exit_code, 7) << ended->ToString();

  // A command killed by a signal: reported as that signal, not bwrap's exit code 139.
  so.argv = {"/bin/sh", "-c", "kill -SEGV $$"};
  sandboxed = SandboxedSubprocess(o, so);
  ASSERT_TRUE(sandboxed.ok()) << sandboxed.status();
  p = Subprocess::Start(*sandboxed);
  ASSERT_TRUE(p.ok()) << p.status();
  ended = (*p)->WaitExit(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->signal, SIGSEGV) << ended->ToString();
}

// Where the host refuses a fresh proc mount (systemd's ProtectKernelTunables), CheckSandbox()
// falls back to an empty /proc; the rest holds.
TEST(Sandbox, WithoutAProcOfItsOwnItStillWorks) {
  SetSandboxProcForTesting(false);
  SandboxOptions o;
  const std::string out =
      Sh(o, "ls -A /proc | wc -l; cc --version >/dev/null && echo has-cc; id -u");
  SetSandboxProcForTesting(true);
  EXPECT_TRUE(absl::StartsWith(out, "0\n")) << out;
  EXPECT_TRUE(absl::StrContains(out, "has-cc")) << out;
  EXPECT_FALSE(absl::StrContains(out, "\n0\n")) << out;  // not root
}

TEST(Sandbox, ItsOwnPtyIsReachedFromOutside) {
  SandboxOptions o;
  SubprocessOptions so;
  so.argv = {"/usr/bin/python3", "-c",
             "import os, pty, sys, tty\n"
             "m, s = pty.openpty()\n"
             "tty.setraw(s)\n"
             "print(os.ttyname(s), flush=True)\n"
             "got = b''\n"
             "while len(got) < 5:\n"
             "    got += os.read(m, 5 - len(got))\n"
             "print(got.decode(), flush=True)\n"};
  absl::StatusOr<SubprocessOptions> sandboxed = SandboxedSubprocess(o, so);
  ASSERT_TRUE(sandboxed.ok()) << sandboxed.status();
  absl::StatusOr<std::unique_ptr<Subprocess>> p = Subprocess::Start(*sandboxed);
  ASSERT_TRUE(p.ok()) << p.status();
  const int out = (*p)->TakeStdout();
  std::string line;
  char c;
  while (read(out, &c, 1) == 1 && c != '\n') line += c;
  ASSERT_TRUE(absl::StartsWith(line, "/dev/pts/")) << line;
  absl::StatusOr<std::string> path = PathIntoSandbox((*p)->pid(), line);
  ASSERT_TRUE(path.ok()) << path.status();
  EXPECT_TRUE(absl::StartsWith(*path, "/proc/")) << *path;
  const int fd = open(path->c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  ASSERT_GE(fd, 0) << *path << ": " << strerror(errno);
  ASSERT_EQ(write(fd, "hello", 5), 5);
  std::string reply;
  while (read(out, &c, 1) == 1 && c != '\n') reply += c;
  EXPECT_EQ(reply, "hello");
  close(fd);
  close(out);
  absl::StatusOr<base::ProcessExit> ended = (*p)->WaitExit(absl::Now() + absl::Seconds(10));
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->exit_code, 0);
}

}  // namespace
}  // namespace benchfarm::process
