// FakeFlasher: records flashes, fails on request (in order), honours a passed deadline.

#include "device/testing/fake_flasher.h"

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "absl/time/clock.h"

namespace benchfarm::device {
namespace {

absl::Time Soon() { return absl::Now() + absl::Seconds(10); }

TEST(FakeFlasher, RecordsFlashes) {
  FakeFlasher flasher("fake:hp0");
  EXPECT_EQ(flasher.Name(), "fake:hp0");
  EXPECT_FALSE(flasher.running().has_value());
  ASSERT_TRUE(flasher.Flash({"/images/a", "aaaa"}, Soon()).ok());
  ASSERT_TRUE(flasher.Flash({"/images/b", "bbbb"}, Soon()).ok());
  ASSERT_EQ(flasher.flashed().size(), 2u);
  EXPECT_EQ(flasher.flashed()[0].path, "/images/a");
  EXPECT_EQ(flasher.flashed()[1].content_hash, "bbbb");
  EXPECT_EQ(flasher.attempts(), 2);
  ASSERT_TRUE(flasher.running().has_value());
  EXPECT_EQ(flasher.running()->path, "/images/b");
}

TEST(FakeFlasher, FailsTheNextFlashesInOrder) {
  FakeFlasher flasher;
  ASSERT_TRUE(flasher.Flash({"/images/a", "aaaa"}, Soon()).ok());
  flasher.FailNextFlash(absl::UnknownError("openocd: exit code 1"));
  flasher.FailNextFlash(absl::DeadlineExceededError("too slow"));
  absl::Status s = flasher.Flash({"/images/b", "bbbb"}, Soon());
  EXPECT_TRUE(absl::IsUnknown(s)) << s;
  EXPECT_FALSE(flasher.running().has_value());  // a failed flash leaves the board unknown
  s = flasher.Flash({"/images/b", "bbbb"}, Soon());
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  ASSERT_TRUE(flasher.Flash({"/images/b", "bbbb"}, Soon()).ok());
  EXPECT_EQ(flasher.attempts(), 4);
  ASSERT_EQ(flasher.flashed().size(), 2u);
  EXPECT_EQ(flasher.running()->path, "/images/b");
}

TEST(FakeFlasher, PassedDeadline) {
  FakeFlasher flasher;
  absl::Status s = flasher.Flash({"/images/a", ""}, absl::Now() - absl::Seconds(1));
  EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
  EXPECT_TRUE(flasher.flashed().empty());
  EXPECT_EQ(flasher.attempts(), 1);
}

TEST(FakeFlasher, UsableThroughTheInterface) {
  FakeFlasher fake;
  Flasher& flasher = fake;
  ASSERT_TRUE(flasher.Flash({"/images/a", "aaaa"}, Soon()).ok());
  EXPECT_EQ(fake.flashed().size(), 1u);
}

}  // namespace
}  // namespace benchfarm::device
