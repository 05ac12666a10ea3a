// JobQueue checks what it is sent (tracker/README.md, "Sizes" and "Results are checked"):
// impossible costs and malformed results are refused and retried like infrastructure errors,
// oversized strings and registrations are refused naming the field, and nothing is stored.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "tracker/job_queue_test_fixture.h"

namespace benchfarm::tracker {
namespace {

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

}  // namespace
}  // namespace benchfarm::tracker
