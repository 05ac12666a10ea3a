// The Store contract (tracker/store.h) on every backend (store_contract_test_fixture.h): ListJobs'
// filters, their combinations and paging (matches far apart too), and LoadUnfinishedJobs.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"
#include "tracker/store_contract_test_fixture.h"
#include "tracker/store_test_util.h"

namespace benchfarm::tracker {
namespace {

class StoreListJobsTest : public StoreContractTest {
 protected:
  void SetUp() override {
    StoreContractTest::SetUp();
    if (HasFatalFailure()) return;
    // seq: 1..4 alice, 5..7 bob.
    ASSERT_TRUE(store()
                    .InsertSubmission("alice", "r1",
                                      {MakeJob("a1", "alice", "m3", "matmul", v1::QUEUED),
                                       MakeJob("a2", "alice", "m3", "conv2d", v1::RUNNING),
                                       MakeJob("a3", "alice", "m4", "matmul", v1::DONE),
                                       MakeJob("a4", "alice", "m4", "", v1::QUEUED)})
                    .ok());
    ASSERT_TRUE(store()
                    .InsertSubmission("bob", "r1",
                                      {MakeJob("b1", "bob", "m3", "matmul", v1::CANCELLED_STATE),
                                       MakeJob("b2", "bob", "m4", "matmul", v1::QUEUED),
                                       MakeJob("b3", "bob", "m3", "conv2d", v1::RUNNING)})
                    .ok());
  }

  std::vector<std::string> List(const JobFilter& filter) {
    absl::StatusOr<std::vector<StoredJob>> jobs = store().ListJobs(filter);
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    if (!jobs.ok()) return {};
    for (size_t i = 1; i < jobs->size(); ++i) EXPECT_LT((*jobs)[i - 1].seq, (*jobs)[i].seq);
    return JobIds(*jobs);
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, StoreListJobsTest, ::testing::Values("sqlite", "postgres"),
                         BackendName);

TEST_P(StoreListJobsTest, EmptyFilterListsEverythingInSequenceOrder) {
  EXPECT_THAT(List({}), ElementsAre("a1", "a2", "a3", "a4", "b1", "b2", "b3"));
}

TEST_P(StoreListJobsTest, EachFieldFilters) {
  JobFilter by_client;
  by_client.client_id = "bob";
  EXPECT_THAT(List(by_client), ElementsAre("b1", "b2", "b3"));

  JobFilter by_kind;
  by_kind.board_kind = "m4";
  EXPECT_THAT(List(by_kind), ElementsAre("a3", "a4", "b2"));

  JobFilter by_op;
  by_op.op = "conv2d";
  EXPECT_THAT(List(by_op), ElementsAre("a2", "b3"));

  JobFilter by_state;
  by_state.state = v1::QUEUED;
  EXPECT_THAT(List(by_state), ElementsAre("a1", "a4", "b2"));

  JobFilter unknown;
  unknown.client_id = "carol";
  EXPECT_THAT(List(unknown), IsEmpty());
}

TEST_P(StoreListJobsTest, FieldsCombine) {
  JobFilter filter;
  filter.client_id = "alice";
  filter.board_kind = "m3";
  EXPECT_THAT(List(filter), ElementsAre("a1", "a2"));
  filter.op = "matmul";
  EXPECT_THAT(List(filter), ElementsAre("a1"));
  filter.state = v1::RUNNING;
  EXPECT_THAT(List(filter), IsEmpty());

  JobFilter kind_and_state;
  kind_and_state.board_kind = "m3";
  kind_and_state.state = v1::RUNNING;
  EXPECT_THAT(List(kind_and_state), ElementsAre("a2", "b3"));

  JobFilter all_four;
  all_four.client_id = "bob";
  all_four.board_kind = "m4";
  all_four.op = "matmul";
  all_four.state = v1::QUEUED;
  EXPECT_THAT(List(all_four), ElementsAre("b2"));
}

TEST_P(StoreListJobsTest, PagesByAfterSeqAndLimit) {
  JobFilter filter;
  filter.limit = 3;
  std::vector<std::string> all;
  for (int page = 0; page < 10; ++page) {
    auto jobs = store().ListJobs(filter);
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    EXPECT_LE(jobs->size(), 3u);
    if (jobs->empty()) break;
    for (const StoredJob& stored : *jobs) all.push_back(stored.job.job_id());
    filter.after_seq = jobs->back().seq;
  }
  EXPECT_THAT(all, ElementsAre("a1", "a2", "a3", "a4", "b1", "b2", "b3"));

  JobFilter queued_after;
  queued_after.state = v1::QUEUED;
  queued_after.after_seq = 1;
  queued_after.limit = 1;
  EXPECT_THAT(List(queued_after), ElementsAre("a4"));

  JobFilter none;
  none.limit = 0;
  EXPECT_THAT(List(none), IsEmpty());
}

// Matches thousands of sequence numbers apart (a store may read the table in slices: SqliteStore
// reads 4,096 sequence numbers per read transaction), with paging through them, and page tokens
// out of range.
TEST_P(StoreListJobsTest, FindsMatchesFarApartAndPagesThroughThem) {
  std::vector<v1::Job> jobs;
  for (int i = 0; i < 12000; ++i) {
    // seq 8 + i; "rare" at seqs 8, 4,508, 9,008 and 11,999 (the slices' edges are 4,096 apart).
    const bool rare = i % 4500 == 0 || i == 11991;
    jobs.push_back(MakeJob(absl::StrCat("f", i), "carol", "m7", rare ? "rare" : "matmul"));
  }
  ASSERT_TRUE(store().InsertSubmission("carol", "many", jobs).ok());
  JobFilter rare;
  rare.op = "rare";
  EXPECT_THAT(List(rare), ElementsAre("f0", "f4500", "f9000", "f11991"));
  rare.limit = 2;
  EXPECT_THAT(List(rare), ElementsAre("f0", "f4500"));
  rare.after_seq = 8 + 4500;
  EXPECT_THAT(List(rare), ElementsAre("f9000", "f11991"));
  rare.after_seq = 8 + 11991;
  EXPECT_THAT(List(rare), IsEmpty());
  rare.after_seq = -100;  // before the first: from the start
  EXPECT_THAT(List(rare), ElementsAre("f0", "f4500"));
  rare.after_seq = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(List(rare), IsEmpty());

  JobFilter by_kind;  // an index, 12,000 matches: a page is `limit` of them
  by_kind.board_kind = "m7";
  by_kind.limit = 5000;
  std::vector<std::string> listed = List(by_kind);
  ASSERT_EQ(listed.size(), 5000u);
  EXPECT_EQ(listed.front(), "f0");
  EXPECT_EQ(listed.back(), "f4999");
}

TEST_P(StoreListJobsTest, LoadUnfinishedJobsReturnsQueuedAndRunningInOrder) {
  auto jobs = store().LoadUnfinishedJobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_THAT(JobIds(*jobs), ElementsAre("a1", "a2", "a4", "b2", "b3"));
  std::vector<int64_t> seqs;
  for (const StoredJob& stored : *jobs) seqs.push_back(stored.seq);
  EXPECT_THAT(seqs, ElementsAre(1, 2, 4, 6, 7));
}

}  // namespace
}  // namespace benchfarm::tracker
