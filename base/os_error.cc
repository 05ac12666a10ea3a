#include "base/os_error.h"

#include <errno.h>
#include <string.h>

#include "absl/strings/str_cat.h"

namespace benchfarm::base {

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the message, which may or may not be `buf`.
  return strerror_r(err, buf, sizeof(buf));
}

absl::Status OpenErrorToStatus(int err, absl::string_view message) {
  std::string text = absl::StrCat(message, ": ", ErrnoText(err));
  switch (err) {
    case ENOENT:
    case ENOTDIR:
      return absl::NotFoundError(text);
    case EACCES:
    case EPERM:
    case EROFS:
      return absl::PermissionDeniedError(text);
    case ENXIO:
    case ENODEV:
    case EIO:
    case EBUSY:
      return absl::UnavailableError(text);
    default:
      return absl::InternalError(text);
  }
}

}  // namespace benchfarm::base
