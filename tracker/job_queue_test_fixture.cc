#include "tracker/job_queue_test_fixture.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

namespace benchfarm::tracker {

v1::Trial MakeTrial(const std::string& kind, int priority, const std::string& op) {
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
                       const std::string& kind) {
  v1::Register r;
  r.set_agent_id(agent);
  for (const std::string& b : boards) {
    v1::BoardRegistration* reg = r.add_boards();
    reg->set_board_id(b);
    reg->set_kind(kind);
  }
  return r;
}

v1::JobResult Ok(const v1::JobOffer& offer, double cost) {
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

v1::HeldAttempt Held(const std::string& job_id, int attempt) {
  v1::HeldAttempt h;
  h.set_job_id(job_id);
  h.set_attempt(attempt);
  return h;
}

void JobQueueTest::SetUp() {
  path_ = std::string(std::getenv("TEST_TMPDIR")) + "/" +
          ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".db";
  std::remove(path_.c_str());
  Restart();
}

void JobQueueTest::TearDown() {
  if (queue_ != nullptr) {
    EXPECT_TRUE(queue_->CheckIndexes().ok()) << queue_->CheckIndexes();
  }
}

void JobQueueTest::Restart(JobQueueOptions options) {
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

JobQueueOptions JobQueueTest::Defaults() {
  JobQueueOptions o;
  o.lease = absl::Seconds(10);
  o.retry_budget = 3;
  o.quarantine_threshold = 2;
  o.known_kinds = {"host", "stm32"};
  return o;
}

std::vector<std::string> JobQueueTest::Submit(std::vector<v1::Trial> trials,
                                              const std::string& client,
                                              const std::string& request) {
  static int n = 0;
  auto ids = queue_->Submit(client, request.empty() ? "r" + std::to_string(++n) : request, trials);
  EXPECT_TRUE(ids.ok()) << ids.status();
  return ids.ok() ? *ids : std::vector<std::string>{};
}

v1::JobOffer JobQueueTest::TakeOne(const std::string& agent) {
  std::vector<Offer> offers = queue_->TakeOffers(agent);
  EXPECT_EQ(offers.size(), 1u);
  // As the agent reads it (a job's trial travels serialized: see Offer).
  v1::JobOffer read;
  if (!offers.empty()) {
    EXPECT_TRUE(read.ParseFromString(offers[0].offer.SerializeAsString()));
  }
  return read;
}

}  // namespace benchfarm::tracker
