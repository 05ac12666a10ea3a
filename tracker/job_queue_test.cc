// JobQueue's rules against a real SQLite store and a fake clock, with fake agents (plain calls,
// no gRPC): validation, idempotent submission, priority, FIFO, fair share, pins, leases and
// heartbeats, re-queue with history and the retry budget, exactly-once results, quarantine and
// health checks, cancellation, and recovery after a restart.
#include "tracker/job_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/clock.h"
#include "google/protobuf/util/json_util.h"
#include "tracker/flaky_store.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {
namespace {

v1::Trial MakeTrial(const std::string& kind = "host", int priority = 0,
                    const std::string& op = "matmul") {
  v1::Trial t;
  t.set_board_kind(kind);
  t.set_priority(priority);
  t.mutable_op()->mutable_template_op()->set_op(op);
  for (int i = 0; i < 3; ++i) {
    v1::ArgSpec* a = t.add_args();
    a->add_shape(8);
    a->add_shape(8);
    a->set_dtype("float32");
  }
  return t;
}

v1::Register MakeAgent(const std::string& agent, const std::vector<std::string>& boards,
                       const std::string& kind = "host") {
  v1::Register r;
  r.set_agent_id(agent);
  for (const std::string& b : boards) {
    v1::BoardRegistration* reg = r.add_boards();
    reg->set_board_id(b);
    reg->set_kind(kind);
  }
  return r;
}

v1::JobResult Ok(const v1::JobOffer& offer, double cost = 1e-3) {
  v1::JobResult r;
  r.set_job_id(offer.job_id());
  r.set_attempt(offer.attempt());
  r.mutable_result()->add_costs_s(cost);
  r.mutable_result()->set_board_id(offer.board_id());
  return r;
}

v1::JobResult Failed(const v1::JobOffer& offer, v1::ErrorCode code) {
  v1::JobResult r;
  r.set_job_id(offer.job_id());
  r.set_attempt(offer.attempt());
  r.mutable_result()->set_error_code(code);
  r.mutable_result()->set_message("boom");
  return r;
}

class JobQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    Restart();
  }

  // Every test ends (and every restart begins) with the board indexes agreeing with the boards.
  void TearDown() override {
    if (queue_ != nullptr) {
      EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
    }
  }

  void Restart(JobQueueOptions options = Defaults()) {
    if (queue_ != nullptr) {
      EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
    }
    queue_.reset();
    store_.reset();
    auto store = SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    queue_ = std::make_unique<JobQueue>(store_.get(), &clock_, options);
    ASSERT_TRUE(queue_->Recover().ok());
  }

  static JobQueueOptions Defaults() {
    JobQueueOptions o;
    o.lease = absl::Seconds(10);
    o.retry_budget = 3;
    o.quarantine_threshold = 2;
    o.known_kinds = {"host", "stm32"};
    return o;
  }

  std::vector<std::string> Submit(std::vector<v1::Trial> trials, const std::string& client = "c1",
                                  const std::string& request = "") {
    static int n = 0;
    auto ids =
        queue_->Submit(client, request.empty() ? "r" + std::to_string(++n) : request, trials);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<std::string>{};
  }

  v1::JobOffer TakeOne(const std::string& agent) {
    std::vector<Offer> offers = queue_->TakeOffers(agent);
    EXPECT_EQ(offers.size(), 1u);
    return offers.empty() ? v1::JobOffer() : offers[0].offer;
  }

  std::string path_;
  base::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
};

TEST_F(JobQueueTest, MalformedSubmissionsNameTheFieldAndStoreNothing) {
  struct Case {
    std::string want;
    std::function<void(v1::Trial*)> mutate;
  };
  std::vector<Case> cases = {
      {"trials[0].board_kind: required", [](v1::Trial* t) { t->clear_board_kind(); }},
      {"trials[0].board_kind: unknown board kind", [](v1::Trial* t) { t->set_board_kind("nope"); }},
      {"trials[0].op: set template_op or c_source", [](v1::Trial* t) { t->clear_op(); }},
      {"trials[0].args[1].shape[0]", [](v1::Trial* t) { t->mutable_args(1)->set_shape(0, -4); }},
      {"trials[0].args[0].dtype", [](v1::Trial* t) { t->mutable_args(0)->set_dtype("int8"); }},
      {"trials[0].args: more than 16",
       [](v1::Trial* t) {
         for (int k = 0; k < 17; ++k) t->add_args()->add_shape(1);
       }},
      // The catalog: operator, version, knobs, shapes.
      {"trials[0].op.template_op.op: unknown operator \"nope\"",
       [](v1::Trial* t) { t->mutable_op()->mutable_template_op()->set_op("nope"); }},
      {"trials[0].op.template_op.version: operator matmul has no version \"0123\"",
       [](v1::Trial* t) { t->mutable_op()->mutable_template_op()->set_version("0123"); }},
      {"trials[0].op.template_op.knobs: matmul has no knob \"tile_q\"",
       [](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())["tile_q"] = "1";
       }},
      {"trials[0].op.template_op.knobs: matmul knob tile_m = \"3\" is not one of",
       [](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = "3";
       }},
      {"trials[0].args[1].shape[0]: K is 8 in args[0], 4 here",
       [](v1::Trial* t) { t->mutable_args(1)->set_shape(0, 4); }},
      {"trials[0].args[2].shape: matmul's C has 2 dims",
       [](v1::Trial* t) { t->mutable_args(2)->add_shape(8); }},
      {"trials[0].args: matmul takes 3 arguments, the trial gives 2",
       [](v1::Trial* t) { t->mutable_args()->RemoveLast(); }},
      // Pins some registered board of the kind must satisfy.
      {"trials[0].board_id: no board \"b9\" is registered",
       [](v1::Trial* t) { t->set_board_id("b9"); }},
      {"trials[0].board_id: board s1 is of kind stm32, not host",
       [](v1::Trial* t) { t->set_board_id("s1"); }},
      {"trials[0].labels: no registered board of kind host has fpu=yes",
       [](v1::Trial* t) { (*t->mutable_labels())["fpu"] = "yes"; }},
      {"trials[0].labels: board b1 does not have fpu=yes",
       [](v1::Trial* t) {
         t->set_board_id("b1");
         (*t->mutable_labels())["fpu"] = "yes";
       }},
      // Sizes the board kind can hold (b1 reports 64 KiB).
      {"trials[0].args: the arguments take 3145728 bytes; the largest board of kind host holds "
       "65536",
       [](v1::Trial* t) {
         for (int a = 0; a < 3; ++a) {
           t->mutable_args(a)->set_shape(0, 512);
           t->mutable_args(a)->set_shape(1, 512);
         }
       }},
      // One-off C sources.
      {"trials[0].op.reference_function: required to check the outputs",
       [](v1::Trial* t) {
         t->mutable_op()->set_c_source("int f;");
         t->mutable_op()->set_entry_function("f");
         t->set_check_outputs(true);
       }},
      {"trials[0].args: a C source trial names its arguments",
       [](v1::Trial* t) {
         t->mutable_op()->set_c_source("int f;");
         t->mutable_op()->set_entry_function("f");
         t->clear_args();
       }},
      {"trials[0].measure.repeat", [](v1::Trial* t) { t->mutable_measure()->set_repeat(5000); }},
      {"trials[0].priority", [](v1::Trial* t) { t->set_priority(1000); }},
      {"trials[0].op.entry_function: required with c_source",
       [](v1::Trial* t) { t->mutable_op()->set_c_source("int x;"); }},
  };
  v1::Register reg = MakeAgent("a", {"b1"});
  reg.mutable_boards(0)->set_memory_bytes(64 * 1024);
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("s", {"s1"}, "stm32")).ok());
  for (const Case& c : cases) {
    v1::Trial t = MakeTrial();
    c.mutate(&t);
    auto ids = queue_->Submit("c1", "bad", {t});
    EXPECT_TRUE(absl::IsInvalidArgument(ids.status())) << c.want;
    EXPECT_NE(ids.status().message().find(c.want), absl::string_view::npos) << ids.status();
  }
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("", "r", {MakeTrial()}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("c1", "", {MakeTrial()}).status()));
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("c1", "r", {}).status()));
  // A bad trial anywhere in a batch rejects the whole batch.
  v1::Trial bad = MakeTrial();
  bad.set_priority(-1);
  auto ids = queue_->Submit("c1", "mixed", {MakeTrial(), bad});
  EXPECT_NE(ids.status().message().find("trials[1].priority"), absl::string_view::npos);
  JobFilter all;
  EXPECT_TRUE(queue_->List(all)->empty());
}

