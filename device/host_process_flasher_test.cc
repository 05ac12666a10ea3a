// HostProcessFlasher against the real host-process board (//crt/host:board) over pipes and over a
// pty, and against small shell-script "images" made in TEST_TMPDIR that crash, print their
// resource limits, or misbehave.

#include "device/host_process_flasher.h"

#include <dirent.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/content_hash.h"
#include "device/host_session.h"
#include "device/rpc_client.h"
#include "process/sandbox.h"

namespace benchfarm::device {
namespace {

const std::string kBootSignature("\xFE\xFF\xFD\x03\x00\x00\x00\x00\x00\x02\x66\x77", 12);

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

std::string BoardPath() {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  return std::string(srcdir ? srcdir : ".") + "/" + (workspace ? workspace : "benchfarm") +
         "/crt/host/board";
}

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

std::string WriteScript(const std::string& name, const std::string& body, mode_t mode = 0755) {
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::trunc) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), mode);
  return path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

FirmwareImage Image(const std::string& path) {
  auto image = FirmwareImageFromFile(path);
  EXPECT_TRUE(image.ok()) << image.status();
  return image.ok() ? *image : FirmwareImage{path, ""};
}

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

// Everything until the link reports the end (the status is returned through `end`).
std::string ReadToEnd(Transport& t, absl::Status* end) {
  std::string got;
  uint8_t buf[256];
  for (;;) {
    absl::StatusOr<size_t> r = t.Read(absl::MakeSpan(buf), Soon());
    if (!r.ok()) {
      *end = r.status();
      return got;
    }
    got.append(reinterpret_cast<const char*>(buf), *r);
  }
}

bool Reaped(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

TEST(HostProcessFlasher, FlashesTheBoardAndServesItsLinkOnPipes) {
  HostProcessFlasher flasher;
  EXPECT_EQ(flasher.Name(), "host-process");
  EXPECT_EQ(flasher.transport(), nullptr);
  EXPECT_EQ(flasher.pid(), -1);

  const FirmwareImage image = Image(BoardPath());
  absl::Status s = flasher.Flash(image, Soon());
  ASSERT_TRUE(s.ok()) << s;
  ASSERT_NE(flasher.transport(), nullptr);
  EXPECT_EQ(flasher.transport()->Name(), "process:" + BoardPath());
  EXPECT_GT(flasher.pid(), 0);
  EXPECT_EQ(getpgid(flasher.pid()), flasher.pid());  // its own process group
  ASSERT_TRUE(flasher.image().has_value());
  EXPECT_EQ(flasher.image()->content_hash, image.content_hash);
  EXPECT_FALSE(flasher.ExitStatus().has_value());
  EXPECT_FALSE(flasher.Crashed().has_value());

  ASSERT_TRUE(flasher.transport()->Open().ok());  // already open
  auto boot = ReadExactly(*flasher.transport(), kBootSignature.size(), Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, kBootSignature);
}

TEST(HostProcessFlasher, FlashingAgainReplacesTheProcess) {
  HostProcessFlasher flasher;
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  const pid_t first = flasher.pid();
  auto boot = ReadExactly(*flasher.transport(), kBootSignature.size(), Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();

  absl::Status s = flasher.Flash(Image(BoardPath()), Soon());
  ASSERT_TRUE(s.ok()) << s;
  const pid_t second = flasher.pid();
  EXPECT_NE(second, first);
  EXPECT_TRUE(Reaped(first));
  EXPECT_FALSE(flasher.Crashed().has_value());
  boot = ReadExactly(*flasher.transport(), kBootSignature.size(), Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, kBootSignature);
}

TEST(HostProcessFlasher, ServesTheLinkOnAPty) {
  HostProcessFlasherOptions options;
  options.use_pty = true;
  HostProcessFlasher flasher(options);
  absl::Status s = flasher.Flash(Image(BoardPath()), Soon());
  ASSERT_TRUE(s.ok()) << s;
  Transport* link = flasher.transport();
  ASSERT_NE(link, nullptr);
  // The board's own pty, in its sandbox: /proc/<sandbox init>/root/dev/pts/N from here.
  EXPECT_TRUE(absl::StartsWith(link->Name(), "pty:/proc/")) << link->Name();
  EXPECT_TRUE(absl::StrContains(link->Name(), "/root/dev/pts/")) << link->Name();
  auto boot = ReadExactly(*link, kBootSignature.size(), Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, kBootSignature);

  // The pty survives closing and reopening our end.
  link->Close();
  ASSERT_TRUE(link->Open().ok());

  const pid_t first = flasher.pid();
  s = flasher.Flash(Image(BoardPath()), Soon());
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_TRUE(Reaped(first));
  boot = ReadExactly(*flasher.transport(), kBootSignature.size(), Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
  EXPECT_EQ(*boot, kBootSignature);

  auto stopped = flasher.Stop(Soon());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0) << stopped->ToString();
}

TEST(HostProcessFlasher, TheBoardReportsTheImageHashAndExtraArgs) {
  HostProcessFlasherOptions options;
  options.extra_args = {"--kind", "host-test"};
  HostProcessFlasher flasher(options);
  const FirmwareImage image = Image(BoardPath());
  ASSERT_TRUE(flasher.Flash(image, Soon()).ok());
  HostSession session(flasher.transport(), SessionOptions{});
  absl::Status s = session.Connect(Soon());
  ASSERT_TRUE(s.ok()) << s;
  RpcClient client(&session);
  auto info = client.GetDeviceInfo(Soon());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->board_kind, "host-test");
  // What the agent compares to skip flashing: the board's own hash of its executable.
  EXPECT_EQ(info->firmware_hash, image.content_hash);
}

TEST(HostProcessFlasher, TheBoardReportsTheImageHashInASandboxWithoutProc) {
  process::SetSandboxProcForTesting(
      false);  // as after process::CheckSandbox() on a host that refuses a fresh /proc
  HostProcessFlasher flasher;
  const FirmwareImage image = Image(BoardPath());
  absl::Status flashed = flasher.Flash(image, Soon());
  process::SetSandboxProcForTesting(true);
  ASSERT_TRUE(flashed.ok()) << flashed;
  HostSession session(flasher.transport(), SessionOptions{});
  ASSERT_TRUE(session.Connect(Soon()).ok());
  RpcClient client(&session);
  auto info = client.GetDeviceInfo(Soon());
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->firmware_hash, image.content_hash);
}

