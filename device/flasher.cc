#include "device/flasher.h"

#include <utility>

#include "device/firmware_hash.h"
#include "device/status_macros.h"

namespace benchfarm::device {

absl::StatusOr<FirmwareImage> FirmwareImageFromFile(const std::string& path) {
  FirmwareImage image;
  image.path = path;
  ASSIGN_OR_RETURN(image.content_hash, HashFile(path));
  return image;
}

}  // namespace benchfarm::device
