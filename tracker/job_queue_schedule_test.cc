// JobQueue's scheduling: priority then FIFO, fair share between clients, board kinds and pins
// (to offline boards too), boards with several slots, the agents a dispatcher pump names,
// cancellation, and listeners.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tracker/job_queue_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(JobQueueTest, PriorityThenFifo) {
  auto low = Submit({MakeTrial("host", 1), MakeTrial("host", 1)});
  auto high = Submit({MakeTrial("host", 5)});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) {
    v1::JobOffer o = TakeOne("a");
    order.push_back(o.job_id());
    ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  }
  EXPECT_EQ(order, (std::vector<std::string>{high[0], low[0], low[1]}));
}

TEST_F(JobQueueTest, ClientsAtEqualPriorityTakeTurns) {
  auto c1 = Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1");
  auto c2 = Submit({MakeTrial(), MakeTrial()}, "c2");
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  std::vector<std::string> order;
  for (int i = 0; i < 5; ++i) {
    v1::JobOffer o = TakeOne("a");
    order.push_back(o.job_id());
    ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  }
  EXPECT_EQ(order, (std::vector<std::string>{c1[0], c2[0], c1[1], c2[1], c1[2]}));
}

TEST_F(JobQueueTest, KindsAndPinsAreHonoured) {
  v1::Trial pinned = MakeTrial();
  pinned.set_board_id("b2");
  v1::Trial labelled = MakeTrial();
  (*labelled.mutable_labels())["fpu"] = "yes";
  v1::Register reg = MakeAgent("a", {"b1", "b2"});
  (*reg.mutable_boards(0)->mutable_labels())["fpu"] = "yes";
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  auto ids = Submit({pinned, labelled, MakeTrial("stm32")});
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  std::map<std::string, std::string> job_on;
  for (const Offer& o : offers) job_on[o.offer.board_id()] = o.offer.job_id();
  EXPECT_EQ(job_on["b1"], ids[1]);  // the labelled one
  EXPECT_EQ(job_on["b2"], ids[0]);  // the pinned one
  // The stm32 job waits for an stm32 board.
  EXPECT_EQ(queue_->GetJob(ids[2])->state(), v1::QUEUED);
}

TEST_F(JobQueueTest, PinsToOfflineBoardsQueueAndSayWhy) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("b", {"b2"})).ok());
  queue_->DisconnectAgent("b");
  v1::Trial pinned = MakeTrial();
  pinned.set_board_id("b2");
  auto ids = Submit({pinned, pinned});
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  auto host = [this] {
    for (const v1::KindSummary& k : queue_->Summary()) {
      if (k.board_kind() == "host") return k;
    }
    return v1::KindSummary();
  };
  ASSERT_EQ(host().waiting_size(), 1);
  EXPECT_EQ(host().waiting(0), "2 jobs pinned to board b2 (b2 OFFLINE)");
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("b", {"b2"})).ok());
  EXPECT_EQ(queue_->TakeOffers("b").size(), 1u);  // one slot: the other waits its turn
  EXPECT_EQ(host().waiting_size(), 0);
}

TEST_F(JobQueueTest, CancelQueuedAndRunning) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  auto running = queue_->Cancel(o.job_id());
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->state(), v1::CANCELLED_STATE);
  EXPECT_EQ(running->result().error_code(), v1::CANCELLED);
  EXPECT_EQ(queue_->TakeCancels("a"), std::vector<std::string>{o.job_id()});
  EXPECT_TRUE(queue_->TakeCancels("a").empty());
  std::string other = o.job_id() == ids[0] ? ids[1] : ids[0];
  EXPECT_EQ(queue_->Cancel(other)->state(), v1::CANCELLED_STATE);
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  EXPECT_TRUE(absl::IsFailedPrecondition(queue_->Cancel(other).status()));
  EXPECT_TRUE(absl::IsNotFound(queue_->Cancel("j-none").status()));
  // A late result for the cancelled job is ignored.
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  EXPECT_EQ(queue_->GetJob(o.job_id())->state(), v1::CANCELLED_STATE);
}

