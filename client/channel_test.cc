#include "client/channel.h"

#include "gtest/gtest.h"

namespace benchfarm::client {
namespace {

TEST(TrackerTarget, OneAddressIsItself) {
  EXPECT_EQ(TrackerTarget("farm.example:7070").value(), "farm.example:7070");
}

TEST(TrackerTarget, SeveralAreOneTargetOverEveryAddressInOrder) {
  EXPECT_EQ(TrackerTarget("127.0.0.1:7070, localhost:7071").value(),
            "ipv4:127.0.0.1:7070,127.0.0.1:7071");
  EXPECT_EQ(TrackerTarget("[::1]:7070,[::1]:7071").value(), "ipv6:[::1]:7070,[::1]:7071");
}

TEST(TrackerTarget, BadListsAreInvalidArgumentNamingThePart) {
  absl::StatusOr<std::string> bad = TrackerTarget("127.0.0.1:7070,nonsense");
  ASSERT_TRUE(absl::IsInvalidArgument(bad.status())) << bad.status();
  EXPECT_NE(bad.status().message().find("\"nonsense\" is not HOST:PORT"), std::string::npos)
      << bad.status();
  EXPECT_TRUE(absl::IsInvalidArgument(TrackerTarget("127.0.0.1:1,[::1]:2").status()));
  EXPECT_TRUE(
      absl::IsInvalidArgument(TrackerTarget("127.0.0.1:1,no-such-host.invalid:2").status()));
}

}  // namespace
}  // namespace benchfarm::client
