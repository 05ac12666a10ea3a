// Admission on its own: registrations and results the tracker refuses, with tables of fields at,
// under and over their limits.
#include "tracker/admission.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>

namespace benchfarm::tracker {
namespace {

v1::Register GoodRegistration() {
  v1::Register r;
  r.set_agent_id("lab-1");
  v1::BoardRegistration* b = r.add_boards();
  b->set_board_id("hp-0");
  b->set_kind("host-process");
  b->set_slots(16);
  b->add_capabilities("batch");
  return r;
}

TEST(RegistrationProblem, NamesTheFirstBadField) {
  const struct {
    const char* what;
    std::function<void(v1::Register*)> change;
    std::string problem;  // "" accepted; else the start of the message
  } cases[] = {
      {"as is", [](v1::Register*) {}, ""},
      {"no agent id", [](v1::Register* r) { r->clear_agent_id(); }, "register.agent_id: required"},
      {"agent id at the cap",
       [](v1::Register* r) { r->set_agent_id(std::string(kMaxIdBytes, 'a')); }, ""},
      {"agent id over it",
       [](v1::Register* r) { r->set_agent_id(std::string(kMaxIdBytes + 1, 'a')); },
       "register.agent_id"},
      {"no kind", [](v1::Register* r) { r->mutable_boards(0)->clear_kind(); },
       "register.boards: board_id and kind are required"},
      {"slots at the cap", [](v1::Register* r) { r->mutable_boards(0)->set_slots(256); }, ""},
      {"slots over it", [](v1::Register* r) { r->mutable_boards(0)->set_slots(257); },
       "register.boards[0].slots: 257; 0 to 256"},
      {"negative slots", [](v1::Register* r) { r->mutable_boards(0)->set_slots(-1); },
       "register.boards[0].slots: -1"},
      {"negative flashes", [](v1::Register* r) { r->mutable_boards(0)->set_flashes(-3); },
       "register.boards[0].flashes: -3; not a count"},
      {"negative memory", [](v1::Register* r) { r->mutable_boards(0)->set_memory_bytes(-1); },
       "register.boards[0].memory_bytes: -1; not a size"},
      {"too many capabilities",
       [](v1::Register* r) {
         for (int i = 0; i < kMaxCapabilities; ++i) r->mutable_boards(0)->add_capabilities("c");
       },
       "register.boards[0].capabilities: 33 entries"},
      {"a capability over its cap",
       [](v1::Register* r) {
         r->mutable_boards(0)->add_capabilities(std::string(kMaxCapabilityBytes + 1, 'c'));
       },
       "register.boards[0].capabilities[1]"},
      {"too many boards",
       [](v1::Register* r) {
         for (int i = 0; i < kMaxBoardsPerAgent; ++i) *r->add_boards() = r->boards(0);
       },
       "register.boards: 1025 boards, at most 1024"},
  };
  for (const auto& c : cases) {
    v1::Register r = GoodRegistration();
    c.change(&r);
    const std::string problem = RegistrationProblem(r, 256);
    if (c.problem.empty()) {
      EXPECT_EQ(problem, "") << c.what;
    } else {
      EXPECT_EQ(problem.rfind(c.problem, 0), 0u) << c.what << ": " << problem;
    }
  }
}

TEST(ResultProblem, NamesTheFirstBadField) {
  const double inf = std::numeric_limits<double>::infinity();
  const struct {
    const char* what;
    std::function<void(v1::Result*)> change;
    std::string problem;
  } cases[] = {
      {"as is", [](v1::Result*) {}, ""},
      {"an error code outside the enum",
       [](v1::Result* r) { r->set_error_code(static_cast<v1::ErrorCode>(999)); },
       "result.error_code: 999 is not a benchfarm.v1.ErrorCode"},
      {"as many costs as allowed",
       [](v1::Result* r) {
         r->add_costs_s(1e-3);
         r->add_costs_s(1e-3);
       },
       ""},
      {"more costs",
       [](v1::Result* r) {
         for (int i = 0; i < 3; ++i) r->add_costs_s(1e-3);
       },
       "result.costs_s: 4 costs; the trial's repeat gives at most 3"},
      {"a negative cost", [](v1::Result* r) { r->set_costs_s(0, -1); }, "result.costs_s[0]: -1"},
      {"an infinite cost", [inf](v1::Result* r) { r->set_costs_s(0, inf); },
       "result.costs_s[0]: inf"},
      {"a cost of the whole timeout", [](v1::Result* r) { r->set_costs_s(0, 10); }, ""},
      {"a cost over it", [](v1::Result* r) { r->set_costs_s(0, 10.5); },
       "result.costs_s[0]: 10.5 s; more than the trial's measurement may take (10 s)"},
      {"modeled time: 1000 timeouts",
       [](v1::Result* r) {
         r->set_timer("cycle-model");
         r->set_costs_s(0, 9999);
       },
       ""},
      {"a message over its cap",
       [](v1::Result* r) { r->set_message(std::string(kMaxResultMessageBytes + 1, 'm')); },
       "result.message"},
      {"a stage time that is not finite",
       [inf](v1::Result* r) { r->mutable_stages()->set_flash_s(inf); },
       "result.stages.flash_s: inf"},
      {"a negative timer resolution", [](v1::Result* r) { r->set_timer_resolution_s(-1e-9); },
       "result.timer_resolution_s"},
      {"an invalid timestamp", [](v1::Result* r) { r->mutable_started_at()->set_nanos(-1); },
       "result.started_at: not a valid timestamp"},
  };
  for (const auto& c : cases) {
    v1::Result r;
    r.set_error_code(v1::NO_ERROR);
    r.add_costs_s(2e-3);
    c.change(&r);
    const std::string problem = ResultProblem(r, /*max_costs=*/3, /*timeout_s=*/10);
    if (c.problem.empty()) {
      EXPECT_EQ(problem, "") << c.what;
    } else {
      EXPECT_EQ(problem.rfind(c.problem, 0), 0u) << c.what << ": " << problem;
    }
  }
}

TEST(TimeoutSeconds, IsTheTrialsEffectiveTimeout) {
  v1::MeasureOptions m;
  EXPECT_EQ(TimeoutSeconds(m), 10);  // the contract's default
  m.set_timeout_ms(2500);
  EXPECT_EQ(TimeoutSeconds(m), 2.5);
}

}  // namespace
}  // namespace benchfarm::tracker
