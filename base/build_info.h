// Build information: the version and source commit a benchfarm binary was built from, stamped at
// build time (bazel/workspace_status.sh -> //base:build_stamp), for --version and the
// benchfarm_build_info series on /metrics.
//
// Version() is the VERSION file at the workspace root ("0.1.0"); Commit() the checked-out commit
// (12 hex digits, "-dirty" when tracked files differed from it). Either is "unknown" when the
// build could not tell (no git checkout, no git, a build without .bazelrc's workspace status).
//
// Thread-safety: constants; safe from any thread.

#ifndef BENCHFARM_BASE_BUILD_INFO_H_
#define BENCHFARM_BASE_BUILD_INFO_H_

#include <string>

#include "absl/strings/string_view.h"

namespace benchfarm::base {

absl::string_view Version();
absl::string_view Commit();

// What --version prints: "benchfarm-tracker 0.1.0 (commit 6e06438a21f7)".
std::string VersionLine(absl::string_view program);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_BUILD_INFO_H_
