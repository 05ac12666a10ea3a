// Errno values in messages and statuses.
#ifndef BENCHFARM_BASE_OS_ERROR_H_
#define BENCHFARM_BASE_OS_ERROR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace benchfarm::base {

// strerror_r's text for `err` ("No such file or directory"). Thread-safe.
std::string ErrnoText(int err);

// The status for an open()-like call that failed with `err`; `message` (which should name the
// path and the call) gets the errno's text appended. ENOENT/ENOTDIR => NotFound;
// EACCES/EPERM/EROFS => PermissionDenied; ENXIO/ENODEV/EIO/EBUSY (a device node whose device
// vanished or is held by someone else) => Unavailable; anything else => Internal. Thread-safe.
absl::Status OpenErrorToStatus(int err, absl::string_view message);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_OS_ERROR_H_
