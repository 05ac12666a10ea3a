// The tracker's gRPC surface (tracker/service.h), submissions and results: malformed requests,
// offers and acknowledgements (batched ones too, offers that wait for the store, and batched
// offers and results), watch
// streams, the agent stream's first message, a board's core, the operator catalog, result pages,
// refused results and per-client caps.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "catalog/trial.h"
#include "tracker/service_test_fixture.h"

namespace benchfarm::tracker {
namespace {

TEST_F(ServiceTest, MalformedRequestsAreInvalidArgumentAndStoreNothing) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::SubmitTrialsRequest request;
  request.set_client_id("c1");
  request.set_request_id("r1");
  v1::Trial bad = MakeTrial();
  bad.mutable_args(2)->set_shape(0, 0);
  *request.add_trials() = MakeTrial();
  *request.add_trials() = bad;
  v1::SubmitTrialsResponse response;
  grpc::ClientContext context;
  grpc::Status s = client_->SubmitTrials(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("trials[1].args[2].shape[0]"), std::string::npos)
      << s.error_message();

  request.clear_trials();
  *request.add_trials() = MakeTrial("no-such-kind");
  grpc::ClientContext context2;
  s = client_->SubmitTrials(&context2, request, &response);
  EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(s.error_message().find("board_kind"), std::string::npos);

  v1::ListResultsRequest list;
  v1::ListResultsResponse listed;
  grpc::ClientContext context3;
  ASSERT_TRUE(client_->ListResults(&context3, list, &listed).ok());
  EXPECT_EQ(listed.jobs_size(), 0);

  v1::GetJobRequest get;
  v1::Job job;
  grpc::ClientContext context4;
  EXPECT_EQ(client_->GetJob(&context4, get, &job).error_code(), grpc::INVALID_ARGUMENT);
  get.set_job_id("j-nope");
  grpc::ClientContext context5;
  EXPECT_EQ(client_->GetJob(&context5, get, &job).error_code(), grpc::NOT_FOUND);
}

TEST_F(ServiceTest, AgentGetsOffersAndResultsAreAcknowledged) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(2, "r1");
  ASSERT_EQ(ids.size(), 2u);
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  EXPECT_GT(agent->registered().lease_ms(), 0);
  for (int i = 0; i < 2; ++i) {
    std::optional<v1::JobOffer> offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    EXPECT_EQ(offer->board_id(), "b1");
    EXPECT_EQ(offer->job_id(), ids[i]);  // FIFO
    ASSERT_TRUE(agent->SendResult(offer->job_id(), offer->attempt(), v1::NO_ERROR, 1e-4 * (i + 1)));
    ASSERT_TRUE(agent->AwaitAck(ids[i]));
  }
  v1::Job job = Get(ids[1]);
  EXPECT_EQ(job.state(), v1::DONE);
  ASSERT_EQ(job.result().costs_s_size(), 1);
  EXPECT_EQ(job.result().costs_s(0), 2e-4);
  EXPECT_EQ(job.result().attempts(), 1);

  v1::KindSummary summary = Summary("host");
  EXPECT_EQ(summary.boards_total(), 1);
  EXPECT_EQ(summary.boards_free(), 1);

  EXPECT_TRUE(agent->Close().ok());
  // The stream ended: the board goes offline once the server has run OnDone.
  EXPECT_TRUE(WaitFor([&] { return ListedBoard("b1").state() == v1::OFFLINE; }));
}