TEST_F(JobQueueTest, SubmissionIsIdempotentPerRequestId) {
  auto first = Submit({MakeTrial(), MakeTrial()}, "c1", "same");
  auto again = Submit({MakeTrial(), MakeTrial()}, "c1", "same");
  EXPECT_EQ(first, again);
  // The stored trial names the version it resolved; a retry naming it is the same submission.
  v1::Trial versioned = MakeTrial();
  versioned.mutable_op()->mutable_template_op()->set_version(
      queue_->GetJob(first[0])->trial().op().template_op().version());
  ASSERT_EQ(versioned.op().template_op().version().size(), 16u);
  EXPECT_EQ(Submit({versioned, MakeTrial()}, "c1", "same"), first);
  // The same id with other trials is a mistake, refused, and stores nothing.
  auto more = queue_->Submit("c1", "same", {MakeTrial(), MakeTrial(), MakeTrial()});
  EXPECT_EQ(more.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(more.status().message().find("it had 2 trials, this one 3"), absl::string_view::npos)
      << more.status();
  v1::Trial other = MakeTrial();
  (*other.mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = "16";
  auto changed = queue_->Submit("c1", "same", {MakeTrial(), other});
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_NE(changed.status().message().find("trials[1] differs"), absl::string_view::npos)
      << changed.status();
  EXPECT_EQ(queue_->List(JobFilter())->size(), 2u);
  auto other_client = Submit({MakeTrial()}, "c2", "same");
  EXPECT_NE(other_client[0], first[0]);
}

TEST_F(JobQueueTest, JobIdsAreShortDistinctOrderedAndRandom) {
  std::vector<v1::Trial> trials(500, MakeTrial());
  std::vector<std::string> ids = Submit(trials, "c1", "ids");
  ASSERT_EQ(ids.size(), trials.size());
  std::set<std::string> seen;
  std::set<char> last_digits;
  for (const std::string& id : ids) {
    // "j-" + 13 base-32 digits: 15 characters, kept inside std::string (no allocation per copy).
    EXPECT_EQ(id.size(), 15u) << id;
    EXPECT_EQ(id.rfind("j-", 0), 0u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdefghijklmnopqrstuv", 2), std::string::npos) << id;
    EXPECT_LE(id.size(), std::string().capacity()) << "no longer kept inline";
    seen.insert(id);
    last_digits.insert(id.back());
  }
  EXPECT_EQ(seen.size(), ids.size());
  EXPECT_GT(last_digits.size(), 16u) << "not random in the low bits";
  // In submission order (the store's index of job ids grows at its end), across submissions too.
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  std::vector<std::string> more = Submit({MakeTrial()}, "c2", "ids");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_LT(ids.back(), more[0]);
}

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

TEST_F(JobQueueTest, ExpiredLeaseRequeuesWithHistoryThenFailsBoardLost) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int attempt = 1; attempt <= 3; ++attempt) {
    v1::JobOffer o = TakeOne("a");
    EXPECT_EQ(o.attempt(), attempt);
    clock_.Advance(absl::Seconds(5));
    queue_->Touch("a", o.job_id(), o.attempt());  // a heartbeat naming it renews the lease
    clock_.Advance(absl::Seconds(6));
    EXPECT_EQ(queue_->ExpireLeases(), 0);
    queue_->Touch("a", std::vector<v1::HeldAttempt>{});  // a heartbeat that does not name it
    clock_.Advance(absl::Seconds(5));
    EXPECT_EQ(queue_->ExpireLeases(), 1);
    // A lease expiry is not the board's failure: three of them (the threshold is 2) leave it
    // serving.
    EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
    EXPECT_EQ(queue_->Boards("host")[0].consecutive_infra_failures(), 0);
  }
  auto job = queue_->GetJob(ids[0]);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->state(), v1::DONE);
  EXPECT_EQ(job->result().error_code(), v1::BOARD_LOST);
  EXPECT_EQ(job->result().autotvm_error_no(), 7);
  ASSERT_EQ(job->attempts_size(), 3);
  for (const v1::Attempt& a : job->attempts()) EXPECT_EQ(a.error_code(), v1::BOARD_LOST);
  EXPECT_EQ(queue_->Stats().lease_expiries, 3);
}

TEST_F(JobQueueTest, ASilentAgentsBoardsGoOfflineNotQuarantinedAndServeWhenItSpeaks) {
  auto ids = Submit({MakeTrial(), MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2", "b3"})).ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("z", {"c1"})).ok());
  ASSERT_EQ(queue_->TakeOffers("a").size(), 3u);
  std::vector<Offer> on_z = queue_->TakeOffers("z");
  ASSERT_EQ(on_z.size(), 1u);
  auto state_of = [&](const std::string& board) {
    for (const v1::Board& b : queue_->Boards("host")) {
      if (b.board_id() == board) return b;
    }
    return v1::Board();
  };
  // Agent a is paused (SIGSTOP) past the lease, twice (the quarantine threshold is 2); z keeps
  // sending heartbeats.
  for (int pause = 1; pause <= 2; ++pause) {
    for (int s = 0; s < 11; ++s) {
      clock_.Advance(absl::Seconds(1));
      queue_->Touch("z", on_z[0].offer.job_id(), on_z[0].offer.attempt());
      queue_->ExpireLeases();
    }
    for (const char* b : {"b1", "b2", "b3"}) {
      EXPECT_EQ(state_of(b).state(), v1::OFFLINE) << b << " after pause " << pause;
      EXPECT_EQ(state_of(b).consecutive_infra_failures(), 0) << b;
    }
    EXPECT_EQ(state_of("c1").state(), v1::BUSY);
    EXPECT_TRUE(queue_->TakeOffers("a").empty()) << "a silent agent is offered nothing";
    // Its attempts ended (not the boards' failure) and wait for a board.
    for (int i = 0; i < 3; ++i) {
      absl::StatusOr<v1::Job> job = queue_->GetJob(ids[i]);
      ASSERT_TRUE(job.ok());
      EXPECT_EQ(job->state(), v1::QUEUED);
      ASSERT_EQ(job->attempts_size(), pause);
      EXPECT_NE(job->attempts(pause - 1).message().find("agent a has said nothing for 10s"),
                std::string::npos)
          << job->attempts(pause - 1).message();
    }
    EXPECT_EQ(queue_->Stats().silent_agents, pause);
    // It resumes: its first heartbeat brings its boards back, and they are offered work at once.
    queue_->Touch("a", std::vector<v1::HeldAttempt>{});
    for (const char* b : {"b1", "b2", "b3"}) EXPECT_EQ(state_of(b).state(), v1::IDLE) << b;
    std::vector<Offer> offers = queue_->TakeOffers("a");
    ASSERT_EQ(offers.size(), 3u);
    for (const Offer& o : offers) EXPECT_EQ(o.offer.attempt(), pause + 1);
  }
  EXPECT_EQ(queue_->Stats().silent_agents, 2);
  EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
}

v1::HeldAttempt Held(const std::string& job_id, int attempt) {
  v1::HeldAttempt h;
  h.set_job_id(job_id);
  h.set_attempt(attempt);
  return h;
}

TEST_F(JobQueueTest, HeartbeatsRenewOnlyTheAttemptsTheyName) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  JobQueueOptions options = Defaults();
  options.quarantine_threshold = 100;
  Restart(options);
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  const v1::JobOffer& kept = offers[0].offer;
  const v1::JobOffer& dropped = offers[1].offer;
  // The agent holds only the first (it dropped the second): only that lease is renewed.
  for (int i = 0; i < 3; ++i) {
    clock_.Advance(absl::Seconds(6));
    queue_->Touch("a", {Held(kept.job_id(), kept.attempt())});
    queue_->ExpireLeases();
  }
  EXPECT_EQ(queue_->GetJob(kept.job_id())->state(), v1::RUNNING);
  auto lost = queue_->GetJob(dropped.job_id());
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(lost->state(), v1::QUEUED);  // re-queued for attempt 2
  EXPECT_EQ(lost->attempts(0).error_code(), v1::BOARD_LOST);
  // Attempt 2 goes out; a heartbeat still naming attempt 1 does not keep attempt 2 alive.
  v1::JobOffer second = TakeOne("a");
  ASSERT_EQ(second.job_id(), dropped.job_id());
  ASSERT_EQ(second.attempt(), 2);
  for (int i = 0; i < 2; ++i) {
    clock_.Advance(absl::Seconds(6));
    queue_->Touch("a", {Held(kept.job_id(), kept.attempt()), Held(dropped.job_id(), 1)});
    queue_->ExpireLeases();
  }
  EXPECT_EQ(queue_->GetJob(dropped.job_id())->attempts_size(), 2);
  EXPECT_EQ(queue_->GetJob(dropped.job_id())->state(), v1::QUEUED);
  // Another agent's heartbeat naming the attempt renews nothing either.
  v1::JobOffer third = TakeOne("a");
  ASSERT_EQ(third.attempt(), 3);
  for (int i = 0; i < 2; ++i) {
    clock_.Advance(absl::Seconds(6));
    queue_->Touch("intruder", {Held(third.job_id(), 3)});
    queue_->Touch("a", kept.job_id(), kept.attempt());
    queue_->ExpireLeases();
  }
  EXPECT_EQ(queue_->GetJob(third.job_id())->state(), v1::DONE);  // out of attempts: BOARD_LOST
  // A result for an old attempt is ignored; the current attempt's counts.
  ASSERT_TRUE(queue_->ReportResult("a", Ok(kept, 5e-3)).ok());
  EXPECT_EQ(queue_->GetJob(kept.job_id())->state(), v1::DONE);
  EXPECT_EQ(queue_->GetJob(kept.job_id())->result().costs_s(0), 5e-3);
}

TEST_F(JobQueueTest, ReRegisteringMatchesHeldJobsByAttempt) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  queue_->DisconnectAgent("a");
  // Back, holding attempt 1 of the first job and an attempt of the second the tracker never gave.
  v1::Register again = MakeAgent("a", {"b1", "b2"});
  *again.add_held() = Held(offers[0].offer.job_id(), 1);
  *again.add_held() = Held(offers[1].offer.job_id(), 7);
  ASSERT_TRUE(queue_->RegisterAgent(again).ok());
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::RUNNING);
  auto other = queue_->GetJob(offers[1].offer.job_id());
  EXPECT_EQ(other->state(), v1::QUEUED);
  EXPECT_EQ(other->attempts(0).error_code(), v1::BOARD_LOST);
}

