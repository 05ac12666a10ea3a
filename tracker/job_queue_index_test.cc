// JobQueue's indexed scheduling under a flood of jobs that cannot run: jobs pinned to an offline
// board or to labels only an offline board has neither take a serving board's turn nor change
// the order of what it runs (priority, then clients in turn, then submission order); they run,
// in order, once their board serves. Summary() and Stats() — read from counters, not from the
// jobs — agree with the jobs' states through every transition (offer, lease expiry, re-queue,
// cancel, result, restart).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/clock.h"
#include "tracker/job_queue.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {
namespace {

v1::Trial MakeTrial(int priority = 0, const std::string& board_id = "",
                    const std::map<std::string, std::string>& labels = {}) {
  v1::Trial t;
  t.set_board_kind("host");
  t.set_priority(priority);
  t.set_board_id(board_id);
  for (const auto& [k, v] : labels) (*t.mutable_labels())[k] = v;
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) {
    v1::ArgSpec* a = t.add_args();
    a->add_shape(8);
    a->add_shape(8);
  }
  return t;
}

v1::Register Agent(const std::string& agent, const std::string& board,
                   const std::map<std::string, std::string>& labels = {}) {
  v1::Register r;
  r.set_agent_id(agent);
  v1::BoardRegistration* b = r.add_boards();
  b->set_board_id(board);
  b->set_kind("host");
  for (const auto& [k, v] : labels) (*b->mutable_labels())[k] = v;
  return r;
}

class JobQueueIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
    std::remove(path_.c_str());
    Restart();
  }

  void TearDown() override {
    if (queue_ != nullptr) {
      EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
    }
  }

  void Restart() {
    if (queue_ != nullptr) {
      EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
    }
    queue_.reset();
    store_.reset();
    auto store = SqliteStore::Open(path_);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    JobQueueOptions o;
    o.lease = absl::Seconds(10);
    o.known_kinds = {"host"};
    o.max_trials_per_submission = 10000;
    queue_ = std::make_unique<JobQueue>(store_.get(), &clock_, o);
    ASSERT_TRUE(queue_->Recover().ok());
  }

  std::vector<std::string> Submit(const std::string& client, const std::vector<v1::Trial>& trials) {
    auto ids = queue_->Submit(client, absl::StrCat("r", ++requests_), trials);
    EXPECT_TRUE(ids.ok()) << ids.status();
    return ids.ok() ? *ids : std::vector<std::string>{};
  }

  // Takes the agent's next offer (one board, one slot) and reports it done; returns its job id
  // ("" if there was none).
  std::string RunOne(const std::string& agent) {
    std::vector<Offer> offers = queue_->TakeOffers(agent);
    if (offers.empty()) return "";
    EXPECT_EQ(offers.size(), 1u);
    v1::JobResult r;
    r.set_job_id(offers[0].offer.job_id());
    r.set_attempt(offers[0].offer.attempt());
    r.mutable_result()->add_costs_s(1e-3);
    EXPECT_TRUE(queue_->ReportResult(agent, r).ok());
    return offers[0].offer.job_id();
  }

  // Summary()'s and Stats()' counts against the jobs' own states (GetJob).
  void ExpectCountsMatch(const std::vector<std::string>& ids) {
    int64_t queued = 0, running = 0;
    std::map<int, int64_t> by_priority;
    for (const std::string& id : ids) {
      absl::StatusOr<v1::Job> job = queue_->GetJob(id);
      ASSERT_TRUE(job.ok()) << job.status();
      if (job->state() == v1::QUEUED) {
        ++queued;
        ++by_priority[job->trial().priority()];
      }
      if (job->state() == v1::RUNNING) ++running;
    }
    v1::KindSummary host;
    for (const v1::KindSummary& k : queue_->Summary()) {
      if (k.board_kind() == "host") host = k;
    }
    EXPECT_EQ(host.running(), running);
    std::map<int, int64_t> summary_queued;
    for (const auto& [priority, n] : host.queued_by_priority()) {
      if (n != 0) summary_queued[priority] = n;
    }
    EXPECT_EQ(summary_queued, by_priority);
    QueueStats stats = queue_->Stats();
    EXPECT_EQ(stats.jobs_by_state[v1::QUEUED], queued);
    EXPECT_EQ(stats.jobs_by_state[v1::RUNNING], running);
    std::map<int, int64_t> stats_queued;
    for (const auto& [key, n] : stats.queued_by_kind_priority) {
      EXPECT_EQ(key.first, "host");
      if (n != 0) stats_queued[key.second] = n;
    }
    EXPECT_EQ(stats_queued, by_priority);
  }

  std::vector<std::string> Waiting() {
    for (const v1::KindSummary& k : queue_->Summary()) {
      if (k.board_kind() == "host") return {k.waiting().begin(), k.waiting().end()};
    }
    return {};
  }

  std::string path_;
  base::FakeClock clock_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
  int requests_ = 0;
};

