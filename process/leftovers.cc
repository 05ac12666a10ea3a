// Leftovers; see leftovers.h.

#include "process/leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/os_error.h"
#include "base/process_stat.h"

namespace benchfarm::process {
namespace {

constexpr char kLockFile[] = "agent.lock";
constexpr size_t kMaxCommand = 200;

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string CommandOf(pid_t pid) {
  std::string raw = ReadSmallFile(absl::StrCat("/proc/", pid, "/cmdline"));
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0') c = ' ';
  }
  if (raw.size() > kMaxCommand) raw = raw.substr(0, kMaxCommand) + "...";
  return raw;
}

// The boot time (seconds since the epoch), from /proc/stat's btime; 0 if unknown.
int64_t BootTime() {
  std::ifstream in("/proc/stat");
  std::string line;
  while (std::getline(in, line)) {
    int64_t t;
    if (absl::StartsWith(line, "btime ") && absl::SimpleAtoi(line.substr(6), &t)) return t;
  }
  return 0;
}

std::vector<pid_t> AllPids() {
  std::vector<pid_t> pids;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (struct dirent* e = readdir(proc)) {
    int pid;
    if (absl::SimpleAtoi(e->d_name, &pid) && pid > 0) pids.push_back(pid);
  }
  closedir(proc);
  return pids;
}

struct Record {
  pid_t pid;
  uint64_t start_time;
  std::string path;
};

// A process picked to be killed, with the pidfd that pins it (-1 where pidfd_open is missing).
struct Target {
  Leftover leftover;
  uint64_t start_time;
  int pidfd;
};

bool SameProcess(pid_t pid, uint64_t start_time) {
  std::optional<base::ProcessStat> now = base::ReadProcessStat(pid);
  return now.has_value() && now->start_time == start_time;
}

}  // namespace

std::string ProcessRecordDir(const std::string& scratch_dir) {
  return absl::StrCat(scratch_dir, "/processes");
}

