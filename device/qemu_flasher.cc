// QemuFlasher: see qemu_flasher.h. QEMU's stdout and stderr share one pipe; it is read until QEMU
// names its pty, then a thread keeps draining it (into log_path, if set) so QEMU never blocks on
// a full pipe.

#include "device/qemu_flasher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "process/sandbox.h"

namespace benchfarm::device {
namespace {

constexpr char kPtyMarker[] = "char device redirected to ";
constexpr size_t kMaxStartOutput = 16 * 1024;
constexpr absl::Duration kStopGrace = absl::Seconds(2);
constexpr char kImageInSandbox[] = "/bf/image";
constexpr char kPluginInSandbox[] = "/bf/cyclemodel.so";
constexpr size_t kMaxTimingBytes = 1024;

// Drains `fd` until end of file, appending to `log_path` when set; closes fd.
void Drain(int fd, std::string log_path) {
  int out = -1;
  if (!log_path.empty())
    out = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (out >= 0) (void)!write(out, buf, static_cast<size_t>(n));
  }
  if (out >= 0) close(out);
  close(fd);
}

// The pty path in QEMU's "char device redirected to /dev/pts/3 (label serial0)" line, if `text`
// holds the whole line.
std::optional<std::string> FindPty(const std::string& text) {
  size_t at = text.find(kPtyMarker);
  if (at == std::string::npos) return std::nullopt;
  size_t start = at + sizeof(kPtyMarker) - 1;
  size_t end = text.find_first_of(" \n", start);
  if (end == std::string::npos) return std::nullopt;
  return text.substr(start, end - start);
}

// IMAGE.timing's words (crt/boards/build.sh): "core=NAME" and "region=BASE:SIZE:WAIT_STATES[:art]"
// only, nothing QEMU would read as a separate option (no commas).
absl::StatusOr<std::vector<std::string>> ReadTiming(const std::string& name,
                                                    const std::string& image) {
  const std::string path = image + ".timing";
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        name, ": no cycle-model description beside the image (", path, ": ", strerror(errno),
        "); images built by crt/boards/build.sh have one: rebuild it"));
  }
  char buf[kMaxTimingBytes + 1];
  const ssize_t n = read(fd, buf, sizeof(buf));
  close(fd);
  if (n < 0 || static_cast<size_t>(n) > kMaxTimingBytes) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": ", path, " is unreadable or too long"));
  }
  std::vector<std::string> words = absl::StrSplit(absl::string_view(buf, static_cast<size_t>(n)),
                                                  absl::ByAnyChar(" \t\n"), absl::SkipEmpty());
  bool core = false;
  for (const std::string& w : words) {
    bool ok = false;
    if (absl::StartsWith(w, "core=")) {
      ok = w.size() > 5 &&
           w.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-", 5) == std::string::npos;
      core = core || ok;
    } else if (absl::StartsWith(w, "region=")) {
      ok = w.size() > 7 &&
           w.find_first_not_of("0123456789abcdefABCDEFx:art", 7) == std::string::npos;
    }
    if (!ok) {
      return absl::FailedPreconditionError(absl::StrCat(
          name, ": ", path, ": not a cycle-model argument: \"", w.substr(0, 60), "\""));
    }
  }
  if (!core)
    return absl::FailedPreconditionError(absl::StrCat(name, ": ", path, " names no core="));
  return words;
}

}  // namespace

const char* QemuTimingName(QemuTiming timing) {
  switch (timing) {
    case QemuTiming::kInstructions:
      return "instructions";
    case QemuTiming::kCycles:
      return "cycles";
    default:
      return "host";
  }
}

QemuFlasher::QemuFlasher(QemuFlasherOptions options) : options_(std::move(options)) {}

QemuFlasher::~QemuFlasher() { Stop(); }

std::string QemuFlasher::Name() const { return absl::StrCat("qemu:", options_.machine); }

