// ChildProcessTransport: a Subprocess with both pipes handed to an FdTransport. Everything about
// starting, signalling and reaping the child is Subprocess's; this class adds the link and the
// "how did the child end" note on a dead link's errors.

#include "device/pipe_transport.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace benchfarm::device {
namespace {

// How long a Read/Write that found the link closed waits for the child's exit to report it.
constexpr absl::Duration kExitReportWait = absl::Milliseconds(200);
// How long Close() waits for a SIGKILLed child before leaving it to ExitStatus()/WaitExit().
constexpr absl::Duration kKillWait = absl::Seconds(30);

}  // namespace

ChildProcessTransport::ChildProcessTransport(std::vector<std::string> argv,
                                             ChildProcessOptions options)
    : argv_(std::move(argv)),
      options_(std::move(options)),
      io_(absl::StrCat("process:", argv_.empty() ? std::string() : argv_[0])) {}

ChildProcessTransport::~ChildProcessTransport() { Close(); }

std::shared_ptr<process::Subprocess> ChildProcessTransport::process() const {
  absl::MutexLock lock(&mu_);
  return process_;
}

absl::Status ChildProcessTransport::Open() {
  if (io_.is_open()) return absl::OkStatus();
  if (argv_.empty()) return absl::InvalidArgumentError(absl::StrCat(Name(), ": empty argv"));

  process::SubprocessOptions options;
  options.argv = argv_;
  options.stdin_mode = process::StdioMode::kPipe;
  options.stdout_mode = process::StdioMode::kPipe;
  options.stderr_path = options_.stderr_path;
  absl::StatusOr<std::unique_ptr<process::Subprocess>> started =
      process::Subprocess::Start(options);
  if (!started.ok()) {
    // Subprocess's messages start with argv[0]: make them start with Name().
    return absl::Status(started.status().code(),
                        absl::StrCat("process:", started.status().message()));
  }
  std::shared_ptr<process::Subprocess> child = *std::move(started);
  const int write_fd = child->TakeStdin();
  const int read_fd = child->TakeStdout();
  std::shared_ptr<process::Subprocess> previous;  // already reaped by Close(), or killed as it goes
  {
    absl::MutexLock lock(&mu_);
    previous = std::exchange(process_, child);
  }
  absl::Status attached = io_.Attach(read_fd, write_fd, FdTransport::Ownership::kOwned);
  if (!attached.ok()) Close();
  return attached;
}

void ChildProcessTransport::Close() {
  io_.Close();
  std::shared_ptr<process::Subprocess> child = process();
  if (child == nullptr) return;
  // Returns at once for a child that has ended already.
  (void)child->Stop(options_.term_grace, absl::Now() + options_.term_grace + kKillWait);
}

pid_t ChildProcessTransport::pid() const {
  std::shared_ptr<process::Subprocess> child = process();
  return child == nullptr ? -1 : child->pid();
}

std::optional<base::ProcessExit> ChildProcessTransport::ExitStatus() {
  std::shared_ptr<process::Subprocess> child = process();
  if (child == nullptr) return std::nullopt;
  return child->ExitStatus();
}

absl::StatusOr<base::ProcessExit> ChildProcessTransport::WaitExit(absl::Time deadline) {
  std::shared_ptr<process::Subprocess> child = process();
  if (child == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(Name(), ": no process started yet"));
  }
  absl::StatusOr<base::ProcessExit> ended = child->WaitExit(deadline);
  if (ended.ok()) return ended;
  return absl::Status(ended.status().code(), absl::StrCat("process:", ended.status().message()));
}

absl::Status ChildProcessTransport::Explain(absl::Status status) {
  if (!absl::IsUnavailable(status)) return status;
  absl::StatusOr<base::ProcessExit> ended = WaitExit(absl::Now() + kExitReportWait);
  std::string how = ended.ok() ? absl::StrCat("the process ended: ", ended->ToString())
                               : std::string("the process is still running");
  return absl::Status(status.code(), absl::StrCat(status.message(), "; ", how));
}

absl::Status ChildProcessTransport::Write(absl::string_view data, absl::Time deadline) {
  return Explain(io_.Write(data, deadline));
}

absl::StatusOr<size_t> ChildProcessTransport::Read(absl::Span<uint8_t> out, absl::Time deadline) {
  absl::StatusOr<size_t> n = io_.Read(out, deadline);
  if (n.ok()) return n;
  return Explain(n.status());
}

}  // namespace benchfarm::device