absl::StatusOr<std::unique_ptr<StateLock>> StateLock::Acquire(const std::string& dir) {
  if (absl::Status made = base::MakeDirs(dir); !made.ok()) return made;
  const std::string path = absl::StrCat(dir, "/", kLockFile);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::InternalError(
        absl::StrCat("leftovers: open ", path, ": ", base::ErrnoText(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder(absl::StripAsciiWhitespace(ReadSmallFile(path)));
    close(fd);
    if (err == EWOULDBLOCK) {
      return absl::FailedPreconditionError(absl::StrCat(
          "another agent (pid ", holder.empty() ? "unknown" : holder, ") holds ", path,
          ": it runs with the same scratch_dir; two agents must not share their directories"));
    }
    return absl::InternalError(absl::StrCat("leftovers: flock ", path, ": ", base::ErrnoText(err)));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    const int err = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("leftovers: write ", path, ": ", base::ErrnoText(err)));
  }
  return std::unique_ptr<StateLock>(new StateLock(fd));
}

StateLock::~StateLock() { close(fd_); }

absl::StatusOr<LeftoverReport> KillLeftovers(const std::string& dir, absl::Time deadline) {
  if (absl::Status made = base::MakeDirs(dir); !made.ok()) return made;
  LeftoverReport report;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return absl::InternalError(
        absl::StrCat("leftovers: opendir ", dir, ": ", base::ErrnoText(errno)));
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      names.push_back(e->d_name);
    }
  }
  closedir(d);

  const int64_t boot = BootTime();
  std::vector<Record> records;
  for (const std::string& name : names) {
    ++report.records;
    Record r;
    r.path = absl::StrCat(dir, "/", name);
    struct stat st;
    const bool parsed =
        absl::SimpleAtoi(name, &r.pid) && r.pid > 0 &&
        absl::SimpleAtoi(absl::StripAsciiWhitespace(ReadSmallFile(r.path)), &r.start_time) &&
        lstat(r.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_mtime >= boot;
    if (!parsed) {
      ++report.stale_records;
      unlink(r.path.c_str());
      continue;
    }
    // The pid now names another process: the recorded one and its group are gone (a pid is not
    // reused while a group or session of that id exists). Or it is this process's own group or
    // session, which no child of a predecessor leads.
    if (std::optional<base::ProcessStat> now = base::ReadProcessStat(r.pid);
        (now.has_value() && now->start_time != r.start_time) || r.pid == getpgrp() ||
        r.pid == getsid(0)) {
      ++report.stale_records;
      unlink(r.path.c_str());
      continue;
    }
    records.push_back(std::move(r));
  }

  // Who belongs to which record. Never this process or one of its ancestors.
  std::set<pid_t> spared;
  for (pid_t p = getpid(); p > 0 && spared.insert(p).second;) {
    std::optional<base::ProcessStat> st = base::ReadProcessStat(p);
    p = st ? st->ppid : 0;
  }
  std::map<pid_t, std::vector<Target>> targets;  // by record pid
  for (pid_t pid : AllPids()) {
    if (spared.count(pid) != 0) continue;
    std::optional<base::ProcessStat> st = base::ReadProcessStat(pid);
    if (!st) continue;
    for (const Record& r : records) {
      const bool match = pid == r.pid ? st->start_time == r.start_time
                                      : (st->pgrp == r.pid || st->session == r.pid) &&
                                            st->start_time >= r.start_time;
      if (!match) continue;
      targets[r.pid].push_back(Target{Leftover{pid, r.pid, CommandOf(pid)}, st->start_time, -1});
      break;
    }
  }

  // Kill: through a pidfd taken before the start time is checked again, so the signal reaches
  // the process that was checked even if it ended meanwhile and its pid was reused.
  for (auto& [record, list] : targets) {
    for (Target& t : list) {
      t.pidfd = static_cast<int>(syscall(SYS_pidfd_open, t.leftover.pid, 0));
      if (!SameProcess(t.leftover.pid, t.start_time)) continue;  // gone already
      if (t.pidfd >= 0) {
        (void)syscall(SYS_pidfd_send_signal, t.pidfd, SIGKILL, nullptr, 0);
      } else {
        (void)kill(t.leftover.pid, SIGKILL);
      }
      report.killed.push_back(t.leftover);
    }
  }

  // Wait until they are gone.
  for (auto& [record, list] : targets) {
    for (Target& t : list) {
      bool gone = false;
      while (!gone) {
        if (t.pidfd >= 0) {
          struct pollfd p = {t.pidfd, POLLIN, 0};
          const absl::Duration left = deadline - absl::Now();
          const int ms = left > absl::ZeroDuration()
                             ? static_cast<int>(absl::ToInt64Milliseconds(left)) + 1
                             : 0;
          gone = poll(&p, 1, std::min(ms, 100)) > 0 || !SameProcess(t.leftover.pid, t.start_time);
        } else {
          gone = !SameProcess(t.leftover.pid, t.start_time);
          if (!gone) absl::SleepFor(absl::Milliseconds(5));
        }
        if (!gone && absl::Now() >= deadline) break;
      }
      if (t.pidfd >= 0) close(t.pidfd);
      if (!gone) report.still_running.push_back(t.leftover);
    }
  }

  for (const Record& r : records) {
    bool running = false;
    for (const Leftover& l : report.still_running) running = running || l.record == r.pid;
    if (!running) unlink(r.path.c_str());
  }
  return report;
}

int RemoveSandboxLinks(const std::string& dir) {
  int removed = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (struct dirent* e = readdir(d)) {
    const std::string path = absl::StrCat(dir, "/", e->d_name);
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) continue;
    char target[4096];
    const ssize_t n = readlink(path.c_str(), target, sizeof(target) - 1);
    if (n <= 0) continue;
    if (absl::StartsWith(absl::string_view(target, static_cast<size_t>(n)), "/proc/") &&
        unlink(path.c_str()) == 0) {
      ++removed;
    }
  }
  closedir(d);
  return removed;
}

std::string DescribeLeftovers(const LeftoverReport& report) {
  std::string text = absl::StrCat(report.records, " records, ", report.stale_records, " stale");
  auto list = [](const std::vector<Leftover>& l) {
    return absl::StrJoin(l, ", ", [](std::string* out, const Leftover& x) {
      absl::StrAppend(out, x.pid, " (", x.command, ")");
    });
  };
  absl::StrAppend(&text, "; killed ", report.killed.size(), " processes");
  if (!report.killed.empty()) absl::StrAppend(&text, ": ", list(report.killed));
  if (!report.still_running.empty()) {
    absl::StrAppend(&text, "; still running at the deadline: ", list(report.still_running));
  }
  return text;
}

}  // namespace benchfarm::process
