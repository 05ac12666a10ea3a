// `farmctl board check-model`: see model_check.h.

#include "farmctl/model_check.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace benchfarm::farmctl {

absl::StatusOr<std::vector<std::pair<std::string, double>>> MicrobenchCycles(device::Board& board,
                                                                             int64_t iterations,
                                                                             absl::Time deadline) {
  device::RpcClient* rpc = board.rpc();
  if (rpc == nullptr || !board.info()) {
    return absl::FailedPreconditionError(absl::StrCat(board.Description(), ": not connected"));
  }
  const double hz = static_cast<double>(board.info()->cpu_hz);
  if (!(hz > 0)) {
    return absl::FailedPreconditionError(
        absl::StrCat(board.Description(), ": the board states no clock (DeviceInfo cpu_hz)"));
  }
  ASSIGN_OR_RETURN(std::string names, rpc->StringGlobal("benchfarm.Microbenchmarks", deadline));
  // An exact timer (a cycle counter, the cycle model, -icount) needs one pair; host time three.
  const int pairs = board.emulation() == "qemu" ? 3 : 1;
  std::vector<std::pair<std::string, double>> out;
  int64_t index = 0;
  for (absl::string_view name : absl::StrSplit(names, ',', absl::SkipEmpty())) {
    std::vector<double> per_iteration;
    for (int p = 0; p < pairs; ++p) {
      ASSIGN_OR_RETURN(
          device::TimedInterval once,
          board.timer().TimedCall(*rpc, "benchfarm.Microbench", {index, iterations}, deadline));
      ASSIGN_OR_RETURN(
          device::TimedInterval twice,
          board.timer().TimedCall(*rpc, "benchfarm.Microbench", {index, 2 * iterations}, deadline));
      per_iteration.push_back((twice.seconds - once.seconds) * hz /
                              static_cast<double>(iterations));
    }
    std::sort(per_iteration.begin(), per_iteration.end());
    out.push_back({std::string(name), per_iteration[per_iteration.size() / 2]});
    ++index;
  }
  return out;
}

ModelCheck CompareMicrobenchmarks(const std::vector<std::pair<std::string, double>>& model,
                                  const std::vector<std::pair<std::string, double>>& measured) {
  ModelCheck check;
  for (const auto& [rule, cycles] : model) {
    auto it = std::find_if(measured.begin(), measured.end(),
                           [&](const auto& m) { return m.first == rule; });
    if (it == measured.end()) {
      check.only_model.push_back(rule);
      continue;
    }
    ModelCheckRow row{rule, cycles, it->second, 0};
    row.error = it->second != 0 ? (cycles - it->second) / it->second : 0;
    check.rows.push_back(row);
  }
  for (const auto& [rule, cycles] : measured) {
    if (std::none_of(model.begin(), model.end(), [&](const auto& m) { return m.first == rule; })) {
      check.only_measured.push_back(rule);
    }
  }
  return check;
}

std::string FormatModelCheck(const ModelCheck& check, const std::string& model_board,
                             const std::string& measured_board, bool json) {
  double worst = 0;
  std::string worst_rule;
  for (const ModelCheckRow& r : check.rows) {
    if (std::fabs(r.error) > std::fabs(worst) || worst_rule.empty()) {
      worst = r.error;
      worst_rule = r.rule;
    }
  }
  if (json) {
    std::vector<std::string> rows;
    for (const ModelCheckRow& r : check.rows) {
      rows.push_back(absl::StrFormat(
          "{\"rule\": \"%s\", \"model_cycles\": %.6g, \"measured_cycles\": %.6g, \"error\": %.6g}",
          r.rule, r.model, r.measured, r.error));
    }
    auto quoted = [](const std::vector<std::string>& v) {
      return absl::StrJoin(v, ", ", [](std::string* out, const std::string& s) {
        absl::StrAppend(out, "\"", s, "\"");
      });
    };
    return absl::StrCat("{\"model_board\": \"", model_board, "\", \"measured_board\": \"",
                        measured_board, "\", \"rules\": [", absl::StrJoin(rows, ", "),
                        "], \"only_model\": [", quoted(check.only_model), "], \"only_measured\": [",
                        quoted(check.only_measured), "]}\n");
  }
  std::string out =
      absl::StrFormat("model     %s\nmeasured  %s\n\n  %-26s %12s %12s %9s\n", model_board,
                      measured_board, "timing rule (cycles/iter)", "model", "measured", "error");
  for (const ModelCheckRow& r : check.rows) {
    absl::StrAppendFormat(&out, "  %-26s %12.1f %12.1f %8.1f%%\n", r.rule, r.model, r.measured,
                          r.error * 100);
  }
  if (!check.rows.empty()) {
    absl::StrAppendFormat(&out, "\nlargest error: %s %+.1f %%\n", worst_rule, worst * 100);
  }
  if (!check.only_model.empty()) {
    absl::StrAppend(&out, "only on the model's board: ", absl::StrJoin(check.only_model, ", "),
                    "\n");
  }
  if (!check.only_measured.empty()) {
    absl::StrAppend(&out, "only on the measured board: ", absl::StrJoin(check.only_measured, ", "),
                    "\n");
  }
  return out;
}

}  // namespace benchfarm::farmctl