TEST(HostProcessFlasher, StopIsClean) {
  HostProcessFlasher flasher;
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  const pid_t pid = flasher.pid();
  Transport* link = flasher.transport();
  auto stopped = flasher.Stop(Soon());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_TRUE(stopped->exited());
  EXPECT_EQ(stopped->exit_code, 0);
  EXPECT_TRUE(Reaped(pid));
  EXPECT_FALSE(flasher.Crashed().has_value());
  ASSERT_TRUE(flasher.ExitStatus().has_value());
  EXPECT_EQ(flasher.ExitStatus()->exit_code, 0);
  // The transport stays valid, closed.
  EXPECT_EQ(flasher.transport(), link);
  uint8_t buf[4];
  EXPECT_TRUE(absl::IsFailedPrecondition(link->Read(absl::MakeSpan(buf), Soon()).status()));
  // Stopping again reports the same end.
  stopped = flasher.Stop(Soon());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->exit_code, 0);
}

TEST(HostProcessFlasher, StopWithoutABoard) {
  HostProcessFlasher flasher;
  auto stopped = flasher.Stop(Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(stopped.status())) << stopped.status();
  EXPECT_TRUE(absl::IsFailedPrecondition(flasher.WaitExit(Soon()).status()));
  EXPECT_FALSE(flasher.ExitStatus().has_value());
}

TEST(HostProcessFlasher, StopKillsABoardThatIgnoresSigterm) {
  HostProcessFlasherOptions options;
  options.term_grace = absl::Milliseconds(100);
  HostProcessFlasher flasher(options);
  const std::string stubborn =
      WriteScript("stubborn", "trap '' TERM\necho ready\nwhile :; do sleep 0.05; done\n");
  ASSERT_TRUE(flasher.Flash(Image(stubborn), Soon()).ok());
  auto ready = ReadExactly(*flasher.transport(), 6, Soon());
  ASSERT_TRUE(ready.ok()) << ready.status();
  auto stopped = flasher.Stop(Soon());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->signal, SIGKILL);
  EXPECT_FALSE(flasher.Crashed().has_value());  // we killed it: not a crash
}

