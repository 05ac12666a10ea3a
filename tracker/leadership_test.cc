#include "tracker/leadership.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "gtest/gtest.h"

namespace benchfarm::tracker {
namespace {

std::string LockPath() {
  return std::string(std::getenv("TEST_TMPDIR")) + "/" +
         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".leader";
}

TEST(FileLeadership, OneLeadsTheOtherWaitsAndTakesOverWhenItGoes) {
  auto first = std::make_unique<FileLeadership>(LockPath());
  FileLeadership second(LockPath());
  ASSERT_TRUE(first->TryAcquire().value());
  EXPECT_TRUE(first->leading());
  EXPECT_FALSE(second.TryAcquire().value());
  EXPECT_FALSE(second.leading());
  EXPECT_EQ(second.LeaderPid(), getpid());
  // A standby told to stop while waiting gives up.
  int polls = 0;
  EXPECT_FALSE(second.Acquire([&] { return ++polls >= 3; }, absl::Milliseconds(1)).value());
  EXPECT_EQ(polls, 3);
  first.reset();  // the leader ends
  EXPECT_TRUE(second.Acquire([] { return false; }, absl::Milliseconds(1)).value());
  EXPECT_TRUE(second.leading());
}

TEST(FileLeadership, AnUnwritableLockFileIsAnError) {
  FileLeadership nowhere("/nonexistent-dir/db.leader");
  absl::StatusOr<bool> led = nowhere.TryAcquire();
  ASSERT_FALSE(led.ok());
  EXPECT_NE(led.status().message().find("/nonexistent-dir/db.leader"), std::string::npos);
}

}  // namespace
}  // namespace benchfarm::tracker