// An offer's change to RUNNING is deferred: a result before it is due replaces it (one write
// for the two), a read of the store sees it (List), and a restart stores it.
TEST_F(JobQueueTest, AnOffersWriteIsDeferredReplacedByItsResultAndSeenByReads) {
  JobQueueOptions options = Defaults();
  options.defer_offer_writes = absl::Hours(1);
  Restart(options);
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer first = TakeOne("a");
  auto stored = store_->GetJob(first.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::QUEUED);  // not written yet
  ASSERT_TRUE(queue_->ReportResult("a", Ok(first)).ok());
  stored = store_->GetJob(first.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::DONE);
  EXPECT_EQ(queue_->Stats().store_writes_saved, 1);

  v1::JobOffer second = TakeOne("a");
  JobFilter running;
  running.state = v1::RUNNING;
  auto listed = queue_->List(running);
  ASSERT_TRUE(listed.ok()) << listed.status();
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].job.job_id(), second.job_id());
  EXPECT_EQ((*listed)[0].job.attempts_size(), 1);
  EXPECT_EQ(queue_->Stats().store_writes_saved, 1);  // written for the read, not replaced
}

TEST_F(JobQueueTest, AnOfferDeferredAtARestartIsStoredAndStillRunsAfterIt) {
  JobQueueOptions options = Defaults();
  options.defer_offer_writes = absl::Hours(1);
  Restart(options);
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  Restart(options);  // the queue stops cleanly: what it deferred is written
  auto stored = store_->GetJob(o.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::RUNNING);
  v1::Register again = MakeAgent("a", {"b1"});
  *again.add_held() = Held(o.job_id(), 1);  // the agent is still measuring it
  ASSERT_TRUE(queue_->RegisterAgent(again).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  auto job = queue_->GetJob(o.job_id());
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::DONE);
}

// /metrics shows the store's own upkeep: Stats carries SqliteStore's WAL truncations (here at a
// WAL of 20 pages, which a few submissions fill).
TEST_F(JobQueueTest, StatsCarryTheStoresWalTruncations) {
  queue_.reset();
  store_.reset();
  SqliteStoreOptions small;
  small.wal_truncate_pages = 20;
  auto store = SqliteStore::Open(path_, small);
  ASSERT_TRUE(store.ok()) << store.status();
  store_ = std::move(*store);
  queue_ = std::make_unique<JobQueue>(store_.get(), &clock_, Defaults());
  ASSERT_TRUE(queue_->Recover().ok());
  EXPECT_EQ(queue_->Stats().store_upkeep.wal_truncations, 0);
  for (int i = 0; i < 20 && queue_->Stats().store_upkeep.wal_truncations == 0; ++i) {
    Submit(std::vector<v1::Trial>(50, MakeTrial()));
  }
  EXPECT_GE(queue_->Stats().store_upkeep.wal_truncations, 1);
  EXPECT_EQ(queue_->Stats().store_upkeep.wal_truncations_blocked, 0);
}

TEST_F(JobQueueTest, AFailingStoreRefusesWorkKeepsResultsRetryableAndRecovers) {
  FlakyStore flaky(store_.get());
  JobQueueOptions options = Defaults();
  options.store_probe = absl::Milliseconds(50);  // the commit thread's retry, in real time
  queue_ = std::make_unique<JobQueue>(&flaky, &clock_, options);
  ASSERT_TRUE(queue_->Recover().ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto ids = Submit({MakeTrial(), MakeTrial()});
  v1::JobOffer o = TakeOne("a");
  flaky.SetWriteFailure(absl::InternalError("sqlite: database or disk is full"));
  // The result cannot be stored: Unavailable naming the cause. It is kept, not lost: the job is
  // not offered again, and the copy the agent sends again is acknowledged once it is stored.
  absl::Status s = queue_->ReportResult("a", Ok(o, 3e-3));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("disk is full"), std::string::npos) << s;
  QueueStats stats = queue_->Stats();
  EXPECT_GE(stats.store_failures, 1);
  EXPECT_NE(stats.store_problem.find("disk is full"), std::string::npos);
  // No new work while the store fails (the board has a free slot: give it two).
  v1::Register two = MakeAgent("a", {"b1"});
  two.mutable_boards(0)->set_slots(2);
  ASSERT_TRUE(queue_->RegisterAgent(two).ok());  // a failing store does not keep agents out
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  // Submissions and cancellations are refused with the cause, and nothing is taken.
  auto refused = queue_->Submit("c1", "while-full", {MakeTrial()});
  EXPECT_TRUE(absl::IsUnavailable(refused.status())) << refused.status();
  EXPECT_TRUE(absl::IsUnavailable(queue_->Cancel(ids[1]).status()));
  EXPECT_EQ(queue_->GetJob(ids[1])->state(), v1::QUEUED);
  // Sent again while the store still fails: still Unavailable; the database has no result.
  EXPECT_TRUE(absl::IsUnavailable(queue_->ReportResult("a", Ok(o, 3e-3))));
  auto unstored = store_->GetJob(o.job_id());
  ASSERT_TRUE(unstored.ok() && unstored->has_value());
  EXPECT_NE((*unstored)->job.state(), v1::DONE);
  // Space is back: the kept changes are stored at the next try, work flows again, and the resent
  // result is acknowledged (recorded once: a second copy is ignored).
  flaky.SetWriteFailure(absl::OkStatus());
  for (int i = 0; i < 500 && !queue_->Stats().store_problem.empty(); ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_TRUE(queue_->Stats().store_problem.empty());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 3e-3)).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 9.0)).ok());  // a second copy: ignored
  auto job = queue_->GetJob(o.job_id());
  EXPECT_EQ(job->state(), v1::DONE);
  EXPECT_EQ(job->result().costs_s(0), 3e-3);
  std::vector<Offer> next = queue_->TakeOffers("a");
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].offer.job_id(), ids[1]);
  // What was acknowledged is in the database itself.
  auto stored = store_->GetJob(o.job_id());
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->job.state(), v1::DONE);
  EXPECT_EQ((*stored)->job.result().costs_s(0), 3e-3);
  queue_.reset();  // before `flaky`: the queue's last writes go through it
}

TEST_F(JobQueueTest, JobsAreOfferedAndResultsAcknowledgedOnlyOnceStored) {
  FlakyStore flaky(store_.get());
  queue_ = std::make_unique<JobQueue>(&flaky, &clock_, Defaults());
  ASSERT_TRUE(queue_->Recover().ok());
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto durable = [this](GroupCommit::Ticket ticket) {
    absl::Notification told;
    absl::Status verdict;
    queue_->WhenDurable(ticket, [&](absl::Status s) {
      verdict = s;
      told.Notify();
    });
    return told.WaitForNotificationWithTimeout(absl::Seconds(10)) && verdict.ok();
  };
  flaky.HoldWrites(true);  // a slow disk: the commit of the submission waits
  auto accepted = queue_->SubmitAsync("c1", "r1", {MakeTrial()});
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  ASSERT_EQ(accepted->job_ids.size(), 1u);
  const std::string id = accepted->job_ids[0];
  EXPECT_EQ(queue_->GetJob(id)->state(), v1::QUEUED);  // visible at once...
  EXPECT_TRUE(queue_->TakeOffers("a").empty());        // ...offered only once stored
  // A retry of the same request gets the same job, and the same wait.
  auto retried = queue_->SubmitAsync("c1", "r1", {MakeTrial()});
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->job_ids, accepted->job_ids);
  flaky.HoldWrites(false);
  ASSERT_TRUE(durable(accepted->ticket));
  ASSERT_TRUE(durable(retried->ticket));
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].offer.job_id(), id);
  // The result is recorded at once (the board is free) and acknowledged once stored; the copy
  // sent again meanwhile waits for the same write.
  flaky.HoldWrites(true);
  GroupCommit::Ticket ticket = 0, again = 0;
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer, 2e-3), nullptr, &ticket).ok());
  EXPECT_EQ(queue_->GetJob(id)->state(), v1::DONE);
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer, 9.0), nullptr, &again).ok());
  EXPECT_EQ(again, ticket);
  auto before = store_->GetJob(id);
  ASSERT_TRUE(before.ok() && before->has_value());
  EXPECT_NE((*before)->job.state(), v1::DONE);
  flaky.HoldWrites(false);
  ASSERT_TRUE(durable(ticket));
  auto after = store_->GetJob(id);
  ASSERT_TRUE(after.ok() && after->has_value());
  EXPECT_EQ((*after)->job.state(), v1::DONE);
  EXPECT_EQ((*after)->job.result().costs_s(0), 2e-3);
  queue_.reset();  // before `flaky`
}

