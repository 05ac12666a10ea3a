// AutoTVM records: see autotvm_record.h.
#include "farmctl/autotvm_record.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/json.h"
#include "catalog/knob_space.h"
#include "catalog/trial.h"

namespace benchfarm::farmctl {
namespace {

constexpr int kUnknownErrorNo = 8;   // MeasureErrorNo.UNKNOWN_ERROR
constexpr double kFailedCost = 1e9;  // MeasureResult's cost of a failed measurement

double Seconds(const google::protobuf::Timestamp& t) {
  return static_cast<double>(t.seconds()) + t.nanos() * 1e-9;
}

double Timestamp(const v1::Job& job) {
  if (job.result().has_finished_at()) return Seconds(job.result().finished_at());
  for (int i = job.attempts_size() - 1; i >= 0; --i) {
    if (job.attempts(i).has_ended_at()) return Seconds(job.attempts(i).ended_at());
  }
  return Seconds(job.submitted_at());
}

std::string KnobEntry(absl::string_view name, absl::string_view value) {
  return absl::StrCat("[", base::JsonQuote(name), ", \"ot\", ", catalog::KnobValueJson(value), "]");
}

std::string Entity(const v1::OperatorSpec& op, const catalog::KnobSpace& knobs, int64_t* index) {
  *index = -1;
  if (!op.has_template_op()) {
    // A C source trial's compile options are part of what was measured.
    if (op.cflags().empty()) return "[]";
    return absl::StrCat("[", KnobEntry("cflags", absl::StrJoin(op.cflags(), " ")), "]");
  }
  const auto& values = op.template_op().knobs();
  std::vector<std::string> entries;
  const v1::Operator* known = knobs.Find(op.template_op().op());
  if (known != nullptr) {
    *index = catalog::ConfigIndex(known->spec(), values);
    for (const v1::Knob& knob : known->spec().knobs()) {
      auto it = values.find(knob.name());
      entries.push_back(KnobEntry(
          knob.name(), it == values.end() ? catalog::ValueText(knob.default_()) : it->second));
    }
  }
  // Knobs farmctl does not know of (the index is -1 then), in name order: kept, so nothing the
  // trial said is lost.
  std::map<std::string, std::string> others;
  for (const auto& [name, value] : values) {
    if (known == nullptr || catalog::FindKnob(known->spec(), name) == nullptr) others[name] = value;
  }
  for (const auto& [name, value] : others) entries.push_back(KnobEntry(name, value));
  return absl::StrCat("[", absl::StrJoin(entries, ", "), "]");
}

std::string Tensor(const std::vector<int64_t>& shape, const std::string& dtype) {
  return absl::StrCat("[\"TENSOR\", [", absl::StrJoin(shape, ", "), "], ",
                      base::JsonQuote(dtype.empty() ? "float32" : dtype), "]");
}

// Each argument as AutoTVM's TENSOR: its shape and dtype (the trial's, else the operator's).
std::string Args(const v1::Trial& trial, const catalog::KnobSpace& knobs) {
  const v1::Operator* known =
      trial.op().has_template_op() ? knobs.Find(trial.op().template_op().op()) : nullptr;
  auto op_dtype = [known](int i) {
    return known != nullptr && i < known->spec().args_size() ? known->spec().args(i).dtype()
                                                             : std::string();
  };
  std::vector<std::string> args;
  for (int i = 0; i < trial.args_size(); ++i) {
    const v1::ArgSpec& arg = trial.args(i);
    args.push_back(Tensor({arg.shape().begin(), arg.shape().end()},
                          arg.dtype().empty() ? op_dtype(i) : arg.dtype()));
  }
  // A template trial without args ran on its op's default shapes: name them, so records of
  // different shapes never share a key.
  if (trial.args().empty() && known != nullptr) {
    absl::StatusOr<std::vector<std::vector<int64_t>>> shapes =
        catalog::DefaultShapes(known->spec());
    if (shapes.ok()) {
      for (size_t i = 0; i < shapes->size(); ++i) {
        args.push_back(Tensor((*shapes)[i], op_dtype(static_cast<int>(i))));
      }
    }
  }
  return absl::StrCat("[", absl::StrJoin(args, ", "), "]");
}

}  // namespace

std::string JsonDouble(double value) {
  if (!std::isfinite(value)) value = kFailedCost;
  char buffer[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

std::string AutoTvmTarget(absl::string_view board_kind, absl::string_view cpu) {
  if (cpu.empty()) return absl::StrCat("c -keys=cpu -model=", board_kind);
  return absl::StrCat("c -keys=arm_cpu,cpu -mcpu=", cpu, " -model=", board_kind);
}

AutoTvmTargetParts ParseAutoTvmTarget(absl::string_view target) {
  AutoTvmTargetParts parts;
  for (absl::string_view word : absl::StrSplit(target, ' ', absl::SkipWhitespace())) {
    if (absl::ConsumePrefix(&word, "-model=")) parts.model = std::string(word);
    if (absl::ConsumePrefix(&word, "-mcpu=")) parts.cpu = std::string(word);
  }
  return parts;
}

bool SameBoardTarget(absl::string_view a, absl::string_view b) {
  if (a == b) return true;
  const AutoTvmTargetParts pa = ParseAutoTvmTarget(a), pb = ParseAutoTvmTarget(b);
  return pa.model == pb.model && (pa.cpu == pb.cpu || pa.cpu.empty() || pb.cpu.empty());
}

absl::StatusOr<BoardCores> CoresOfBoards(
    const google::protobuf::RepeatedPtrField<v1::Board>& boards) {
  // kind -> core -> its boards, of the serving boards and of all.
  using Named = std::map<std::string, std::map<std::string, std::vector<std::string>>>;
  Named serving, all;
  BoardCores cores;
  for (const v1::Board& b : boards) {
    cores.emplace(b.kind(), "");
    if (b.cpu().empty()) continue;
    all[b.kind()][b.cpu()].push_back(b.board_id());
    if (b.state() != v1::OFFLINE) serving[b.kind()][b.cpu()].push_back(b.board_id());
  }
  for (auto& [kind, core] : cores) {
    auto it = serving.find(kind);
    const auto& named = it != serving.end() ? it->second : all[kind];
    if (named.empty()) continue;
    if (named.size() > 1) {
      std::vector<std::string> which;
      for (const auto& [cpu, ids] : named) {
        which.push_back(absl::StrCat(cpu, " (", absl::StrJoin(ids, ", "), ")"));
      }
      return absl::FailedPreconditionError(absl::StrCat(
          "board kind ", kind, ": its boards name different cores: ", absl::StrJoin(which, "; "),
          "; an AutoTVM target names one (give the boards of each core their own kind)"));
    }
    core = named.begin()->first;
  }
  return cores;
}

std::string AutoTvmTaskName(const v1::OperatorSpec& op) {
  if (op.has_template_op()) {
    const v1::TemplateOperator& t = op.template_op();
    return t.version().empty() ? absl::StrCat("benchfarm/", t.op())
                               : absl::StrCat("benchfarm/", t.op(), "@", t.version());
  }
  return absl::StrCat("benchfarm/c_source/", op.entry_function());
}

std::string FormatAutoTvmRecord(const v1::Job& job, const catalog::KnobSpace& knobs,
                                absl::string_view cpu) {
  const v1::Trial& trial = job.trial();
  const v1::Result& result = job.result();
  int64_t index;
  std::string entity = Entity(trial.op(), knobs, &index);

  int error_no = job.state() == v1::DONE ? result.autotvm_error_no() : kUnknownErrorNo;
  if (error_no == 0 && result.costs_s_size() == 0) error_no = kUnknownErrorNo;
  std::vector<std::string> costs;
  if (error_no == 0) {
    for (double c : result.costs_s()) costs.push_back(JsonDouble(c));
  } else {
    costs.push_back(JsonDouble(kFailedCost));
  }
  const v1::StageTimes& s = result.stages();
  double all_cost = s.build_s() + s.flash_s() + s.handshake_s() + s.measure_s();

  return absl::StrCat(
      "{\"input\": [", base::JsonQuote(AutoTvmTarget(trial.board_kind(), cpu)), ", ",
      base::JsonQuote(AutoTvmTaskName(trial.op())), ", ", Args(trial, knobs), ", {}], ",
      "\"config\": {\"index\": ", index, ", \"code_hash\": null, \"entity\": ", entity, "}, ",
      "\"result\": [[", absl::StrJoin(costs, ", "), "], ", error_no, ", ", JsonDouble(all_cost),
      ", ", JsonDouble(Timestamp(job)), "], ",
      "\"version\": 0.2, \"tvm_version\": ", base::JsonQuote(kAutoTvmTvmVersion), "}");
}

}  // namespace benchfarm::farmctl
