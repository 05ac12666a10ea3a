// leftovers_test's stand-in for an agent that gets killed: it starts children the ways the agent
// does, says on stdout what it started, and waits to be killed.
//
//   leftovers_test_helper children RECORD_DIR
//       records children in RECORD_DIR; starts `sleep 600` from a thread that then ends, and
//       `sh -c 'sleep 600 & echo $!; wait'` (the background sleep has no parent-death signal: it
//       is what a child's own child left behind looks like). Prints "thread-child PID" (after
//       checking the child outlived its thread), "shell PID", "escaped PID" and "ready", then
//       sleeps until killed.
//   leftovers_test_helper sandbox-then-die RECORD_DIR TOKEN DELAY_MS
//       records children in RECORD_DIR, starts `sh -c "sleep 600" TOKEN` in a sandbox
//       (process/sandbox.h) and SIGKILLs itself DELAY_MS after Start() returned — while bwrap is
//       still building the sandbox, for a delay of a few milliseconds.

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "process/sandbox.h"
#include "process/subprocess.h"

namespace {

using benchfarm::process::Subprocess;
using benchfarm::process::SubprocessOptions;

int Fail(const std::string& message) {
  std::fprintf(stderr, "leftovers_test_helper: %s\n", message.c_str());
  return 2;
}

int Children() {
  std::unique_ptr<Subprocess> from_thread;
  absl::Status started;
  std::thread([&] {
    SubprocessOptions o;
    o.argv = {"sleep", "600"};
    o.stdout_mode = benchfarm::process::StdioMode::kNull;
    absl::StatusOr<std::unique_ptr<Subprocess>> s = Subprocess::Start(o);
    if (s.ok()) from_thread = *std::move(s);
    started = s.status();
  }).join();
  if (!started.ok()) return Fail(std::string(started.message()));
  // A parent-death signal tied to the ended thread would have come by now.
  absl::SleepFor(absl::Milliseconds(300));
  if (from_thread->ExitStatus().has_value()) return Fail("the child died with its thread");
  std::printf("thread-child %d\n", from_thread->pid());

  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 600 & echo $!; wait"};
  absl::StatusOr<std::unique_ptr<Subprocess>> shell = Subprocess::Start(o);
  if (!shell.ok()) return Fail(std::string(shell.status().message()));
  std::string line;
  char c;
  const int out = (*shell)->TakeStdout();
  while (read(out, &c, 1) == 1 && c != '\n') line.push_back(c);
  int escaped;
  if (!absl::SimpleAtoi(line, &escaped)) return Fail("no pid from the shell: " + line);
  std::printf("shell %d\nescaped %d\nready\n", (*shell)->pid(), escaped);
  std::fflush(stdout);
  for (;;) pause();
}

int SandboxThenDie(const std::string& token, int delay_ms) {
  SubprocessOptions o;
  o.argv = {"/bin/sh", "-c", "sleep 600", token};
  o.stdout_mode = benchfarm::process::StdioMode::kNull;
  absl::StatusOr<SubprocessOptions> sandboxed =
      benchfarm::process::SandboxedSubprocess(benchfarm::process::SandboxOptions(), o);
  if (!sandboxed.ok()) return Fail(std::string(sandboxed.status().message()));
  absl::StatusOr<std::unique_ptr<Subprocess>> s = Subprocess::Start(*sandboxed);
  if (!s.ok()) return Fail(std::string(s.status().message()));
  absl::SleepFor(absl::Milliseconds(delay_ms));
  raise(SIGKILL);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Fail("usage: children DIR | sandbox-then-die DIR TOKEN DELAY_MS");
  const std::string mode = argv[1];
  benchfarm::process::RecordChildrenIn(argv[2]);
  if (mode == "children") return Children();
  int delay_ms;
  if (mode == "sandbox-then-die" && argc == 5 && absl::SimpleAtoi(argv[4], &delay_ms)) {
    return SandboxThenDie(argv[3], delay_ms);
  }
  return Fail("unknown mode " + mode);
}
