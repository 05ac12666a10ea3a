// What /proc says about processes: one process's /proc/<pid>/stat, and a process's descendants
// with the CPU each has used (the agent's leftovers, the tests and benchmarks that watch QEMU or a
// board process).

#ifndef BENCHFARM_BASE_PROCESS_STAT_H_
#define BENCHFARM_BASE_PROCESS_STAT_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace benchfarm::base {

struct ProcessStat {
  pid_t pid = 0;
  std::string name;  // the command name (field 2, at most 15 bytes)
  char state = '?';  // R, S, D, Z, ... (field 3)
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  double cpu_seconds = 0;   // user + system (fields 14 and 15)
  uint64_t start_time = 0;  // clock ticks since boot (field 22)
};

// nullopt when the process does not exist (or /proc cannot tell).
std::optional<ProcessStat> ReadProcessStat(pid_t pid);

// Every live process below `ancestor` (its children, theirs, ...), in pid order. A process that
// exits while /proc is read is left out.
std::vector<ProcessStat> Descendants(pid_t ancestor);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_PROCESS_STAT_H_