// The dispatcher's periodic look at the farm pumps only these agents.
TEST_F(JobQueueTest, OnlyAgentsWithSomethingToTakeAreNamedForAPump) {
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    return v;
  };
  auto all_chunks = [this, &sorted](size_t max_agents) {
    std::vector<std::string> agents;
    JobQueue::PumpCursor cursor;
    int chunks = 0;
    do {
      std::vector<std::string> chunk = queue_->AgentsToPump(&cursor, max_agents);
      EXPECT_LE(chunk.size(), max_agents + (chunks == 0 ? 1 : 0));  // + the cancel on the first
      agents.insert(agents.end(), chunk.begin(), chunk.end());
      ++chunks;
    } while (cursor.more && chunks < 100);
    EXPECT_LT(chunks, 100);
    return sorted(agents);
  };
  Submit({MakeTrial(), MakeTrial(), MakeTrial(), MakeTrial()});
  // "sick": quarantined after two infrastructure failures, its health check due.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("sick", {"b-sick"})).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(queue_->ReportResult("sick", Failed(TakeOne("sick"), v1::SESSION_ERROR)).ok());
  }
  // "busy": its one slot taken, then that job cancelled (a cancellation to deliver).
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("busy", {"b-busy"})).ok());
  v1::JobOffer running = TakeOne("busy");
  // "full": its one slot taken. "idle": a free board, jobs queued. "stm": a free board of a kind
  // nothing is queued for.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("full", {"b-full"})).ok());
  TakeOne("full");
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("idle", {"b-idle"})).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("stm", {"b-stm"}, "stm32")).ok());
  ASSERT_TRUE(queue_->Cancel(running.job_id()).ok());

  const std::vector<std::string> want = {"busy", "idle", "sick"};
  JobQueue::PumpCursor cursor;
  EXPECT_EQ(sorted(queue_->AgentsToPump(&cursor, 100)), want);
  EXPECT_FALSE(cursor.more);
  EXPECT_EQ(all_chunks(1), want);
  EXPECT_EQ(all_chunks(2), want);

  // Once they have taken what there was, nobody is named.
  EXPECT_TRUE(TakeOne("sick").health_check());
  TakeOne("idle");
  EXPECT_EQ(queue_->TakeCancels("busy"), std::vector<std::string>{running.job_id()});
  TakeOne("busy");  // its slot free again, the last queued job
  EXPECT_EQ(all_chunks(1), std::vector<std::string>{});
}