TEST(HostProcessFlasher, ReportsACrashWithItsSignal) {
  HostProcessFlasher flasher;
  const std::string crasher = WriteScript("crasher", "kill -SEGV $$\n");
  ASSERT_TRUE(flasher.Flash(Image(crasher), Soon()).ok());
  auto ended = flasher.WaitExit(Soon());
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->signal, SIGSEGV);
  auto crashed = flasher.Crashed();
  ASSERT_TRUE(crashed.has_value());
  EXPECT_EQ(crashed->signal, 11);

  // The link says how the board died.
  absl::Status end;
  EXPECT_EQ(ReadToEnd(*flasher.transport(), &end), "");
  EXPECT_TRUE(absl::IsUnavailable(end)) << end;
  EXPECT_TRUE(absl::StrContains(end.message(), "killed by signal 11")) << end;

  // Stopping a crashed board returns its crash, and it stays a crash.
  auto stopped = flasher.Stop(Soon());
  ASSERT_TRUE(stopped.ok()) << stopped.status();
  EXPECT_EQ(stopped->signal, SIGSEGV);
  ASSERT_TRUE(flasher.Crashed().has_value());
}

TEST(HostProcessFlasher, AppliesResourceLimits) {
  HostProcessFlasherOptions options;
  options.max_address_space_bytes = 256ull << 20;
  options.max_open_files = 64;
  options.max_cpu_seconds = 7;
  HostProcessFlasher flasher(options);
  const std::string limits = WriteScript("limits", "ulimit -v\nulimit -n\nulimit -t\nulimit -c\n");
  ASSERT_TRUE(flasher.Flash(Image(limits), Soon()).ok());
  absl::Status end;
  EXPECT_EQ(ReadToEnd(*flasher.transport(), &end), "262144\n64\n7\n0\n");  // -v is in KiB
  EXPECT_TRUE(absl::IsUnavailable(end)) << end;
}

TEST(HostProcessFlasher, TheBoardRunsWithTheDefaultAddressSpaceLimit) {
  HostProcessFlasher flasher;
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  const std::string limits = ReadFile(absl::StrCat("/proc/", flasher.pid(), "/limits"));
  bool found = false;
  std::istringstream lines(limits);
  for (std::string line; std::getline(lines, line);) {
    const std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (absl::StartsWith(line, "Max address space")) {  // Max address space <soft> <hard> bytes
      found = true;
      ASSERT_EQ(words.size(), 6u) << line;
      EXPECT_EQ(words[3], "1073741824") << line;
      EXPECT_EQ(words[4], "1073741824") << line;
    }
    if (absl::StartsWith(line, "Max core file size")) {  // no core files from crashing boards
      ASSERT_EQ(words.size(), 7u) << line;
      EXPECT_EQ(words[4], "0") << line;
    }
  }
  EXPECT_TRUE(found) << limits;
  // The board still works under the limit.
  auto boot = ReadExactly(*flasher.transport(), kBootSignature.size(), Soon());
  ASSERT_TRUE(boot.ok()) << boot.status();
}

TEST(HostProcessFlasher, StderrGoesToTheConfiguredFile) {
  HostProcessFlasherOptions options;
  options.stderr_path = TempDir() + "/board.stderr";
  unlink(options.stderr_path.c_str());
  HostProcessFlasher flasher(options);
  ASSERT_TRUE(flasher.Flash(Image(WriteScript("noisy", "echo diagnostics >&2\n")), Soon()).ok());
  auto ended = flasher.WaitExit(Soon());
  ASSERT_TRUE(ended.ok()) << ended.status();
  EXPECT_EQ(ended->exit_code, 0);
  EXPECT_FALSE(flasher.Crashed().has_value());
  EXPECT_EQ(ReadFile(options.stderr_path), "diagnostics\n");
}

TEST(HostProcessFlasher, ImageErrorsNameTheImage) {
  HostProcessFlasher flasher;
  const std::string missing = TempDir() + "/no-such-board";
  absl::Status s = flasher.Flash({missing, ""}, Soon());
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), missing)) << s;

  const std::string not_executable = WriteScript("not-executable", "exit 0\n", 0644);
  s = flasher.Flash({not_executable, ""}, Soon());
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), not_executable)) << s;

  s = flasher.Flash({TempDir(), ""}, Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;

  s = flasher.Flash({"", ""}, Soon());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;

  EXPECT_EQ(flasher.transport(), nullptr);
  EXPECT_EQ(flasher.pid(), -1);
}