TEST_F(JobQueueIndexTest, JobsPinnedToAnOfflineBoardNeitherBlockNorReorderOthers) {
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2")).ok());
  queue_->DisconnectAgent("a2");  // b2 exists, OFFLINE
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a1", "b1")).ok());
  // "flood": 5,000 jobs pinned to b2, at a higher priority, with 3 unpinned ones among them;
  // "other": 3 unpinned jobs.
  std::vector<v1::Trial> flood(5000, MakeTrial(5, "b2"));
  flood[10] = MakeTrial(0);
  flood[2500] = MakeTrial(0);
  flood[4999] = MakeTrial(0);
  std::vector<std::string> flood_ids = Submit("flood", flood);
  std::vector<std::string> other_ids = Submit("other", std::vector<v1::Trial>(3, MakeTrial(0)));
  ASSERT_EQ(flood_ids.size(), 5000u);
  std::vector<std::string> all = flood_ids;
  all.insert(all.end(), other_ids.begin(), other_ids.end());
  ExpectCountsMatch(all);
  EXPECT_EQ(Waiting(), std::vector<std::string>{"4997 jobs pinned to board b2 (b2 OFFLINE)"});

  // b1 runs the unpinned jobs, clients in turn, each client's in submission order.
  std::vector<std::string> ran;
  for (int i = 0; i < 6; ++i) ran.push_back(RunOne("a1"));
  EXPECT_EQ(ran, (std::vector<std::string>{flood_ids[10], other_ids[0], flood_ids[2500],
                                           other_ids[1], flood_ids[4999], other_ids[2]}));
  EXPECT_EQ(RunOne("a1"), "");  // the rest is b2's
  ExpectCountsMatch(all);

  // b2 comes back: it runs its jobs by submission order.
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2")).ok());
  EXPECT_TRUE(Waiting().empty());
  EXPECT_EQ(RunOne("a2"), flood_ids[0]);
  EXPECT_EQ(RunOne("a2"), flood_ids[1]);
  EXPECT_EQ(RunOne("a1"), "");
  ExpectCountsMatch(all);
}

TEST_F(JobQueueIndexTest, LabelPinsAreServedInSubmissionOrderByBoardsThatHaveTheLabels) {
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2", {{"rev", "b"}})).ok());
  queue_->DisconnectAgent("a2");
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a1", "b1", {{"rev", "a"}, {"fast", "yes"}})).ok());
  std::vector<std::string> ids =
      Submit("c", {MakeTrial(0, "", {{"rev", "b"}}),                   // only b2
                   MakeTrial(0, "", {{"rev", "a"}}),                   // b1
                   MakeTrial(0, "", {{"fast", "yes"}}),                // b1
                   MakeTrial(0),                                       // any
                   MakeTrial(0, "", {{"fast", "yes"}, {"rev", "a"}}),  // b1
                   MakeTrial(0, "b1", {{"rev", "a"}}),                 // b1
                   MakeTrial(0, "", {{"rev", "a"}})});                 // b1
  ASSERT_EQ(ids.size(), 7u);
  EXPECT_EQ(Waiting(), std::vector<std::string>{"1 job pinned to labels rev=b (b2 OFFLINE)"});
  std::vector<std::string> ran;
  for (int i = 0; i < 6; ++i) ran.push_back(RunOne("a1"));
  EXPECT_EQ(ran, (std::vector<std::string>{ids[1], ids[2], ids[3], ids[4], ids[5], ids[6]}));
  EXPECT_EQ(RunOne("a1"), "");
  ExpectCountsMatch(ids);
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2", {{"rev", "b"}})).ok());
  EXPECT_EQ(RunOne("a2"), ids[0]);
}

TEST_F(JobQueueIndexTest, ClientsTakeTurnsAcrossPinsAndPrioritiesComeFirst) {
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a1", "b1", {{"rev", "a"}})).ok());
  // Client x: pinned to b1 by id; client y: by label; client z: unpinned; all priority 0. One
  // priority-1 job of z's pinned by id comes first.
  std::vector<std::string> x = Submit("x", std::vector<v1::Trial>(2, MakeTrial(0, "b1")));
  std::vector<std::string> y =
      Submit("y", std::vector<v1::Trial>(2, MakeTrial(0, "", {{"rev", "a"}})));
  std::vector<std::string> z = Submit("z", {MakeTrial(0), MakeTrial(1, "b1"), MakeTrial(0)});
  std::vector<std::string> ran;
  for (int i = 0; i < 7; ++i) ran.push_back(RunOne("a1"));
  EXPECT_EQ(ran, (std::vector<std::string>{z[1], x[0], y[0], z[0], x[1], y[1], z[2]}));
}

