// HostProcessFlasher. The board process is a sandboxed Subprocess (process/sandbox.h) with resource
// limits, shared between the flasher (which stops it and tells crashes from stops) and its link;
// the link is an FdTransport over its pipes or a PtyTransport on the path it prints (seen from
// outside its sandbox), wrapped so that a dead link's error says how the board died.

#include "device/host_process_flasher.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/content_hash.h"
#include "base/os_error.h"
#include "base/process_exit.h"
#include "base/status_macros.h"
#include "device/fd_transport.h"
#include "device/pty_transport.h"
#include "process/sandbox.h"

namespace benchfarm::device {
namespace {

constexpr absl::string_view kName = "host-process";
constexpr absl::string_view kPtyPrefix = "pty: ";
// Where the image is in the board's sandbox.
constexpr char kImageInSandbox[] = "/bf/image";
// Longest first line accepted while looking for "pty: <path>".
constexpr size_t kMaxPtyLine = 4096;
// How long a failed Read/Write waits for the board's exit to report it.
constexpr absl::Duration kExitReportWait = absl::Milliseconds(200);
// Extra time the destructor gives a board beyond its two term_grace waits.
constexpr absl::Duration kDestructorSlack = absl::Seconds(5);

// The board's link: `io` (pipes or pty), plus a read end of the board's stdout pipe that stays
// open until the link is destroyed — `console` with a pty, `stdout_keeper` (a duplicate of the
// link's read end) with pipes. So the board never writes into a pipe without a reader: closing
// the link is end of input for it, never EPIPE, and it can exit cleanly (0) even when it is
// stopped before it has written its boot signature.
class BoardLink final : public Transport {
 public:
  BoardLink(std::unique_ptr<Transport> io, std::unique_ptr<FdTransport> console, int stdout_keeper,
            std::shared_ptr<process::Subprocess> process)
      : io_(std::move(io)),
        console_(std::move(console)),
        stdout_keeper_(stdout_keeper),
        process_(std::move(process)) {}
  ~BoardLink() override {
    io_->Close();
    if (stdout_keeper_ >= 0) close(stdout_keeper_);
  }
  BoardLink(const BoardLink&) = delete;
  BoardLink& operator=(const BoardLink&) = delete;

  absl::Status Open() override { return io_->Open(); }
  void Close() override { io_->Close(); }
  absl::Status Write(absl::string_view data, absl::Time deadline) override {
    return Explain(io_->Write(data, deadline));
  }
  absl::StatusOr<size_t> Read(absl::Span<uint8_t> out, absl::Time deadline) override {
    absl::StatusOr<size_t> n = io_->Read(out, deadline);
    if (n.ok()) return n;
    return Explain(n.status());
  }
  std::string Name() const override { return io_->Name(); }

 private:
  absl::Status Explain(absl::Status status) {
    if (!absl::IsUnavailable(status)) return status;
    absl::StatusOr<base::ProcessExit> ended = process_->WaitExit(absl::Now() + kExitReportWait);
    const std::string how = ended.ok()
                                ? absl::StrCat("the board process ended: ", ended->ToString())
                                : std::string("the board process is still running");
    return absl::Status(status.code(), absl::StrCat(status.message(), "; ", how));
  }

  const std::unique_ptr<Transport> io_;
  const std::unique_ptr<FdTransport> console_;
  const int stdout_keeper_;
  const std::shared_ptr<process::Subprocess> process_;
};

absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

// Reads the board's first stdout line and returns the pty path in it.
absl::StatusOr<std::string> ReadPtyPath(FdTransport& console, process::Subprocess& process,
                                        const std::string& image, absl::Time deadline) {
  std::string line;
  while (line.find('\n') == std::string::npos) {
    if (line.size() > kMaxPtyLine) {
      return absl::FailedPreconditionError(absl::StrCat(
          kName, ": image ", image, " printed ", line.size(),
          " bytes without a newline where \"pty: <path>\" was expected (does it support --pty?)"));
    }
    uint8_t buf[256];
    absl::StatusOr<size_t> n = console.Read(absl::MakeSpan(buf), deadline);
    if (absl::IsDeadlineExceeded(n.status())) {
      return absl::DeadlineExceededError(
          absl::StrCat(kName, ": image ", image, " did not print its pty path by the deadline"));
    }
    if (absl::IsUnavailable(n.status())) {
      absl::StatusOr<base::ProcessExit> ended = process.WaitExit(absl::Now() + kExitReportWait);
      return absl::UnknownError(absl::StrCat(
          kName, ": image ", image, " closed its stdout before printing its pty path; ",
          ended.ok() ? absl::StrCat("it ended: ", ended->ToString())
                     : std::string("it still runs")));
    }
    if (!n.ok()) return Prefixed(n.status(), absl::StrCat(kName, ": image ", image, ": "));
    line.append(reinterpret_cast<const char*>(buf), *n);
  }
  line.resize(line.find('\n'));
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (!absl::StartsWith(line, kPtyPrefix) || line.size() == kPtyPrefix.size()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kName, ": image ", image, " printed \"", line,
                     "\" where \"pty: <path>\" was expected (does it support --pty?)"));
  }
  return line.substr(kPtyPrefix.size());
}

}  // namespace

