// FirmwareImageFromFile: the image's hash is HashFile's; a missing file is NotFound.

#include "device/flasher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "base/content_hash.h"

namespace benchfarm::device {
namespace {

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/" + name;
}

TEST(FirmwareImageFromFile, HashesTheFile) {
  const std::string path = TempPath("image.bin");
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "foobar";
  auto image = FirmwareImageFromFile(path);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->path, path);
  EXPECT_EQ(image->content_hash, "85944171f73967e8");
  EXPECT_EQ(image->content_hash, base::HashBytes("foobar"));
}

TEST(FirmwareImageFromFile, MissingFileIsNotFound) {
  const std::string path = TempPath("missing.bin");
  auto image = FirmwareImageFromFile(path);
  EXPECT_TRUE(absl::IsNotFound(image.status())) << image.status();
  EXPECT_TRUE(absl::StrContains(image.status().message(), path)) << image.status();
}

}  // namespace
}  // namespace benchfarm::device