// An agent of several boards that registers with batched_acks gets a result's acknowledgement
// with the offer of the board's next job, in one message; with nothing to offer, the
// acknowledgement comes alone. (Its second board is of a kind no trial asks for. The agents of
// the other tests do not ask: they get ResultAck messages.)
TEST_F(ServiceTest, BatchedAcksRideOnTheNextOffer) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(3, "r1");
  ASSERT_EQ(ids.size(), 3u);
  v1::Register registration = Registration("agent-1", {Board("b1"), Board("b2", "idle-kind")});
  registration.set_batched_acks(true);
  auto agent = Agent(registration);
  std::optional<v1::TrackerMessage> m = agent->NextMessage();
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->has_offer()) << m->DebugString();
  EXPECT_EQ(m->offer().job_id(), ids[0]);
  EXPECT_EQ(m->acks_size(), 0);
  for (int i = 1; i < 3; ++i) {
    ASSERT_TRUE(agent->SendResult(m->offer().job_id(), m->offer().attempt(), v1::NO_ERROR));
    m = agent->NextMessage();
    ASSERT_TRUE(m.has_value());
    ASSERT_TRUE(m->has_offer()) << m->DebugString();
    EXPECT_EQ(m->offer().job_id(), ids[i]);
    ASSERT_EQ(m->acks_size(), 1) << m->DebugString();
    EXPECT_EQ(m->acks(0).job_id(), ids[i - 1]);
    EXPECT_EQ(m->acks(0).attempt(), 1);
    EXPECT_FALSE(m->acks(0).superseded());
    EXPECT_EQ(Get(ids[i - 1]).state(), v1::DONE);  // acknowledged once stored
  }
  ASSERT_TRUE(agent->SendResult(ids[2], 1, v1::NO_ERROR));
  m = agent->NextMessage();
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->msg_case(), v1::TrackerMessage::MSG_NOT_SET) << m->DebugString();
  ASSERT_EQ(m->acks_size(), 1) << m->DebugString();
  EXPECT_EQ(m->acks(0).job_id(), ids[2]);
  EXPECT_EQ(Get(ids[2]).state(), v1::DONE);
  EXPECT_TRUE(agent->Close().ok());
}

// Only an agent of several boards that asked for batched acks has its offers wait for a result
// to be stored: while the database is locked by another connection (the tracker's commit waits),
// an agent that did not ask, and an agent of one board that did, get their board's next job at
// once (the latter its acknowledgement alone once stored); an agent of two boards that did gets
// it with the acknowledgement once the lock is gone.
TEST_F(ServiceTest, OnlyOffersOfAgentsOfSeveralBoardsWaitForTheStore) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(8, "r1");
  ASSERT_EQ(ids.size(), 8u);
  auto plain = Agent(Registration("plain", {Board("p1")}));
  std::optional<v1::JobOffer> first = plain->NextOffer();
  ASSERT_TRUE(first.has_value());
  v1::Register one_board = Registration("one-board", {Board("s1")});
  one_board.set_batched_acks(true);
  auto single = Agent(one_board);
  std::optional<v1::TrackerMessage> m = single->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  const v1::JobOffer single_first = m->offer();
  v1::Register registration = Registration("batching", {Board("b1"), Board("b2")});
  registration.set_batched_acks(true);
  auto batching = Agent(registration);
  m = batching->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  const v1::JobOffer batched_first = m->offer();
  m = batching->NextMessage();  // its other board's
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_NE(m->offer().board_id(), batched_first.board_id());

  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
  sqlite3* lock = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &lock), SQLITE_OK);
  sqlite3_busy_timeout(lock, 5000);  // a commit of the tracker's (the boards', say) may be running
  ASSERT_EQ(sqlite3_exec(lock, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  absl::Notification released;
  std::thread unlocker([&] {  // well within the store's 5 s busy timeout
    absl::SleepFor(absl::Seconds(3));
    sqlite3_exec(lock, "COMMIT", nullptr, nullptr, nullptr);
    sqlite3_close(lock);
    released.Notify();
  });
  ASSERT_TRUE(plain->SendResult(first->job_id(), first->attempt(), v1::NO_ERROR));
  std::optional<v1::JobOffer> second = plain->NextOffer();
  EXPECT_TRUE(second.has_value());
  EXPECT_FALSE(released.HasBeenNotified()) << "the plain agent's offer waited for the store";
  ASSERT_TRUE(single->SendResult(single_first.job_id(), single_first.attempt(), v1::NO_ERROR));
  m = single->NextMessage();
  EXPECT_FALSE(released.HasBeenNotified()) << "the one-board agent's offer waited for the store";
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().board_id(), "s1");
  EXPECT_EQ(m->acks_size(), 0) << "acknowledged before the result was stored";
  const v1::JobOffer single_second = m->offer();
  ASSERT_TRUE(batching->SendResult(batched_first.job_id(), batched_first.attempt(), v1::NO_ERROR));
  m = batching->NextMessage();
  EXPECT_TRUE(released.HasBeenNotified());  // not before the result was stored
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().board_id(), batched_first.board_id());
  ASSERT_EQ(m->acks_size(), 1);
  EXPECT_EQ(m->acks(0).job_id(), batched_first.job_id());
  // The one-board agent's acknowledgement waits to ride on its board's next offer; a heartbeat
  // has it sent alone.
  ASSERT_TRUE(single->Heartbeat({{single_second.job_id(), single_second.attempt()}}));
  m = single->NextMessage();
  ASSERT_TRUE(m.has_value()) << "ended";
  EXPECT_EQ(m->msg_case(), v1::TrackerMessage::MSG_NOT_SET) << m->DebugString();
  ASSERT_EQ(m->acks_size(), 1) << m->DebugString();
  EXPECT_EQ(m->acks(0).job_id(), single_first.job_id());
  EXPECT_EQ(Get(single_first.job_id()).state(), v1::DONE);
  unlocker.join();
  EXPECT_TRUE(plain->AwaitAck(first->job_id()));
}

