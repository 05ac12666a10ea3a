// Build information: see build_info.h.
#include "base/build_info.h"

#include "absl/strings/str_cat.h"
#include "base/build_stamp.h"  // generated: BENCHFARM_BUILD_VERSION, BENCHFARM_BUILD_COMMIT

namespace benchfarm::base {

absl::string_view Version() { return BENCHFARM_BUILD_VERSION; }

absl::string_view Commit() { return BENCHFARM_BUILD_COMMIT; }

std::string VersionLine(absl::string_view program) {
  return absl::StrCat(program, " ", Version(), " (commit ", Commit(), ")");
}

}  // namespace benchfarm::base
