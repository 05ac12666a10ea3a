// Sandbox: see sandbox.h.

#include "process/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/os_error.h"
#include "process/run_command.h"

namespace benchfarm::process {
namespace {

constexpr char kInstallHint[] = "install it with: apt install bubblewrap";
// Root mode: each sandbox runs as a uid of its own from this range (above the ranges systemd and
// container tools hand out, and never a real account).
constexpr uint32_t kUidBase = 0x70000000;
constexpr uint32_t kUidSpan = 1u << 24;
// User-namespace mode: the command's uid (and gid) inside: "nobody".
constexpr char kNobody[] = "65534";

// Whether sandboxes get a fresh /proc of their PID namespace. CheckSandbox() turns it off where the
// kernel refuses that mount (a hardened service: systemd's ProtectKernelTunables overmounts parts
// of /proc, and then a user namespace may not mount a fresh one).
std::atomic<bool> g_fresh_proc{true};

bool IsExecutable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

// A tool run inside the sandbox: where /usr (or /bin, which the sandbox links the same way) has
// it on this host.
absl::StatusOr<std::string> SystemTool(const std::string& name, const std::string& package) {
  for (const char* dir : {"/usr/bin/", "/bin/"}) {
    const std::string path = absl::StrCat(dir, name);
    if (IsExecutable(path)) return path;
  }
  return absl::FailedPreconditionError(absl::StrCat("the sandbox needs ", name, " (/usr/bin/", name,
                                                    "): install it with: apt install ", package));
}

// Whether [first, first + count) is mapped in this process's user namespace, per `map_file`
// (/proc/self/uid_map or gid_map: "inside outside length" lines).
bool RangeMapped(const char* map_file, uint64_t first, uint64_t count) {
  std::ifstream in(map_file);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    uint64_t inside, outside, length;
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &inside) || !absl::SimpleAtoi(f[1], &outside) ||
        !absl::SimpleAtoi(f[2], &length)) {
      continue;
    }
    if (inside <= first && first + count <= inside + length) return true;
  }
  return false;
}

struct Mode {
  bool root = false;  // root mode: uid per sandbox, no user namespace
  bool bounds_processes = true;
};

Mode HostMode() {
  Mode m;
  if (geteuid() != 0) return m;
  // uid 0 and the sandbox range mapped: a real root (or a container root with a full map).
  m.root = RangeMapped("/proc/self/uid_map", 0, 1) &&
           RangeMapped("/proc/self/uid_map", kUidBase, kUidSpan) &&
           RangeMapped("/proc/self/gid_map", kUidBase, kUidSpan);
  // Otherwise the command is uid 0 outside, which RLIMIT_NPROC does not bind.
  m.bounds_processes = m.root;
  return m;
}

