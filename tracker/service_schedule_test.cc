// The tracker's scheduling through gRPC, with fake agents: per board-kind queues, priority then
// FIFO, pins (board id and labels), fair share between clients, cancellation of queued and
// running jobs, and boards with several slots.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tracker/service_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(ServiceTest, EachBoardKindHasItsOwnQueue) {
  JobQueueOptions options = HostOptions();
  options.known_kinds = {"host", "m3"};
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  std::vector<std::string> m3 = Submit("c1", "r1", {MakeTrial("m3")});
  std::vector<std::string> host = Submit("c1", "r2", {MakeTrial("host"), MakeTrial("host")});
  ASSERT_EQ(m3.size(), 1u);
  ASSERT_EQ(host.size(), 2u);

  auto hosts = Agent(Registration("agent-host", {Board("h1")}));
  std::optional<v1::JobOffer> first = hosts->NextOffer();
  ASSERT_TRUE(first.has_value());
  // The m3 job came first but is not in the host queue.
  EXPECT_EQ(first->job_id(), host[0]);
  EXPECT_EQ(first->trial().board_kind(), "host");
  v1::KindSummary host_summary = Summary("host");
  EXPECT_EQ(host_summary.running(), 1);
  EXPECT_EQ(Queued(host_summary), 1);
  v1::KindSummary m3_summary = Summary("m3");
  EXPECT_EQ(m3_summary.running(), 0);
  EXPECT_EQ(Queued(m3_summary), 1);
  EXPECT_EQ(m3_summary.boards_total(), 0);

  ASSERT_NO_FATAL_FAILURE(hosts->Report(*first));
  std::optional<v1::JobOffer> second = hosts->NextOffer();
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->job_id(), host[1]);
  ASSERT_NO_FATAL_FAILURE(hosts->Report(*second));
  EXPECT_EQ(Get(m3[0]).state(), v1::QUEUED);

  auto m3_agent = Agent(Registration("agent-m3", {Board("m3-1", "m3")}));
  std::optional<v1::JobOffer> third = m3_agent->NextOffer();
  ASSERT_TRUE(third.has_value());
  EXPECT_EQ(third->job_id(), m3[0]);
  EXPECT_EQ(third->board_id(), "m3-1");
}

TEST_F(ServiceTest, HigherPriorityFirstThenSubmissionOrder) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids =
      Submit("c1", "r1",
             {MakeTrial("host", 0), MakeTrial("host", 5), MakeTrial("host", 0),
              MakeTrial("host", 5), MakeTrial("host", 9)});
  ASSERT_EQ(ids.size(), 5u);
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::vector<std::string> order;
  for (int i = 0; i < 5; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    order.push_back(offer->job_id());
    ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  }
  EXPECT_EQ(order, (std::vector<std::string>{ids[4], ids[1], ids[3], ids[0], ids[2]}));
}

TEST_F(ServiceTest, PinnedJobsRunOnlyOnMatchingBoards) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // b1 is in rack A (and has another label the job does not ask for); b2 is in rack B.
  auto agent_a =
      Agent(Registration("agent-a", {Board("b1", "host", {{"rack", "A"}, {"usb", "2"}})}));
  auto agent_b = Agent(Registration("agent-b", {Board("b2", "host", {{"rack", "B"}})}));
  ASSERT_EQ(Summary("host").boards_total(), 2);

  // No board is in rack C: refused at submission, nothing stored.
  v1::Trial no_match = MakeTrial();
  (*no_match.mutable_labels())["rack"] = "C";
  v1::SubmitTrialsRequest request;
  request.set_client_id("c1");
  request.set_request_id("r0");
  *request.add_trials() = no_match;
  v1::SubmitTrialsResponse response;
  grpc::ClientContext context;
  grpc::Status s = client_->SubmitTrials(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_EQ(s.error_message(), "trials[0].labels: no registered board of kind host has rack=C");

  v1::Trial on_b2 = MakeTrial();
  on_b2.set_board_id("b2");
  v1::Trial rack_a = MakeTrial();
  (*rack_a.mutable_labels())["rack"] = "A";
  v1::Trial anywhere = MakeTrial();
  std::vector<std::string> ids = Submit("c1", "r1", {on_b2, rack_a, anywhere});
  ASSERT_EQ(ids.size(), 3u);

  std::optional<v1::JobOffer> a1 = agent_a->NextOffer();
  ASSERT_TRUE(a1.has_value());
  EXPECT_EQ(a1->job_id(), ids[1]);  // the one before it may not run on b1
  std::optional<v1::JobOffer> b1 = agent_b->NextOffer();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->job_id(), ids[0]);
  EXPECT_EQ(b1->board_id(), "b2");

  ASSERT_NO_FATAL_FAILURE(agent_a->Report(*a1));
  std::optional<v1::JobOffer> a2 = agent_a->NextOffer();
  ASSERT_TRUE(a2.has_value());
  EXPECT_EQ(a2->job_id(), ids[2]);
  ASSERT_NO_FATAL_FAILURE(agent_a->Report(*a2));
  ASSERT_NO_FATAL_FAILURE(agent_b->Report(*b1));
  for (const std::string& id : ids) EXPECT_EQ(Get(id).state(), v1::DONE) << id;
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(Queued(summary), 0);
  EXPECT_EQ(summary.waiting_size(), 0);
}