absl::StatusOr<std::vector<int>> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(absl::StrCat("sched_getaffinity: ", base::ErrnoText(errno)));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

absl::StatusOr<std::optional<int>> ResolveCpuAffinity(absl::string_view cpu_affinity,
                                                      absl::string_view board_id,
                                                      absl::Span<const int> allowed_cpus) {
  if (cpu_affinity.empty()) return std::optional<int>();
  if (cpu_affinity == "auto") {
    if (allowed_cpus.empty()) {
      return absl::InvalidArgumentError("cpu_affinity \"auto\": this process may run on no CPU");
    }
    uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a 64: stable across runs and builds
    for (char c : board_id) {
      h ^= static_cast<uint8_t>(c);
      h *= 0x100000001b3ull;
    }
    return std::optional<int>(allowed_cpus[h % allowed_cpus.size()]);
  }
  int cpu = -1;
  const bool digits = std::all_of(cpu_affinity.begin(), cpu_affinity.end(),
                                  [](char c) { return absl::ascii_isdigit(c); });
  if (!digits || !absl::SimpleAtoi(cpu_affinity, &cpu) || cpu < 0 || cpu >= CPU_SETSIZE) {
    return absl::InvalidArgumentError(
        absl::StrCat("cpu_affinity \"", cpu_affinity,
                     "\": must be \"\", \"auto\" or a CPU number (0 to ", CPU_SETSIZE - 1, ")"));
  }
  return std::optional<int>(cpu);
}

struct HostProcessFlasher::Board {
  FirmwareImage image;
  std::shared_ptr<process::Subprocess> process;
  std::unique_ptr<BoardLink> link;
  // Set once Stop() has begun ending it: its signal is then not a crash.
  bool stopping = false;
};

HostProcessFlasher::HostProcessFlasher(HostProcessFlasherOptions options)
    : options_(std::move(options)) {}

HostProcessFlasher::~HostProcessFlasher() {
  absl::MutexLock op(&op_mu_);
  Board* board;
  {
    absl::MutexLock lock(&mu_);
    board = board_.get();
  }
  if (board != nullptr) {
    (void)StopBoard(board, absl::Now() + 2 * options_.term_grace + kDestructorSlack);
  }
}

absl::Status HostProcessFlasher::Flash(const FirmwareImage& image, absl::Time deadline) {
  absl::MutexLock op(&op_mu_);
  if (image.path.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": the image has no path"));
  }
  struct stat st;
  if (stat(image.path.c_str(), &st) != 0) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      return absl::NotFoundError(absl::StrCat(kName, ": image ", image.path, " not found"));
    }
    return base::OpenErrorToStatus(err, absl::StrCat(kName, ": image ", image.path));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(kName, ": image ", image.path, " is not a regular file"));
  }
  absl::StatusOr<std::optional<int>> cpu = PinnedCpu();
  if (!cpu.ok()) return cpu.status();
  if (absl::Now() >= deadline) {
    return absl::DeadlineExceededError(
        absl::StrCat(kName, ": deadline passed before flashing ", image.path));
  }

  std::unique_ptr<Board> old;
  {
    absl::MutexLock lock(&mu_);
    old = std::move(board_);
  }
  if (old != nullptr) {
    absl::StatusOr<base::ProcessExit> stopped = StopBoard(old.get(), deadline);
    if (!stopped.ok()) {
      return Prefixed(stopped.status(),
                      absl::StrCat(kName, ": cannot stop the running board (pid ",
                                   old->process->pid(), ") to flash ", image.path, ": "));
    }
  }
  return Start(image, *cpu, deadline);
}