// The tracker's answer to GetJobLog comes once everything before it is stored and the
// acknowledgements of the results stored with it are handed to their streams: a barrier.
void AwaitStored(v1::Tracker::Stub* client, const std::string& job_id) {
  v1::GetJobLogRequest request;
  request.set_job_id(job_id);
  v1::GetJobLogResponse response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  (void)client->GetJobLog(&context, request, &response);  // the result has no log: NOT_FOUND
}

// An agent of one board that registers with batched_acks gets its board's next offer as soon as
// it sends a result, and the result's acknowledgement, once stored, rides on the offer after
// that (one message per trial, and the board never waits for the fsync); a heartbeat sends the
// acknowledgements held so far alone; with no next job, they come alone.
TEST_F(ServiceTest, AOneBoardAgentsAcknowledgementsRideOnTheOfferAfterTheNext) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(4, "r1");
  ASSERT_EQ(ids.size(), 4u);
  v1::Register registration = Registration("agent-1", {Board("b1")});
  registration.set_batched_acks(true);
  auto agent = Agent(registration);
  std::optional<v1::TrackerMessage> m = agent->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().job_id(), ids[0]);
  // Result 0: offer 1 at once. Once result 0 is stored its acknowledgement is held, and rides
  // on offer 2 (the next message), sent when result 1 comes; or on offer 1 itself, if the store
  // was done before offer 1 was written.
  std::set<std::string> acked;  // so far
  auto note_acks = [&acked](const v1::TrackerMessage& m) {
    for (const v1::ResultAck& ack : m.acks()) EXPECT_TRUE(acked.insert(ack.job_id()).second);
  };
  ASSERT_TRUE(agent->SendResult(ids[0], 1, v1::NO_ERROR));
  m = agent->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().job_id(), ids[1]);
  note_acks(*m);
  AwaitStored(client_.get(), ids[0]);
  ASSERT_TRUE(agent->SendResult(ids[1], 1, v1::NO_ERROR));
  m = agent->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().job_id(), ids[2]);
  note_acks(*m);
  EXPECT_EQ(acked.count(ids[0]), 1u) << "result 0's acknowledgement rode on neither offer";
  // A heartbeat while offer 2 is out: result 1's acknowledgement (if it did not ride on offer 2)
  // comes alone.
  AwaitStored(client_.get(), ids[1]);
  if (acked.count(ids[1]) == 0) {
    ASSERT_TRUE(agent->Heartbeat({{ids[2], 1}}));
    m = agent->NextMessage();
    ASSERT_TRUE(m.has_value()) << "ended";
    EXPECT_EQ(m->msg_case(), v1::TrackerMessage::MSG_NOT_SET) << m->DebugString();
    ASSERT_EQ(m->acks_size(), 1) << m->DebugString();
    EXPECT_EQ(m->acks(0).job_id(), ids[1]);
  }
  // Results 2 and 3: offer 3, then no job left: the acknowledgements come alone.
  ASSERT_TRUE(agent->SendResult(ids[2], 1, v1::NO_ERROR));
  m = agent->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().job_id(), ids[3]);
  acked.clear();
  for (const v1::ResultAck& ack : m->acks()) acked.insert(ack.job_id());
  ASSERT_TRUE(agent->SendResult(ids[3], 1, v1::NO_ERROR));
  while (acked.size() < 2) {
    m = agent->NextMessage();
    ASSERT_TRUE(m.has_value()) << "ended before every result was acknowledged";
    EXPECT_EQ(m->msg_case(), v1::TrackerMessage::MSG_NOT_SET) << m->DebugString();
    for (const v1::ResultAck& ack : m->acks()) acked.insert(ack.job_id());
  }
  EXPECT_EQ(acked, (std::set<std::string>{ids[2], ids[3]}));
  for (const std::string& id : ids) EXPECT_EQ(Get(id).state(), v1::DONE);
  EXPECT_TRUE(agent->Close().ok());
}

