#include "base/files.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace benchfarm::base {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace benchfarm::base
