// SetUpCommandLine: what a benchfarm binary's --help and --version print, set before
// absl::ParseCommandLine.
//
//   --help      the usage text, then every flag defined in the binary's main file (flags live in
//               binaries only: STYLE.md), whatever name the binary was installed under;
//               absl exits with status 1 after it, as for every help flag
//   --helpfull  the same with absl's own flags (--flagfile, ...)
//   --version   VersionLine(program) (base/build_info.h), exit status 0
//
// Thread-safety: call once, from main, before parsing.

#ifndef BENCHFARM_BASE_COMMAND_LINE_H_
#define BENCHFARM_BASE_COMMAND_LINE_H_

#include "absl/strings/string_view.h"

namespace benchfarm::base {

// program: the name a person types ("benchfarm-tracker"); usage: what the binary is and how to
// call it; main_file: the file that defines its flags, as the compiler names it (__FILE__).
void SetUpCommandLine(absl::string_view program, absl::string_view usage,
                      absl::string_view main_file);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_COMMAND_LINE_H_
