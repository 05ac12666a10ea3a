#include "farmctl/tune_log.h"

#include <fstream>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "catalog/knob_space.h"
#include "farmctl/autotvm_record.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/message_differencer.h"
#include "stats/cost_stats.h"

namespace benchfarm::farmctl {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The config index of a record's "config" (its "entity": [name, type, value] each knob); -1 when
// it has none or names no config of the space.
int64_t RecordIndex(const v1::OpTemplate& spec, const google::protobuf::Struct& record) {
  google::protobuf::Map<std::string, std::string> knobs;
  const auto& config = record.fields().at("config").struct_value().fields();
  auto entity = config.find("entity");
  if (entity == config.end()) return -1;
  for (const google::protobuf::Value& e : entity->second.list_value().values()) {
    const auto& parts = e.list_value().values();
    if (parts.size() != 3) return -1;
    knobs[parts[0].string_value()] = parts[2].kind_case() == google::protobuf::Value::kNumberValue
                                         ? catalog::ValueText(parts[2])
                                         : parts[2].string_value();
  }
  return catalog::ConfigIndex(spec, knobs);
}

// The point of config `index` from a record's "result" ([costs], error_no, ...).
TunePoint RecordPoint(int64_t index,
                      const google::protobuf::RepeatedPtrField<google::protobuf::Value>& result) {
  TunePoint p;
  p.index = index;
  const int error_no = static_cast<int>(result[1].number_value());
  p.error = error_no == 0 ? v1::NO_ERROR
                          : (v1::ErrorCode_IsValid(error_no) ? static_cast<v1::ErrorCode>(error_no)
                                                             : v1::UNKNOWN_ERROR);
  std::vector<double> costs;
  for (const google::protobuf::Value& c : result[0].list_value().values()) {
    costs.push_back(c.number_value());
  }
  p.cost = kInf;
  if (p.error == v1::NO_ERROR && !costs.empty()) {
    p.stats = stats::CostStatsOf(costs, 0);
    p.cost = p.stats.median_s();
  }
  return p;
}

// Whether a record's input is the run's: the same task and arguments, and a target of the same
// board kind (SameBoardTarget: a record written before targets named cores is the kind's too).
bool SameRun(const google::protobuf::Value& input, const google::protobuf::Value& want) {
  const auto& got = input.list_value().values();
  const auto& run = want.list_value().values();
  if (got.size() != run.size() || got.empty()) return false;
  if (got[0].kind_case() != google::protobuf::Value::kStringValue ||
      run[0].kind_case() != google::protobuf::Value::kStringValue ||
      !SameBoardTarget(got[0].string_value(), run[0].string_value())) {
    return false;
  }
  for (int i = 1; i < got.size(); ++i) {
    if (!google::protobuf::util::MessageDifferencer::Equals(got[i], run[i])) return false;
  }
  return true;
}

// A transfer record's run: its input with the target reduced to its board kind (-model), so
// records of one kind and shapes are one run whether or not their target names the core.
std::string TransferRunKey(const google::protobuf::Value& input) {
  google::protobuf::Value key = input;
  google::protobuf::Value* target =
      key.list_value().values_size() > 0 ? key.mutable_list_value()->mutable_values(0) : nullptr;
  if (target != nullptr && target->kind_case() == google::protobuf::Value::kStringValue) {
    target->set_string_value(ParseAutoTvmTarget(target->string_value()).model);
  }
  std::string text;
  (void)google::protobuf::util::MessageToJsonString(key, &text);
  return text;
}

}  // namespace

// The "input" every AutoTVM record of the run has: the one a trial of it would get.
absl::StatusOr<google::protobuf::Value> RunInput(const v1::Operator& op, const TuneOptions& options,
                                                 absl::string_view cpu) {
  v1::Job probe;
  *probe.mutable_trial() = TrialTemplate(op, options);
  const catalog::KnobSpace table({op});
  google::protobuf::Struct want;
  if (!google::protobuf::util::JsonStringToMessage(FormatAutoTvmRecord(probe, table, cpu), &want)
           .ok()) {
    return absl::InternalError("cannot parse this run's own AutoTVM record");
  }
  return want.fields().at("input");
}

