// PinQueues on its own: which job a board picks (priority, fair share, pins, submission order),
// and the summaries read from the queues.
#include "tracker/pin_queues.h"

#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace benchfarm::tracker {
namespace {

struct Spec {
  Spec(std::string client, int priority = 0, std::string kind = "host",
       std::string pinned_board = "", std::map<std::string, std::string> labels = {})
      : client(std::move(client)),
        priority(priority),
        kind(std::move(kind)),
        pinned_board(std::move(pinned_board)),
        labels(std::move(labels)) {}
  std::string client;
  int priority;
  std::string kind;
  std::string pinned_board;                   // "" none
  std::map<std::string, std::string> labels;  // none
};

class PinQueuesTest : public ::testing::Test {
 protected:
  // A job filed with the next sequence number; its id is "j<seq>".
  LiveJob* Add(const Spec& spec) {
    LiveJob& job = jobs_.emplace_back();
    job.seq = ++seq_;
    job.job.set_job_id("j" + std::to_string(job.seq));
    job.job.set_client_id(spec.client);
    v1::Trial* t = job.job.mutable_trial();
    t->set_board_kind(spec.kind);
    t->set_priority(spec.priority);
    t->set_board_id(spec.pinned_board);
    for (const auto& [k, v] : spec.labels) (*t->mutable_labels())[k] = v;
    queues_.Add(&job);
    return &job;
  }

  static v1::Board Board(const std::string& id, std::map<std::string, std::string> labels = {},
                         const std::string& kind = "host") {
    v1::Board b;
    b.set_board_id(id);
    b.set_kind(kind);
    for (const auto& [k, v] : labels) (*b.mutable_labels())[k] = v;
    return b;
  }

  // The ids `board` takes one after another (each removed as it is taken), until none.
  std::vector<std::string> Drain(const v1::Board& board) {
    std::vector<std::string> ids;
    while (LiveJob* job = queues_.Pick(board, [](const LiveJob&) { return true; })) {
      ids.push_back(job->job.job_id());
      queues_.Remove(*job);
    }
    return ids;
  }

  std::deque<LiveJob> jobs_;  // stable addresses
  int64_t seq_ = 0;
  PinQueues queues_;
};

TEST_F(PinQueuesTest, HigherPriorityFirstThenClientsTakeTurnsInSubmissionOrder) {
  Add({"alice"});     // j1
  Add({"alice"});     // j2
  Add({"bob"});       // j3
  Add({"carol", 5});  // j4
  Add({"alice"});     // j5
  Add({"bob", 5});    // j6
  EXPECT_EQ(queues_.size(), 6);
  // Priority 5 first; at each priority the clients' turns go by name, cyclically.
  EXPECT_EQ(Drain(Board("b1")), (std::vector<std::string>{"j6", "j4", "j1", "j3", "j2", "j5"}));
  EXPECT_EQ(queues_.size(), 0);
}

TEST_F(PinQueuesTest, ABoardSeesOnlyThePinsItMayServe) {
  const struct {
    Spec spec;
    bool b1_may;  // board b1 {fpu=yes}
    bool b2_may;  // board b2 {}
  } cases[] = {
      {{"c"}, true, true},
      {{"c", 0, "host", "b1"}, true, false},
      {{"c", 0, "host", "b2"}, false, true},
      {{"c", 0, "host", "", {{"fpu", "yes"}}}, true, false},
      {{"c", 0, "host", "", {{"fpu", "no"}}}, false, false},
      {{"c", 0, "host", "b1", {{"fpu", "yes"}}}, true, false},
      {{"c", 0, "stm32"}, false, false},
  };
  const v1::Board b1 = Board("b1", {{"fpu", "yes"}});
  const v1::Board b2 = Board("b2");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec.pinned_board + " " + c.spec.kind + " " +
                 (c.spec.labels.empty() ? "" : c.spec.labels.begin()->second));
    LiveJob* job = Add(c.spec);
    EXPECT_EQ(queues_.Pick(b1, [](const LiveJob&) { return true; }) == job, c.b1_may);
    EXPECT_EQ(queues_.Pick(b2, [](const LiveJob&) { return true; }) == job, c.b2_may);
    // Eligible: the pin alone (the kind aside).
    EXPECT_EQ(Eligible(job->job.trial(), b1), c.b1_may || c.spec.kind != "host");
    EXPECT_EQ(Eligible(job->job.trial(), b2), c.b2_may || c.spec.kind != "host");
    queues_.Remove(*job);
  }
}

TEST_F(PinQueuesTest, AJobNotReadyHoldsItsTurnAndNothingElseIsTaken) {
  LiveJob* first = Add({"alice"});
  Add({"bob"});
  // alice's job may not be offered yet: nothing is, and bob does not jump her turn.
  EXPECT_EQ(queues_.Pick(Board("b1"), [&](const LiveJob& j) { return &j != first; }), nullptr);
  EXPECT_EQ(Drain(Board("b1")), (std::vector<std::string>{"j1", "j2"}));
}

TEST_F(PinQueuesTest, ARequeuedJobGoesBackToItsPlaceInSubmissionOrder) {
  LiveJob* j1 = Add({"alice"});
  Add({"alice"});
  queues_.Remove(*j1);
  queues_.Remove(*j1);  // not there: nothing
  EXPECT_EQ(queues_.size(), 1);
  queues_.Add(j1);
  EXPECT_EQ(Drain(Board("b1")), (std::vector<std::string>{"j1", "j2"}));
}

TEST_F(PinQueuesTest, SummariesAreReadFromThePins) {
  Add({"a", 1});
  Add({"a", 1, "host", "b7"});
  Add({"b", 0, "host", "b7"});
  Add({"b", 0, "host", "", {{"fpu", "yes"}}});
  Add({"b", 0, "stm32"});
  EXPECT_EQ(queues_.QueuedByPriority("host"), (std::map<int, int64_t>{{0, 2}, {1, 2}}));
  EXPECT_EQ(queues_.QueuedByPriority("none"), (std::map<int, int64_t>{}));
  std::vector<PinQueues::Pin> pinned = queues_.Pinned("host");
  ASSERT_EQ(pinned.size(), 2u);
  EXPECT_EQ(pinned[0].board_id, "");
  EXPECT_EQ(pinned[0].labels, (std::map<std::string, std::string>{{"fpu", "yes"}}));
  EXPECT_EQ(pinned[0].jobs, 1);
  EXPECT_EQ(pinned[1].board_id, "b7");
  EXPECT_EQ(pinned[1].jobs, 2);  // both priorities
  EXPECT_EQ(queues_.KindsFrom(""), (std::vector<std::string>{"host", "stm32"}));
  EXPECT_EQ(queues_.KindsFrom("i"), (std::vector<std::string>{"stm32"}));
  Drain(Board("s", {}, "stm32"));
  EXPECT_EQ(queues_.KindsFrom(""), (std::vector<std::string>{"host"}));
}

}  // namespace
}  // namespace benchfarm::tracker
