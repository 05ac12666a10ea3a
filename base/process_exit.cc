#include "base/process_exit.h"

#include <string.h>
#include <sys/wait.h>

#include "absl/strings/str_cat.h"

namespace benchfarm::base {

std::string ProcessExit::ToString() const {
  if (exited()) return absl::StrCat("exit code ", exit_code);
  if (signaled()) {
    const char* what = sigdescr_np(signal);
    return absl::StrCat("killed by signal ", signal, what ? absl::StrCat(" (", what, ")") : "",
                        core_dumped ? ", core dumped" : "");
  }
  return "unknown end";
}

ProcessExit ProcessExit::FromWaitStatus(int wait_status) {
  ProcessExit e;
  if (WIFEXITED(wait_status)) {
    e.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    e.signal = WTERMSIG(wait_status);
    e.core_dumped = WCOREDUMP(wait_status);
  }
  return e;
}

}  // namespace benchfarm::base
