// A board's core — the processor as GCC's -mcpu names it ("cortex-m3") — read from data the
// project already has, so the agent can report it (BoardRegistration.cpu) and AutoTVM records can
// name it in their target, as microTVM's did ("c -keys=arm_cpu,cpu -mcpu=cortex-m7 ...").
//
// The path from a configured board to its core:
//   BoardConfig.build_template        agent/templates/qemu-mps2-an385
//   <template>/package                "mps2-an385": the crt/boards package the template's build
//                                     script builds (the script reads the same file: the package
//                                     is named in one place)
//   <crt>/boards/<package>/board.conf CPU_FLAGS="-mcpu=cortex-m3 -mthumb ..."
// A template without a `package` file (host-process) builds for the host: no core, "".
//
// board.conf is read as crt/boards/build.sh reads it: KEY=VALUE or KEY="value" lines, comments
// on their own lines or after an unquoted value; data, never executed.
//
// Thread-safety: pure functions over files.

#ifndef BENCHFARM_AGENT_BOARD_CORE_H_
#define BENCHFARM_AGENT_BOARD_CORE_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace benchfarm::agent {

// The KEY=VALUE lines of a board.conf's text. InvalidArgument "line N: not KEY=VALUE: ..." for
// any other line.
absl::StatusOr<std::map<std::string, std::string>> ParseBoardConf(absl::string_view text);

// The core the compiler flags name: the value of their -mcpu= ("cortex-m4" of
// "-mcpu=cortex-m4 -mthumb"). InvalidArgument when there is none, more than one, or it is not a
// core name (lowercase letters, digits, '.', '+', '-').
absl::StatusOr<std::string> CoreOfCpuFlags(absl::string_view cpu_flags);

// The core of a board built by the project template in `template_dir` from the crt tree at
// `crt_dir`; "" for a template that names no package. Errors (InvalidArgument, naming the file):
// a `package` file that is empty or not a package name, a package without board.conf, a
// board.conf that is not KEY=VALUE lines or whose CPU_FLAGS name no core.
absl::StatusOr<std::string> BoardCore(const std::string& template_dir, const std::string& crt_dir);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_BOARD_CORE_H_