// A registration that asks for batched acknowledgements and offers, as benchfarm's agent does.
v1::Register Batching(v1::Register registration) {
  registration.set_batched_acks(true);
  registration.set_batched_offers(true);
  return registration;
}

// The offers of the next messages, `n` in all (an agent that reads batched offers: `offer`, then
// `offers`); fewer if the stream ends.
std::vector<v1::JobOffer> TakeOffers(FakeAgent* agent, size_t n) {
  std::vector<v1::JobOffer> offered;
  while (offered.size() < n) {
    std::optional<v1::TrackerMessage> m = agent->NextMessage();
    if (!m.has_value() || !m->has_offer()) break;
    offered.push_back(m->offer());
    for (const v1::JobOffer& o : m->offers()) offered.push_back(o);
  }
  return offered;
}

// One message answering every offer (AgentMessage.results).
v1::AgentMessage ResultsOf(const std::vector<v1::JobOffer>& offers) {
  v1::AgentMessage results;
  for (const v1::JobOffer& o : offers) {
    v1::JobResult* r = results.add_results();
    r->set_job_id(o.job_id());
    r->set_attempt(o.attempt());
    r->mutable_result()->add_costs_s(1e-4);
  }
  return results;
}

// An agent of several boards that registers with batched_offers gets the offers queued for it
// while it waits for a result's acknowledgement in one message (the first as `offer`, the rest
// in `offers`), and may answer them in one message of results (the tracker says so:
// Registered.batched_results); every result is stored and acknowledged, together.
TEST_F(ServiceTest, BatchedOffersAndResultsTravelTogether) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto agent = Agent(Batching(Registration("agent-1", {Board("b1"), Board("b2"), Board("b3")})));
  EXPECT_TRUE(agent->registered().batched_results());
  std::vector<std::string> ids = Submit(6, "r1");
  ASSERT_EQ(ids.size(), 6u);
  // The first three are offered as they are queued (no result is awaited yet).
  std::vector<v1::JobOffer> offered = TakeOffers(agent.get(), 3);
  ASSERT_EQ(offered.size(), 3u);
  ASSERT_TRUE(agent->Send(ResultsOf(offered)));
  // The boards' next jobs wait for the results to be stored and come with every one of their
  // acknowledgements, in one message.
  std::optional<v1::TrackerMessage> m = agent->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offers_size(), 2) << m->DebugString();
  ASSERT_EQ(m->acks_size(), 3) << m->DebugString();
  std::set<std::string> next = {m->offer().job_id()};
  for (const v1::JobOffer& o : m->offers()) next.insert(o.job_id());
  EXPECT_EQ(next, std::set<std::string>(ids.begin() + 3, ids.end()));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(m->acks(i).job_id(), offered[i].job_id());
    EXPECT_EQ(Get(offered[i].job_id()).state(), v1::DONE);  // acknowledged once stored
  }
  EXPECT_TRUE(agent->Close().ok());
}