absl::StatusOr<std::optional<int>> HostProcessFlasher::PinnedCpu() const {
  std::vector<int> allowed;
  if (options_.cpu_affinity == "auto") {
    absl::StatusOr<std::vector<int>> cpus = AllowedCpus();
    if (!cpus.ok()) return Prefixed(cpus.status(), absl::StrCat(kName, ": "));
    allowed = *std::move(cpus);
  }
  absl::StatusOr<std::optional<int>> cpu =
      ResolveCpuAffinity(options_.cpu_affinity, options_.board_id, allowed);
  if (!cpu.ok()) return Prefixed(cpu.status(), absl::StrCat(kName, ": "));
  // An explicit CPU need not be one this process runs on (the board may be pinned beside it),
  // but it must exist.
  const int configured = get_nprocs_conf();
  if (cpu->has_value() && configured > 0 && **cpu >= configured) {
    return absl::InvalidArgumentError(absl::StrCat(kName, ": cpu_affinity \"",
                                                   options_.cpu_affinity,
                                                   "\": this host has CPUs 0 to ", configured - 1));
  }
  return cpu;
}

absl::Status HostProcessFlasher::Start(const FirmwareImage& image, std::optional<int> cpu,
                                       absl::Time deadline) {
  // Checked here, since in the sandbox an image that cannot run is only a board that ends at once.
  if (access(image.path.c_str(), X_OK) != 0) {
    const int err = errno;
    return base::OpenErrorToStatus(
        err, absl::StrCat(kName, ": cannot start image ", image.path, ": not executable"));
  }
  process::SandboxOptions sandbox;
  sandbox.binds.push_back({image.path, kImageInSandbox, /*writable=*/false});
  sandbox.working_dir = "/tmp";
  sandbox.tmpfs_bytes = options_.tmp_bytes;
  sandbox.limits.max_processes = options_.max_processes;
  sandbox.limits.max_cpu_seconds = options_.max_cpu_seconds;
  sandbox.limits.max_address_space_bytes = options_.max_address_space_bytes;
  sandbox.limits.max_open_files = options_.max_open_files;

  process::SubprocessOptions sub;
  sub.argv.push_back(kImageInSandbox);
  sub.argv.insert(sub.argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  if (!process::SandboxHasProc()) {
    // The board cannot hash /proc/self/exe in a sandbox without /proc: it is told the hash.
    std::string hash = image.content_hash;
    if (hash.empty()) {
      absl::StatusOr<std::string> hashed = base::HashFile(image.path);
      if (!hashed.ok()) return Prefixed(hashed.status(), absl::StrCat(kName, ": "));
      hash = *hashed;
    }
    sub.argv.insert(sub.argv.end(), {"--firmware-hash", hash});
  }
  if (cpu.has_value()) sub.argv.insert(sub.argv.end(), {"--cpu", absl::StrCat(*cpu)});
  if (options_.use_pty) sub.argv.push_back("--pty");
  sub.stdin_mode = options_.use_pty ? process::StdioMode::kNull : process::StdioMode::kPipe;
  sub.stdout_mode = process::StdioMode::kPipe;
  sub.stderr_path = options_.stderr_path;
  // bwrap's own limits (the sandbox sets its own inside).
  sub.limits.max_address_space_bytes = options_.max_address_space_bytes;
  sub.limits.max_cpu_seconds = options_.max_cpu_seconds;
  sub.limits.max_open_files = options_.max_open_files;
  sub.limits.core_dumps = options_.core_dumps;
  absl::StatusOr<process::SubprocessOptions> sandboxed =
      process::SandboxedSubprocess(sandbox, std::move(sub));
  if (!sandboxed.ok()) {
    return Prefixed(sandboxed.status(),
                    absl::StrCat(kName, ": cannot start image ", image.path, ": "));
  }

  absl::StatusOr<std::unique_ptr<process::Subprocess>> started =
      process::Subprocess::Start(*sandboxed);
  if (!started.ok()) {
    return Prefixed(started.status(),
                    absl::StrCat(kName, ": cannot start image ", image.path, ": "));
  }
  std::shared_ptr<process::Subprocess> process = std::move(*started);
  auto fail = [&](absl::Status status) {
    (void)process->Stop(options_.term_grace, deadline);
    return status;
  };

  std::unique_ptr<BoardLink> link;
  if (!options_.use_pty) {
    const int out = process->TakeStdout();
    const int keeper = fcntl(out, F_DUPFD_CLOEXEC, 0);
    if (keeper < 0) {
      const int err = errno;
      close(out);
      return fail(absl::InternalError(
          absl::StrCat(kName, ": fcntl(F_DUPFD_CLOEXEC): ", base::ErrnoText(err))));
    }
    auto io = std::make_unique<FdTransport>(absl::StrCat("process:", image.path));
    absl::Status attached = io->Attach(out, process->TakeStdin(), FdTransport::Ownership::kOwned);
    if (!attached.ok()) {
      close(keeper);
      return fail(Prefixed(attached, absl::StrCat(kName, ": ")));
    }
    link = std::make_unique<BoardLink>(std::move(io), nullptr, keeper, process);
  } else {
    auto console = std::make_unique<FdTransport>(absl::StrCat("stdout:", image.path));
    const int out = process->TakeStdout();
    absl::Status attached = console->Attach(out, out, FdTransport::Ownership::kOwned);
    if (!attached.ok()) return fail(Prefixed(attached, absl::StrCat(kName, ": ")));
    absl::StatusOr<std::string> path = ReadPtyPath(*console, *process, image.path, deadline);
    if (!path.ok()) return fail(path.status());
    // The pty is on the sandbox's own /dev/pts.
    absl::StatusOr<std::string> outside = process::PathIntoSandbox(process->pid(), *path);
    if (!outside.ok()) {
      return fail(Prefixed(outside.status(), absl::StrCat(kName, ": image ", image.path, ": ")));
    }
    auto pty = std::make_unique<PtyTransport>(*outside);
    absl::Status opened = pty->Open();
    if (!opened.ok()) {
      return fail(Prefixed(opened, absl::StrCat(kName, ": image ", image.path, ": ")));
    }
    link = std::make_unique<BoardLink>(std::move(pty), std::move(console), -1, process);
  }

  auto board = std::make_unique<Board>();
  board->image = image;
  board->process = std::move(process);
  board->link = std::move(link);
  absl::MutexLock lock(&mu_);
  board_ = std::move(board);
  return absl::OkStatus();
}

absl::StatusOr<base::ProcessExit> HostProcessFlasher::StopBoard(Board* board, absl::Time deadline) {
  if (!board->process->ExitStatus().has_value()) {
    absl::MutexLock lock(&mu_);
    board->stopping = true;
  }
  board->link->Close();
  if (!options_.use_pty) {
    // End of input is the board's own clean exit, and unlike SIGTERM it cannot arrive before the
    // board has installed its signal handlers (a board stopped right after it started).
    absl::StatusOr<base::ProcessExit> ended =
        board->process->WaitExit(std::min(absl::Now() + options_.term_grace, deadline));
    if (!absl::IsDeadlineExceeded(ended.status())) return ended;
  }
  return board->process->Stop(options_.term_grace, deadline);
}

absl::StatusOr<base::ProcessExit> HostProcessFlasher::Stop(absl::Time deadline) {
  absl::MutexLock op(&op_mu_);
  Board* board;
  {
    absl::MutexLock lock(&mu_);
    board = board_.get();
  }
  if (board == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(kName, ": no board was started"));
  }
  return StopBoard(board, deadline);
}

