// The text of an errno value, for messages.
#ifndef BENCHFARM_BASE_OS_ERROR_H_
#define BENCHFARM_BASE_OS_ERROR_H_

#include <string>

namespace benchfarm::base {

// strerror_r's text for `err` ("No such file or directory"). Thread-safe.
std::string ErrnoText(int err);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_OS_ERROR_H_