TEST_F(ServiceTest, ClientsTakeTurnsAtEqualPriority) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> alice = Submit("alice", "r1", std::vector<v1::Trial>(4, MakeTrial()));
  std::vector<std::string> bob = Submit("bob", "r1", std::vector<v1::Trial>(2, MakeTrial()));
  ASSERT_EQ(alice.size(), 4u);
  ASSERT_EQ(bob.size(), 2u);
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::vector<std::string> order;
  for (int i = 0; i < 6; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    order.push_back(offer->job_id());
    ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  }
  // Alice submitted everything first, yet Bob's jobs are interleaved; each client's own jobs
  // keep their order.
  EXPECT_EQ(order,
            (std::vector<std::string>{alice[0], bob[0], alice[1], bob[1], alice[2], alice[3]}));
}

TEST_F(ServiceTest, CancellingQueuedAndRunningJobs) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(3, "r1");
  ASSERT_EQ(ids.size(), 3u);

  // Queued: cancelled at once, never offered.
  v1::Job cancelled;
  ASSERT_TRUE(Cancel(ids[0], &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::CANCELLED_STATE);
  EXPECT_EQ(cancelled.result().error_code(), v1::CANCELLED);
  EXPECT_EQ(Cancel(ids[0]).error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_EQ(Cancel("j-nope").error_code(), grpc::NOT_FOUND);
  EXPECT_EQ(Cancel("").error_code(), grpc::INVALID_ARGUMENT);

  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  EXPECT_EQ(offer->job_id(), ids[1]);

  // Running: cancelled, its agent is told, and the freed board gets the next job.
  ASSERT_TRUE(Cancel(ids[1], &cancelled).ok());
  EXPECT_EQ(cancelled.state(), v1::CANCELLED_STATE);
  std::optional<std::string> told = agent->NextCancel();
  ASSERT_TRUE(told.has_value());
  EXPECT_EQ(*told, ids[1]);
  std::optional<v1::JobOffer> next = agent->NextOffer();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->job_id(), ids[2]);

  // A result the agent sends anyway is acknowledged and ignored.
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer));
  v1::Job job = Get(ids[1]);
  EXPECT_EQ(job.state(), v1::CANCELLED_STATE);
  EXPECT_EQ(job.result().error_code(), v1::CANCELLED);
  EXPECT_EQ(job.result().costs_s_size(), 0);

  ASSERT_NO_FATAL_FAILURE(agent->Report(*next));
  EXPECT_EQ(Get(ids[2]).state(), v1::DONE);
  EXPECT_EQ(Get(ids[0]).attempts_size(), 0);
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.running(), 0);
  EXPECT_EQ(Queued(summary), 0);
}

TEST_F(ServiceTest, ABoardWithSeveralSlotsHoldsSeveralJobs) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(5, "r1");
  ASSERT_EQ(ids.size(), 5u);
  auto agent = Agent(Registration("agent-1", {Board("b1", "host", {}, 3)}));
  std::vector<v1::JobOffer> held;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->board_id(), "b1");
    EXPECT_EQ(offer->job_id(), ids[i]);
    held.push_back(*offer);
  }
  v1::Board board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::BUSY);
  EXPECT_EQ(board.slots(), 3);
  EXPECT_EQ(board.running_jobs(), 3);
  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.running(), 3);
  EXPECT_EQ(Queued(summary), 2);
  EXPECT_EQ(Get(ids[3]).state(), v1::QUEUED);

  // A freed slot takes the next job.
  ASSERT_NO_FATAL_FAILURE(agent->Report(held[1]));
  std::optional<v1::JobOffer> fourth = agent->NextOffer();
  ASSERT_TRUE(fourth.has_value());
  EXPECT_EQ(fourth->job_id(), ids[3]);
  EXPECT_EQ(ListedBoard("b1").running_jobs(), 3);
  EXPECT_EQ(Get(ids[4]).state(), v1::QUEUED);

  ASSERT_NO_FATAL_FAILURE(agent->Report(held[0]));
  std::optional<v1::JobOffer> fifth = agent->NextOffer();
  ASSERT_TRUE(fifth.has_value());
  EXPECT_EQ(fifth->job_id(), ids[4]);
  for (const v1::JobOffer& o : {held[2], *fourth, *fifth}) {
    ASSERT_NO_FATAL_FAILURE(agent->Report(o));
  }
  for (const std::string& id : ids) EXPECT_EQ(Get(id).state(), v1::DONE);
  board = ListedBoard("b1");
  EXPECT_EQ(board.state(), v1::IDLE);
  EXPECT_EQ(board.running_jobs(), 0);
}

TEST_F(ServiceTest, BoardsTakeTurnsFillingTheirSlots) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(3, "r1");
  auto agent =
      Agent(Registration("agent-1", {Board("a", "host", {}, 2), Board("b", "host", {}, 2)}));
  std::vector<std::string> boards;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->job_id(), ids[i]);
    boards.push_back(offer->board_id());
  }
  // One job each per round: b gets one before a gets its second.
  EXPECT_EQ(boards, (std::vector<std::string>{"a", "b", "a"}));
  EXPECT_EQ(ListedBoard("a").running_jobs(), 2);
  EXPECT_EQ(ListedBoard("b").running_jobs(), 1);
}

}  // namespace
}  // namespace benchfarm::tracker
