// Small file helpers every layer uses.
#ifndef BENCHFARM_BASE_FILES_H_
#define BENCHFARM_BASE_FILES_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace benchfarm::base {

// The whole file. NotFound "cannot read PATH" when it cannot be opened.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `content` as the whole file (created or truncated). Internal "cannot write PATH".
absl::Status WriteFile(const std::string& path, const std::string& content);

// Creates `path` and its parents (like mkdir -p), mode 0755. InvalidArgument for an empty path;
// Internal "mkdir PREFIX: <the OS's text>" on failure.
absl::Status MakeDirs(const std::string& path);

// Removes `path` and everything under it (symbolic links themselves, never followed), as far as
// it can; errors are ignored.
void RemoveTree(const std::string& path);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_FILES_H_