TEST_F(JobQueueIndexTest, CountsFollowEveryTransition) {
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2")).ok());
  queue_->DisconnectAgent("a2");
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a1", "b1")).ok());
  std::vector<std::string> ids =
      Submit("c", {MakeTrial(0), MakeTrial(2), MakeTrial(0, "b2"), MakeTrial(1), MakeTrial(0)});
  ExpectCountsMatch(ids);
  // Offered (RUNNING), then its lease expires: queued again.
  std::vector<Offer> offers = queue_->TakeOffers("a1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].offer.job_id(), ids[1]);
  ExpectCountsMatch(ids);
  clock_.Advance(absl::Seconds(6));
  queue_->Touch("a1", std::vector<v1::HeldAttempt>{});  // a heartbeat that does not name it
  clock_.Advance(absl::Seconds(5));
  EXPECT_EQ(queue_->ExpireLeases(), 1);
  ExpectCountsMatch(ids);
  // Cancelled while queued, and while running.
  ASSERT_TRUE(queue_->Cancel(ids[4]).ok());
  ExpectCountsMatch(ids);
  offers = queue_->TakeOffers("a1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].offer.job_id(), ids[1]);
  ASSERT_TRUE(queue_->Cancel(ids[1]).ok());
  ExpectCountsMatch(ids);
  // A result; then a restart recovers the counts from the store.
  EXPECT_EQ(RunOne("a1"), ids[3]);
  offers = queue_->TakeOffers("a1");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].offer.job_id(), ids[0]);
  ExpectCountsMatch(ids);
  ASSERT_NO_FATAL_FAILURE(Restart());
  ExpectCountsMatch(ids);
  EXPECT_EQ(queue_->Stats().jobs_by_state[v1::RUNNING], 1);
  EXPECT_EQ(Waiting(), (std::vector<std::string>{
                           "1 queued: no board of kind host is serving (offline or quarantined)",
                           "1 job pinned to board b2 (b2 OFFLINE)"}));
}

// An agent that registers is matched only with the running jobs of its own boards (an index by
// board, not a scan of every running job): after a restart, each agent keeps what it holds and
// loses what it does not, and a job that has since moved to another board is not touched by its
// old board's agent.
TEST_F(JobQueueIndexTest, RegistrationMatchesOnlyItsOwnBoardsRunningJobs) {
  v1::Register with_job = Agent("a1", "b1");
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a1", "b1")).ok());
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2")).ok());
  std::vector<std::string> ids = Submit("c", {MakeTrial(), MakeTrial()});
  std::vector<Offer> offers = queue_->TakeOffers("a1");
  ASSERT_EQ(offers.size(), 1u);
  const std::string j1 = offers[0].offer.job_id();
  offers = queue_->TakeOffers("a2");
  ASSERT_EQ(offers.size(), 1u);
  const std::string j2 = offers[0].offer.job_id();
  ASSERT_TRUE(queue_->Flush().ok());
  ASSERT_NO_FATAL_FAILURE(Restart());

  // a1 comes back holding its job; a2 comes back without its own.
  v1::HeldAttempt* held = with_job.add_held();
  held->set_job_id(j1);
  held->set_attempt(1);
  ASSERT_TRUE(queue_->RegisterAgent(with_job).ok());
  EXPECT_EQ(queue_->GetJob(j2)->state(), v1::RUNNING);  // a1's registration left it alone
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2")).ok());
  EXPECT_EQ(queue_->GetJob(j1)->state(), v1::RUNNING);
  absl::StatusOr<v1::Job> lost = queue_->GetJob(j2);
  ASSERT_TRUE(lost.ok()) << lost.status();
  EXPECT_EQ(lost->state(), v1::QUEUED);
  ASSERT_EQ(lost->attempts_size(), 1);
  EXPECT_EQ(lost->attempts(0).error_code(), v1::BOARD_LOST);

  // j2 now runs on b3; a2 (b2, where it ran before) registering again does not touch it.
  queue_->DisconnectAgent("a2");
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a3", "b3")).ok());
  offers = queue_->TakeOffers("a3");
  ASSERT_EQ(offers.size(), 1u);
  EXPECT_EQ(offers[0].offer.job_id(), j2);
  ASSERT_TRUE(queue_->RegisterAgent(Agent("a2", "b2")).ok());
  absl::StatusOr<v1::Job> moved = queue_->GetJob(j2);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_EQ(moved->state(), v1::RUNNING);
  EXPECT_EQ(moved->board_id(), "b3");
  EXPECT_EQ(moved->attempts_size(), 2);
  // Its lease is renewed by a3's heartbeats alone; a1's job expires with a1 silent.
  clock_.Advance(absl::Seconds(6));
  queue_->Touch("a3", j2, 2);
  clock_.Advance(absl::Seconds(6));
  EXPECT_EQ(queue_->ExpireLeases(), 1);
  EXPECT_EQ(queue_->GetJob(j1)->state(), v1::QUEUED);
  EXPECT_EQ(queue_->GetJob(j2)->state(), v1::RUNNING);
  ExpectCountsMatch(ids);
}

}  // namespace
}  // namespace benchfarm::tracker
