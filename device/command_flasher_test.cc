// CommandFlasher with /bin/sh and /bin/echo standing in for OpenOCD: substitution, captured
// output, failures with the exit code and output tail, the time limit, and no leftover processes.

#include "device/command_flasher.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

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
#include "base/content_hash.h"

namespace benchfarm::device {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir ? dir : "/tmp";
}

FirmwareImage MakeImage(const std::string& name = "firmware.elf") {
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path, std::ios::trunc) << "not really an ELF";
  return FirmwareImage{path, base::HashBytes("not really an ELF")};
}

CommandFlasherOptions Options(std::vector<std::string> argv) {
  CommandFlasherOptions options;
  options.argv_template = std::move(argv);
  options.time_limit = absl::Seconds(10);
  return options;
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

// Whether a live (not zombie) process is in process group `pgid`, from /proc/<pid>/stat.
bool GroupHasLiveMembers(pid_t pgid) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return true;
  bool live = false;
  while (struct dirent* entry = readdir(proc)) {
    int pid;
    if (!absl::SimpleAtoi(entry->d_name, &pid)) continue;
    const std::string stat = ReadProcFile(absl::StrCat("/proc/", pid, "/stat"));
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    // After "comm)": state ppid pgrp ...
    std::istringstream rest(stat.substr(paren + 1));
    std::string state;
    int ppid = 0, pgrp = 0;
    rest >> state >> ppid >> pgrp;
    if (pgrp == pgid && state != "Z") live = true;
  }
  closedir(proc);
  return live;
}

// True once no live process is left in group `pgid` (orphans are reaped by init, not by us).
bool GroupGone(pid_t pgid) {
  const absl::Time deadline = Soon();
  while (GroupHasLiveMembers(pgid)) {
    if (absl::Now() > deadline) return false;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return true;
}

TEST(SubstituteFlashPlaceholders, EveryOccurrenceAndNothingElse) {
  EXPECT_EQ(SubstituteFlashPlaceholders("program {image} verify reset exit", "/i/a.elf", "h"),
            "program /i/a.elf verify reset exit");
  EXPECT_EQ(SubstituteFlashPlaceholders("{image}:{image}@{hash}", "x", "0123"), "x:x@0123");
  EXPECT_EQ(SubstituteFlashPlaceholders("{ images } {Image} {{image}}", "x", "h"),
            "{ images } {Image} {x}");
  // A path containing a placeholder is not substituted again.
  EXPECT_EQ(SubstituteFlashPlaceholders("{image} {hash}", "/p/{hash}", "h"), "/p/{hash} h");
}

TEST(CommandFlasher, RunsTheCommandWithThePlaceholdersSubstituted) {
  const FirmwareImage image = MakeImage();
  CommandFlasher flasher(Options({"/bin/sh", "-c", "echo flashing {image} {hash}"}));
  EXPECT_EQ(flasher.Name(), "command:/bin/sh");
  EXPECT_FALSE(flasher.last_run().has_value());
  absl::Status s = flasher.Flash(image, Soon());
  ASSERT_TRUE(s.ok()) << s;
  auto run = flasher.last_run();
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->output, absl::StrCat("flashing ", image.path, " ", image.content_hash, "\n"));
  EXPECT_EQ(run->output_bytes, run->output.size());
  ASSERT_EQ(run->argv.size(), 3u);
  EXPECT_EQ(run->argv[2], absl::StrCat("echo flashing ", image.path, " ", image.content_hash));
  ASSERT_TRUE(run->exit.has_value());
  EXPECT_EQ(run->exit->exit_code, 0);
  EXPECT_FALSE(run->timed_out);
  EXPECT_GT(run->pid, 0);
}

TEST(CommandFlasher, OpenOcdStyleArgumentsKeepTheirBraces) {
  const FirmwareImage image = MakeImage();
  CommandFlasher flasher(
      Options({"echo", "-f", "board.cfg", "-c", "program {image} verify {reset} exit"}));
  EXPECT_EQ(flasher.Name(), "command:echo");
  ASSERT_TRUE(flasher.Flash(image, Soon()).ok());
  EXPECT_EQ(flasher.last_run()->output,
            absl::StrCat("-f board.cfg -c program ", image.path, " verify {reset} exit\n"));
}

TEST(CommandFlasher, ComputesTheHashWhenTheImageHasNone) {
  FirmwareImage image = MakeImage();
  const std::string expected = image.content_hash;
  image.content_hash.clear();
  CommandFlasher flasher(Options({"echo", "{hash}"}));
  ASSERT_TRUE(flasher.Flash(image, Soon()).ok());
  EXPECT_EQ(flasher.last_run()->output, expected + "\n");
}

TEST(CommandFlasher, CapturesStderrToo) {
  CommandFlasher flasher(Options({"/bin/sh", "-c", "echo out; echo err >&2"}));
  ASSERT_TRUE(flasher.Flash(MakeImage(), Soon()).ok());
  EXPECT_EQ(flasher.last_run()->output, "out\nerr\n");
}

TEST(CommandFlasher, ANonZeroExitIsUnknownWithTheCodeAndTheOutput) {
  CommandFlasher flasher(
      Options({"/bin/sh", "-c", "echo 'Error: target not examined' >&2; exit 3"}));
  absl::Status s = flasher.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsUnknown(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "exit code 3")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "Error: target not examined")) << s;
  EXPECT_TRUE(absl::StartsWith(s.message(), "command:/bin/sh")) << s;
  ASSERT_TRUE(flasher.last_run().has_value());
  EXPECT_EQ(flasher.last_run()->exit->exit_code, 3);
}

