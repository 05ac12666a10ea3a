#include "base/bounded_text.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace benchfarm::base {
namespace {

constexpr char kReplacement[] = "\xEF\xBF\xBD";  // U+FFFD

// The length of the valid UTF-8 sequence at the start of `s` (1-4), or 0 if none starts there.
size_t SequenceLength(absl::string_view s) {
  const auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](size_t i) { return i < s.size() && (b(i) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c < 0x80) return c == 0 ? 0 : 1;
  if (c >= 0xC2 && c <= 0xDF) return continuation(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!continuation(1) || !continuation(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // a surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!continuation(1) || !continuation(2) || !continuation(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;   // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

bool IsContinuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string ValidUtf8(absl::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    const size_t n = SequenceLength(bytes.substr(i));
    if (n == 0) {
      out += kReplacement;
      ++i;
    } else {
      out.append(bytes.data() + i, n);
      i += n;
    }
  }
  return out;
}

std::string BoundedText(absl::string_view bytes, size_t max_bytes) {
  std::string text = ValidUtf8(bytes);
  max_bytes = std::max(max_bytes, kMinBoundedBytes);
  if (text.size() <= max_bytes) return text;
  // The marker's length depends on the number it names: take the longest it can be.
  const std::string longest =
      absl::StrCat("\n[... ", text.size(), " bytes cut here: this text keeps at most ", max_bytes,
                   " bytes ...]\n");
  const size_t room = max_bytes - longest.size();
  size_t head = room / 2;
  while (head > 0 && IsContinuation(text[head])) --head;
  size_t tail = text.size() - (room - room / 2);
  while (tail < text.size() && IsContinuation(text[tail])) ++tail;
  const std::string marker =
      absl::StrCat("\n[... ", tail - head, " bytes cut here: this text keeps at most ", max_bytes,
                   " bytes ...]\n");
  return absl::StrCat(absl::string_view(text).substr(0, head), marker,
                      absl::string_view(text).substr(tail));
}

}  // namespace benchfarm::base