// The same submission sent by several threads at once (a client retrying while its first call is
// still being stored) is taken once: every call gets the same job ids.
TEST_F(JobQueueTest, ConcurrentCopiesOfASubmissionAreTakenOnce) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int round = 0; round < 20; ++round) {
    const std::string request = absl::StrCat("same-", round);
    std::vector<std::vector<std::string>> got(4);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        auto ids = queue_->Submit("c1", request, {MakeTrial(), MakeTrial()});
        ASSERT_TRUE(ids.ok()) << ids.status();
        got[t] = *ids;
      });
    }
    for (std::thread& t : threads) t.join();
    for (int t = 1; t < 4; ++t) EXPECT_EQ(got[t], got[0]) << "round " << round;
  }
  // 20 submissions of 2 jobs: 40 jobs, each stored once.
  JobFilter all;
  all.client_id = "c1";
  auto listed = queue_->List(all);
  ASSERT_TRUE(listed.ok()) << listed.status();
  EXPECT_EQ(listed->size(), 40u);
  EXPECT_TRUE(queue_->Stats().store_problem.empty());
}

TEST_F(JobQueueTest, ResultsAreRecordedExactlyOnce) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 2e-3)).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o, 9.0)).ok());  // resent: accepted, ignored
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::DONE);
  ASSERT_EQ(job->result().costs_s_size(), 1);
  EXPECT_EQ(job->result().costs_s(0), 2e-3);
  EXPECT_EQ(job->result().attempts(), 1);
}

TEST_F(JobQueueTest, LostAgentsJobsRequeueOnReRegister) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  queue_->DisconnectAgent("a");
  // It comes back holding only the first job.
  v1::Register reg = MakeAgent("a", {"b1", "b2"});
  reg.add_held_job_ids(offers[0].offer.job_id());
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::RUNNING);
  auto lost = queue_->GetJob(offers[1].offer.job_id());
  EXPECT_EQ(lost->state(), v1::QUEUED);
  ASSERT_EQ(lost->attempts_size(), 1);
  EXPECT_EQ(lost->attempts(0).error_code(), v1::BOARD_LOST);
  // The held job's result still counts.
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer)).ok());
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::DONE);
}

