// What an agent's certificate lets it serve (issue 34): grants parsed from its URI names, and
// TrackerService::Granted's answer for each board it registers — the glob, the kind (or "*"), the
// slot cap, and certificates from before kinds were bound.

#include "tracker/auth.h"

#include <optional>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tracker/service.h"

namespace benchfarm::tracker {
namespace {

using ::testing::HasSubstr;

TEST(ParseBoardGrant, ReadsKindSlotsAndGlob) {
  std::optional<BoardGrant> g = ParseBoardGrant("urn:benchfarm:serve:qemu-mps2-an385:8:m3-*");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->kind, "qemu-mps2-an385");
  EXPECT_EQ(g->max_slots, 8);
  EXPECT_EQ(g->glob, "m3-*");
  g = ParseBoardGrant("urn:benchfarm:serve:*:0:hp-?");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->kind, "*");
  EXPECT_EQ(g->max_slots, 0);
  for (const char* bad : {"urn:benchfarm:board:m3-*", "urn:benchfarm:serve:k:x:m3-*",
                          "urn:benchfarm:serve:k:-1:m3-*", "urn:benchfarm:serve::1:m3-*",
                          "urn:benchfarm:serve:k:1:", "urn:benchfarm:serve:k", "https://x"}) {
    EXPECT_FALSE(ParseBoardGrant(bad).has_value()) << bad;
  }
}

v1::BoardRegistration Board(const std::string& id, const std::string& kind, int slots) {
  v1::BoardRegistration b;
  b.set_board_id(id);
  b.set_kind(kind);
  b.set_slots(slots);
  return b;
}

TEST(Granted, TheCertificateBindsBoardsToKindsAndSlots) {
  Identity id;
  id.role = Role::kAgent;
  id.name = "lab-1";
  id.grants = {{"m3-*", "qemu-mps2-an385", 8}, {"hp-*", "*", 0}};
  EXPECT_TRUE(TrackerService::Granted(id, Board("m3-0", "qemu-mps2-an385", 8)).ok());
  EXPECT_TRUE(TrackerService::Granted(id, Board("hp-0", "host-process", 200)).ok());
  EXPECT_TRUE(TrackerService::Granted(id, Board("hp-1", "anything", 1)).ok());
  absl::Status kind = TrackerService::Granted(id, Board("m3-evil", "host-process", 100));
  EXPECT_EQ(kind.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(kind.message(), HasSubstr("lets it serve board \"m3-evil\" only as kind "
                                        "qemu-mps2-an385, not \"host-process\""));
  absl::Status slots = TrackerService::Granted(id, Board("m3-1", "qemu-mps2-an385", 9));
  EXPECT_EQ(slots.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(slots.message(), HasSubstr("with at most 8 slots, not 9"));
  absl::Status other = TrackerService::Granted(id, Board("nucleo-0", "stm32f4", 1));
  EXPECT_EQ(other.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(other.message(), HasSubstr("does not let it serve board \"nucleo-0\""));
  // A later grant for the same ids may allow what an earlier one does not.
  id.grants.push_back({"m3-*", "host-process", 1});
  EXPECT_TRUE(TrackerService::Granted(id, Board("m3-evil", "host-process", 1)).ok());
}

TEST(Granted, ACertificateWithoutKindsIsRefusedSayingHowToReissueIt) {
  Identity id;
  id.role = Role::kAgent;
  id.name = "old-agent";
  id.legacy_board_globs = {"hp-*"};
  absl::Status s = TrackerService::Granted(id, Board("hp-0", "host-process", 1));
  EXPECT_EQ(s.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.message(), HasSubstr("names boards but not their kinds"));
  EXPECT_THAT(s.message(), HasSubstr("deploy/pki.sh agent DIR old-agent 'GLOB=KIND[:SLOTS]'"));
}

}  // namespace
}  // namespace benchfarm::tracker
