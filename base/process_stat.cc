#include "base/process_stat.h"

#include <dirent.h>
#include <unistd.h>

#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/files.h"

namespace benchfarm::base {

std::optional<ProcessStat> ReadProcessStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  // (Not a stream: reading a process that exits after the open fails with ESRCH.)
  const std::string text = ReadFile(absl::StrCat("/proc/", pid, "/stat")).value_or("");
  // The command name, field 2, is in parentheses and may hold anything: fields 3.. follow the
  // last ')'.
  const size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  std::vector<absl::string_view> f =
      absl::StrSplit(absl::string_view(text).substr(close + 1), ' ', absl::SkipEmpty());
  // f[0] is field 3 (state); field N is f[N - 3].
  ProcessStat st;
  st.pid = pid;
  st.name = text.substr(open + 1, close - open - 1);
  uint64_t utime = 0, stime = 0;
  if (f.size() < 20 || f[0].empty() || !absl::SimpleAtoi(f[1], &st.ppid) ||
      !absl::SimpleAtoi(f[2], &st.pgrp) || !absl::SimpleAtoi(f[3], &st.session) ||
      !absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime) ||
      !absl::SimpleAtoi(f[19], &st.start_time)) {
    return std::nullopt;
  }
  st.state = f[0][0];
  st.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
  return st;
}

std::vector<ProcessStat> Descendants(pid_t ancestor) {
  std::map<pid_t, ProcessStat> all;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* e = readdir(proc)) {
      pid_t pid = 0;
      if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
      if (std::optional<ProcessStat> st = ReadProcessStat(pid)) all[pid] = *std::move(st);
    }
    closedir(proc);
  }
  std::vector<ProcessStat> out;
  for (const auto& [pid, st] : all) {
    // Up the parents until `ancestor`, init or a process that is gone (a bounded walk: a pid
    // cycle cannot occur, but /proc is read over time).
    pid_t p = st.ppid;
    for (size_t steps = 0; p > 1 && p != ancestor && steps < all.size(); ++steps) {
      auto it = all.find(p);
      p = it == all.end() ? 0 : it->second.ppid;
    }
    if (p == ancestor && pid != ancestor) out.push_back(st);
  }
  return out;
}

}  // namespace benchfarm::base
