#include "device/flasher.h"

#include <cctype>
#include <fstream>
#include <optional>
#include <utility>

#include "base/content_hash.h"
#include "base/status_macros.h"

namespace benchfarm::device {

namespace {

// The 16 hex digits in `path`.hash, if that file exists and holds them.
std::optional<std::string> FirmwareIdBeside(const std::string& path) {
  std::ifstream in(path + ".hash");
  std::string id;
  if (!in || !(in >> id) || id.size() != 16) return std::nullopt;
  for (char c : id) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) ||
        std::isupper(static_cast<unsigned char>(c))) {
      return std::nullopt;
    }
  }
  return id;
}

}  // namespace

absl::StatusOr<FirmwareImage> FirmwareImageFromFile(const std::string& path) {
  FirmwareImage image;
  image.path = path;
  ASSIGN_OR_RETURN(image.content_hash, base::HashFile(path));  // also: the image must be readable
  if (std::optional<std::string> id = FirmwareIdBeside(path)) image.content_hash = *id;
  return image;
}

}  // namespace benchfarm::device