TEST_F(JobQueueTest, RepeatedInfraFailuresQuarantineUntilAHealthCheckPasses) {
  JobQueueOptions options = Defaults();
  options.health_check_trial = MakeTrial("", 0, "add");
  Restart(options);
  auto ids = Submit({MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {
    v1::JobOffer o = TakeOne("a");
    ASSERT_TRUE(queue_->ReportResult("a", Failed(o, v1::SESSION_ERROR)).ok());
  }
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  // The next offer is a health check, not user work.
  v1::JobOffer check = TakeOne("a");
  EXPECT_TRUE(check.health_check());
  EXPECT_EQ(check.trial().op().template_op().op(), "add");
  EXPECT_EQ(check.trial().board_id(), "b1");
  ASSERT_TRUE(queue_->ReportResult("a", Failed(check, v1::SESSION_ERROR)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  EXPECT_TRUE(queue_->TakeOffers("a").empty());  // backing off
  clock_.Advance(options.health_check_backoff);
  check = TakeOne("a");
  EXPECT_TRUE(check.health_check());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(check)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
  // Back to user work: the job that failed twice is still there (retry budget 3).
  v1::JobOffer o = TakeOne("a");
  EXPECT_FALSE(o.health_check());
  EXPECT_EQ(o.job_id(), ids[0]);
  EXPECT_EQ(o.attempt(), 3);
}

TEST_F(JobQueueTest, ACalibrationFailureQuarantinesWithItsReasonUntilACheckPasses) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {
    v1::JobOffer o = TakeOne("a");
    v1::JobResult bad = Failed(o, v1::CALIBRATION_ERROR);
    bad.mutable_result()->set_message("board b1: calibration: x0.5");
    ASSERT_TRUE(queue_->ReportResult("a", bad).ok());
  }
  v1::Board b = queue_->Boards("host")[0];
  EXPECT_EQ(b.state(), v1::QUARANTINED);
  EXPECT_EQ(b.quarantine_reason(), "board b1: calibration: x0.5");
  // The job was retried, not failed: calibration is the board's fault, not the trial's.
  EXPECT_EQ(queue_->GetJob(ids[0])->state(), v1::QUEUED);
  // The health check fails the same way: still quarantined, the reason says so.
  v1::JobOffer check = TakeOne("a");
  ASSERT_TRUE(check.health_check());
  v1::JobResult bad = Failed(check, v1::CALIBRATION_ERROR);
  bad.mutable_result()->set_message("board b1: calibration: x0.5");
  ASSERT_TRUE(queue_->ReportResult("a", bad).ok());
  b = queue_->Boards("host")[0];
  EXPECT_EQ(b.state(), v1::QUARANTINED);
  EXPECT_EQ(b.quarantine_reason(),
            "health check failed: CALIBRATION_ERROR: board b1: calibration: x0.5");
  clock_.Advance(Defaults().health_check_backoff);
  check = TakeOne("a");
  ASSERT_TRUE(queue_->ReportResult("a", Ok(check)).ok());
  b = queue_->Boards("host")[0];
  EXPECT_EQ(b.state(), v1::IDLE);
  EXPECT_EQ(b.quarantine_reason(), "");
}

TEST_F(JobQueueTest, StoredResultsCarryStatsComputedFromTheirCosts) {
  JobQueueOptions options = Defaults();
  options.unstable_threshold = 0.05;
  Restart(options);
  v1::Trial t = MakeTrial();
  t.mutable_measure()->set_repeat(10);
  auto ids = Submit({t, t});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  // Steady costs, and a lie in the agent's own stats that the tracker replaces.
  v1::JobOffer o = TakeOne("a");
  v1::JobResult r = Ok(o, 1.00e-3);
  for (double c :
       {0.99e-3, 1.01e-3, 1.00e-3, 1.00e-3, 0.99e-3, 1.01e-3, 1.00e-3, 1.00e-3, 1.00e-3}) {
    r.mutable_result()->add_costs_s(c);
  }
  r.mutable_result()->set_timer_resolution_s(1e-9);
  r.mutable_result()->mutable_stats()->set_median_s(42);
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  v1::CostStats s = queue_->GetJob(ids[0])->result().stats();
  EXPECT_EQ(s.count(), 10);
  EXPECT_DOUBLE_EQ(s.median_s(), 1.00e-3);
  EXPECT_DOUBLE_EQ(s.min_s(), 0.99e-3);
  EXPECT_NEAR(s.rel_half_width(), 0.01, 1e-9);  // [x2, x9] of the sorted costs = [0.99, 1.01]
  EXPECT_FALSE(s.unstable());
  EXPECT_EQ(s.timer_resolution_s(), 1e-9);
  // Spread costs: flagged past the configured threshold.
  o = TakeOne("a");
  r = Ok(o, 1e-3);
  for (double c : {2e-3, 0.5e-3, 1.5e-3, 0.7e-3, 1.2e-3, 0.8e-3, 1.9e-3, 0.6e-3, 1.1e-3}) {
    r.mutable_result()->add_costs_s(c);
  }
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  s = queue_->GetJob(ids[1])->result().stats();
  EXPECT_TRUE(s.unstable());
  EXPECT_EQ(s.unstable_threshold(), 0.05);
  EXPECT_GT(s.rel_half_width(), 0.05);
  EXPECT_EQ(queue_->Stats().unstable_results, 1);  // benchfarm_tracker_unstable_results_total
}

TEST_F(JobQueueTest, AdaptiveTrialsMayReportUpToMaxRepeatCosts) {
  v1::Trial t = MakeTrial();
  t.mutable_measure()->set_target_rel_ci(0.01);
  t.mutable_measure()->set_max_repeat(30);
  auto ids = Submit({t, t});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  v1::JobResult r = Ok(o);
  for (int i = 1; i < 30; ++i) r.mutable_result()->add_costs_s(1e-3);
  ASSERT_TRUE(queue_->ReportResult("a", r).ok());
  EXPECT_EQ(queue_->GetJob(ids[0])->result().costs_s_size(), 30);
  o = TakeOne("a");
  r = Ok(o);
  for (int i = 1; i < 31; ++i) r.mutable_result()->add_costs_s(1e-3);
  EXPECT_TRUE(absl::IsInvalidArgument(queue_->ReportResult("a", r)));
  // Adaptive options are checked at the door.
  for (auto [target, budget, max_repeat] : {std::tuple<double, int, int>{1.5, 0, 0},
                                            {-0.1, 0, 0},
                                            {NAN, 0, 0},
                                            {0.01, -1, 0},
                                            {0.01, 0, 5000}}) {
    v1::Trial bad = MakeTrial();
    bad.mutable_measure()->set_target_rel_ci(target);
    bad.mutable_measure()->set_budget_ms(budget);
    bad.mutable_measure()->set_max_repeat(max_repeat);
    EXPECT_TRUE(absl::IsInvalidArgument(queue_->Submit("c1", "bad", {bad}).status()))
        << target << " " << budget << " " << max_repeat;
  }
}

TEST_F(JobQueueTest, WithoutAConfiguredCheckTheBuiltinOneRuns) {
  auto ids = Submit({MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(queue_->ReportResult("a", Failed(TakeOne("a"), v1::FLASH_ERROR)).ok());
  }
  ASSERT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  // No health_check_trial configured: the built-in add, outputs checked, still gates the board.
  v1::JobOffer check = TakeOne("a");
  ASSERT_TRUE(check.health_check());
  EXPECT_EQ(check.trial().op().template_op().op(), "add");
  EXPECT_TRUE(check.trial().check_outputs());
  EXPECT_EQ(check.trial().board_kind(), "host");
  ASSERT_TRUE(queue_->ReportResult("a", Failed(check, v1::WRONG_ANSWER)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
}

constexpr char kGemv[] = R"json({
  "op": "gemv", "entry": "gemv", "reference_entry": "gemv_reference", "sources": ["gemv.c"],
  "dims": {"M": 4, "K": 8},
  "args": [{"name": "A", "shape": ["M", "K"]}, {"name": "x", "shape": ["K"]},
           {"name": "y", "shape": ["M"]}],
  "knobs": [{"name": "unroll", "values": [1, 2, 4]}, {"name": "acc", "values": [1, 2]}]
})json";

v1::Operator Gemv(const std::string& source) {
  v1::Operator op;
  google::protobuf::util::JsonParseOptions options;
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(kGemv, op.mutable_spec(), options).ok());
  op.set_name("gemv");
  (*op.mutable_files())["gemv.c"] = source;
  return op;
}

TEST_F(JobQueueTest, UserOperatorsAreVersionedCheckedAndTravelWithTheirOffers) {
  auto v1_added = queue_->catalog()->Add(Gemv("/* v1 */"), {}, clock_.Now());
  ASSERT_TRUE(v1_added.ok()) << v1_added.status();
  EXPECT_TRUE(v1_added->created);
  EXPECT_FALSE(
      queue_->catalog()->Add(Gemv("/* v1 */"), {}, clock_.Now())->created);  // same content
  v1::Trial t;
  t.set_board_kind("host");
  t.mutable_op()->mutable_template_op()->set_op("gemv");
  (*t.mutable_op()->mutable_template_op()->mutable_knobs())["unroll"] = "4";
  auto first = Submit({t});
  // A new version: old jobs keep theirs, new ones get it.
  auto v2_added = queue_->catalog()->Add(Gemv("/* v2 */"), {}, clock_.Now());
  ASSERT_TRUE(v2_added.ok());
  EXPECT_NE(v2_added->op.version(), v1_added->op.version());
  auto second = Submit({t});
  EXPECT_EQ(queue_->GetJob(first[0])->trial().op().template_op().version(), v1_added->op.version());
  EXPECT_EQ(queue_->GetJob(second[0])->trial().op().template_op().version(),
            v2_added->op.version());
  // Asking for the old version by name still works.
  v1::Trial old = t;
  old.mutable_op()->mutable_template_op()->set_version(v1_added->op.version());
  Submit({old});
  // Knobs and shapes are checked against the user's op like a built-in's.
  v1::Trial bad = t;
  (*bad.mutable_op()->mutable_template_op()->mutable_knobs())["unroll"] = "3";
  EXPECT_NE(queue_->Submit("c1", "bad1", {bad})
                .status()
                .message()
                .find("gemv knob unroll = \"3\" is not one of 1, 2, 4"),
            absl::string_view::npos);
  bad = t;
  for (std::vector<int64_t> shape : {std::vector<int64_t>{4, 8}, {9}, {4}}) {
    v1::ArgSpec* a = bad.add_args();
    for (int64_t d : shape) a->add_shape(d);
  }
  EXPECT_NE(queue_->Submit("c1", "bad2", {bad})
                .status()
                .message()
                .find("trials[0].args[1].shape[0]: K is 8 in args[0], 9 here"),
            absl::string_view::npos);
  // The offer carries the version's sources for the agent to build.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  EXPECT_EQ(o.job_id(), first[0]);
  EXPECT_EQ(o.operator_().version(), v1_added->op.version());
  EXPECT_EQ(o.operator_().files().at("gemv.c"), "/* v1 */");
  // Built-ins need no sources: every firmware has them.
  Submit({MakeTrial()});
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(TakeOne("a"))).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(TakeOne("a"))).ok());
  v1::JobOffer builtin = TakeOne("a");
  EXPECT_EQ(builtin.trial().op().template_op().op(), "matmul");
  EXPECT_FALSE(builtin.has_operator_());
  // The catalog survives a restart.
  Restart();
  EXPECT_EQ(queue_->catalog()->List("gemv", true).size(), 2u);
  EXPECT_EQ(queue_->catalog()->Get("gemv", "")->version(), v2_added->op.version());
  EXPECT_EQ(queue_->catalog()->List("", false).size(), 4u);  // add, conv2d, gemv, matmul
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

TEST_F(JobQueueTest, AnAdminsQuarantineHoldsUntilReleased) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  EXPECT_TRUE(absl::IsNotFound(queue_->SetQuarantine("b9", true, "").status()));
  absl::StatusOr<v1::Board> held = queue_->SetQuarantine("b1", true, "fan noise");
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(held->state(), v1::QUARANTINED);
  EXPECT_TRUE(held->held());
  auto ids = Submit({MakeTrial()});
  // No work and no health check, however long it waits, and across a restart.
  clock_.Advance(absl::Hours(1));
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  Restart();
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  EXPECT_EQ(queue_->Boards("host")[0].held_reason(), "fan noise");
  EXPECT_TRUE(queue_->TakeOffers("a").empty());
  absl::StatusOr<v1::Board> released = queue_->SetQuarantine("b1", false, "");
  ASSERT_TRUE(released.ok());
  EXPECT_EQ(released->state(), v1::IDLE);
  EXPECT_FALSE(released->held());
  EXPECT_EQ(TakeOne("a").job_id(), ids[0]);
}

TEST_F(JobQueueTest, TrialFailuresAreResultsNotRetries) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  ASSERT_TRUE(queue_->ReportResult("a", Failed(o, v1::COMPILE_DEVICE)).ok());
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::DONE);
  EXPECT_EQ(job->result().error_code(), v1::COMPILE_DEVICE);
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
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

// The size check reads each kind's boards' memory from an index kept as boards register again
// (with more or less memory, or as another kind) and across a restart.
TEST_F(JobQueueTest, TheLargestBoardOfAKindFollowsRegistrationsAndRestarts) {
  v1::Trial big = MakeTrial();  // three 256x256 float32 arguments: 786,432 bytes
  for (int a = 0; a < 3; ++a) {
    big.mutable_args(a)->set_shape(0, 256);
    big.mutable_args(a)->set_shape(1, 256);
  }
  auto agent = [](const std::string& id, const std::string& board, int64_t memory,
                  const std::string& kind = "host") {
    v1::Register r = MakeAgent(id, {board}, kind);
    r.mutable_boards(0)->set_memory_bytes(memory);
    return r;
  };
  auto submit = [&](const std::string& request) {
    return queue_->Submit("c1", request, {big}).status();
  };
  ASSERT_TRUE(queue_->RegisterAgent(agent("a", "b1", 64 << 10)).ok());
  ASSERT_TRUE(queue_->RegisterAgent(agent("b", "b2", 1 << 20)).ok());
  EXPECT_TRUE(submit("r1").ok());                                        // b2 holds it
  ASSERT_TRUE(queue_->RegisterAgent(agent("b", "b2", 512 << 10)).ok());  // b2 now says less
  absl::Status refused = submit("r2");
  EXPECT_TRUE(absl::IsInvalidArgument(refused));
  EXPECT_NE(refused.message().find("the largest board of kind host holds 524288"),
            absl::string_view::npos)
      << refused;
  ASSERT_TRUE(queue_->RegisterAgent(agent("c", "b3", 2 << 20, "stm32")).ok());  // another kind
  EXPECT_TRUE(absl::IsInvalidArgument(submit("r3")));
  ASSERT_TRUE(queue_->RegisterAgent(agent("c", "b3", 2 << 20)).ok());  // b3 becomes a host board
  EXPECT_TRUE(submit("r4").ok());
  Restart();
  EXPECT_TRUE(submit("r5").ok());  // b3 stored with its kind and memory
  ASSERT_TRUE(queue_->RegisterAgent(agent("d", "b4", 0)).ok());  // says nothing: no size check
  for (int a = 0; a < 3; ++a) {  // 12 MiB: more than any board says it holds
    big.mutable_args(a)->set_shape(0, 1024);
    big.mutable_args(a)->set_shape(1, 1024);
  }
  EXPECT_TRUE(submit("r6").ok()) << submit("r6");
}

