// HashFile/HashBytes: FNV-1a 64 test vectors, files larger than one read chunk, and errors.

#include "base/content_hash.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"

namespace benchfarm::base {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

std::string WriteFile(const std::string& name, const std::string& content) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << content;
  return path;
}

TEST(HashBytes, MatchesFnv1a64Vectors) {
  EXPECT_EQ(HashBytes(""), "cbf29ce484222325");
  EXPECT_EQ(HashBytes("a"), "af63dc4c8601ec8c");
  EXPECT_EQ(HashBytes("foobar"), "85944171f73967e8");
}

TEST(HashFile, EmptyFileIsTheOffsetBasis) {
  auto h = HashFile(WriteFile("empty", ""));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, "cbf29ce484222325");
}

TEST(HashFile, KnownString) {
  auto h = HashFile(WriteFile("foobar", "foobar"));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, "85944171f73967e8");
}

TEST(HashFile, FileLargerThanOneChunkMatchesHashBytes) {
  std::string content;
  for (int i = 0; i < 200000; ++i) content.push_back(static_cast<char>((i * 7919) & 0xff));
  auto h = HashFile(WriteFile("large", content));
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(*h, HashBytes(content));
  EXPECT_EQ(h->size(), 16u);
}

TEST(HashFile, Errors) {
  const std::string missing = TempPath("no-such-image");
  auto h = HashFile(missing);
  EXPECT_TRUE(absl::IsNotFound(h.status())) << h.status();
  EXPECT_TRUE(absl::StrContains(h.status().message(), missing)) << h.status();

  h = HashFile(TempPath(""));
  EXPECT_TRUE(absl::IsFailedPrecondition(h.status())) << h.status();
  EXPECT_TRUE(absl::StrContains(h.status().message(), "not a regular file")) << h.status();
}

}  // namespace
}  // namespace benchfarm::base