TEST(HostProcessFlasher, AFailedFlashLeavesNoBoard) {
  HostProcessFlasher flasher;
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  const pid_t pid = flasher.pid();
  absl::Status s = flasher.Flash({TempDir() + "/no-such-board", ""}, Soon());
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  // The image check comes first: the old board still runs.
  EXPECT_EQ(flasher.pid(), pid);
  s = flasher.Flash({WriteScript("not-executable-2", "exit 0\n", 0644), ""}, Soon());
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_TRUE(Reaped(pid));
  EXPECT_EQ(flasher.transport(), nullptr);
  EXPECT_EQ(flasher.pid(), -1);
}

TEST(HostProcessFlasher, PtyImagesThatMisbehave) {
  HostProcessFlasherOptions options;
  options.use_pty = true;
  HostProcessFlasher flasher(options);

  absl::Status s = flasher.Flash(Image(WriteScript("no-pty", "echo hello\nsleep 30\n")), Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "hello")) << s;

  s = flasher.Flash(Image(WriteScript("dies", "exit 3\n")), Soon());
  EXPECT_TRUE(absl::IsUnknown(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "exit code 3")) << s;

  const absl::Time start = absl::Now();
  s = flasher.Flash(Image(WriteScript("silent", "exec sleep 30\n")),
                    absl::Now() + absl::Milliseconds(300));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(flasher.transport(), nullptr);
}

TEST(HostProcessFlasher, DestructionStopsTheBoard) {
  pid_t pid;
  {
    HostProcessFlasher flasher;
    ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
    pid = flasher.pid();
  }
  EXPECT_TRUE(Reaped(pid));
}

// Processes whose command line contains `marker`.
int ProcessesWith(const std::string& marker) {
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  while (struct dirent* e = readdir(proc)) {
    const std::string cmdline = ReadFile(absl::StrCat("/proc/", e->d_name, "/cmdline"));
    if (absl::StrContains(cmdline, marker)) ++found;
  }
  closedir(proc);
  return found;
}

TEST(HostProcessFlasher, TheBoardRunsInItsSandbox) {
  HostProcessFlasher flasher;
  const std::string secret = TempDir() + "/host-secret";
  std::ofstream(secret) << "host-only\n";
  const std::string probe = TempDir() + "/probe";
  std::ofstream(probe, std::ios::trunc)
      << "#!/bin/bash\n"  // for /dev/tcp
      << absl::StrCat("id -u; cat ", secret, " 2>&1; cat /etc/shadow 2>&1; echo x > ", TempDir(),
                      "/written 2>&1 || echo no-write; echo x > /tmp/t && echo tmp-ok; ",
                      "(exec 3<>/dev/tcp/127.0.0.1/22) 2>/dev/null || echo no-net\n");
  chmod(probe.c_str(), 0755);
  ASSERT_TRUE(flasher.Flash(Image(probe), Soon()).ok());
  absl::Status end;
  const std::string out = ReadToEnd(*flasher.transport(), &end);
  EXPECT_NE(out.substr(0, 2), "0\n") << out;  // not root
  EXPECT_FALSE(absl::StrContains(out, "host-only")) << out;
  EXPECT_TRUE(absl::StrContains(out, "/etc/shadow: No such file")) << out;
  EXPECT_TRUE(absl::StrContains(out, "no-write")) << out;
  EXPECT_TRUE(absl::StrContains(out, "tmp-ok")) << out;  // its private /tmp
  EXPECT_TRUE(absl::StrContains(out, "no-net")) << out;
  struct stat st;
  EXPECT_NE(stat((TempDir() + "/written").c_str(), &st), 0);
}