TEST_F(JobQueueTest, RestartKeepsQueuedAndRunningJobs) {
  auto ids = Submit({MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1", "b2"})).ok());
  std::vector<Offer> offers = queue_->TakeOffers("a");
  ASSERT_EQ(offers.size(), 2u);
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[0].offer)).ok());
  Restart();  // the tracker process died and came back
  EXPECT_EQ(queue_->GetJob(offers[0].offer.job_id())->state(), v1::DONE);
  EXPECT_EQ(queue_->GetJob(offers[1].offer.job_id())->state(), v1::RUNNING);
  // The agent reconnects holding its running job and finishes it.
  v1::Register reg = MakeAgent("a", {"b1", "b2"});
  reg.add_held_job_ids(offers[1].offer.job_id());
  ASSERT_TRUE(queue_->RegisterAgent(reg).ok());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(offers[1].offer)).ok());
  EXPECT_EQ(queue_->GetJob(offers[1].offer.job_id())->state(), v1::DONE);
  // The queued one is offered.
  std::vector<Offer> more = queue_->TakeOffers("a");
  ASSERT_EQ(more.size(), 1u);
  EXPECT_EQ(queue_->Summary()[0].running(), 1);
}

TEST_F(JobQueueTest, RunningJobsOfAnAgentThatNeverReturnsRequeueAfterRestart) {
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  Restart();
  clock_.Advance(absl::Seconds(11));
  EXPECT_EQ(queue_->ExpireLeases(), 1);
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::QUEUED);
  EXPECT_EQ(job->attempts_size(), 1);
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

// ---- results and sizes are checked --------------------------------------------------------------

v1::JobResult WithCosts(const v1::JobOffer& offer, const std::vector<double>& costs) {
  v1::JobResult r = Ok(offer);
  r.mutable_result()->clear_costs_s();
  for (double c : costs) r.mutable_result()->add_costs_s(c);
  return r;
}

TEST_F(JobQueueTest, ImpossibleCostsAreRefusedAndRetriedLikeInfrastructureErrors) {
  JobQueueOptions options = Defaults();
  options.quarantine_threshold = 100;  // the budget, not quarantine, is what this is about
  Restart(options);
  auto ids = Submit({MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  const std::vector<std::pair<double, std::string>> bad = {
      {std::nan(""), "result.costs_s[0]: nan"},
      {-std::numeric_limits<double>::infinity(), "result.costs_s[0]: -inf"},
      {-1.0, "result.costs_s[0]: -1"}};
  for (int attempt = 1; attempt <= 3; ++attempt) {
    v1::JobOffer o = TakeOne("a");
    ASSERT_EQ(o.job_id(), ids[0]);
    ASSERT_EQ(o.attempt(), attempt);
    const auto& [cost, want] = bad[attempt - 1];
    absl::Status s = queue_->ReportResult("a", WithCosts(o, {cost}));
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
    EXPECT_NE(s.message().find(want), absl::string_view::npos) << s;
    // Sent again (the agent had no ack): the attempt is over, so it is ignored.
    EXPECT_TRUE(queue_->ReportResult("a", WithCosts(o, {cost})).ok());
    auto job = queue_->GetJob(ids[0]);
    ASSERT_TRUE(job.ok());
    ASSERT_EQ(job->attempts_size(), attempt);
    const v1::Attempt& last = job->attempts(attempt - 1);
    EXPECT_EQ(last.error_code(), v1::SESSION_ERROR);
    EXPECT_NE(last.message().find("result refused: " + want), std::string::npos) << last.message();
    EXPECT_TRUE(last.has_ended_at());
    if (attempt < 3) {
      EXPECT_EQ(job->state(), v1::QUEUED);  // not DONE: re-queued with its history
      EXPECT_FALSE(job->has_result());
    } else {
      // Out of attempts: the infrastructure path's end, never a result with these costs.
      EXPECT_EQ(job->state(), v1::DONE);
      EXPECT_EQ(job->result().error_code(), v1::BOARD_LOST);
      EXPECT_EQ(job->result().costs_s_size(), 0);
      EXPECT_NE(job->result().message().find("no result after 3 attempts; last: result refused"),
                std::string::npos)
          << job->result().message();
    }
  }
  EXPECT_EQ(queue_->Boards("host")[0].consecutive_infra_failures(), 3);
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
}

TEST_F(JobQueueTest, MalformedResultsAreRefusedNamingTheField) {
  JobQueueOptions options = Defaults();
  options.quarantine_threshold = 100;
  Restart(options);
  v1::Trial three = MakeTrial();
  three.mutable_measure()->set_repeat(3);
  struct Case {
    std::string want;
    std::function<void(v1::Result*)> mutate;
    v1::Trial trial;
  };
  std::vector<Case> cases = {
      {"result.error_code: 42 is not a benchfarm.v1.ErrorCode",
       [](v1::Result* r) { r->set_error_code(static_cast<v1::ErrorCode>(42)); }, MakeTrial()},
      {"result.error_code: -3 is not",
       [](v1::Result* r) { r->set_error_code(static_cast<v1::ErrorCode>(-3)); }, MakeTrial()},
      // repeat 0 means one cost; repeat 3 allows three, not four.
      {"result.costs_s: 2 costs; the trial's repeat gives at most 1",
       [](v1::Result* r) { r->add_costs_s(1e-3); }, MakeTrial()},
      {"result.costs_s: 4 costs; the trial's repeat gives at most 3",
       [](v1::Result* r) {
         for (int k = 0; k < 3; ++k) r->add_costs_s(1e-3);
       },
       three},
      {"result.costs_s[0]: inf",
       [](v1::Result* r) { r->set_costs_s(0, std::numeric_limits<double>::infinity()); },
       MakeTrial()},
      // Errors carry costs too sometimes; they are checked all the same.
      {"result.costs_s[0]: -0.5",
       [](v1::Result* r) {
         r->set_error_code(v1::WRONG_ANSWER);
         r->set_costs_s(0, -0.5);
       },
       MakeTrial()},
      {"result.message: 4097 bytes, at most 4096",
       [](v1::Result* r) { r->set_message(std::string(4097, 'm')); }, MakeTrial()},
      {"result.message: 31457280 bytes, at most 4096",
       [](v1::Result* r) { r->set_message(std::string(30 << 20, 'm')); }, MakeTrial()},
      {"result.board_id: 129 bytes, at most 128",
       [](v1::Result* r) { r->set_board_id(std::string(129, 'b')); }, MakeTrial()},
      {"result.firmware_hash: 129 bytes",
       [](v1::Result* r) { r->set_firmware_hash(std::string(129, 'f')); }, MakeTrial()},
      {"result.stages.measure_s: nan",
       [](v1::Result* r) { r->mutable_stages()->set_measure_s(std::nan("")); }, MakeTrial()},
      {"result.timer_resolution_s: -1", [](v1::Result* r) { r->set_timer_resolution_s(-1); },
       MakeTrial()},
      {"result.finished_at: not a valid timestamp",
       [](v1::Result* r) { r->mutable_finished_at()->set_nanos(-5); }, MakeTrial()},
      // A cost longer than the trial's whole measurement may take (issue 34: 1e308 s was stored).
      {"result.costs_s[0]: 1e+308 s; more than the trial's measurement may take (10 s)",
       [](v1::Result* r) { r->set_costs_s(0, 1e308); }, MakeTrial()},
      {"result.costs_s[0]: 11 s; more than the trial's measurement may take (10 s)",
       [](v1::Result* r) { r->set_costs_s(0, 11); }, MakeTrial()},
      // Modeled time (the cycle model, -icount) may pass slower than the host's, not 1000x.
      {"result.costs_s[0]: 10001 s; more than the trial's measurement may take (10000 s)",
       [](v1::Result* r) {
         r->set_timer("cycle-model");
         r->set_costs_s(0, 10001);
       },
       MakeTrial()},
  };
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (const Case& c : cases) {
    auto ids = Submit({c.trial});
    v1::JobOffer o = TakeOne("a");
    ASSERT_EQ(o.job_id(), ids[0]);
    v1::JobResult r = Ok(o);
    c.mutate(r.mutable_result());
    absl::Status s = queue_->ReportResult("a", r);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.want << ": " << s;
    EXPECT_NE(s.message().find(c.want), absl::string_view::npos) << s;
    EXPECT_LT(s.message().size(), 512u);  // names the field; never echoes the oversized value
    auto job = queue_->GetJob(ids[0]);
    EXPECT_EQ(job->state(), v1::QUEUED) << c.want;
    ASSERT_EQ(job->attempts_size(), 1);
    EXPECT_EQ(job->attempts(0).error_code(), v1::SESSION_ERROR);
    EXPECT_LT(job->attempts(0).message().size(), 512u);
    EXPECT_LT(job->ByteSizeLong(), 4096u);  // nothing of the refused result is stored
    // Its second attempt reports a good result, which is recorded.
    v1::JobOffer again = TakeOne("a");
    ASSERT_EQ(again.job_id(), ids[0]);
    ASSERT_TRUE(queue_->ReportResult("a", Ok(again, 2e-3)).ok());
    job = queue_->GetJob(ids[0]);
    EXPECT_EQ(job->state(), v1::DONE);
    EXPECT_EQ(job->result().error_code(), v1::NO_ERROR);
    EXPECT_EQ(job->result().costs_s(0), 2e-3);
  }
  // As many costs as the repeat gives, zero among them, up to the timeout (modeled time: 1000
  // timeouts), and a 4 KiB message are fine.
  auto modeled = Submit({MakeTrial()});
  v1::JobResult slow_model = WithCosts(TakeOne("a"), {9999});
  slow_model.mutable_result()->set_timer("cycle-model");
  ASSERT_TRUE(queue_->ReportResult("a", slow_model).ok());
  EXPECT_EQ(queue_->GetJob(modeled[0])->state(), v1::DONE);
  auto ids = Submit({three});
  v1::JobResult fine = WithCosts(TakeOne("a"), {0.0, 1e-9, 10});
  fine.mutable_result()->set_message(std::string(4096, 'm'));
  ASSERT_TRUE(queue_->ReportResult("a", fine).ok());
  EXPECT_EQ(queue_->GetJob(ids[0])->result().costs_s_size(), 3);
}

TEST_F(JobQueueTest, RefusedResultsCountTowardQuarantine) {
  Submit({MakeTrial(), MakeTrial(), MakeTrial()});
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (int i = 0; i < 2; ++i) {  // quarantine_threshold 2
    EXPECT_TRUE(absl::IsInvalidArgument(
        queue_->ReportResult("a", WithCosts(TakeOne("a"), {std::nan("")}))));
  }
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  // A health check with an impossible cost does not pass.
  v1::JobOffer check = TakeOne("a");
  ASSERT_TRUE(check.health_check());
  absl::Status s = queue_->ReportResult("a", WithCosts(check, {-1.0}));
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(s.message().find("result.costs_s[0]: -1"), absl::string_view::npos) << s;
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::QUARANTINED);
  clock_.Advance(Defaults().health_check_backoff);
  check = TakeOne("a");
  ASSERT_TRUE(check.health_check());
  ASSERT_TRUE(queue_->ReportResult("a", Ok(check)).ok());
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::IDLE);
}