absl::Status ChownRecursively(const std::string& path, uid_t uid, gid_t gid) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return absl::InternalError(absl::StrCat("sandbox: lstat ", path, ": ", base::ErrnoText(errno)));
  }
  if (lchown(path.c_str(), uid, gid) != 0) {
    return absl::InternalError(absl::StrCat("sandbox: chown ", path, ": ", base::ErrnoText(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return absl::OkStatus();
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    return absl::InternalError(
        absl::StrCat("sandbox: opendir ", path, ": ", base::ErrnoText(errno)));
  }
  absl::Status status;
  while (struct dirent* e = readdir(dir)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    status = ChownRecursively(path + "/" + name, uid, gid);
    if (!status.ok()) break;
  }
  closedir(dir);
  return status;
}

std::string Absolute(const std::string& path) {
  if (!path.empty() && path[0] == '/') return path;
  char cwd[4096];
  return absl::StrCat(getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : ".", "/", path);
}

// The system: /usr read-only, /bin, /sbin and /lib* as this host has them (links into /usr on a
// merged-/usr system, else read-only directories), and the few files of /etc that the compiler
// and the dynamic loader read.
void AddSystem(std::vector<std::string>& a) {
  a.insert(a.end(), {"--ro-bind", "/usr", "/usr"});
  for (const char* dir : {"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}) {
    struct stat st;
    if (lstat(dir, &st) != 0) continue;
    if (S_ISLNK(st.st_mode)) {
      char target[4096];
      const ssize_t n = readlink(dir, target, sizeof(target) - 1);
      if (n <= 0) continue;
      a.insert(a.end(), {"--symlink", std::string(target, static_cast<size_t>(n)), dir});
    } else if (S_ISDIR(st.st_mode)) {
      a.insert(a.end(), {"--ro-bind", dir, dir});
    }
  }
  a.insert(a.end(), {"--dir", "/etc"});
  for (const char* f :
       {"/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d"}) {
    a.insert(a.end(), {"--ro-bind-try", f, f});
  }
}

std::string Limit(const char* option, uint64_t soft, uint64_t hard) {
  return absl::StrCat(option, "=", soft, ":", hard);
}

}  // namespace

absl::Status ChownTree(const std::string& path, uid_t uid, gid_t gid) {
  return ChownRecursively(path, uid, gid);
}

absl::StatusOr<std::string> FindBwrap(absl::string_view path_env) {
  std::string path(path_env);
  if (path.empty()) {
    const char* env = std::getenv("PATH");
    path = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  }
  for (absl::string_view dir : absl::StrSplit(path, ':', absl::SkipEmpty())) {
    const std::string candidate = absl::StrCat(dir, "/bwrap");
    if (IsExecutable(candidate)) return candidate;
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "user code runs only in a sandbox, and its tool, bubblewrap (bwrap), is not installed (not "
      "in PATH ",
      path, "): ", kInstallHint));
}

absl::StatusOr<SandboxCommand> MakeSandboxCommand(const SandboxOptions& options,
                                                  const std::vector<std::string>& command) {
  if (command.empty()) return absl::InvalidArgumentError("sandbox: empty command");
  absl::StatusOr<std::string> bwrap = FindBwrap();
  if (!bwrap.ok()) return bwrap.status();
  absl::StatusOr<std::string> env = SystemTool("env", "coreutils");
  if (!env.ok()) return env.status();
  absl::StatusOr<std::string> prlimit = SystemTool("prlimit", "util-linux");
  if (!prlimit.ok()) return prlimit.status();
  const Mode mode = HostMode();

  SandboxCommand out;
  out.root_mode = mode.root;
  out.bounds_processes = mode.bounds_processes;
  std::vector<std::string>& a = out.argv;
  // bwrap itself starts with an empty environment: its init stays in the sandbox as pid 1, and
  // /proc/1/environ must not show the sandbox this process's environment (tokens, paths).
  a = {*env,
       "-i",
       *bwrap,
       "--die-with-parent",
       "--unshare-pid",
       "--unshare-net",
       "--unshare-ipc",
       "--unshare-uts",
       "--unshare-cgroup-try"};
  if (mode.root) {
    const uint32_t id = kUidBase + absl::Uniform<uint32_t>(absl::BitGen(), 0, kUidSpan);
    out.uid = static_cast<uid_t>(id);
    out.gid = static_cast<gid_t>(id);
  } else {
    a.insert(a.end(), {"--unshare-user", "--uid", kNobody, "--gid", kNobody});
    // No user namespaces inside (less kernel to attack) — bwrap sets that through /proc/sys,
    // which a hardened service (systemd's ProtectKernelTunables) has read-only.
    struct statvfs sys;
    if (statvfs("/proc/sys", &sys) == 0 && (sys.f_flag & ST_RDONLY) == 0) {
      a.push_back("--disable-userns");
    }
    out.uid = geteuid();
    out.gid = getegid();
  }
  if (options.new_session) a.push_back("--new-session");
  a.insert(a.end(), {"--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin", "--setenv",
                     "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp"});
  for (const auto& [name, value] : options.env) a.insert(a.end(), {"--setenv", name, value});
  AddSystem(a);
  out.has_proc = g_fresh_proc.load();
  if (out.has_proc) {
    a.insert(a.end(), {"--proc", "/proc"});
  } else {
    a.insert(a.end(), {"--dir", "/proc"});
  }
  a.insert(a.end(), {"--dev", "/dev"});

  std::vector<SandboxBind> binds = options.binds;
  for (const SandboxBind& b : binds) {
    if (b.target.empty() || b.target[0] != '/' || b.source.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("sandbox: bind \"", b.source, "\" -> \"",
                                                     b.target,
                                                     "\": needs a source and an absolute target"));
    }
  }
  // Parents before children.
  std::stable_sort(binds.begin(), binds.end(),
                   [](const SandboxBind& x, const SandboxBind& y) { return x.target < y.target; });
  const bool tmp_bound = std::any_of(binds.begin(), binds.end(),
                                     [](const SandboxBind& b) { return b.target == "/tmp"; });
  if (options.tmpfs_bytes > 0 && !tmp_bound) {
    a.insert(a.end(),
             {"--perms", "1777", "--size", absl::StrCat(options.tmpfs_bytes), "--tmpfs", "/tmp"});
  } else if (!tmp_bound) {
    a.insert(a.end(), {"--dir", "/tmp"});
  }
  // The directories that hold the mount points, readable by the sandbox's user (bwrap would make
  // them 0700, owned by root in root mode).
  std::set<std::string> parents;
  for (const SandboxBind& b : binds) {
    for (size_t at = b.target.find('/', 1); at != std::string::npos;
         at = b.target.find('/', at + 1)) {
      parents.insert(b.target.substr(0, at));
    }
  }
  for (const std::string& p : parents) {
    if (p == "/tmp" || p == "/usr" || p == "/etc" || p == "/proc" || p == "/dev") continue;
    if (std::any_of(binds.begin(), binds.end(),
                    [&p](const SandboxBind& b) { return b.target == p; })) {
      continue;
    }
    a.insert(a.end(), {"--perms", "0755", "--dir", p});
  }
  for (const SandboxBind& b : binds) {
    if (b.writable && mode.root) {
      absl::Status owned = ChownRecursively(b.source, out.uid, out.gid);
      if (!owned.ok()) return owned;
    }
    a.insert(a.end(), {b.writable ? "--bind" : "--ro-bind", Absolute(b.source), b.target});
  }
  // The sandbox's root (bwrap's tmpfs, where the mount points live) and /dev (a tmpfs of device
  // nodes, owned by the command in user-namespace mode) are not writable either. Writing to a
  // device (/dev/null) still works, and /dev/pts is a mount of its own.
  a.insert(a.end(), {"--remount-ro", "/dev", "--remount-ro", "/"});
  a.insert(a.end(), {"--chdir", options.working_dir.empty() ? "/" : options.working_dir, "--"});

  a.insert(a.end(), {*env, "--default-signal", *prlimit, "--core=0:0"});
  const SandboxLimits& l = options.limits;
  if (l.max_processes > 0) a.push_back(Limit("--nproc", l.max_processes, l.max_processes));
  if (l.max_open_files > 0) a.push_back(Limit("--nofile", l.max_open_files, l.max_open_files));
  if (l.max_address_space_bytes > 0) {
    a.push_back(Limit("--as", l.max_address_space_bytes, l.max_address_space_bytes));
  }
  if (l.max_cpu_seconds > 0) a.push_back(Limit("--cpu", l.max_cpu_seconds, l.max_cpu_seconds + 1));
  if (l.max_file_size_bytes > 0) {
    a.push_back(Limit("--fsize", l.max_file_size_bytes, l.max_file_size_bytes));
  }
  if (mode.root) {
    absl::StatusOr<std::string> setpriv = SystemTool("setpriv", "util-linux");
    if (!setpriv.ok()) return setpriv.status();
    a.insert(a.end(),
             {"--", *setpriv, "--reuid", absl::StrCat(out.uid), "--regid", absl::StrCat(out.gid),
              "--clear-groups", "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"});
  }
  a.push_back("--");
  a.insert(a.end(), command.begin(), command.end());
  return out;
}