Transport* HostProcessFlasher::transport() {
  absl::MutexLock lock(&mu_);
  return board_ ? board_->link.get() : nullptr;
}

pid_t HostProcessFlasher::pid() const {
  absl::MutexLock lock(&mu_);
  return board_ ? board_->process->pid() : -1;
}

absl::StatusOr<process::KilledStrays> HostProcessFlasher::EndStrays() {
  const pid_t launcher = pid();
  if (launcher < 0) {
    return absl::FailedPreconditionError(absl::StrCat(kName, ": no board was started"));
  }
  return process::KillSandboxStrays(launcher);
}

std::optional<FirmwareImage> HostProcessFlasher::image() const {
  absl::MutexLock lock(&mu_);
  if (!board_) return std::nullopt;
  return board_->image;
}

std::optional<base::ProcessExit> HostProcessFlasher::ExitStatus() {
  std::shared_ptr<process::Subprocess> process;
  {
    absl::MutexLock lock(&mu_);
    if (!board_) return std::nullopt;
    process = board_->process;
  }
  return process->ExitStatus();
}

std::optional<base::ProcessExit> HostProcessFlasher::Crashed() {
  std::shared_ptr<process::Subprocess> process;
  {
    absl::MutexLock lock(&mu_);
    if (!board_ || board_->stopping) return std::nullopt;
    process = board_->process;
  }
  std::optional<base::ProcessExit> ended = process->ExitStatus();
  if (!ended || !ended->signaled()) return std::nullopt;
  absl::MutexLock lock(&mu_);
  // A Stop() may have begun between the two looks.
  if (!board_ || board_->process != process || board_->stopping) return std::nullopt;
  return ended;
}

absl::StatusOr<base::ProcessExit> HostProcessFlasher::WaitExit(absl::Time deadline) {
  std::shared_ptr<process::Subprocess> process;
  {
    absl::MutexLock lock(&mu_);
    if (!board_) {
      return absl::FailedPreconditionError(absl::StrCat(kName, ": no board was started"));
    }
    process = board_->process;
  }
  return process->WaitExit(deadline);
}

}  // namespace benchfarm::device