std::vector<std::string> QemuFlasher::CommandLine(const std::string& image,
                                                  const std::vector<std::string>& plugin_args,
                                                  const std::string& plugin) const {
  std::vector<std::string> argv = {options_.binary.empty() ? "qemu-system-arm" : options_.binary,
                                   "-M",
                                   options_.machine,
                                   "-display",
                                   "none",
                                   "-monitor",
                                   "none",
                                   "-serial",
                                   "pty",
                                   "-kernel",
                                   image};
  if (options_.timing != QemuTiming::kHost) {
    argv.push_back("-icount");
    argv.push_back(absl::StrCat("shift=", options_.icount_shift, ",align=off,sleep=on"));
  }
  if (options_.timing == QemuTiming::kCycles) {
    argv.push_back("-plugin");
    argv.push_back(absl::StrCat(plugin.empty() ? options_.cycle_model_plugin : plugin, ",",
                                absl::StrJoin(plugin_args, ","), ",fd=3"));
  }
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  return argv;
}

std::map<std::string, uint64_t> QemuFlasher::last_summary() const {
  absl::MutexLock lock(&mu_);
  return last_summary_;
}

std::optional<process::CommandRun> QemuFlasher::last_start() const {
  absl::MutexLock lock(&mu_);
  return last_start_;
}

CycleStream* QemuFlasher::cycle_stream() {
  absl::MutexLock lock(&mu_);
  return cycle_stream_.get();
}

std::string QemuFlasher::port() const {
  absl::MutexLock lock(&mu_);
  return port_;
}

std::optional<base::ProcessExit> QemuFlasher::Exited() {
  absl::MutexLock lock(&mu_);
  if (qemu_ == nullptr) return std::nullopt;
  return qemu_->ExitStatus();
}

std::optional<base::ProcessExit> QemuFlasher::WaitExited(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (qemu_ == nullptr) return std::nullopt;
  absl::StatusOr<base::ProcessExit> ended = qemu_->WaitExit(deadline);
  if (!ended.ok()) return std::nullopt;
  return *ended;
}

void QemuFlasher::Stop() {
  absl::MutexLock lock(&mu_);
  (void)StopLocked();
}

absl::Status QemuFlasher::StopLocked() {
  if (!options_.serial_link.empty()) unlink(options_.serial_link.c_str());
  if (keeper_fd_ >= 0) close(keeper_fd_);
  keeper_fd_ = -1;
  port_.clear();
  if (qemu_ == nullptr) {
    cycle_stream_.reset();
    return absl::OkStatus();
  }
  absl::StatusOr<base::ProcessExit> ended = qemu_->Stop(kStopGrace, absl::Now() + 2 * kStopGrace);
  qemu_.reset();
  if (cycle_stream_ != nullptr) {
    // QEMU wrote the plugin's summary as it exited; the pipe ends once it is read.
    const absl::Time until = absl::Now() + kStopGrace;
    while (!cycle_stream_->Ended() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(5));
    last_summary_ = cycle_stream_->Summary();
    cycle_stream_.reset();
  }
  return ended.status();
}