absl::StatusOr<SubprocessOptions> SandboxedSubprocess(const SandboxOptions& sandbox,
                                                      SubprocessOptions options) {
  absl::StatusOr<SandboxCommand> command = MakeSandboxCommand(sandbox, options.argv);
  if (!command.ok()) return command.status();
  options.argv = std::move(command->argv);
  options.new_session = true;
  options.launcher = true;
  return options;
}

absl::StatusOr<std::string> PathIntoSandbox(pid_t launcher, absl::string_view inside) {
  // bwrap's one child is the sandbox's init, in the sandbox's mount namespace.
  const std::string children = absl::StrCat("/proc/", launcher, "/task/", launcher, "/children");
  std::ifstream in(children);
  std::string first;
  if (!(in >> first)) {
    return absl::NotFoundError(
        absl::StrCat("sandbox of process ", launcher, ": no sandbox process (", children, ")"));
  }
  return absl::StrCat("/proc/", first, "/root", inside);
}

namespace {

// The children of every thread of `pid` (empty when it is gone).
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return children;
  while (struct dirent* e = readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream in(absl::StrCat(tasks, "/", e->d_name, "/children"));
    for (pid_t child; in >> child;) children.push_back(child);
  }
  closedir(dir);
  return children;
}

// From /proc/PID/status: its pid inside its own pid namespace (the last NSpid), its thread count,
// and whether it is a zombie (dead, waiting for its parent). False when it is gone.
struct ProcStatus {
  pid_t ns_pid = 0;
  int threads = 0;
  bool zombie = false;
};
bool ReadProcStatus(pid_t pid, ProcStatus* status) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  if (!in) return false;
  for (std::string line; std::getline(in, line);) {
    if (absl::StartsWith(line, "State:")) {
      status->zombie = line.find('Z') != std::string::npos || line.find('X') != std::string::npos;
    } else if (absl::StartsWith(line, "Threads:")) {
      (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(8)), &status->threads);
    } else if (absl::StartsWith(line, "NSpid:")) {
      std::vector<absl::string_view> ids =
          absl::StrSplit(line.substr(6), '\t', absl::SkipWhitespace());
      if (!ids.empty())
        (void)absl::SimpleAtoi(absl::StripAsciiWhitespace(ids.back()), &status->ns_pid);
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<SandboxProcesses> ListSandboxProcesses(pid_t launcher) {
  // bwrap's one child is the sandbox's init; every process of the sandbox descends from it.
  std::vector<pid_t> inits = ChildrenOf(launcher);
  if (inits.empty()) {
    return absl::NotFoundError(
        absl::StrCat("sandbox of process ", launcher, ": no sandbox process"));
  }
  SandboxProcesses out;
  std::vector<pid_t> todo = ChildrenOf(inits[0]);
  std::set<pid_t> seen;
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    if (!seen.insert(pid).second) continue;
    ProcStatus status;
    if (!ReadProcStatus(pid, &status)) continue;  // gone meanwhile
    for (pid_t child : ChildrenOf(pid)) todo.push_back(child);
    if (status.zombie) continue;
    if (status.ns_pid == 2) {
      out.command_threads = status.threads;
    } else {
      out.strays.push_back(pid);
    }
  }
  std::sort(out.strays.begin(), out.strays.end());
  return out;
}