TEST(CommandFlasher, ACrashedToolIsUnknownWithTheSignal) {
  CommandFlasher flasher(Options({"/bin/sh", "-c", "kill -ABRT $$"}));
  absl::Status s = flasher.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsUnknown(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "signal 6")) << s;
}

TEST(CommandFlasher, OutputIsBoundedToItsTail) {
  CommandFlasherOptions options =
      Options({"/bin/sh", "-c",
               "i=0; while [ $i -lt 5000 ]; do echo line-$i-of-padding-padding; i=$((i+1)); done; "
               "echo LAST; exit 1"});
  options.max_output_bytes = 4096;
  CommandFlasher flasher(options);
  absl::Status s = flasher.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsUnknown(s)) << s;
  auto run = flasher.last_run();
  ASSERT_TRUE(run.has_value());
  EXPECT_EQ(run->output.size(), 4096u);
  EXPECT_GT(run->output_bytes, 100000u);
  EXPECT_TRUE(absl::EndsWith(run->output, "line-4999-of-padding-padding\nLAST\n"));
  // The error carries about 2 KiB of it, the end included.
  EXPECT_LT(s.message().size(), 3000u) << s.message().size();
  EXPECT_TRUE(absl::EndsWith(s.message(), "LAST\n")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "last 2048 of")) << s;
}

TEST(CommandFlasher, TheTimeLimitKillsTheCommand) {
  CommandFlasherOptions options = Options({"/bin/sh", "-c", "echo started; sleep 5; echo done"});
  options.time_limit = absl::Milliseconds(200);
  CommandFlasher flasher(options);
  const absl::Time start = absl::Now();
  absl::Status s = flasher.Flash(MakeImage(), Soon());
  const absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_GE(took, absl::Milliseconds(190));
  EXPECT_LT(took, absl::Seconds(1));
  EXPECT_TRUE(absl::StrContains(s.message(), "/bin/sh")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "time limit of 200ms")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "started")) << s;
  auto run = flasher.last_run();
  ASSERT_TRUE(run.has_value());
  EXPECT_TRUE(run->timed_out);
  ASSERT_TRUE(run->exit.has_value());
  EXPECT_TRUE(run->exit->signaled());
  EXPECT_EQ(run->output, "started\n");
  // The shell and its sleep are gone.
  EXPECT_TRUE(GroupGone(run->pid));
}

TEST(CommandFlasher, TheCallersDeadlineAlsoLimitsIt) {
  CommandFlasher flasher(Options({"sleep", "5"}));
  const absl::Time start = absl::Now();
  absl::Status s = flasher.Flash(MakeImage(), start + absl::Milliseconds(200));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(1));
  EXPECT_TRUE(absl::StrContains(s.message(), "by the deadline")) << s;

  s = flasher.Flash(MakeImage(), absl::Now() - absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
}

TEST(CommandFlasher, ATermIgnoringToolIsKilled) {
  CommandFlasherOptions options =
      Options({"/bin/sh", "-c", "trap '' TERM; while :; do sleep 0.05; done"});
  options.time_limit = absl::Milliseconds(100);
  options.term_grace = absl::Milliseconds(100);
  CommandFlasher flasher(options);
  const absl::Time start = absl::Now();
  absl::Status s = flasher.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(flasher.last_run()->exit->signal, SIGKILL);
  EXPECT_TRUE(GroupGone(flasher.last_run()->pid));
}

TEST(CommandFlasher, LeftoverProcessesAreKilledWhenTheCommandExits) {
  CommandFlasher flasher(Options({"/bin/sh", "-c", "sleep 30 & echo started"}));
  const absl::Time start = absl::Now();
  absl::Status s = flasher.Flash(MakeImage(), Soon());
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_EQ(flasher.last_run()->output, "started\n");
  EXPECT_TRUE(GroupGone(flasher.last_run()->pid));
}

TEST(CommandFlasher, WorkingDirectory) {
  CommandFlasherOptions options = Options({"/bin/sh", "-c", "pwd -P"});
  options.working_dir = TempDir();
  CommandFlasher flasher(options);
  ASSERT_TRUE(flasher.Flash(MakeImage(), Soon()).ok());
  char real[4096];
  ASSERT_NE(realpath(TempDir().c_str(), real), nullptr);
  EXPECT_EQ(flasher.last_run()->output, std::string(real) + "\n");
}

TEST(CommandFlasher, AMissingImageIsNotFoundAndRunsNothing) {
  const std::string marker = TempDir() + "/ran";
  unlink(marker.c_str());
  CommandFlasher flasher(Options({"/bin/sh", "-c", "touch " + marker}));
  const std::string missing = TempDir() + "/missing.elf";
  absl::Status s = flasher.Flash({missing, ""}, Soon());
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), missing)) << s;
  EXPECT_FALSE(flasher.last_run().has_value());
  EXPECT_NE(access(marker.c_str(), F_OK), 0);
}

TEST(CommandFlasher, ConfigurationErrors) {
  CommandFlasher empty(CommandFlasherOptions{});
  EXPECT_EQ(empty.Name(), "command:");
  absl::Status s = empty.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;

  CommandFlasher no_tool(Options({"benchfarm-no-such-openocd", "{image}"}));
  s = no_tool.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "benchfarm-no-such-openocd")) << s;

  CommandFlasherOptions options = Options({"/bin/true"});
  options.working_dir = TempDir() + "/no-such-dir";
  CommandFlasher no_dir(options);
  s = no_dir.Flash(MakeImage(), Soon());
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "no-such-dir")) << s;
}

TEST(CommandFlasher, IsAFlasher) {
  CommandFlasher command(Options({"/bin/true"}));
  Flasher& flasher = command;
  EXPECT_TRUE(flasher.Flash(MakeImage(), Soon()).ok());
}

}  // namespace
}  // namespace benchfarm::device
