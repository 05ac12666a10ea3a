// CommandFlasher: the Flasher for boards written by an external tool — OpenOCD, pyOCD, esptool,
// a vendor script. The command line is configuration:
//     {"openocd", "-f", "board.cfg", "-c", "program {image} verify reset exit"}
// Flash(image) substitutes, inside every argument and as often as they occur:
//     {image}  image.path
//     {hash}   image.content_hash (computed with HashFile() if the image carries none)
// Nothing else is touched: other braces (Tcl's, in OpenOCD commands) stay as they are. The
// arguments go to execve() directly, with no shell: a template that runs "sh -c" must quote the
// substituted values itself.
//
// The command runs as a Subprocess (process/subprocess.h): its own process group, stdin /dev/null,
// stdout and stderr into one pipe that is read as it runs (the last max_output_bytes are kept),
// working_dir as its working directory. It must finish within time_limit (and by the caller's
// deadline); otherwise its process group gets SIGTERM, term_grace later SIGKILL. When the
// command exits, whatever it left running in its process group is killed, so no flash tool
// outlives its Flash().
//
// Errors of Flash() (every message starts with Name() and quotes the command line):
//   InvalidArgument     argv_template is empty.
//   NotFound            the image does not exist (the command is not run).
//   FailedPrecondition  the command cannot be started: not found in PATH, not executable, not an
//                       executable format, or working_dir missing or inaccessible.
//   DeadlineExceeded    it did not finish within time_limit or by the deadline (the message says
//                       which, and has the output's tail); it has been killed.
//   Unknown             it exited with a non-zero code, or was killed by a signal it was not sent
//                       by this flasher; the message has "exit code N" (or the signal) and the last
//                       ~2 KiB of its output.
//   Internal            any other OS failure (pipes, fork, reading the output).
//   Any error of HashFile() when {hash} must be computed.
//
// Thread-safety: all methods may be called from any thread; Flash() calls serialize (one runs at
// a time). last_run() returns a copy.

#ifndef BENCHFARM_DEVICE_COMMAND_FLASHER_H_
#define BENCHFARM_DEVICE_COMMAND_FLASHER_H_

#include <sys/types.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "device/flasher.h"
#include "process/run_command.h"  // CommandRun

namespace benchfarm::device {

struct CommandFlasherOptions {
  // The command line, with {image} and {hash} placeholders. argv_template[0] is a path, or a
  // program name looked up in $PATH.
  std::vector<std::string> argv_template;
  // The longest one flash may take.
  absl::Duration time_limit = absl::Minutes(2);
  // Empty: this process's working directory.
  std::string working_dir;
  // After the time limit: how long SIGTERM has to end the command before SIGKILL.
  absl::Duration term_grace = absl::Milliseconds(500);
  // How much of the command's output last_run() keeps (the tail).
  size_t max_output_bytes = 64 * 1024;
};

class CommandFlasher final : public Flasher {
 public:
  explicit CommandFlasher(CommandFlasherOptions options);

  // Runs the command for `image`; OK when it exits with code 0. Errors: see the file comment.
  absl::Status Flash(const FirmwareImage& image, absl::Time deadline) override;

  // "command:<argv_template[0]>", or "command:" for an empty template.
  std::string Name() const override;

  // The last run that started (successful or not); nullopt before the first one.
  std::optional<process::CommandRun> last_run() const;

 private:
  const CommandFlasherOptions options_;

  absl::Mutex flash_mu_;  // serializes Flash(); taken before mu_
  mutable absl::Mutex mu_;
  std::optional<process::CommandRun> last_run_ ABSL_GUARDED_BY(mu_);
};

// `text` with every "{image}" replaced by `image` and every "{hash}" by `hash`. Exposed for tests.
std::string SubstituteFlashPlaceholders(const std::string& text, const std::string& image,
                                        const std::string& hash);

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_COMMAND_FLASHER_H_
