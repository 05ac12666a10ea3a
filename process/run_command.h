// RunCommand: runs a program to completion as a Subprocess (its own process group, stdin
// /dev/null, stdout and stderr into one pipe), keeping the tail of its output, and stops it (and
// everything it started in its group) at a time limit. Used by CommandFlasher for flash tools and
// by the agent for firmware builds.
//
// The output pipe is drained while the command runs (a tool that fills a 64 KiB pipe buffer would
// otherwise block and look hung), waiting on it and on the process's exit at once with ppoll(), so
// the time limit is enforced to the millisecond without sleeping in a loop. When the command exits,
// whatever it left running in its process group is killed.
//
// Thread-safety: RunCommand may be called from any number of threads at once.

#ifndef BENCHFARM_PROCESS_RUN_COMMAND_H_
#define BENCHFARM_PROCESS_RUN_COMMAND_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/process_exit.h"

namespace benchfarm::process {

struct RunCommandOptions {
  // argv[0] is a path, or a program name looked up in $PATH.
  std::vector<std::string> argv;
  // Empty: this process's working directory.
  std::string working_dir;
  // The longest the command may run.
  absl::Duration time_limit = absl::Minutes(2);
  // After the time limit: how long SIGTERM has to end the command before SIGKILL.
  absl::Duration term_grace = absl::Milliseconds(500);
  // How much of the output is kept (the tail).
  size_t max_output_bytes = 64 * 1024;
};

// One run of a command.
struct CommandRun {
  // The command line as run.
  std::vector<std::string> argv;
  pid_t pid = -1;
  // The last max_output_bytes of stdout+stderr, interleaved as written.
  std::string output;
  // How many bytes it wrote in all (more than output.size() when the head was dropped).
  size_t output_bytes = 0;
  // How it ended (also when killed at the time limit); nullopt if it could not be reaped.
  std::optional<base::ProcessExit> exit;
  // Whether it was killed because of the time limit or the deadline.
  bool timed_out = false;
  absl::Duration elapsed;

  // Exited with code 0, in time.
  bool succeeded() const { return !timed_out && exit && exit->exited() && exit->exit_code == 0; }
};

// Runs the command until it exits, the time limit, or the deadline (whichever is first; then it
// is stopped and timed_out is set). A command that runs and fails is an OK StatusOr whose run says
// how. Errors: InvalidArgument (empty argv); the errors of Subprocess::Start (NotFound,
// PermissionDenied, FailedPrecondition: the command cannot be started); DeadlineExceeded if the
// deadline passed before it started; Internal for an OS failure reading its output. Messages name
// `name` first.
absl::StatusOr<CommandRun> RunCommand(const RunCommandOptions& options, absl::Time deadline,
                                      const std::string& name);

// The command line for messages: arguments with spaces or quotes in single quotes.
std::string CommandLine(const std::vector<std::string>& argv);

// "; output:\n..." or "; output (last 2048 of 9000 bytes):\n..." or "; no output", for error
// messages.
std::string OutputForError(const std::string& output, size_t total);

}  // namespace benchfarm::process

#endif  // BENCHFARM_PROCESS_RUN_COMMAND_H_
