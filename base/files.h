// Small file helpers every layer uses.
#ifndef BENCHFARM_BASE_FILES_H_
#define BENCHFARM_BASE_FILES_H_

#include <string>

#include "absl/status/statusor.h"

namespace benchfarm::base {

// The whole file. NotFound "cannot read PATH" when it cannot be opened.
absl::StatusOr<std::string> ReadFile(const std::string& path);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_FILES_H_