absl::Status QemuFlasher::Flash(const FirmwareImage& image, absl::Time deadline) {
  const std::string name = Name();
  if (options_.machine.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": no machine configured"));
  }
  if (options_.icount_shift < 0 || options_.icount_shift > 10) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": icount_shift ", options_.icount_shift, " is outside 0..10"));
  }
  struct stat st;
  if (image.path.empty() || stat(image.path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat(name, ": image \"", image.path, "\" does not exist"));
  }
  absl::MutexLock lock(&mu_);
  (void)StopLocked();
  last_start_.reset();

  // QEMU itself is looked up here: in the sandbox a missing one is only an exit code.
  std::string binary = options_.binary.empty() ? "qemu-system-arm" : options_.binary;
  if (binary.find('/') == std::string::npos) {
    const char* path_env = std::getenv("PATH");
    std::string found;
    for (absl::string_view dir :
         absl::StrSplit(path_env != nullptr ? path_env : "/usr/bin:/bin", ':', absl::SkipEmpty())) {
      const std::string candidate = absl::StrCat(dir, "/", binary);
      if (access(candidate.c_str(), X_OK) == 0) {
        found = candidate;
        break;
      }
    }
    if (found.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat(name, ": cannot run ", binary,
                       " (not found in PATH); install it with: apt install qemu-system-arm"));
    }
    binary = found;
  } else if (access(binary.c_str(), X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": cannot run ", binary, " (", strerror(errno),
                     "); install it with: apt install qemu-system-arm"));
  }
  std::vector<std::string> plugin_args;
  int pipe_fds[2] = {-1, -1};
  if (options_.timing == QemuTiming::kCycles) {
    if (options_.cycle_model_plugin.empty() ||
        access(options_.cycle_model_plugin.c_str(), R_OK) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          name, ": the cycle model plugin (libbenchfarm_cyclemodel.so) was not found",
          options_.cycle_model_plugin.empty() ? ""
                                              : absl::StrCat(" at ", options_.cycle_model_plugin),
          ": build it (bazel build //cyclemodel:libbenchfarm_cyclemodel.so, ./farm install-bin) or "
          "set qemu.cycle_model_plugin"));
    }
    ASSIGN_OR_RETURN(plugin_args, ReadTiming(name, image.path));
    if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
      return absl::InternalError(absl::StrCat(name, ": pipe2: ", strerror(errno)));
    }
  }
  process::SandboxOptions sandbox;
  sandbox.binds.push_back({image.path, kImageInSandbox, /*writable=*/false});
  if (options_.timing == QemuTiming::kCycles) {
    sandbox.binds.push_back({options_.cycle_model_plugin, kPluginInSandbox, /*writable=*/false});
  }
  if (binary.rfind("/usr/", 0) != 0) {
    // A QEMU outside /usr (a local build) is bound where it is.
    sandbox.binds.push_back({binary, binary, /*writable=*/false});
  }
  sandbox.working_dir = "/tmp";
  sandbox.tmpfs_bytes = 16 << 20;
  sandbox.limits.max_processes = 256;  // QEMU's threads count
  sandbox.limits.max_open_files = 1024;

  process::SubprocessOptions so;
  so.argv = CommandLine(kImageInSandbox, plugin_args, kPluginInSandbox);
  so.argv[0] = binary;
  so.pass_fd = pipe_fds[1];
  so.stdin_mode = process::StdioMode::kNull;
  so.stdout_mode = process::StdioMode::kPipe;
  so.stderr_to_stdout = true;
  absl::StatusOr<process::SubprocessOptions> sandboxed = process::SandboxedSubprocess(sandbox, so);
  if (!sandboxed.ok()) {
    return absl::Status(sandboxed.status().code(),
                        absl::StrCat(name, ": ", sandboxed.status().message()));
  }
  absl::StatusOr<std::unique_ptr<process::Subprocess>> started =
      process::Subprocess::Start(*sandboxed);
  if (pipe_fds[1] >= 0) close(pipe_fds[1]);  // QEMU has its copy
  std::unique_ptr<CycleStream> stream;
  if (pipe_fds[0] >= 0) {
    stream = std::make_unique<CycleStream>(
        pipe_fds[0], options_.board_id.empty()
                         ? name
                         : absl::StrCat("board ", options_.board_id, " (", name, ")"));
  }
  if (!started.ok()) {
    return absl::Status(started.status().code(),
                        absl::StrCat(name, ": ", started.status().message()));
  }
  std::unique_ptr<process::Subprocess> qemu = *std::move(started);
  const int fd = qemu->TakeStdout();
  std::string output;
  // What it printed as it started, whatever comes of it (every return below).
  last_start_.emplace();
  last_start_->argv = CommandLine(image.path, plugin_args);
  last_start_->pid = qemu->pid();
  const absl::Time start = absl::Now();
  size_t printed = 0;  // output keeps the last kMaxStartOutput bytes
  auto remember = [&](std::optional<base::ProcessExit> exit) {
    last_start_->output = output;
    last_start_->output_bytes = std::max(printed, output.size());
    last_start_->exit = exit;
    last_start_->elapsed = absl::Now() - start;
  };
  std::optional<std::string> pty;
  bool eof = false;
  while (!pty && !eof) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    pollfd p = {fd, POLLIN, 0};
    int ready =
        poll(&p, 1, static_cast<int>(std::min<int64_t>(absl::ToInt64Milliseconds(left) + 1, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buf[1024];
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    output.append(buf, static_cast<size_t>(n));
    printed += static_cast<size_t>(n);
    if (output.size() > kMaxStartOutput) output.erase(0, output.size() - kMaxStartOutput);
    pty = FindPty(output);
  }
  remember(std::nullopt);
  if (pty && stream != nullptr) {
    // The plugin greets when QEMU loads it; a plugin that fails makes QEMU exit saying why.
    if (absl::Status ready = stream->WaitReady(deadline); !ready.ok()) {
      const absl::Time until = absl::Now() + kStopGrace;
      for (char buf[1024]; absl::Now() < until && output.size() < kMaxStartOutput;) {
        pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) continue;
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n <= 0) break;
        output.append(buf, static_cast<size_t>(n));
        printed += static_cast<size_t>(n);
      }
      close(fd);
      absl::StatusOr<base::ProcessExit> ended =
          qemu->Stop(absl::Milliseconds(200), absl::Now() + kStopGrace);
      remember(ended.ok() ? std::optional<base::ProcessExit>(*ended) : std::nullopt);
      return absl::FailedPreconditionError(
          absl::StrCat(ready.message(), "; QEMU said: ", absl::StripAsciiWhitespace(output)));
    }
  }
  if (!pty) {
    close(fd);
    absl::StatusOr<base::ProcessExit> ended =
        eof ? qemu->WaitExit(absl::Now() + kStopGrace)
            : qemu->Stop(absl::Milliseconds(200), absl::Now() + kStopGrace);
    if (ended.ok()) remember(*ended);
    std::string text(absl::StripAsciiWhitespace(output));
    if (eof) {
      return absl::FailedPreconditionError(absl::StrCat(
          name, ": QEMU exited at start (", ended.ok() ? ended->ToString() : "still running",
          "): ", text.empty() ? std::string("no output") : text, " [",
          absl::StrJoin(CommandLine(image.path, plugin_args), " "), "]"));
    }
    return absl::DeadlineExceededError(
        absl::StrCat(name, ": QEMU did not report its serial pty by the deadline; output: ", text));
  }
  // The pty is on the sandbox's own /dev/pts.
  absl::StatusOr<std::string> outside = process::PathIntoSandbox(qemu->pid(), *pty);
  if (!outside.ok()) {
    close(fd);
    (void)qemu->Stop(absl::Milliseconds(200), absl::Now() + kStopGrace);
    return absl::InternalError(absl::StrCat(name, ": ", outside.status().message()));
  }
  pty = *outside;
  std::thread(Drain, fd, options_.log_path).detach();
  if (!options_.serial_link.empty()) {
    const std::string tmp = absl::StrCat(options_.serial_link, ".tmp.", getpid());
    unlink(tmp.c_str());
    if (symlink(pty->c_str(), tmp.c_str()) != 0 ||
        rename(tmp.c_str(), options_.serial_link.c_str()) != 0) {
      const std::string why = strerror(errno);
      (void)qemu->Stop(absl::Milliseconds(200), absl::Now() + kStopGrace);
      return absl::InternalError(
          absl::StrCat(name, ": cannot link ", options_.serial_link, " to ", *pty, ": ", why));
    }
  }
  // QEMU notices a host on its pty by polling once a second while nobody has the slave open, and
  // drops what the guest sends meanwhile: keep the slave open for QEMU's life, so the board's
  // link is "connected" from the start and a reconnect (after a reset) costs no second.
  keeper_fd_ = open(pty->c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  port_ = *pty;
  qemu_ = std::move(qemu);
  cycle_stream_ = std::move(stream);
  return absl::OkStatus();
}

}  // namespace benchfarm::device
