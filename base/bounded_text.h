// Text from outside benchfarm's control — a compiler's or a flash tool's output, a board's log —
// made fit to keep and to send: valid UTF-8 (protobuf's string fields and PostgreSQL's text
// columns refuse anything else), without NUL bytes (PostgreSQL's text refuses those too), and at
// most a given size, cut in the middle with a line that says how much was cut (the head says
// what ran, the tail how it ended).

#ifndef BENCHFARM_BASE_BOUNDED_TEXT_H_
#define BENCHFARM_BASE_BOUNDED_TEXT_H_

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace benchfarm::base {

// `bytes` with every byte that does not begin or continue a valid UTF-8 sequence (bad lead or
// continuation bytes, overlong forms, surrogates, code points above U+10FFFF, a sequence cut off
// at the end) and every NUL replaced by U+FFFD. Valid text without NUL comes back unchanged.
std::string ValidUtf8(absl::string_view bytes);

// ValidUtf8(bytes), and when that is longer than max_bytes: its first and last parts (cut
// between characters) around the line
//   [... N bytes cut here: this text keeps at most M bytes ...]
// so that the whole has at most max_bytes. max_bytes below kMinBoundedBytes is taken as that.
inline constexpr size_t kMinBoundedBytes = 256;
std::string BoundedText(absl::string_view bytes, size_t max_bytes);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_BOUNDED_TEXT_H_
