// BoardRegistry on its own: the indexes follow every change, quarantine counts consecutive
// infrastructure failures, and health checks have their own ids and lifecycle.
#include "tracker/board_registry.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/time/clock.h"

namespace benchfarm::tracker {
namespace {

class BoardRegistryTest : public ::testing::Test {
 protected:
  BoardRecord* Add(const std::string& id, v1::BoardState state, int slots = 1, int64_t memory = 0,
                   const std::string& kind = "host") {
    auto [it, added] = boards_.try_emplace(id);
    BoardRecord& r = it->second;
    r.board.set_board_id(id);
    r.board.set_kind(kind);
    r.board.set_state(state);
    r.board.set_slots(slots);
    r.board.set_memory_bytes(memory);
    boards_.CountMemory(r.board, 1);
    boards_.Reindex(&r);
    return &r;
  }
  void ExpectIndexed() { EXPECT_TRUE(boards_.CheckIndexes().ok()) << boards_.CheckIndexes(); }

  BoardRegistry boards_;
  const absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(BoardRegistryTest, AFreeSlotIndexFollowsStateAndJobs) {
  const struct {
    v1::BoardState state;
    int slots;
    int jobs;
    bool free;
  } cases[] = {
      {v1::IDLE, 1, 0, true},     {v1::BUSY, 2, 1, true},         {v1::BUSY, 2, 2, false},
      {v1::OFFLINE, 1, 0, false}, {v1::QUARANTINED, 1, 0, false}, {v1::HEALTH_CHECK, 1, 0, false},
      {v1::IDLE, 0, 0, true},  // 0 slots is one
  };
  int n = 0;
  for (const auto& c : cases) {
    SCOPED_TRACE(n);
    BoardRecord* r = Add("b" + std::to_string(n++), c.state, c.slots);
    for (int j = 0; j < c.jobs; ++j) r->running.insert("j" + std::to_string(j));
    boards_.Reindex(r);
    EXPECT_EQ(BoardRegistry::HasFreeSlot(*r), c.free);
    const auto& free = boards_.free_by_kind();
    EXPECT_EQ(free.count("host") > 0 && free.at("host").count(r->board.board_id()) > 0, c.free);
    ExpectIndexed();
  }
}

TEST_F(BoardRegistryTest, OccupyAndFreeMoveABoardBetweenIdleBusyAndOffline) {
  BoardRecord* r = Add("b1", v1::IDLE, 2);
  boards_.Occupy(r, "j1");
  EXPECT_EQ(r->board.state(), v1::BUSY);
  EXPECT_EQ(r->board.current_job_id(), "j1");
  boards_.Occupy(r, "j2");
  EXPECT_EQ(r->board.running_jobs(), 2);
  EXPECT_TRUE(boards_.free_by_kind().empty());
  boards_.Free(r, "j1", /*online=*/true);
  EXPECT_EQ(r->board.state(), v1::BUSY);
  EXPECT_EQ(r->board.current_job_id(), "j2");
  boards_.Free(r, "j2", /*online=*/false);  // its agent went away meanwhile
  EXPECT_EQ(r->board.state(), v1::OFFLINE);
  EXPECT_EQ(r->board.running_jobs(), 0);
  ExpectIndexed();
}

TEST_F(BoardRegistryTest, ConsecutiveInfrastructureFailuresQuarantineAtTheThreshold) {
  BoardRecord* r = Add("b1", v1::IDLE);
  EXPECT_FALSE(boards_.NoteOutcome(r, false, "", 3, now_));  // nothing to forget
  EXPECT_TRUE(boards_.NoteOutcome(r, true, "flash failed", 3, now_));
  EXPECT_TRUE(boards_.NoteOutcome(r, false, "", 3, now_));  // a success forgets it
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(boards_.NoteOutcome(r, true, "flash failed", 3, now_));
  EXPECT_EQ(r->board.state(), v1::IDLE);
  EXPECT_TRUE(boards_.NoteOutcome(r, true, std::string(2000, 'x'), 3, now_));
  EXPECT_EQ(r->board.state(), v1::QUARANTINED);
  EXPECT_EQ(r->board.quarantine_reason().size(), kMaxQuarantineReasonBytes);
  EXPECT_TRUE(BoardRegistry::HealthCheckDue(*r, now_));
  EXPECT_EQ(boards_.awaiting_health().count("b1"), 1u);
  ExpectIndexed();
}

TEST_F(BoardRegistryTest, HealthChecksHaveTheirOwnIdsAndLifecycle) {
  BoardRecord* r = Add("b1", v1::QUARANTINED);
  r->board.set_quarantine_reason("flash failed");
  boards_.Reindex(r);
  EXPECT_EQ(boards_.HealthCheck("health-b1-1"), nullptr);  // none yet: the prefix means nothing
  const std::string id = boards_.StartHealthCheck(r, now_ + absl::Seconds(10));
  EXPECT_EQ(r->board.state(), v1::HEALTH_CHECK);
  EXPECT_EQ(boards_.HealthCheck(id), r);
  EXPECT_EQ(boards_.checking_health().count("b1"), 1u);
  ExpectIndexed();
  // It fails: quarantined again with the reason, checked again later.
  boards_.EndHealthCheck(r, false, "health check failed: RUN_TIMEOUT", now_ + absl::Seconds(30));
  EXPECT_EQ(r->board.state(), v1::QUARANTINED);
  EXPECT_EQ(r->board.quarantine_reason(), "health check failed: RUN_TIMEOUT");
  EXPECT_EQ(boards_.HealthCheck(id), nullptr);  // a late result of it is not the board's
  EXPECT_FALSE(BoardRegistry::HealthCheckDue(*r, now_));
  EXPECT_TRUE(BoardRegistry::HealthCheckDue(*r, now_ + absl::Seconds(30)));
  ExpectIndexed();
  // The next one passes: back in service, failures forgotten.
  const std::string again = boards_.StartHealthCheck(r, now_ + absl::Seconds(40));
  EXPECT_NE(again, id);
  boards_.EndHealthCheck(r, true, "", now_);
  EXPECT_EQ(r->board.state(), v1::IDLE);
  EXPECT_EQ(r->board.quarantine_reason(), "");
  EXPECT_EQ(boards_.free_by_kind().at("host").count("b1"), 1u);
  ExpectIndexed();
  // An admin's release forgets a check in flight.
  r->board.set_state(v1::QUARANTINED);
  boards_.Reindex(r);
  const std::string third = boards_.StartHealthCheck(r, now_);
  boards_.ForgetHealthCheck(r);
  r->board.set_state(v1::IDLE);
  boards_.Reindex(r);
  EXPECT_EQ(boards_.HealthCheck(third), nullptr);
  ExpectIndexed();
}

TEST_F(BoardRegistryTest, TheLargestMemoryIsKnownOnlyWhenEveryBoardSaysIt) {
  Add("b1", v1::IDLE, 1, 1 << 20);
  EXPECT_EQ(boards_.LargestMemory("host"), 1 << 20);
  BoardRecord* b2 = Add("b2", v1::IDLE, 1, 0);  // does not say
  EXPECT_EQ(boards_.LargestMemory("host"), std::nullopt);
  boards_.CountMemory(b2->board, -1);
  b2->board.set_memory_bytes(4 << 20);
  boards_.CountMemory(b2->board, 1);
  EXPECT_EQ(boards_.LargestMemory("host"), 4 << 20);
  EXPECT_EQ(boards_.LargestMemory("stm32"), std::nullopt);
  ExpectIndexed();
}

}  // namespace
}  // namespace benchfarm::tracker
