// SetUpCommandLine: see command_line.h.
#include "base/command_line.h"

#include <string>

#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "base/build_info.h"

namespace benchfarm::base {

void SetUpCommandLine(absl::string_view program, absl::string_view usage,
                      absl::string_view main_file) {
  absl::SetProgramUsageMessage(usage);
  // absl's default lists the flags of files named after the program (tracker_main.cc for
  // "tracker"): none once installed as benchfarm-tracker, and never farmctl/main.cc.
  const std::string file(main_file);
  absl::FlagsUsageConfig config;
  config.contains_helpshort_flags = [file](absl::string_view f) { return f == file; };
  config.contains_help_flags = config.contains_helpshort_flags;
  config.version_string = [name = std::string(program)] { return VersionLine(name) + "\n"; };
  absl::SetFlagsUsageConfig(config);
}

}  // namespace benchfarm::base