TEST(HostProcessFlasher, NothingTheBoardStartedOutlivesTheNextFlash) {
  HostProcessFlasher flasher;
  const std::string marker = absl::StrCat("4242.", getpid());
  // The marker put together in the shell, so that only the daemon's command line has it.
  const std::string daemon = WriteScript(
      "daemon",
      absl::StrCat("m=4242.; m=${m}", getpid(),
                   "; setsid sleep $m </dev/null >/dev/null 2>&1 & echo ready; exec sleep 600\n"));
  ASSERT_TRUE(flasher.Flash(Image(daemon), Soon()).ok());
  auto ready = ReadExactly(*flasher.transport(), 6, Soon());
  ASSERT_TRUE(ready.ok()) << ready.status();
  // Settled: while setsid hands over to sleep, /proc may show the marker twice or not at all
  // (a forked copy, a zombie, a command line read mid-exec); a look then is not the answer.
  absl::Time until = absl::Now() + absl::Seconds(5);
  int seen = 0;
  while ((seen = ProcessesWith(marker)) != 1 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(seen, 1);
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  until = absl::Now() + absl::Seconds(5);
  while ((seen = ProcessesWith(marker)) > 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_EQ(seen, 0);
}

// The process ids of `root` and everything below it (by the PPid of every /proc/<pid>/status).
std::vector<pid_t> Descendants(pid_t root) {
  std::vector<std::pair<pid_t, pid_t>> parent_of;  // (pid, ppid)
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return {};
  while (struct dirent* e = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    for (absl::string_view line :
         absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
      if (absl::StartsWith(line, "PPid:")) {
        parent_of.emplace_back(pid,
                               static_cast<pid_t>(std::atoi(std::string(line.substr(5)).c_str())));
      }
    }
  }
  closedir(proc);
  std::vector<pid_t> found = {root};
  for (size_t i = 0; i < found.size(); ++i) {
    for (const auto& [pid, ppid] : parent_of) {
      if (ppid == found[i]) found.push_back(pid);
    }
  }
  return found;
}

// "Cpus_allowed_list" of the board process itself (the one running /bf/image in the sandbox
// below `sandbox_pid`), "" if not found.
std::string BoardCpus(pid_t sandbox_pid) {
  for (pid_t pid : Descendants(sandbox_pid)) {
    const std::string cmdline = ReadFile(absl::StrCat("/proc/", pid, "/cmdline"));
    if (!absl::StartsWith(cmdline, std::string("/bf/image\0", 10))) continue;
    for (absl::string_view line :
         absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/status")), '\n')) {
      if (absl::StartsWith(line, "Cpus_allowed_list:")) {
        return std::string(absl::StripAsciiWhitespace(line.substr(18)));
      }
    }
  }
  return "";
}

TEST(HostProcessFlasher, PinsTheBoardToItsCpuInsideTheSandbox) {
  absl::StatusOr<std::vector<int>> allowed = AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  ASSERT_FALSE(allowed->empty());
  for (int cpu : {allowed->front(), allowed->back()}) {
    SCOPED_TRACE(cpu);
    HostProcessFlasherOptions options;
    options.cpu_affinity = absl::StrCat(cpu);
    HostProcessFlasher flasher(options);
    ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
    // It serves (it pinned itself before the boot signature)...
    HostSession session(flasher.transport(), SessionOptions{});
    absl::Status s = session.Connect(Soon());
    ASSERT_TRUE(s.ok()) << s;
    RpcClient client(&session);
    ASSERT_TRUE(client.GetDeviceInfo(Soon()).ok());
    // ... on that CPU alone.
    EXPECT_EQ(BoardCpus(flasher.pid()), absl::StrCat(cpu));
  }
}

TEST(HostProcessFlasher, AutoAffinitySpreadsBoardsOverTheAgentsCpus) {
  absl::StatusOr<std::vector<int>> allowed = AllowedCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  // What the board is started with: a script image that prints its arguments.
  const std::string args = WriteScript("args", "echo \"$@\"\n");
  std::set<std::string> seen;
  for (const char* id : {"hp-0", "hp-1", "hp-0"}) {
    HostProcessFlasherOptions options;
    options.cpu_affinity = "auto";
    options.board_id = id;
    HostProcessFlasher flasher(options);
    ASSERT_TRUE(flasher.Flash(Image(args), Soon()).ok());
    absl::Status end;
    std::string out = ReadToEnd(*flasher.transport(), &end);
    absl::StatusOr<std::optional<int>> cpu = ResolveCpuAffinity("auto", id, *allowed);
    ASSERT_TRUE(cpu.ok() && cpu->has_value());
    EXPECT_EQ(out, absl::StrCat("--cpu ", **cpu, "\n")) << id;
    EXPECT_TRUE(std::find(allowed->begin(), allowed->end(), **cpu) != allowed->end());
    seen.insert(out);
  }
  // hp-0 twice on the same CPU; hp-0 and hp-1 apart when the agent may use two or more CPUs.
  EXPECT_EQ(seen.size(), std::min<size_t>(2, allowed->size()));

  // The real board with "auto": pinned to the CPU the hash picks.
  HostProcessFlasherOptions options;
  options.cpu_affinity = "auto";
  options.board_id = "hp-7";
  HostProcessFlasher flasher(options);
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  HostSession session(flasher.transport(), SessionOptions{});
  ASSERT_TRUE(session.Connect(Soon()).ok());
  absl::StatusOr<std::optional<int>> cpu = ResolveCpuAffinity("auto", "hp-7", *allowed);
  ASSERT_TRUE(cpu.ok() && cpu->has_value());
  EXPECT_EQ(BoardCpus(flasher.pid()), absl::StrCat(**cpu));
}

TEST(HostProcessFlasher, NoAffinityLeavesTheBoardUnpinned) {
  const std::string args = WriteScript("args-none", "echo \"[$@]\"\n");
  HostProcessFlasher flasher;
  ASSERT_TRUE(flasher.Flash(Image(args), Soon()).ok());
  absl::Status end;
  EXPECT_EQ(ReadToEnd(*flasher.transport(), &end), "[]\n");
}

TEST(HostProcessFlasher, BadAffinityIsRefusedBeforeAnythingStarts) {
  for (const char* bad : {"x", "-1", "1.5", " 1", "99999", "AUTO"}) {
    SCOPED_TRACE(bad);
    HostProcessFlasherOptions options;
    options.cpu_affinity = bad;
    HostProcessFlasher flasher(options);
    absl::Status s = flasher.Flash(Image(BoardPath()), Soon());
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_TRUE(absl::StrContains(s.message(), "cpu_affinity")) << s;
    EXPECT_EQ(flasher.pid(), -1);
  }
  // A CPU the host does not have.
  HostProcessFlasherOptions options;
  options.cpu_affinity = "1000";
  HostProcessFlasher flasher(options);
  absl::Status s = flasher.Flash(Image(BoardPath()), Soon());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "this host has CPUs 0 to")) << s;
}

