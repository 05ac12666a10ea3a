// CommandFlasher. The output pipe is drained while the command runs (a tool that fills a 64 KiB
// pipe buffer would otherwise block and look hung), waiting on it and on the process's exit at
// once with ppoll(), so a time limit is enforced to the millisecond without sleeping in a loop.

#include "device/command_flasher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/content_hash.h"
#include "base/os_error.h"
#include "base/process_exit.h"
#include "base/status_macros.h"
#include "device/fd_transport.h"
#include "process/run_command.h"

namespace benchfarm::device {

std::string SubstituteFlashPlaceholders(const std::string& text, const std::string& image,
                                        const std::string& hash) {
  // One pass, so a path that itself contains "{hash}" is not substituted again.
  return absl::StrReplaceAll(text, {{"{image}", image}, {"{hash}", hash}});
}

CommandFlasher::CommandFlasher(CommandFlasherOptions options) : options_(std::move(options)) {}

std::string CommandFlasher::Name() const {
  return absl::StrCat("command:",
                      options_.argv_template.empty() ? std::string() : options_.argv_template[0]);
}

std::optional<process::CommandRun> CommandFlasher::last_run() const {
  absl::MutexLock lock(&mu_);
  return last_run_;
}

absl::Status CommandFlasher::Flash(const FirmwareImage& image, absl::Time deadline) {
  absl::MutexLock flash(&flash_mu_);
  const std::string name = Name();
  if (options_.argv_template.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": empty command line (argv_template)"));
  }
  struct stat st;
  if (image.path.empty() || stat(image.path.c_str(), &st) != 0) {
    const int err = image.path.empty() ? ENOENT : errno;
    if (err == ENOENT || err == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(name, ": image \"", image.path, "\" not found"));
    }
    return base::OpenErrorToStatus(err, absl::StrCat(name, ": image ", image.path));
  }
  std::string hash = image.content_hash;
  if (hash.empty() &&
      std::any_of(options_.argv_template.begin(), options_.argv_template.end(),
                  [](const std::string& a) { return absl::StrContains(a, "{hash}"); })) {
    absl::StatusOr<std::string> computed = base::HashFile(image.path);
    if (!computed.ok()) {
      return absl::Status(computed.status().code(),
                          absl::StrCat(name, ": ", computed.status().message()));
    }
    hash = *std::move(computed);
  }

  process::RunCommandOptions run_options;
  for (const std::string& a : options_.argv_template) {
    run_options.argv.push_back(SubstituteFlashPlaceholders(a, image.path, hash));
  }
  run_options.working_dir = options_.working_dir;
  run_options.time_limit = options_.time_limit;
  run_options.term_grace = options_.term_grace;
  run_options.max_output_bytes = options_.max_output_bytes;
  const std::string command = process::CommandLine(run_options.argv);
  const absl::Time start = absl::Now();
  const absl::Time time_limit_at = start + options_.time_limit;
  absl::StatusOr<process::CommandRun> ran = process::RunCommand(run_options, deadline, name);
  if (!ran.ok()) {
    // NotFound is the image's; a tool that cannot start is a configuration problem.
    const absl::StatusCode code = ran.status().code();
    if (code == absl::StatusCode::kNotFound || code == absl::StatusCode::kPermissionDenied) {
      return absl::FailedPreconditionError(ran.status().message());
    }
    return ran.status();
  }
  process::CommandRun run = *std::move(ran);
  const std::string output = process::OutputForError(run.output, run.output_bytes);
  const std::optional<base::ProcessExit> exit = run.exit;
  const bool timed_out = run.timed_out;
  {
    absl::MutexLock lock(&mu_);
    last_run_ = std::move(run);
  }

  if (timed_out) {
    const std::string why =
        deadline < time_limit_at
            ? absl::StrCat("by the deadline (", absl::FormatDuration(deadline - start),
                           " after it started)")
            : absl::StrCat("within the time limit of ", absl::FormatDuration(options_.time_limit));
    return absl::DeadlineExceededError(
        absl::StrCat(name, ": `", command, "` did not finish ", why, "; it was stopped",
                     exit ? absl::StrCat(" (", exit->ToString(), ")") : std::string(), output));
  }
  if (!exit) {
    return absl::InternalError(
        absl::StrCat(name, ": `", command, "`: its exit could not be collected", output));
  }
  if (exit->exited() && exit->exit_code == 0) return absl::OkStatus();
  return absl::UnknownError(
      absl::StrCat(name, ": `", command, "` failed: ", exit->ToString(), output));
}

}  // namespace benchfarm::device