// The agent notes a result the tracker calls superseded (its attempt ended and the job queued
// again) before it reads an offer of that job (agent.cc reads TrackerMessage.acks first). To an
// agent of one board, whose next offer otherwise goes at once, the offer of the job's next
// attempt waits for that acknowledgement and carries it.
TEST_F(ServiceTest, ASupersededResultsAcknowledgementComesWithTheJobsNextOffer) {
  JobQueueOptions options = HostOptions();
  options.quarantine_threshold = 100;
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  std::vector<std::string> ids = Submit(1, "r1");
  ASSERT_EQ(ids.size(), 1u);
  auto agent = Agent(Batching(Registration("agent-1", {Board("b1")})));
  std::vector<v1::JobOffer> offered = TakeOffers(agent.get(), 1);
  ASSERT_EQ(offered.size(), 1u);
  // One message: the attempt failed to flash (the job queues again, for the same board), then a
  // copy of that attempt's result saying it measured (a resend from a spool, say): superseded.
  v1::AgentMessage results = ResultsOf({offered[0], offered[0]});
  results.mutable_results(0)->mutable_result()->clear_costs_s();
  results.mutable_results(0)->mutable_result()->set_error_code(v1::FLASH_ERROR);
  ASSERT_TRUE(agent->Send(results));
  std::optional<v1::TrackerMessage> m = agent->NextMessage();
  ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
  EXPECT_EQ(m->offer().job_id(), ids[0]);
  EXPECT_EQ(m->offer().attempt(), 2);
  ASSERT_EQ(m->acks_size(), 2) << "the offer came before the superseded acknowledgement: "
                               << m->DebugString();
  EXPECT_FALSE(m->acks(0).superseded());
  EXPECT_TRUE(m->acks(1).superseded());
  EXPECT_TRUE(agent->Close().ok());
}

// A message of more results than kMaxResultsPerMessage is refused, naming the limit: the stream
// ends and nothing of it is taken.
TEST_F(ServiceTest, AMessageOfTooManyResultsIsRefused) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(1, "r1");
  ASSERT_EQ(ids.size(), 1u);
  auto agent = Agent(Batching(Registration("agent-1", {Board("b1")})));
  std::vector<v1::JobOffer> offered = TakeOffers(agent.get(), 1);
  ASSERT_EQ(offered.size(), 1u);
  // The real result first, then copies of it past the limit.
  std::vector<v1::JobOffer> many(catalog::kMaxResultsPerMessage + 1, offered[0]);
  ASSERT_TRUE(agent->Send(ResultsOf(many)));
  grpc::Status ended = agent->Close();
  EXPECT_EQ(ended.error_code(), grpc::INVALID_ARGUMENT);
  EXPECT_NE(ended.error_message().find(absl::StrCat("at most ", catalog::kMaxResultsPerMessage,
                                                    " results, not ",
                                                    catalog::kMaxResultsPerMessage + 1)),
            std::string::npos)
      << ended.error_message();
  EXPECT_EQ(Get(ids[0]).state(), v1::RUNNING);  // its result was not taken
}

// Batched offers stay within kBatchedOfferBytes: offers of large trials (600 KB of C source
// each), queued together while the results before them are stored, go one to a message.
TEST_F(ServiceTest, LargeOffersAreNotBatchedPastTheMessageBudget) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  auto agent = Agent(Batching(Registration("agent-1", {Board("b1"), Board("b2"), Board("b3")})));
  std::vector<v1::Trial> trials;
  for (int k = 0; k < 6; ++k) {
    v1::Trial t = MakeTrial();
    if (k >= 3) {  // the boards' second jobs
      t.mutable_op()->set_c_source(absl::StrCat("/* ", k, " */", std::string(600 * 1000, ' ')));
      t.mutable_op()->set_entry_function("f");
    }
    trials.push_back(t);
  }
  std::vector<std::string> ids = Submit("big", "r1", trials);
  ASSERT_EQ(ids.size(), 6u);
  std::vector<v1::JobOffer> small = TakeOffers(agent.get(), 3);
  ASSERT_EQ(small.size(), 3u);
  ASSERT_TRUE(agent->Send(ResultsOf(small)));
  // The three large offers queue behind the acknowledgements; each goes in a message of its own.
  int big = 0, acks = 0;
  while (big < 3) {
    std::optional<v1::TrackerMessage> m = agent->NextMessage();
    ASSERT_TRUE(m.has_value() && m->has_offer()) << big << " large offers, then the stream ended";
    EXPECT_EQ(m->offers_size(), 0) << "two 600 KB offers in one message";
    EXPECT_LE(m->ByteSizeLong(), kBatchedOfferBytes);
    big += 1 + m->offers_size();
    acks += m->acks_size();
  }
  EXPECT_EQ(acks, 3);
  EXPECT_TRUE(agent->Close().ok());
}