TEST(ResolveCpuAffinity, NamesTheCpu) {
  const std::vector<int> cpus = {2, 3, 5, 8};
  EXPECT_EQ(*ResolveCpuAffinity("", "b", cpus), std::nullopt);
  EXPECT_EQ(*ResolveCpuAffinity("0", "b", cpus), 0);
  EXPECT_EQ(*ResolveCpuAffinity("17", "b", cpus), 17);  // need not be one of this process's
  // auto: one of the allowed CPUs, the same for the same id, all of them used by a few ids.
  std::set<int> used;
  for (int i = 0; i < 32; ++i) {
    const std::string id = absl::StrCat("hp-", i);
    absl::StatusOr<std::optional<int>> a = ResolveCpuAffinity("auto", id, cpus);
    ASSERT_TRUE(a.ok() && a->has_value());
    EXPECT_TRUE(std::find(cpus.begin(), cpus.end(), **a) != cpus.end());
    EXPECT_EQ(*ResolveCpuAffinity("auto", id, cpus), *a);
    used.insert(**a);
  }
  EXPECT_EQ(used.size(), cpus.size());
  EXPECT_NE(*ResolveCpuAffinity("auto", "hp-0", std::vector<int>{0, 1}),
            *ResolveCpuAffinity("auto", "hp-1", std::vector<int>{0, 1}));
  EXPECT_TRUE(absl::IsInvalidArgument(ResolveCpuAffinity("auto", "b", {}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ResolveCpuAffinity("1024", "b", cpus).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(ResolveCpuAffinity("+1", "b", cpus).status()));
}

TEST(HostProcessFlasher, IsAFlasher) {
  HostProcessFlasher host;
  Flasher& flasher = host;
  ASSERT_TRUE(flasher.Flash(Image(BoardPath()), Soon()).ok());
  EXPECT_GT(host.pid(), 0);
}

}  // namespace
}  // namespace benchfarm::device