// The line's point (into *p) if it is a record of the run whose records have `want_input`.
LogLine ParseLogLine(const std::string& line, const v1::OpTemplate& spec,
                     const google::protobuf::Value& want_input, TunePoint* p) {
  google::protobuf::Struct record;
  if (!google::protobuf::util::JsonStringToMessage(line, &record).ok()) return LogLine::kMalformed;
  return ParseRecord(record, spec, want_input, p);
}

LogLine ParseRecord(const google::protobuf::Struct& record, const v1::OpTemplate& spec,
                    const google::protobuf::Value& want_input, TunePoint* p) {
  if (record.fields().count("input") == 0 || record.fields().count("config") == 0 ||
      record.fields().count("result") == 0) {
    return LogLine::kMalformed;
  }
  if (!SameRun(record.fields().at("input"), want_input)) {
    return LogLine::kOtherRun;  // another operator, version, board kind, core or shapes
  }
  const auto& result = record.fields().at("result").list_value().values();
  const int64_t index = RecordIndex(spec, record);
  if (index < 0 || result.size() < 2) return LogLine::kMalformed;
  *p = RecordPoint(index, result);
  return LogLine::kPoint;
}

absl::StatusOr<std::vector<TransferSet>> LoadTransfer(const v1::Operator& op,
                                                      const TuneOptions& options,
                                                      std::ostream& progress) {
  std::vector<TransferSet> sets;
  if (options.transfer.empty()) return sets;
  ASSIGN_OR_RETURN(const google::protobuf::Value run_input, RunInput(op, options, ""));
  const std::string task = run_input.list_value().values(1).string_value();
  std::map<std::string, size_t> set_of_input;  // a run (TransferRunKey) -> its set
  int taken = 0, other_task = 0, malformed = 0;
  for (const std::string& path : options.transfer) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat("--transfer: cannot read ", path));
    int taken_here = 0, malformed_here = 0;
    std::string other_here;
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      google::protobuf::Struct record;
      if (!google::protobuf::util::JsonStringToMessage(line, &record).ok() ||
          record.fields().count("input") == 0 ||
          record.fields().at("input").list_value().values_size() < 2) {
        ++malformed_here;
        continue;
      }
      const google::protobuf::Value& input = record.fields().at("input");
      const std::string record_task = input.list_value().values(1).string_value();
      if (record_task != task) {
        if (other_here.empty()) other_here = record_task;
        ++other_task;
        continue;
      }
      // Read as a record of its own run (its input): any shapes, any board kind.
      TunePoint p;
      if (ParseRecord(record, op.spec(), input, &p) != LogLine::kPoint) {
        ++malformed_here;
        continue;
      }
      auto [it, fresh] = set_of_input.emplace(TransferRunKey(input), sets.size());
      if (fresh) sets.emplace_back();
      sets[it->second].emplace_back(p.index, p.cost);
      ++taken_here;
    }
    if (taken_here == 0) {
      const std::string holds =
          other_here.empty()
              ? absl::StrCat(malformed_here, " unreadable lines")
              : absl::StrCat("records of ", other_here, ": another operator or version");
      return absl::InvalidArgumentError(
          absl::StrCat("--transfer ", path, ": no records of ", task, " (it holds ", holds, ")"));
    }
    taken += taken_here;
    malformed += malformed_here;
  }
  progress << "transfer: " << taken << " records of " << task << " from " << sets.size()
           << " runs (shapes or board kinds) pre-train the model";
  if (other_task > 0) progress << "; " << other_task << " of other operators or versions skipped";
  if (malformed > 0) progress << "; " << malformed << " unreadable lines skipped";
  progress << "\n";
  return sets;
}

}  // namespace benchfarm::farmctl