// An agent that predates batched offers (it reads one offer per message) gets one offer per
// message whatever queues for it, and its one-result messages are stored as ever. A message with
// neither content nor results is refused.
TEST_F(ServiceTest, AnAgentWithoutBatchedOffersGetsOneOfferPerMessage) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::Register registration = Registration("old", {Board("b1"), Board("b2"), Board("b3")});
  registration.set_batched_acks(true);
  auto agent = Agent(registration);
  std::vector<std::string> ids = Submit(6, "r1");
  ASSERT_EQ(ids.size(), 6u);
  std::vector<v1::JobOffer> offered;
  for (int i = 0; i < 3; ++i) {
    std::optional<v1::TrackerMessage> m = agent->NextMessage();
    ASSERT_TRUE(m.has_value() && m->has_offer()) << (m ? m->DebugString() : "ended");
    EXPECT_EQ(m->offers_size(), 0);
    offered.push_back(m->offer());
  }
  for (const v1::JobOffer& o : offered) {
    ASSERT_TRUE(agent->SendResult(o.job_id(), o.attempt(), v1::NO_ERROR));
  }
  int acks = 0, offers = 0;
  while (acks < 3 || offers < 3) {
    std::optional<v1::TrackerMessage> m = agent->NextMessage();
    ASSERT_TRUE(m.has_value()) << acks << " acks, " << offers << " offers";
    EXPECT_EQ(m->offers_size(), 0) << m->DebugString();
    acks += m->acks_size();
    offers += m->has_offer() ? 1 : 0;
  }
  for (const v1::JobOffer& o : offered) EXPECT_EQ(Get(o.job_id()).state(), v1::DONE);
  ASSERT_TRUE(agent->Send(v1::AgentMessage()));
  EXPECT_EQ(agent->Close().error_code(), grpc::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, WatchFollowsJobsToTheEnd) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(1, "r1");
  v1::WatchJobsRequest watch;
  watch.add_job_ids(ids[0]);
  grpc::ClientContext watch_context;
  watch_context.set_deadline(Soon());
  auto watcher = client_->WatchJobs(&watch_context, watch);
  v1::JobEvent event;
  ASSERT_TRUE(watcher->Read(&event));
  EXPECT_EQ(event.job().state(), v1::QUEUED);

  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_TRUE(agent->SendResult(offer->job_id(), offer->attempt(), v1::WRONG_ANSWER));

  std::vector<v1::JobState> states;
  while (watcher->Read(&event)) states.push_back(event.job().state());
  EXPECT_TRUE(watcher->Finish().ok());  // ends by itself once the job is done
  ASSERT_FALSE(states.empty());
  EXPECT_EQ(states.back(), v1::DONE);
  // A wrong answer is not an infrastructure error: no retry.
  v1::Job job = Get(ids[0]);
  EXPECT_EQ(job.result().autotvm_error_no(), 5);
  EXPECT_EQ(job.result().attempts(), 1);
}

TEST_F(ServiceTest, AMessageBeforeRegisterEndsTheStream) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  grpc::ClientContext context;
  context.set_deadline(Soon());
  auto stream = agents_->Connect(&context);
  v1::AgentMessage m;
  m.mutable_heartbeat();
  ASSERT_TRUE(stream->Write(m));
  v1::TrackerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  EXPECT_EQ(stream->Finish().error_code(), grpc::FAILED_PRECONDITION);
}

// A board's core (BoardRegistration.cpu, from its package's data) is listed with it; a board of
// the same kind naming another core is refused while the first one's agent is connected.
TEST_F(ServiceTest, ABoardsCoreReachesListBoardsAndAKindIsOneCore) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::BoardRegistration m3 = Board("m3-0", "qemu-mps2-an385");
  m3.set_cpu("cortex-m3");
  auto agent = Agent(Registration("agent-1", {m3, Board("hp-0")}));
  EXPECT_EQ(ListedBoard("m3-0").cpu(), "cortex-m3");
  EXPECT_EQ(ListedBoard("hp-0").cpu(), "");  // a host-process board: no core

  grpc::ClientContext context;
  context.set_deadline(Soon());
  auto stream = agents_->Connect(&context);
  v1::BoardRegistration m4 = Board("m4-0", "qemu-mps2-an385");
  m4.set_cpu("cortex-m4");
  v1::AgentMessage m;
  *m.mutable_register_() = Registration("agent-2", {m4});
  ASSERT_TRUE(stream->Write(m));
  v1::TrackerMessage reply;
  EXPECT_FALSE(stream->Read(&reply));
  const grpc::Status refused = stream->Finish();
  EXPECT_EQ(refused.error_code(), grpc::FAILED_PRECONDITION);
  EXPECT_NE(refused.error_message().find("board kind qemu-mps2-an385: this agent's boards are a "
                                         "cortex-m4, board m3-0 of agent agent-1 a cortex-m3"),
            std::string::npos)
      << refused.error_message();
  EXPECT_EQ(ListedBoard("m4-0").board_id(), "");  // not registered
}

