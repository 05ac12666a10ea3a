#include "tracker/admission.h"

#include <cmath>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/trial.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::tracker {
namespace {

using catalog::kMaxBoardIdBytes;
using catalog::kMaxBoardKindBytes;
using catalog::LabelsProblem;
using catalog::Oversized;
using google::protobuf::util::TimeUtil;

bool ValidTimestamp(const google::protobuf::Timestamp& t) {
  return t.seconds() >= TimeUtil::kTimestampMinSeconds &&
         t.seconds() <= TimeUtil::kTimestampMaxSeconds && t.nanos() >= 0 && t.nanos() <= 999999999;
}

// The most one cost may be: one call of a measurement that fits its timeout — except where costs
// are an emulator's modeled time (the cycle model's cycles, -icount's instructions), which can
// pass many times slower than the host's (a 25 MHz Cortex-M3 emulated at hundreds of MIPS): there,
// kModeledTimeFactor timeouts.
constexpr double kModeledTimeFactor = 1000;
double MaxCostSeconds(const v1::Result& r, double timeout_s) {
  const bool modeled = r.timer() == "cycle-model" || r.emulation() == "qemu-icount";
  return modeled ? timeout_s * kModeledTimeFactor : timeout_s;
}

}  // namespace

std::string RegistrationProblem(const v1::Register& reg, int max_slots) {
  if (reg.agent_id().empty()) return "register.agent_id: required";
  if (std::string p = Oversized("register.agent_id", reg.agent_id(), kMaxIdBytes); !p.empty()) {
    return p;
  }
  if (reg.boards_size() > kMaxBoardsPerAgent) {
    return absl::StrCat("register.boards: ", reg.boards_size(), " boards, at most ",
                        kMaxBoardsPerAgent);
  }
  std::map<std::string, const v1::BoardRegistration*> core_of_kind;  // the first board naming one
  for (int k = 0; k < reg.boards_size(); ++k) {
    const v1::BoardRegistration& b = reg.boards(k);
    const std::string field = absl::StrCat("register.boards[", k, "]");
    if (b.board_id().empty() || b.kind().empty()) {
      return "register.boards: board_id and kind are required";
    }
    for (const std::string& p : {Oversized(field + ".board_id", b.board_id(), kMaxBoardIdBytes),
                                 Oversized(field + ".kind", b.kind(), kMaxBoardKindBytes),
                                 LabelsProblem(field + ".labels", b.labels())}) {
      if (!p.empty()) return p;
    }
    if (b.capabilities_size() > kMaxCapabilities) {
      return absl::StrCat(field, ".capabilities: ", b.capabilities_size(), " entries, at most ",
                          kMaxCapabilities);
    }
    if (b.slots() < 0 || b.slots() > max_slots) {
      return absl::StrCat(field, ".slots: ", b.slots(), "; 0 to ", max_slots,
                          " (the tracker's max_slots_per_board)");
    }
    if (b.flashes() < 0) return absl::StrCat(field, ".flashes: ", b.flashes(), "; not a count");
    if (b.memory_bytes() < 0) {
      return absl::StrCat(field, ".memory_bytes: ", b.memory_bytes(), "; not a size");
    }
    if (std::string p = catalog::CpuNameProblem(field + ".cpu", b.cpu()); !p.empty()) return p;
    // One core per kind (BoardRegistration.cpu): within the registration here, across agents in
    // JobQueue::RegisterAgent.
    if (!b.cpu().empty()) {
      auto [first, fresh] = core_of_kind.try_emplace(b.kind(), &b);
      const v1::BoardRegistration& o = *first->second;
      if (!fresh && o.cpu() != b.cpu()) {
        return absl::StrCat(field, ".cpu: board ", b.board_id(), " of kind ", b.kind(), " is a ",
                            b.cpu(), ", board ", o.board_id(), " of the same kind a ", o.cpu(),
                            "; a kind is one core (give one of them another kind)");
      }
    }
    for (int c = 0; c < b.capabilities_size(); ++c) {
      std::string p = Oversized(absl::StrCat(field, ".capabilities[", c, "]"), b.capabilities(c),
                                kMaxCapabilityBytes);
      if (!p.empty()) return p;
    }
  }
  return "";
}

double TimeoutSeconds(const v1::MeasureOptions& m) {
  return absl::ToDoubleSeconds(catalog::EffectiveMeasure(m).timeout);
}

std::string ResultProblem(const v1::Result& r, int max_costs, double timeout_s) {
  if (!v1::ErrorCode_IsValid(r.error_code())) {
    return absl::StrCat("result.error_code: ", static_cast<int>(r.error_code()),
                        " is not a benchfarm.v1.ErrorCode");
  }
  if (r.costs_s_size() > max_costs) {
    return absl::StrCat("result.costs_s: ", r.costs_s_size(),
                        " costs; the trial's repeat gives at most ", max_costs);
  }
  for (int k = 0; k < r.costs_s_size(); ++k) {
    const double c = r.costs_s(k);
    if (!std::isfinite(c) || c < 0) {
      return absl::StrCat("result.costs_s[", k, "]: ", c,
                          "; a cost is a finite, non-negative number of seconds");
    }
    if (c > MaxCostSeconds(r, timeout_s)) {
      return absl::StrCat("result.costs_s[", k, "]: ", c, " s; more than the trial's measurement ",
                          "may take (", MaxCostSeconds(r, timeout_s), " s)");
    }
  }
  for (const std::string& p :
       {Oversized("result.message", r.message(), kMaxResultMessageBytes),
        Oversized("result.board_id", r.board_id(), kMaxBoardIdBytes),
        Oversized("result.firmware_hash", r.firmware_hash(), kMaxResultFieldBytes),
        Oversized("result.timer", r.timer(), kMaxResultFieldBytes),
        Oversized("result.emulation", r.emulation(), kMaxResultFieldBytes)}) {
    if (!p.empty()) return p;
  }
  const v1::StageTimes& st = r.stages();
  for (const auto& [name, value] : {std::pair<const char*, double>{"build_s", st.build_s()},
                                    {"flash_s", st.flash_s()},
                                    {"handshake_s", st.handshake_s()},
                                    {"measure_s", st.measure_s()}}) {
    if (!std::isfinite(value)) {
      return absl::StrCat("result.stages.", name, ": ", value, "; not a finite number of seconds");
    }
  }
  for (const auto& [name, value] : {std::pair<const char*, double>{"cpu_hz", r.cpu_hz()},
                                    {"wall_over_cpu", r.wall_over_cpu()},
                                    {"measured.target_rel_ci", r.measured().target_rel_ci()}}) {
    if (!std::isfinite(value) || value < 0) {
      return absl::StrCat("result.", name, ": ", value, "; not a finite, non-negative number");
    }
  }
  if (std::string p = Oversized("result.measured.stop", r.measured().stop(), kMaxResultFieldBytes);
      !p.empty()) {
    return p;
  }
  if (!std::isfinite(r.timer_resolution_s()) || r.timer_resolution_s() < 0) {
    return absl::StrCat("result.timer_resolution_s: ", r.timer_resolution_s(),
                        "; not a finite, non-negative number of seconds");
  }
  using Stamp = std::pair<const char*, const google::protobuf::Timestamp*>;
  for (const auto& [name, stamp] :
       {Stamp{"submitted_at", &r.submitted_at()}, Stamp{"started_at", &r.started_at()},
        Stamp{"finished_at", &r.finished_at()}}) {
    if (!ValidTimestamp(*stamp)) return absl::StrCat("result.", name, ": not a valid timestamp");
  }
  return "";
}

}  // namespace benchfarm::tracker
