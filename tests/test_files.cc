#include "tests/test_files.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "base/data_roots.h"
#include "base/files.h"

namespace benchfarm::testing {

std::string Runfiles(const std::string& path) { return base::FindDataFile(nullptr, path); }

std::string TestDir() {
  const std::string dir =
      absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  EXPECT_TRUE(base::MakeDirs(dir).ok());
  return dir;
}

}  // namespace benchfarm::testing
