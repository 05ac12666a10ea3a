// Tests of clock.h: FakeClock moves only when told to; RealClock follows the system's clock.

#include "base/clock.h"

#include <gtest/gtest.h>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace benchfarm::base {
namespace {

TEST(FakeClock, StartsWhereToldAndMovesOnlyOnAdvance) {
  const absl::Time start = absl::FromUnixSeconds(1234);
  FakeClock clock(start);
  EXPECT_EQ(clock.Now(), start);
  EXPECT_EQ(clock.Now(), start);
  clock.Advance(absl::Seconds(90));
  EXPECT_EQ(clock.Now(), start + absl::Seconds(90));
}

TEST(FakeClock, WorksThroughTheInterface) {
  FakeClock fake;
  const Clock& clock = fake;
  const absl::Time before = clock.Now();
  fake.Advance(absl::Milliseconds(5));
  EXPECT_EQ(clock.Now() - before, absl::Milliseconds(5));
}

TEST(RealClock, FollowsTheSystemClock) {
  RealClock clock;
  const absl::Time before = absl::Now();
  const absl::Time now = clock.Now();
  EXPECT_GE(now, before);
  EXPECT_LE(now, absl::Now());
}

}  // namespace
}  // namespace benchfarm::base