TEST_F(JobQueueTest, OversizedStringsAreRefusedNamingTheFieldAndNothingIsStored) {
  auto c_source = [](v1::Trial* t) {
    t->mutable_op()->set_c_source("int f;");
    t->mutable_op()->set_entry_function("f");
  };
  struct Case {
    std::string want;
    std::function<void(v1::Trial*)> mutate;
  };
  std::vector<Case> cases = {
      {"trials[0].board_kind: 129 bytes, at most 128",
       [](v1::Trial* t) { t->set_board_kind(std::string(129, 'k')); }},
      {"trials[0].board_kind: 20971520 bytes, at most 128",
       [](v1::Trial* t) { t->set_board_kind(std::string(20 << 20, 'k')); }},
      {"trials[0].board_id: 129 bytes, at most 128",
       [](v1::Trial* t) { t->set_board_id(std::string(129, 'b')); }},
      {"trials[0].labels: a key of 129 bytes, at most 128",
       [](v1::Trial* t) { (*t->mutable_labels())[std::string(129, 'k')] = "v"; }},
      {"trials[0].labels[\"fpu\"]: 20971520 bytes, at most 256",
       [](v1::Trial* t) { (*t->mutable_labels())["fpu"] = std::string(20 << 20, 'v'); }},
      {"trials[0].labels: 33 labels, at most 32",
       [](v1::Trial* t) {
         for (int k = 0; k < 33; ++k) (*t->mutable_labels())[absl::StrCat("k", k)] = "v";
       }},
      {"trials[0].op.template_op.op: 129 bytes, at most 128",
       [](v1::Trial* t) { t->mutable_op()->mutable_template_op()->set_op(std::string(129, 'o')); }},
      {"trials[0].op.template_op.version: 65 bytes, at most 64",
       [](v1::Trial* t) {
         t->mutable_op()->mutable_template_op()->set_version(std::string(65, '0'));
       }},
      {"trials[0].op.template_op.knobs: a name of 129 bytes, at most 128",
       [](v1::Trial* t) {
         (*t->mutable_op()->mutable_template_op()->mutable_knobs())[std::string(129, 'n')] = "1";
       }},
      {"trials[0].op.template_op.knobs[\"tile_m\"]: 257 bytes, at most 256",
       [](v1::Trial* t) {
         auto& knobs = *t->mutable_op()->mutable_template_op()->mutable_knobs();
         knobs["tile_m"] = std::string(257, '8');
       }},
      {"trials[0].op.template_op.image_pool[1]: 1025 bytes, at most 1024",
       [](v1::Trial* t) {
         t->mutable_op()->mutable_template_op()->add_image_pool("tile_m=8");
         t->mutable_op()->mutable_template_op()->add_image_pool(std::string(1025, 'p'));
       }},
      {"trials[0].op.template_op.image_pool: 614400 bytes in all, at most 524288",
       [](v1::Trial* t) {
         for (int k = 0; k < 600; ++k) {
           t->mutable_op()->mutable_template_op()->add_image_pool(std::string(1024, 'p'));
         }
       }},
      {"trials[0].op.template_op.image_pool: 4097 entries, at most 4096",
       [](v1::Trial* t) {
         for (int k = 0; k < 4097; ++k) t->mutable_op()->mutable_template_op()->add_image_pool("x");
       }},
      {"trials[0].op.entry_function: 65 bytes, at most 64",
       [&](v1::Trial* t) {
         c_source(t);
         t->mutable_op()->set_entry_function(std::string(65, 'f'));
       }},
      {"trials[0].op.reference_function: 65 bytes, at most 64",
       [](v1::Trial* t) { t->mutable_op()->set_reference_function(std::string(65, 'r')); }},
      {"trials[0].op.c_source: 1048577 bytes, at most 1048576",
       [&](v1::Trial* t) {
         c_source(t);
         t->mutable_op()->set_c_source(std::string((1 << 20) + 1, ' '));
       }},
      {"trials[0].args[2].dtype: 17 bytes, at most 16",
       [](v1::Trial* t) { t->mutable_args(2)->set_dtype(std::string(17, 'd')); }},
  };
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  for (const Case& c : cases) {
    v1::Trial t = MakeTrial();
    c.mutate(&t);
    auto ids = queue_->Submit("c1", "big", {t});
    EXPECT_TRUE(absl::IsInvalidArgument(ids.status())) << c.want << ": " << ids.status();
    EXPECT_NE(ids.status().message().find(c.want), absl::string_view::npos) << ids.status();
    EXPECT_LT(ids.status().message().size(), 512u) << c.want;
  }
  // At the caps exactly, a trial is fine (a 1 MiB source with the longest names).
  v1::Trial largest = MakeTrial();
  c_source(&largest);
  largest.mutable_op()->set_c_source(std::string(1 << 20, ' '));
  largest.mutable_op()->set_entry_function(std::string(64, 'f'));
  auto largest_ids = queue_->Submit("c1", "largest", {largest});
  ASSERT_TRUE(largest_ids.ok()) << largest_ids.status();
  EXPECT_LT(queue_->List(JobFilter())->at(0).job.ByteSizeLong(), size_t{1100} << 10);
  // Ids.
  auto too_long = [](const absl::StatusOr<std::vector<std::string>>& r, const std::string& want) {
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
    EXPECT_NE(r.status().message().find(want), absl::string_view::npos) << r.status();
  };
  too_long(queue_->Submit(std::string(129, 'c'), "r", {MakeTrial()}),
           "client_id: required, at most 128 bytes");
  too_long(queue_->Submit("c1", std::string(129, 'r'), {MakeTrial()}),
           "request_id: required, at most 128 bytes");
  EXPECT_EQ(queue_->List(JobFilter())->size(), 1u);  // the largest one only
}

