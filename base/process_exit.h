// ProcessExit: how a child process ended, as the process launcher (process/subprocess.h), the
// child-process transport and the flashers report it.

#ifndef BENCHFARM_BASE_PROCESS_EXIT_H_
#define BENCHFARM_BASE_PROCESS_EXIT_H_

#include <string>

namespace benchfarm::base {

// How a child process ended: exactly one of exited() and signaled() is true for a value made by
// FromWaitStatus() from a terminated process; a default-constructed one is neither.
struct ProcessExit {
  // The exit code (0..255) when the process exited, else -1.
  int exit_code = -1;
  // The signal that killed it, else 0.
  int signal = 0;
  bool core_dumped = false;

  bool exited() const { return exit_code >= 0; }
  bool signaled() const { return signal > 0; }

  // "exit code 3", "killed by signal 9 (Killed)", "killed by signal 11 (Segmentation fault),
  // core dumped"; "unknown end" for a default-constructed value.
  std::string ToString() const;

  // From a waitpid() status of a process that terminated (WIFEXITED or WIFSIGNALED).
  static ProcessExit FromWaitStatus(int wait_status);
};

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_PROCESS_EXIT_H_