absl::StatusOr<KilledStrays> KillSandboxStrays(pid_t launcher) {
  KilledStrays out;
  std::set<pid_t> killed;
  for (int look = 0; look < 100; ++look) {
    absl::StatusOr<SandboxProcesses> now = ListSandboxProcesses(launcher);
    if (!now.ok()) return now.status();
    out.left = *std::move(now);
    if (out.left.strays.empty()) break;
    for (pid_t pid : out.left.strays) {
      if (kill(pid, SIGKILL) == 0) killed.insert(pid);
    }
    // The init reaps them; a moment for that, so the next look sees who is really left.
    absl::SleepFor(absl::Milliseconds(look < 10 ? 1 : 10));
  }
  out.killed = static_cast<int>(killed.size());
  return out;
}

void SetSandboxProcForTesting(bool fresh_proc) { g_fresh_proc = fresh_proc; }

bool SandboxHasProc() { return g_fresh_proc.load(); }

absl::Status CheckSandbox() {
  SandboxOptions options;
  options.new_session = true;
  RunCommandOptions run;
  run.time_limit = absl::Seconds(20);
  absl::StatusOr<CommandRun> ran;
  for (bool retried = false;; retried = true) {
    absl::StatusOr<SandboxCommand> command = MakeSandboxCommand(options, {"/bin/true"});
    if (!command.ok()) return command.status();
    run.argv = command->argv;
    ran = RunCommand(run, absl::InfiniteFuture(), "sandbox check");
    if (!ran.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the sandbox for user code cannot start: ", ran.status().message()));
    }
    if (ran->succeeded() || retried || !absl::StrContains(ran->output, "Can't mount proc")) break;
    g_fresh_proc = false;  // and once more, with an empty /proc
  }
  if (!ran->succeeded()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the sandbox for user code does not work on this host (", CommandLine(run.argv), ": ",
        ran->timed_out ? std::string("timed out")
                       : (ran->exit ? ran->exit->ToString() : std::string("no exit status")),
        ")", OutputForError(ran->output, ran->output_bytes),
        "\nbwrap needs user namespaces (sysctl kernel.unprivileged_userns_clone=1 and "
        "user.max_user_namespaces > 0) unless it runs as root"));
  }
  return absl::OkStatus();
}

std::string DescribeSandbox() {
  const Mode mode = HostMode();
  std::string text;
  if (mode.root) {
    text = "bubblewrap, root mode: each sandbox runs as a uid of its own";
  } else if (mode.bounds_processes) {
    text = absl::StrCat("bubblewrap, user-namespace mode: sandboxes run as uid ", geteuid(),
                        " outside");
  } else {
    text =
        "bubblewrap, user-namespace mode as uid 0 of a user namespace that maps no other uid: "
        "the number of processes in a sandbox is not bounded (the kernel exempts uid 0 from "
        "RLIMIT_NPROC); run the agent as real root or as an ordinary user to bound it";
  }
  if (!g_fresh_proc) {
    absl::StrAppend(&text,
                    "; sandboxes have an empty /proc (this host refuses a fresh proc mount, "
                    "e.g. under systemd's ProtectKernelTunables)");
  }
  return text;
}

}  // namespace benchfarm::process