TEST_F(JobQueueTest, OversizedRegistrationsAreRefusedNamingTheField) {
  struct Case {
    std::string want;
    std::function<void(v1::Register*)> mutate;
  };
  std::vector<Case> cases = {
      {"register.agent_id: 129 bytes, at most 128",
       [](v1::Register* r) { r->set_agent_id(std::string(129, 'a')); }},
      {"register.boards[1].board_id: 20971520 bytes, at most 128",
       [](v1::Register* r) { r->mutable_boards(1)->set_board_id(std::string(20 << 20, 'b')); }},
      {"register.boards[0].kind: 129 bytes, at most 128",
       [](v1::Register* r) { r->mutable_boards(0)->set_kind(std::string(129, 'k')); }},
      {"register.boards[0].labels: a key of 129 bytes, at most 128",
       [](v1::Register* r) {
         (*r->mutable_boards(0)->mutable_labels())[std::string(129, 'k')] = "v";
       }},
      {"register.boards[0].labels[\"fpu\"]: 257 bytes, at most 256",
       [](v1::Register* r) {
         (*r->mutable_boards(0)->mutable_labels())["fpu"] = std::string(257, 'v');
       }},
      {"register.boards[0].labels: 33 labels, at most 32",
       [](v1::Register* r) {
         for (int k = 0; k < 33; ++k) {
           (*r->mutable_boards(0)->mutable_labels())[absl::StrCat("k", k)] = "v";
         }
       }},
      {"register.boards[1].capabilities[1]: 129 bytes, at most 128",
       [](v1::Register* r) {
         r->mutable_boards(1)->add_capabilities("serial");
         r->mutable_boards(1)->add_capabilities(std::string(129, 'c'));
       }},
      {"register.boards[0].capabilities: 33 entries, at most 32",
       [](v1::Register* r) {
         for (int k = 0; k < 33; ++k) r->mutable_boards(0)->add_capabilities("c");
       }},
      {"register.boards[1].slots: 257; 0 to 256 (the tracker's max_slots_per_board)",
       [](v1::Register* r) { r->mutable_boards(1)->set_slots(257); }},
      {"register.boards[0].slots: -1; 0 to 256",
       [](v1::Register* r) { r->mutable_boards(0)->set_slots(-1); }},
      {"register.boards[0].flashes: -5; not a count",
       [](v1::Register* r) { r->mutable_boards(0)->set_flashes(-5); }},
      {"register.boards[1].memory_bytes: -1; not a size",
       [](v1::Register* r) { r->mutable_boards(1)->set_memory_bytes(-1); }},
      {"register.boards: 1025 boards, at most 1024",
       [](v1::Register* r) {
         for (int k = 0; k < 1023; ++k) {
           v1::BoardRegistration* b = r->add_boards();
           b->set_board_id(absl::StrCat("x", k));
           b->set_kind("host");
         }
       }},
  };
  for (const Case& c : cases) {
    v1::Register reg = MakeAgent("a", {"b1", "b2"});
    c.mutate(&reg);
    absl::Status s = queue_->RegisterAgent(reg);
    EXPECT_TRUE(absl::IsInvalidArgument(s)) << c.want << ": " << s;
    EXPECT_NE(s.message().find(c.want), absl::string_view::npos) << s;
    EXPECT_LT(s.message().size(), 512u);
  }
  EXPECT_TRUE(queue_->Boards("").empty());
  EXPECT_TRUE(queue_->TakeOffers("a").empty());  // never connected
  EXPECT_TRUE(store_->LoadBoards()->empty());
}

// Agents with verified identities (boards_bound): a board stays with the agent that registered
// it — another is refused even while the first is away — until an admin moves it (issue 34).
TEST_F(JobQueueTest, ABoundBoardIsItsAgentsUntilAnAdminMovesIt) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"}), true).ok());
  absl::Status s = queue_->RegisterAgent(MakeAgent("twin", {"b1"}), true);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_NE(s.message().find("board b1 is held by agent a; another agent may serve it only after "
                             "an admin moves it (farmctl board move b1 twin)"),
            absl::string_view::npos)
      << s;
  // Not while its agent is connected; then it goes to the named agent.
  EXPECT_TRUE(absl::IsFailedPrecondition(queue_->MoveBoard("b1", "twin").status()));
  queue_->DisconnectAgent("a");
  EXPECT_TRUE(absl::IsPermissionDenied(queue_->RegisterAgent(MakeAgent("twin", {"b1"}), true)));
  EXPECT_TRUE(absl::IsNotFound(queue_->MoveBoard("nope", "twin").status()));
  auto moved = queue_->MoveBoard("b1", "twin");
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->agent_id(), "twin");
  EXPECT_EQ(moved->state(), v1::OFFLINE);
  // Across a restart too.
  Restart();
  EXPECT_TRUE(absl::IsPermissionDenied(queue_->RegisterAgent(MakeAgent("a", {"b1"}), true)));
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("twin", {"b1"}), true).ok());
  Submit({MakeTrial()});
  EXPECT_EQ(TakeOne("twin").board_id(), "b1");
  // Unbound (an insecure tracker): the old rule, refused only while the holder is connected.
  queue_->DisconnectAgent("twin");
  EXPECT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
}

// A revoked agent's attempts end at once and its late results are ignored (issue 34 §3).
TEST_F(JobQueueTest, ARevokedAgentsAttemptsRequeueAndItsLateResultsAreIgnored) {
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  auto ids = Submit({MakeTrial()});
  v1::JobOffer o = TakeOne("a");
  ASSERT_EQ(o.job_id(), ids[0]);
  queue_->RevokeAgent("a", "its agent's certificate was revoked");
  auto job = queue_->GetJob(ids[0]);
  EXPECT_EQ(job->state(), v1::QUEUED);
  ASSERT_EQ(job->attempts_size(), 1);
  EXPECT_EQ(job->attempts(0).error_code(), v1::BOARD_LOST);
  EXPECT_EQ(job->attempts(0).message(), "its agent's certificate was revoked");
  EXPECT_EQ(queue_->Boards("host")[0].state(), v1::OFFLINE);
  EXPECT_EQ(queue_->Stats().revoked_attempts, 1);
  // What it measured arrives late: ignored, the job stays queued for someone else.
  EXPECT_TRUE(queue_->ReportResult("a", Ok(o, 1e-9)).ok());
  EXPECT_EQ(queue_->GetJob(ids[0])->state(), v1::QUEUED);
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("b", {"b2"})).ok());
  v1::JobOffer again = TakeOne("b");
  EXPECT_EQ(again.job_id(), ids[0]);
  EXPECT_EQ(again.attempt(), 2);
}

TEST_F(JobQueueTest, PerClientCapsAreResourceExhaustedAndStoreNothing) {
  JobQueueOptions options = Defaults();
  options.max_queued_per_client = 5;
  Restart(options);
  auto first = Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1", "first");
  auto over = queue_->Submit("c1", "over", {MakeTrial(), MakeTrial(), MakeTrial()});
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_NE(over.status().message().find(
                "client c1 has 3 unfinished jobs; 3 more would exceed max_queued_per_client (5)"),
            absl::string_view::npos)
      << over.status();
  EXPECT_EQ(queue_->List(JobFilter())->size(), 3u);
  // A retry of an accepted submission stores nothing, so the cap does not apply to it.
  EXPECT_EQ(Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1", "first"), first);
  // Another client has its own cap.
  Submit(std::vector<v1::Trial>(5, MakeTrial()), "c2");
  // Finished and cancelled jobs no longer count; running ones do.
  ASSERT_TRUE(queue_->RegisterAgent(MakeAgent("a", {"b1"})).ok());
  v1::JobOffer o = TakeOne("a");
  ASSERT_EQ(o.job_id(), first[0]);
  EXPECT_TRUE(absl::IsResourceExhausted(
      queue_->Submit("c1", "still-over", {MakeTrial(), MakeTrial(), MakeTrial()}).status()));
  ASSERT_TRUE(queue_->ReportResult("a", Ok(o)).ok());
  ASSERT_TRUE(queue_->Cancel(first[1]).ok());
  Submit({MakeTrial(), MakeTrial(), MakeTrial()}, "c1");  // 1 + 3 of 5
  EXPECT_TRUE(absl::IsResourceExhausted(
      queue_->Submit("c1", "two-more", {MakeTrial(), MakeTrial()}).status()));
  // The count survives a restart (rebuilt from the unfinished jobs).
  Restart(options);
  EXPECT_TRUE(absl::IsResourceExhausted(
      queue_->Submit("c1", "after-restart", {MakeTrial(), MakeTrial()}).status()));
  Submit({MakeTrial()}, "c1");

  // Bytes: the serialized trials of a client's unfinished jobs.
  auto source = [](size_t bytes) {
    v1::Trial t = MakeTrial();
    t.mutable_op()->set_c_source(std::string(bytes, ' '));
    t.mutable_op()->set_entry_function("f");
    return t;
  };
  options = Defaults();
  options.max_queued_bytes_per_client = 250 << 10;
  Restart(options);
  Submit({source(100 << 10)}, "c3");
  Submit({source(100 << 10)}, "c3");
  auto big = queue_->Submit("c3", "big", {source(100 << 10)});
  EXPECT_TRUE(absl::IsResourceExhausted(big.status())) << big.status();
  EXPECT_NE(big.status().message().find("client c3 has "), absl::string_view::npos);
  EXPECT_NE(big.status().message().find("would exceed max_queued_bytes_per_client (256000 bytes)"),
            absl::string_view::npos)
      << big.status();
  JobFilter c3;
  c3.client_id = "c3";
  EXPECT_EQ(queue_->List(c3)->size(), 2u);
  Submit({source(10 << 10)}, "c3");  // what still fits
}

}  // namespace
}  // namespace benchfarm::tracker
