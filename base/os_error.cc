#include "base/os_error.h"

#include <string.h>

namespace benchfarm::base {

std::string ErrnoText(int err) {
  char buf[256];
  // GNU strerror_r returns the message, which may or may not be `buf`.
  return strerror_r(err, buf, sizeof(buf));
}

}  // namespace benchfarm::base