TEST_F(ServiceTest, OperatorsAreAddedListedAndFetched) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  v1::AddOperatorRequest add;
  v1::Operator* op = add.mutable_op();
  op->set_name("scale");
  op->mutable_spec()->set_entry("scale");
  op->mutable_spec()->add_sources("scale.c");
  (*op->mutable_spec()->mutable_dims())["N"] = 64;
  for (const char* name : {"X", "Y"}) {
    v1::OpArg* arg = op->mutable_spec()->add_args();
    arg->set_name(name);
    arg->add_shape("N");
  }
  v1::Knob* knob = op->mutable_spec()->add_knobs();
  knob->set_name("unroll");
  knob->add_values()->set_number_value(1);
  knob->add_values()->set_number_value(4);
  // A file the spec names is missing: refused, naming the field.
  {
    v1::AddOperatorResponse response;
    grpc::ClientContext context;
    grpc::Status s = client_->AddOperator(&context, add, &response);
    EXPECT_EQ(s.error_code(), grpc::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("op.files"), std::string::npos) << s.error_message();
  }
  (*op->mutable_files())["scale.c"] = "/* kernel */";
  v1::AddOperatorResponse added;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->AddOperator(&context, add, &added).ok());
  }
  EXPECT_TRUE(added.created());
  EXPECT_EQ(added.op().version().size(), 16u);
  EXPECT_TRUE(added.op().latest());
  EXPECT_EQ(added.op().files_size(), 0);
  v1::ListOperatorsResponse list;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->ListOperators(&context, v1::ListOperatorsRequest(), &list).ok());
  }
  std::vector<std::string> names;
  for (const v1::Operator& o : list.ops()) names.push_back(o.name() + (o.builtin() ? "*" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{"add*", "conv2d*", "matmul*", "scale"}));
  v1::GetOperatorRequest get;
  get.set_name("scale");
  v1::Operator got;
  {
    grpc::ClientContext context;
    ASSERT_TRUE(client_->GetOperator(&context, get, &got).ok());
  }
  EXPECT_EQ(got.files().at("scale.c"), "/* kernel */");
  EXPECT_EQ(got.version(), added.op().version());
  get.set_version("ffffffffffffffff");
  {
    grpc::ClientContext context;
    EXPECT_EQ(client_->GetOperator(&context, get, &got).error_code(), grpc::NOT_FOUND);
  }
}

