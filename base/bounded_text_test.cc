#include "base/bounded_text.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace benchfarm::base {
namespace {

// What every result must be: well-formed UTF-8 (checked independently of the code under test,
// by decoding each sequence) and no NUL.
bool WellFormed(const std::string& s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    if (c == 0) return false;
    int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) {
      const unsigned char d = s[i + k];
      if ((d & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3F);
    }
    const uint32_t min = n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n;
  }
  return true;
}

TEST(ValidUtf8, KeepsValidText) {
  const std::string text =
      "trial.c:3:1: error: expected ';' — «ü» 日本 \xF0\x9F\x98\x80\n\t\x1b[1m";
  EXPECT_EQ(ValidUtf8(text), text);
}

TEST(ValidUtf8, ReplacesEveryBadByteAndNul) {
  EXPECT_EQ(ValidUtf8(std::string("a\0b", 3)),
            "a\xEF\xBF\xBD"
            "b");
  EXPECT_EQ(ValidUtf8("\xFF"), "\xEF\xBF\xBD");
  EXPECT_EQ(ValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");                  // overlong '/'
  EXPECT_EQ(ValidUtf8("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(ValidUtf8("\xF4\x90\x80\x80").size(), 12u);                          // above U+10FFFF
  EXPECT_EQ(ValidUtf8("ok\xE2\x82"), "ok\xEF\xBF\xBD\xEF\xBF\xBD");  // cut off at the end
  EXPECT_EQ(ValidUtf8("\x80x"), "\xEF\xBF\xBDx");                    // a stray continuation
}

TEST(ValidUtf8, EveryByteValueMakesWellFormedText) {
  std::string all;
  for (int i = 0; i < 256; ++i) {
    for (int j = 0; j < 256; j += 17) {
      all.push_back(static_cast<char>(i));
      all.push_back(static_cast<char>(j));
    }
  }
  EXPECT_TRUE(WellFormed(ValidUtf8(all)));
}

TEST(BoundedText, ShortTextUnchanged) { EXPECT_EQ(BoundedText("hello\n", 1024), "hello\n"); }

TEST(BoundedText, LongTextKeepsHeadAndTailAndSaysSo) {
  std::string text = "HEAD first line\n";
  for (int i = 0; i < 10000; ++i) absl::StrAppend(&text, "line ", i, " of the middle\n");
  text += "TAIL: error: the last line\n";
  const std::string bounded = BoundedText(text, 4096);
  EXPECT_LE(bounded.size(), 4096u);
  EXPECT_TRUE(absl::StartsWith(bounded, "HEAD first line\n"));
  EXPECT_TRUE(absl::EndsWith(bounded, "TAIL: error: the last line\n"));
  EXPECT_TRUE(absl::StrContains(bounded, "bytes cut here: this text keeps at most 4096 bytes"))
      << bounded;
}

TEST(BoundedText, HugeBinaryOutputIsBoundedAndWellFormed) {
  std::string binary;
  uint32_t x = 12345;
  for (int i = 0; i < (4 << 20); ++i) {
    x = x * 1103515245 + 12345;
    binary.push_back(static_cast<char>(x >> 16));
  }
  for (size_t max : {size_t{300}, size_t{4097}, size_t{65536}}) {
    const std::string bounded = BoundedText(binary, max);
    EXPECT_LE(bounded.size(), max);
    EXPECT_GT(bounded.size(), max - 8);  // cut between characters: at most a few bytes short
    EXPECT_TRUE(WellFormed(bounded));
  }
}

TEST(BoundedText, CutsBetweenCharacters) {
  std::string text;
  for (int i = 0; i < 5000; ++i) text += "日本\xF0\x9F\x98\x80";
  for (size_t max = 256; max < 400; ++max) {
    const std::string bounded = BoundedText(text, max);
    EXPECT_LE(bounded.size(), max);
    EXPECT_TRUE(WellFormed(bounded)) << max;
  }
}

}  // namespace
}  // namespace benchfarm::base
