// JSON string literals for the JSON benchfarm writes by hand (AutoTVM log lines, farmctl's
// --json output, knob values).
#ifndef BENCHFARM_BASE_JSON_H_
#define BENCHFARM_BASE_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace benchfarm::base {

// `text` as a JSON string literal: quoted, with " \ \n \r \t escaped and other control
// characters as \u00XX.
std::string JsonQuote(absl::string_view text);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_JSON_H_