// The look at the farm reads the free-board index: only free boards of kinds with jobs queued
// are named, slots counted, a board filed again under its new kind when it re-registers as one,
// and the index follows every change (CheckIndexes after each step; TearDown checks it too).
TEST_F(JobQueueTest, AFarmLookNamesFreeBoardsOfKindsWithWorkThroughTheIndex) {
  auto look = [this](size_t max_agents) {
    std::set<std::string> agents;
    JobQueue::PumpCursor cursor;
    int chunks = 0;
    do {
      for (std::string& a : queue_->AgentsToPump(&cursor, max_agents)) agents.insert(a);
    } while (cursor.more && ++chunks < 100);
    EXPECT_LT(chunks, 100);
    EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
    return agents;
  };
  using Names = std::set<std::string>;
  v1::Register two_slots = MakeAgent("h2", {"b-h2"});
  two_slots.mutable_boards(0)->set_slots(2);
  ASSERT_TRUE(queue_->RegisterAgent(two_slots).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("h1", {"b-h1"})).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("s1", {"b-s1"}, "stm32")).ok());
  EXPECT_EQ(look(1), Names{});  // nothing queued
  Submit({MakeTrial(), MakeTrial(), MakeTrial(), MakeTrial(), MakeTrial()});
  EXPECT_EQ(look(1), (Names{"h1", "h2"}));  // not s1: nothing of its kind waits
  EXPECT_EQ(look(64), (Names{"h1", "h2"}));
  // h2 has two slots: one taken, it is still free; both taken, it is not.
  ASSERT_EQ(queue_->TakeOffers("h1").size(), 1u);
  EXPECT_EQ(look(1), (Names{"h2"}));
  std::vector<Offer> h2 = queue_->TakeOffers("h2");
  ASSERT_EQ(h2.size(), 2u);
  EXPECT_EQ(look(1), Names{});
  // A result frees a slot.
  ASSERT_TRUE(queue_->ReportResult("h2", Ok(h2[0].offer)).ok());
  EXPECT_EQ(look(1), (Names{"h2"}));
  // Gone, then back as a board of the other kind.
  queue_->DisconnectAgent("h2");
  EXPECT_EQ(look(1), Names{});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("h2", {"b-h2"}, "stm32")).ok());
  EXPECT_EQ(look(1), Names{});  // its kind has nothing queued
  Submit({MakeTrial("stm32")});
  EXPECT_EQ(look(1), (Names{"h2", "s1"}));
  // Held by an admin: out of the index; released: back.
  ASSERT_TRUE(queue_->SetQuarantine("b-s1", true, "rewiring").ok());
  EXPECT_EQ(look(1), (Names{"h2"}));
  ASSERT_TRUE(queue_->SetQuarantine("b-s1", false, "").ok());
  EXPECT_EQ(look(1), (Names{"h2", "s1"}));
}

TEST_F(JobQueueTest, ListenersSeeEveryChange) {
  std::vector<v1::JobState> seen;
  int id = queue_->AddListener([&](const v1::Job& j) { seen.push_back(j.state()); });
  Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(TakeOne("a"))).ok());
  queue_->RemoveListener(id);
  EXPECT_EQ(seen, (std::vector<v1::JobState>{v1::QUEUED, v1::RUNNING, v1::DONE}));
}

TEST_F(JobQueueTest, BoardsWithSlotsHoldSeveralJobsAndTakeTurns) {
  v1::Register reg = MakeAgent("a1", {"b1", "b2"});
  reg.mutable_boards(0)->set_slots(4);
  reg.mutable_boards(1)->set_slots(2);
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  std::vector<std::string> ids = Submit(std::vector<v1::Trial>(10, MakeTrial()));
  std::vector<Offer> offers = queue_->TakeOffers("a1");
  ASSERT_EQ(offers.size(), 6u);  // 4 + 2 slots
  // Round robin: b1, b2, b1, b2, b1, b1 in submission order.
  std::vector<std::string> boards;
  for (const Offer& o : offers) boards.push_back(o.offer.board_id());
  EXPECT_EQ(boards, (std::vector<std::string>{"b1", "b2", "b1", "b2", "b1", "b1"}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(offers[i].offer.job_id(), ids[i]);
  std::vector<v1::Board> listed = queue_->Boards("host");
  ASSERT_EQ(listed.size(), 2u);
  EXPECT_EQ(listed[0].running_jobs(), 4);
  EXPECT_EQ(listed[0].state(), v1::BUSY);
  EXPECT_TRUE(queue_->TakeOffers("a1").empty());  // every slot is taken
  // One result frees one slot of b2.
  ASSERT_TRUE(queue_->ReportResult("a1", Ok(offers[1].offer)).ok());
  std::vector<Offer> more = queue_->TakeOffers("a1");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(more[0].offer.board_id(), "b2");
  // The board is idle only when it holds nothing.
  for (const Offer& o : offers) {
    if (o.offer.board_id() == "b1") {
      ASSERT_TRUE(queue_->ReportResult("a1", Ok(o.offer)).ok());
    }
  }
  std::vector<Offer> rest = queue_->TakeOffers("a1");
  EXPECT_EQ(rest.size(), 3u);  // 10 - 7 taken so far
}

}  // namespace
}  // namespace benchfarm::tracker