TEST_F(ServiceTest, ListResultsPagesFitTheirBytes) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  // 50 jobs of about 200 KB each (10 MB in all), submitted 10 at a time (2 MB per request, under
  // the server's default 4 MiB receive limit).
  std::vector<std::string> ids;
  for (int batch = 0; batch < 5; ++batch) {
    std::vector<v1::Trial> trials;
    for (int k = 0; k < 10; ++k) {
      v1::Trial t = MakeTrial();
      t.mutable_op()->set_c_source(
          absl::StrCat("/* ", batch, ".", k, " */", std::string(200 * 1000, ' ')));
      t.mutable_op()->set_entry_function("f");
      trials.push_back(t);
    }
    for (const std::string& id : Submit("big", absl::StrCat("r", batch), trials)) ids.push_back(id);
  }
  ASSERT_EQ(ids.size(), 50u);
  // Reads every page; checks each fits `budget` (when it holds more than one job) and the default
  // 4 MiB limit; returns the page sizes in jobs.
  auto list_all = [&](int32_t limit, int64_t max_bytes, int64_t budget) {
    std::vector<int> pages;
    std::vector<std::string> listed;
    v1::ListResultsRequest request;
    request.set_client_id("big");
    request.set_limit(limit);
    request.set_max_bytes(max_bytes);
    for (int n = 0; n < 200; ++n) {
      v1::ListResultsResponse page;
      grpc::ClientContext context;
      context.set_deadline(Soon());
      grpc::Status s = client_->ListResults(&context, request, &page);
      EXPECT_TRUE(s.ok()) << s.error_message();
      if (!s.ok()) break;
      EXPECT_GE(page.jobs_size(), 1);
      if (page.jobs_size() > 1) {
        EXPECT_LE(static_cast<int64_t>(page.ByteSizeLong()), budget);
      }
      EXPECT_LT(page.ByteSizeLong(), size_t{4} << 20);
      pages.push_back(page.jobs_size());
      for (const v1::Job& j : page.jobs()) listed.push_back(j.job_id());
      if (page.next_page_token().empty()) break;
      request.set_page_token(page.next_page_token());
    }
    EXPECT_EQ(listed, ids);  // every job once, in submission order
    return pages;
  };
  // The default: 3 MiB pages (15 jobs of ~200 KB), however many jobs the limit allows.
  std::vector<int> pages = list_all(0, 0, int64_t{3} << 20);
  EXPECT_EQ(pages, (std::vector<int>{15, 15, 15, 5}));
  EXPECT_EQ(list_all(10000, int64_t{1} << 30, int64_t{3} << 20), pages);  // never more than 3 MiB
  // The client's own budget.
  pages = list_all(0, 500 * 1000, 500 * 1000);
  EXPECT_EQ(pages, std::vector<int>(25, 2));
  // A budget smaller than one job still makes progress: one job a page.
  pages = list_all(0, 1000, 1000);
  EXPECT_EQ(pages, std::vector<int>(50, 1));
  // The count limit still applies (the last page by count says more may follow).
  pages = list_all(7, 0, int64_t{3} << 20);
  EXPECT_EQ(pages, (std::vector<int>{7, 7, 7, 7, 7, 7, 7, 1}));

  v1::ListResultsRequest bad;
  bad.set_max_bytes(-1);
  v1::ListResultsResponse response;
  grpc::ClientContext context;
  EXPECT_EQ(client_->ListResults(&context, bad, &response).error_code(), grpc::INVALID_ARGUMENT);
}

TEST_F(ServiceTest, ARefusedResultEndsTheAttemptAndTheJobRunsAgain) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  std::vector<std::string> ids = Submit(1, "r1");
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_TRUE(agent->SendResult(offer->job_id(), offer->attempt(), v1::NO_ERROR, -1.0));
  // Not stored as a result: the attempt ended as an infrastructure failure naming the field.
  ASSERT_TRUE(WaitFor(
      [&] { return Get(ids[0]).attempts_size() >= 1 && Get(ids[0]).attempts(0).has_ended_at(); }));
  v1::Job job = Get(ids[0]);
  EXPECT_NE(job.state(), v1::DONE);
  EXPECT_FALSE(job.has_result());
  EXPECT_EQ(job.attempts(0).error_code(), v1::SESSION_ERROR);
  EXPECT_NE(job.attempts(0).message().find("result refused: result.costs_s[0]: -1"),
            std::string::npos)
      << job.attempts(0).message();
}

TEST_F(ServiceTest, SubmissionsOverAClientsCapAreResourceExhausted) {
  JobQueueOptions options = HostOptions();
  options.max_queued_per_client = 3;
  ASSERT_NO_FATAL_FAILURE(StartServer(options));
  Submit(3, "r1");
  v1::SubmitTrialsRequest request;
  request.set_client_id("c1");
  request.set_request_id("r2");
  *request.add_trials() = MakeTrial();
  v1::SubmitTrialsResponse response;
  grpc::ClientContext context;
  grpc::Status s = client_->SubmitTrials(&context, request, &response);
  EXPECT_EQ(s.error_code(), grpc::RESOURCE_EXHAUSTED);
  EXPECT_NE(s.error_message().find("client c1 has 3 unfinished jobs"), std::string::npos)
      << s.error_message();
  EXPECT_NE(s.error_message().find("max_queued_per_client (3)"), std::string::npos);
  EXPECT_EQ(response.job_ids_size(), 0);
}

}  // namespace
}  // namespace benchfarm::tracker
