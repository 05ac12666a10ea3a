// The `farmctl` tracker commands: see tracker_commands.h.
#include "farmctl/tracker_commands.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/status_macros.h"
#include "base/time_proto.h"
#include "catalog/cflags.h"
#include "catalog/knob_space.h"
#include "catalog/operator.h"
#include "catalog/trial.h"
#include "farmctl/autotvm_record.h"
#include "farmctl/board_commands.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "stats/cost_stats.h"

namespace benchfarm::farmctl {
namespace {

constexpr int kPageSize = 1000;

// Columns of text, left-aligned, two spaces apart; the last column is not padded.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }

  void Print(std::ostream& out) const {
    std::vector<size_t> widths;
    for (const auto& row : rows_) {
      if (widths.size() < row.size()) widths.resize(row.size(), 0);
      for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
    }
    for (const auto& row : rows_) {
      std::string line;
      for (size_t i = 0; i < row.size(); ++i) {
        if (i + 1 < row.size()) {
          absl::StrAppend(&line, row[i], std::string(widths[i] - row[i].size() + 2, ' '));
        } else {
          absl::StrAppend(&line, row[i]);
        }
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

// One unary call with the client's deadline (CallTracker), its failure as FromGrpc describes it.
template <typename Request, typename Response>
absl::Status Call(const TrackerClient& tracker,
                  grpc::Status (v1::Tracker::StubInterface::*method)(grpc::ClientContext*,
                                                                     const Request&, Response*),
                  const Request& request, Response* response, absl::string_view what) {
  return FromGrpc(CallTracker(tracker,
                              [&](grpc::ClientContext* context) {
                                return (tracker.stub->*method)(context, request, response);
                              }),
                  tracker, what);
}

absl::Status JsonOut(const google::protobuf::Message& message, std::ostream& out) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  std::string json;
  auto status = google::protobuf::util::MessageToJsonString(message, &json, options);
  if (!status.ok()) return absl::InternalError(std::string(status.message()));
  out << json;
  if (!absl::EndsWith(json, "\n")) out << "\n";
  return absl::OkStatus();
}

template <typename Map>
std::string JoinSorted(const Map& map) {
  std::map<std::string, std::string> sorted;
  for (const auto& [k, v] : map) sorted[k] = absl::StrCat(v);
  return absl::StrJoin(sorted, ",", absl::PairFormatter("="));
}

std::string OrDash(const std::string& s) { return s.empty() ? "-" : s; }

// Knobs as the user would write them, in knobs.json order when the op is known.
std::string FormatKnobs(const v1::OperatorSpec& op, const catalog::KnobSpace& knobs) {
  if (!op.has_template_op()) return "-";
  const auto& values = op.template_op().knobs();
  const v1::Operator* known = knobs.Find(op.template_op().op());
  if (known == nullptr) return OrDash(JoinSorted(values));
  std::vector<std::string> parts;
  for (const v1::Knob& knob : known->spec().knobs()) {
    auto it = values.find(knob.name());
    if (it != values.end()) parts.push_back(absl::StrCat(knob.name(), "=", it->second));
  }
  std::map<std::string, std::string> others;
  for (const auto& [name, value] : values) {
    if (catalog::FindKnob(known->spec(), name) == nullptr) others[name] = value;
  }
  for (const auto& [name, value] : others) parts.push_back(absl::StrCat(name, "=", value));
  return parts.empty() ? "-" : absl::StrJoin(parts, ",");
}

std::string OpName(const v1::OperatorSpec& op) {
  return op.has_template_op() ? op.template_op().op() : op.entry_function();
}

// "200 us +-0.4 %" (the median per call and its interval: ResultCostText), or the error.
std::string Outcome(const v1::Job& job, bool with_message) {
  if (job.state() != v1::DONE) return "-";
  const v1::Result& r = job.result();
  if (r.error_code() != v1::NO_ERROR || r.costs_s_size() == 0) {
    std::string name = v1::ErrorCode_IsValid(r.error_code()) ? v1::ErrorCode_Name(r.error_code())
                                                             : absl::StrCat(r.error_code());
    if (with_message && !r.message().empty()) absl::StrAppend(&name, ": ", r.message());
    return name;
  }
  return ResultCostText(r);
}

absl::StatusOr<int32_t> Int32Flag(absl::string_view flag, int64_t value, int64_t max) {
  if (value < 0 || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", value, " is not in 0..", max));
  }
  return static_cast<int32_t>(value);
}

// "name=value" -> {name, value}.
absl::StatusOr<std::pair<std::string, std::string>> KeyValue(absl::string_view flag,
                                                             absl::string_view text) {
  std::pair<std::string, std::string> kv = absl::StrSplit(text, absl::MaxSplits('=', 1));
  if (kv.first.empty() || !absl::StrContains(text, '=')) {
    return absl::InvalidArgumentError(
        absl::StrCat("--", flag, ": \"", text, "\" is not name=value"));
  }
  return kv;
}

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (errors.empty()) errors = absl::StrCat(line + 1, ":", column + 1, ": ", message);
  }
  std::string errors;
};

}  // namespace

grpc::Status CallTracker(const TrackerClient& tracker,
                         const std::function<grpc::Status(grpc::ClientContext*)>& call) {
  const absl::Time deadline = absl::Now() + tracker.timeout;
  absl::Duration backoff = absl::Milliseconds(100);
  for (;;) {
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(deadline));
    grpc::Status status = call(&context);
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE) {
      tracker.reached->store(true);
      return status;
    }
    if (!tracker.reached->load() || absl::Now() + backoff >= deadline) return status;
    absl::SleepFor(backoff);  // the tracker restarts, or a standby takes over
    backoff = std::min(backoff * 2, absl::Seconds(2));
  }
}

absl::Status FromGrpc(const grpc::Status& status, const TrackerClient& tracker,
                      absl::string_view what) {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return absl::OkStatus();
    case grpc::StatusCode::UNAVAILABLE:
      if (!tracker.reached->load() && tracker.diagnose != nullptr) {
        if (std::string why = tracker.diagnose(); !why.empty()) {
          return absl::UnavailableError(
              absl::StrCat("cannot reach tracker at ", tracker.address, " (", what, "): ", why));
        }
      }
      return absl::UnavailableError(absl::StrCat("cannot reach tracker at ", tracker.address, " (",
                                                 what, "): ", status.error_message()));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return absl::DeadlineExceededError(absl::StrCat("tracker at ", tracker.address,
                                                      " did not answer ", what, " within ",
                                                      absl::FormatDuration(tracker.timeout)));
    case grpc::StatusCode::UNAUTHENTICATED:  // named: "what is wrong with my credential"
      return absl::UnauthenticatedError(
          absl::StrCat(what, ": UNAUTHENTICATED: ", status.error_message()));
    default:
      return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                          absl::StrCat(what, ": ", status.error_message()));
  }
}

absl::Status PrintWhoAmI(const TrackerClient& tracker, const std::string& client_id, bool json,
                         std::ostream& out) {
  v1::WhoAmIRequest request;
  request.set_client_id(client_id);
  v1::WhoAmIResponse response;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::WhoAmI, request, &response, "WhoAmI");
  if (!status.ok()) return status;
  if (json) return JsonOut(response, out);
  if (response.how() == "insecure") {
    out << response.client_id()
        << ": insecure tracker: every caller may do everything, as the client id it names\n";
    return absl::OkStatus();
  }
  out << response.client_id() << ": " << response.role() << ", by " << response.how() << ", ";
  if (response.has_expires_at()) {
    out << "expires " << base::FormatUtc(base::FromProto(response.expires_at())) << "\n";
  } else {
    out << "never expires\n";
  }
  return absl::OkStatus();
}

// ---- boards, queue ------------------------------------------------------------------------------

absl::Status PrintBoards(const TrackerClient& tracker, const std::string& kind, bool json,
                         std::ostream& out) {
  v1::ListBoardsRequest request;
  request.set_board_kind(kind);
  v1::ListBoardsResponse response;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::ListBoards, request, &response, "ListBoards");
  if (!status.ok()) return status;
  if (json) return JsonOut(response, out);
  std::vector<const v1::Board*> boards;
  for (const v1::Board& b : response.boards()) boards.push_back(&b);
  std::sort(boards.begin(), boards.end(), [](const v1::Board* a, const v1::Board* b) {
    return std::tie(a->kind(), a->board_id()) < std::tie(b->kind(), b->board_id());
  });
  // CPU: the board's core (its package's -mcpu); "-" for a host-process board. TIMING: an
  // emulated board's timing mode (cycles, instructions, host); "-" for the others.
  Table table({"BOARD", "KIND", "CPU", "TIMING", "LABELS", "STATE", "AGENT", "JOB", "JOBS/SLOTS",
               "FLASHES", "FAILS"});
  for (const v1::Board* b : boards) {
    table.Add({b->board_id(), b->kind(), OrDash(b->cpu()), OrDash(b->timing()),
               OrDash(JoinSorted(b->labels())),
               v1::BoardState_Name(b->state()) + (b->held() ? " (held)" : ""),
               OrDash(b->agent_id()), OrDash(b->current_job_id()),
               absl::StrCat(b->running_jobs(), "/", std::max(b->slots(), 1)),
               absl::StrCat(b->flashes()), absl::StrCat(b->consecutive_infra_failures())});
  }
  table.Print(out);
  // Why boards are out of service, one line each (a quarantine's reason can be long).
  for (const v1::Board* b : boards) {
    if (b->held()) {
      out << b->board_id() << ": held: " << OrDash(b->held_reason()) << "\n";
    } else if (b->state() == v1::QUARANTINED && !b->quarantine_reason().empty()) {
      out << b->board_id() << ": quarantined: " << b->quarantine_reason() << "\n";
    }
  }
  return absl::OkStatus();
}

absl::Status SetBoardQuarantine(const TrackerClient& tracker, const std::string& board_id,
                                bool quarantine, const std::string& reason, std::ostream& out) {
  v1::SetBoardQuarantineRequest request;
  request.set_board_id(board_id);
  request.set_quarantine(quarantine);
  request.set_reason(reason);
  v1::Board board;
  absl::Status status = Call(tracker, &v1::Tracker::StubInterface::SetBoardQuarantine, request,
                             &board, "SetBoardQuarantine");
  if (!status.ok()) return status;
  out << board.board_id() << " " << v1::BoardState_Name(board.state());
  if (board.held()) out << " (held: " << OrDash(board.held_reason()) << ")";
  out << "\n";
  return absl::OkStatus();
}

absl::Status MoveBoard(const TrackerClient& tracker, const std::string& board_id,
                       const std::string& agent_id, std::ostream& out) {
  v1::MoveBoardRequest request;
  request.set_board_id(board_id);
  request.set_agent_id(agent_id);
  v1::Board board;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::MoveBoard, request, &board, "MoveBoard");
  if (!status.ok()) return status;
  out << board.board_id() << " " << v1::BoardState_Name(board.state()) << ", held by agent "
      << board.agent_id() << "\n";
  return absl::OkStatus();
}

absl::StatusOr<BoardCores> FetchBoardCores(const TrackerClient& tracker) {
  v1::ListBoardsResponse response;
  RETURN_IF_ERROR(Call(tracker, &v1::Tracker::StubInterface::ListBoards, v1::ListBoardsRequest(),
                       &response, "ListBoards"));
  return CoresOfBoards(response.boards());
}

absl::Status PrintQueue(const TrackerClient& tracker, bool json, std::ostream& out) {
  v1::QueueSummaryRequest request;
  v1::QueueSummaryResponse response;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::QueueSummary, request, &response, "QueueSummary");
  if (!status.ok()) return status;
  if (json) return JsonOut(response, out);
  std::vector<const v1::KindSummary*> kinds;
  for (const v1::KindSummary& k : response.kinds()) kinds.push_back(&k);
  std::sort(kinds.begin(), kinds.end(), [](const v1::KindSummary* a, const v1::KindSummary* b) {
    return a->board_kind() < b->board_kind();
  });
  Table table({"KIND", "BOARDS", "FREE", "QUARANTINED", "QUEUED", "BY PRIORITY", "RUNNING"});
  int64_t total[5] = {0, 0, 0, 0, 0};
  std::map<int32_t, int64_t, std::greater<>> total_by_priority;
  for (const v1::KindSummary* k : kinds) {
    std::map<int32_t, int64_t, std::greater<>> by_priority(k->queued_by_priority().begin(),
                                                           k->queued_by_priority().end());
    int64_t queued = 0;
    std::vector<std::string> parts;
    for (const auto& [priority, n] : by_priority) {
      queued += n;
      total_by_priority[priority] += n;
      parts.push_back(absl::StrCat("p", priority, ":", n));
    }
    table.Add({k->board_kind(), absl::StrCat(k->boards_total()), absl::StrCat(k->boards_free()),
               absl::StrCat(k->boards_quarantined()), absl::StrCat(queued),
               parts.empty() ? "-" : absl::StrJoin(parts, " "), absl::StrCat(k->running())});
    total[0] += k->boards_total();
    total[1] += k->boards_free();
    total[2] += k->boards_quarantined();
    total[3] += queued;
    total[4] += k->running();
  }
  if (kinds.size() > 1) {
    std::vector<std::string> parts;
    for (const auto& [priority, n] : total_by_priority)
      parts.push_back(absl::StrCat("p", priority, ":", n));
    table.Add({"TOTAL", absl::StrCat(total[0]), absl::StrCat(total[1]), absl::StrCat(total[2]),
               absl::StrCat(total[3]), parts.empty() ? "-" : absl::StrJoin(parts, " "),
               absl::StrCat(total[4])});
  }
  table.Print(out);
  // Why jobs wait although the kind has boards (pinned to an offline board, ...).
  for (const v1::KindSummary* k : kinds) {
    for (const std::string& why : k->waiting())
      out << k->board_kind() << ": waiting: " << why << "\n";
  }
  return absl::OkStatus();
}

// ---- submit -------------------------------------------------------------------------------------

absl::Status SetAdaptive(double target_pct, int64_t budget_ms, int64_t max_repeat,
                         v1::MeasureOptions* measure) {
  if (!(target_pct >= 0 && target_pct <= 50)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--target: ", target_pct, " is not in 0..50 (percent of the median: 1 means +-1 %)"));
  }
  ASSIGN_OR_RETURN(int32_t budget, Int32Flag("budget_ms", budget_ms, catalog::kMaxBudgetMs));
  ASSIGN_OR_RETURN(int32_t repeats, Int32Flag("max_repeat", max_repeat, catalog::kMaxCosts));
  if (target_pct == 0 && (budget > 0 || repeats > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--", budget > 0 ? "budget-ms" : "max-repeat",
        ": only with --target PCT (adaptive mode; the fixed mode takes --number/--repeat)"));
  }
  measure->set_target_rel_ci(target_pct / 100);
  measure->set_budget_ms(budget);
  measure->set_max_repeat(repeats);
  return absl::OkStatus();
}

namespace {

// A one-off C source trial's flags (--c-source, --entry, --reference) into its op.
absl::Status SetCSource(const TrialFlags& flags, v1::Trial* trial) {
  if (flags.entry.empty()) return absl::InvalidArgumentError("--entry: required with --c-source");
  if (flags.shapes.empty()) {
    return absl::InvalidArgumentError(
        "--shape: required with --c-source (inputs, then the output)");
  }
  if (!flags.knobs.empty()) return absl::InvalidArgumentError("--knob: not with --c-source");
  if (flags.check && flags.reference.empty()) {
    return absl::InvalidArgumentError(
        "--reference: required with --c-source to check the outputs (or --no-check)");
  }
  trial->mutable_op()->set_c_source(flags.c_source);
  trial->mutable_op()->set_entry_function(flags.entry);
  trial->mutable_op()->set_reference_function(flags.reference);
  for (absl::string_view option : absl::StrSplit(flags.cflags, ' ', absl::SkipWhitespace())) {
    RETURN_IF_ERROR(catalog::CheckCflag("--cflags", option));
    trial->mutable_op()->add_cflags(std::string(option));
  }
  for (const auto& [name, text] :
       {std::pair<const char*, const std::string&>{"atol", flags.atol}, {"rtol", flags.rtol}}) {
    if (text.empty()) continue;
    double value;
    if (!absl::SimpleAtod(text, &value)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", name, ": \"", text, "\" is not a number"));
    }
    if (name[0] == 'a') {
      trial->mutable_op()->set_atol(value);
    } else {
      trial->mutable_op()->set_rtol(value);
    }
  }
  return absl::OkStatus();
}

// The --knob NAME=VALUE flags into a template trial's op: each named once, and when the catalog
// knows the op (`known`), a knob of it with a value it allows.
absl::Status SetKnobs(const TrialFlags& flags, const v1::Operator* known,
                      v1::TemplateOperator* op) {
  for (const std::string& text : flags.knobs) {
    ASSIGN_OR_RETURN(auto kv, KeyValue("knob", text));
    const auto& [name, value] = kv;
    if (op->knobs().count(name) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("--knob: ", name, " given twice"));
    }
    if (known != nullptr) {
      const v1::Knob* knob = catalog::FindKnob(known->spec(), name);
      if (knob == nullptr) {
        std::vector<std::string> names;
        for (const v1::Knob& k : known->spec().knobs()) names.push_back(k.name());
        return absl::InvalidArgumentError(
            absl::StrCat("--knob: ", flags.op, " has no knob \"", name,
                         "\" (knobs: ", absl::StrJoin(names, ", "), ")"));
      }
      if (!catalog::Allows(*knob, value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--knob ", name, "=", value, ": not one of ", catalog::ValuesText(*knob)));
      }
    } else if (value.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--knob ", text, ": no value"));
    }
    (*op->mutable_knobs())[name] = value;
  }
  return absl::OkStatus();
}

// The measure flags (fixed: --number, --repeat, ...; adaptive: --target, ...), each in its range.
absl::Status SetMeasure(const TrialFlags& flags, v1::MeasureOptions* m) {
  struct IntFlag {
    const char* name;
    int64_t value;
    int64_t max;
    void (v1::MeasureOptions::*set)(int32_t);
  };
  for (const IntFlag& f :
       {IntFlag{"number", flags.number, catalog::kMaxNumber, &v1::MeasureOptions::set_number},
        IntFlag{"repeat", flags.repeat, catalog::kMaxCosts, &v1::MeasureOptions::set_repeat},
        IntFlag{"min_repeat_ms", flags.min_repeat_ms, catalog::kMaxMinRepeatMs,
                &v1::MeasureOptions::set_min_repeat_ms},
        IntFlag{"cooldown_ms", flags.cooldown_ms, catalog::kMaxCooldownMs,
                &v1::MeasureOptions::set_cooldown_ms},
        IntFlag{"timeout_ms", flags.timeout_ms, catalog::kMaxTimeoutMs,
                &v1::MeasureOptions::set_timeout_ms}}) {
    absl::StatusOr<int32_t> v = Int32Flag(f.name, f.value, f.max);
    if (!v.ok()) return v.status();
    (m->*f.set)(*v);
  }
  return SetAdaptive(flags.target_pct, flags.budget_ms, flags.max_repeat, m);
}

}  // namespace

absl::StatusOr<v1::Trial> TrialFromFlags(const TrialFlags& flags, const catalog::KnobSpace& knobs) {
  if (flags.kind.empty()) return absl::InvalidArgumentError("--kind: required (a board kind)");
  const bool c_source = !flags.c_source_path.empty();
  if (c_source && !flags.op.empty()) {
    return absl::InvalidArgumentError("--c-source: a one-off C source trial takes no --op");
  }
  if (!c_source && flags.op.empty()) {
    return absl::InvalidArgumentError("--op: required (e.g. matmul; farmctl ops lists them)");
  }
  if (!c_source && !flags.cflags.empty()) {
    return absl::InvalidArgumentError(
        "--cflags: only with --c-source (an operator's compile options are its manifest's cflags "
        "and cflag knobs)");
  }
  v1::Trial trial;
  trial.set_board_kind(flags.kind);
  if (c_source) {
    RETURN_IF_ERROR(SetCSource(flags, &trial));
  } else {
    v1::TemplateOperator* op = trial.mutable_op()->mutable_template_op();
    op->set_op(flags.op);
    RETURN_IF_ERROR(SetKnobs(flags, knobs.Find(flags.op), op));
  }

  // No --shape: the op's default shapes (the tracker fills them in from its catalog).
  ASSIGN_OR_RETURN(std::vector<v1::ArgSpec> args, ArgSpecs(flags.shapes, flags.dtypes));
  for (v1::ArgSpec& arg : args) *trial.add_args() = std::move(arg);

  RETURN_IF_ERROR(SetMeasure(flags, trial.mutable_measure()));
  absl::StatusOr<int32_t> priority = Int32Flag("priority", flags.priority, catalog::kMaxPriority);
  if (!priority.ok()) return priority.status();
  trial.set_priority(*priority);
  trial.set_seed(flags.seed);
  trial.set_check_outputs(flags.check);
  trial.set_board_id(flags.board);
  for (const std::string& text : flags.labels) {
    absl::StatusOr<std::pair<std::string, std::string>> kv = KeyValue("label", text);
    if (!kv.ok()) return kv.status();
    (*trial.mutable_labels())[kv->first] = kv->second;
  }
  return trial;
}

absl::StatusOr<v1::SubmitTrialsRequest> ParseSubmitFile(absl::string_view path,
                                                        absl::string_view contents) {
  v1::SubmitTrialsRequest request;
  if (absl::EndsWith(path, ".json")) {
    auto status = google::protobuf::util::JsonStringToMessage(
        google::protobuf::StringPiece(contents.data(), contents.size()), &request);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": not a SubmitTrialsRequest in proto3 JSON: ", std::string(status.message())));
    }
    return request;
  }
  google::protobuf::TextFormat::Parser parser;
  CollectErrors errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(std::string(contents), &request)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, ":", errors.errors, " (expected a text-format benchfarm.v1.SubmitTrialsRequest)"));
  }
  return request;
}

std::string NewRequestId() {
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof(host), "host");
  }
  return absl::StrCat("farmctl-", host, "-", getpid(), "-", absl::GetCurrentTimeNanos());
}

absl::StatusOr<std::vector<std::string>> Submit(const TrackerClient& tracker,
                                                const v1::SubmitTrialsRequest& request,
                                                std::ostream& out) {
  v1::SubmitTrialsResponse response;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::SubmitTrials, request, &response, "SubmitTrials");
  if (!status.ok()) return status;
  std::vector<std::string> ids(response.job_ids().begin(), response.job_ids().end());
  for (const std::string& id : ids) out << id << "\n";
  out.flush();
  return ids;
}

// ---- watch --------------------------------------------------------------------------------------

std::string JobStateText(v1::JobState state) {
  // The enum's name is CANCELLED_STATE only because ErrorCode has a CANCELLED.
  if (state == v1::CANCELLED_STATE) return "CANCELLED";
  return v1::JobState_IsValid(state) ? v1::JobState_Name(state) : absl::StrCat(state);
}

std::string FormatJobEvent(const v1::Job& job) {
  std::string line = absl::StrCat(absl::FormatTime("%H:%M:%S", absl::Now(), absl::LocalTimeZone()),
                                  " ", job.job_id(), " ", JobStateText(job.state()), " ",
                                  job.trial().board_kind(), "/", OpName(job.trial().op()));
  std::string board = job.state() == v1::DONE ? job.result().board_id() : job.board_id();
  if (board.empty() && job.attempts_size() > 0 && job.state() != v1::QUEUED) {
    board = job.attempts(job.attempts_size() - 1).board_id();
  }
  if (!board.empty()) absl::StrAppend(&line, " on ", board);
  if (job.attempts_size() > 0) absl::StrAppend(&line, " attempt ", job.attempts_size());
  if (job.state() == v1::DONE) absl::StrAppend(&line, " ", Outcome(job, /*with_message=*/true));
  return line;
}

absl::Status Watch(const TrackerClient& tracker, const WatchOptions& options, std::ostream& out) {
  std::set<std::string> remaining;
  for (const std::string& id : options.job_ids) {
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    absl::Status status = Call(tracker, &v1::Tracker::StubInterface::GetJob, request, &job,
                               absl::StrCat("GetJob ", id));
    if (!status.ok()) return status;
    remaining.insert(id);
  }
  v1::WatchJobsRequest request;
  request.set_client_id(options.client_id);
  for (const std::string& id : options.job_ids) request.add_job_ids(id);
  grpc::ClientContext context;  // no deadline: a watch lasts as long as the jobs do
  std::unique_ptr<grpc::ClientReaderInterface<v1::JobEvent>> reader =
      tracker.stub->WatchJobs(&context, request);
  v1::JobEvent event;
  int64_t events = 0;
  bool enough = false;
  while (!enough && reader->Read(&event)) {
    const v1::Job& job = event.job();
    out << FormatJobEvent(job) << "\n";
    out.flush();
    if (job.state() == v1::DONE || job.state() == v1::CANCELLED_STATE)
      remaining.erase(job.job_id());
    enough = (!options.job_ids.empty() && remaining.empty()) ||
             (options.max_events > 0 && ++events >= options.max_events);
  }
  if (enough) {
    context.TryCancel();  // the tracker ends a finished watch itself; this covers the rest
    reader->Finish();
    return absl::OkStatus();
  }
  return FromGrpc(reader->Finish(), tracker, "WatchJobs");
}

// ---- results ------------------------------------------------------------------------------------

absl::Status PrintResults(const TrackerClient& tracker, const ResultsOptions& options,
                          std::ostream& out) {
  const catalog::KnobSpace& knobs =
      options.knobs != nullptr ? *options.knobs : catalog::BuiltinKnobSpace();
  v1::ListResultsResponse all;
  v1::ListResultsRequest request;
  request.set_client_id(options.client_id);
  request.set_board_kind(options.board_kind);
  request.set_op(options.op);
  if (options.format == ResultsFormat::kAutoTvm) request.set_state(v1::DONE);
  while (true) {
    int64_t want = kPageSize;
    if (options.limit > 0) want = std::min<int64_t>(want, options.limit - all.jobs_size());
    request.set_limit(static_cast<int32_t>(want));
    v1::ListResultsResponse page;
    absl::Status status =
        Call(tracker, &v1::Tracker::StubInterface::ListResults, request, &page, "ListResults");
    if (!status.ok()) return status;
    for (v1::Job& job : *page.mutable_jobs()) *all.add_jobs() = std::move(job);
    if (page.next_page_token().empty() || (options.limit > 0 && all.jobs_size() >= options.limit)) {
      break;
    }
    request.set_page_token(page.next_page_token());
  }

  switch (options.format) {
    case ResultsFormat::kJson:
      return JsonOut(all, out);
    case ResultsFormat::kAutoTvm: {
      ASSIGN_OR_RETURN(const BoardCores cores, FetchBoardCores(tracker));
      std::set<std::string> unknown;
      for (const v1::Job& job : all.jobs()) {
        if (job.state() != v1::DONE) continue;
        const std::string& kind = job.trial().board_kind();
        auto core = cores.find(kind);
        if (core == cores.end() && unknown.insert(kind).second && options.notes != nullptr) {
          *options.notes << "results: no board of kind " << kind
                         << " is registered, so its core is not known: its records' target is \""
                         << AutoTvmTarget(kind, "") << "\"\n";
        }
        out << FormatAutoTvmRecord(job, knobs, core == cores.end() ? "" : core->second) << "\n";
      }
      return absl::OkStatus();
    }
    case ResultsFormat::kTable:
      break;
  }
  Table table({"JOB", "CLIENT", "STATE", "KIND", "OP", "KNOBS", "BOARD", "ATTEMPTS", "RESULT"});
  for (const v1::Job& job : all.jobs()) {
    std::string board = job.state() == v1::DONE ? job.result().board_id() : job.board_id();
    table.Add({job.job_id(), job.client_id(), JobStateText(job.state()), job.trial().board_kind(),
               OpName(job.trial().op()), FormatKnobs(job.trial().op(), knobs), OrDash(board),
               absl::StrCat(job.attempts_size()), Outcome(job, false)});
  }
  table.Print(out);
  return absl::OkStatus();
}

// ---- a result's quality -------------------------------------------------------------------------

std::string ResultCostText(const v1::Result& result) {
  const v1::CostStats stats = stats::StatsOf(result);
  std::string text = stats::CostText(stats);
  if (stats.count() > 0 && result.cpu_hz() > 0) {
    absl::StrAppend(&text, " = ", UnitsText(stats.median_s(), result.cpu_hz(), result.emulation()));
  }
  return text;
}

// ---- get ----------------------------------------------------------------------------------------

namespace {

std::string MeasureOptionsText(const v1::MeasureOptions& m) {
  std::string text;
  if (m.target_rel_ci() > 0) {
    text = absl::StrFormat("adaptive: target +-%g %%", m.target_rel_ci() * 100);
    absl::StrAppend(&text, ", budget ",
                    m.budget_ms() > 0 ? absl::StrCat(m.budget_ms(), " ms") : "default",
                    ", max_repeat ", m.max_repeat() > 0 ? absl::StrCat(m.max_repeat()) : "default");
  } else {
    text = absl::StrCat("fixed: number ", m.number(), ", repeat ", m.repeat());
  }
  if (m.min_repeat_ms() > 0) absl::StrAppend(&text, ", min_repeat_ms ", m.min_repeat_ms());
  if (m.cooldown_ms() > 0) absl::StrAppend(&text, ", cooldown_ms ", m.cooldown_ms());
  if (m.timeout_ms() > 0) absl::StrAppend(&text, ", timeout_ms ", m.timeout_ms());
  return text;
}

std::string Percent(double fraction) { return absl::StrFormat("%.1f %%", fraction * 100); }

// One "key       value" line of FormatJob.
void JobLine(std::string* out, absl::string_view key, absl::string_view value) {
  absl::StrAppendFormat(out, "%-10s %s\n", key, value);
}

// FormatJob's lines of a finished job's outcome and costs: their statistics, how they were taken.
void AppendCosts(const v1::Job& job, std::string* out) {
  auto line = [&](absl::string_view key, absl::string_view value) { JobLine(out, key, value); };
  const v1::Result& r = job.result();
  line("result", Outcome(job, /*with_message=*/true));
  const v1::CostStats s = stats::StatsOf(r);
  if (s.count() > 0) {
    using stats::SecondsText;
    line("costs", absl::StrCat(s.count(), ": mean ", SecondsText(s.mean_s()), ", median ",
                               SecondsText(s.median_s()), ", min ", SecondsText(s.min_s()),
                               ", max ", SecondsText(s.max_s()), ", stddev ",
                               SecondsText(s.stddev_s()), ", CV ", Percent(s.cv())));
    std::string interval =
        absl::StrCat("[", SecondsText(s.ci_low_s()), ", ", SecondsText(s.ci_high_s()), "] at ",
                     Percent(s.ci_level()), " (", stats::PlusMinus(s), "; ");
    if (s.rounds() > 1) {
      absl::StrAppend(&interval, "within the run +-", Percent(s.within_rel_half_width()),
                      ", between its ", s.rounds(), " rounds +-",
                      Percent(s.between_rel_half_width()),
                      s.rounds_disagree() ? ", the rounds disagree" : "", "; ");
    }
    if (s.contended()) {
      absl::StrAppendFormat(&interval, "the board shared its CPU (wall/CPU %.2f); ",
                            r.wall_over_cpu());
    }
    absl::StrAppend(&interval, s.unstable() ? "UNSTABLE: " : "",
                    s.unstable_threshold() > 0
                        ? absl::StrCat("unstable past +-", Percent(s.unstable_threshold()))
                        : "no threshold stored",
                    ")");
    line("interval", interval);
  }
  const v1::MeasureReport& m = r.measured();
  if (m.repeats() > 0 || m.number() > 0 || !m.stop().empty()) {
    std::string how =
        absl::StrCat("number ", m.number(), ", ", m.repeats(), " repeats in ", m.rounds(),
                     m.rounds() == 1 ? " round" : " rounds", ", stopped: ", OrDash(m.stop()));
    if (m.target_rel_ci() > 0)
      absl::StrAppendFormat(&how, " (target +-%g %%)", m.target_rel_ci() * 100);
    if (m.interleaved()) absl::StrAppend(&how, ", interleaved with its batch");
    line("measured", how);
  }
}

// FormatJob's lines of a result's board: its clock and timer, the cycle model's counts, stages.
void AppendBoard(const v1::Result& r, std::string* out) {
  auto line = [&](absl::string_view key, absl::string_view value) { JobLine(out, key, value); };
  const v1::CostStats s = stats::StatsOf(r);
  if (r.cpu_hz() > 0 || r.wall_over_cpu() > 0) {
    std::vector<std::string> clock;
    if (r.cpu_hz() > 0) {
      clock.push_back(
          r.emulation() == "qemu-icount"
              ? absl::StrFormat("%.6g M instructions/s (QEMU -icount)", r.cpu_hz() / 1e6)
              : absl::StrFormat("%.6g MHz", r.cpu_hz() / 1e6));
      if (s.count() > 0) {
        clock.push_back(
            absl::StrCat("median ", UnitsText(s.median_s(), r.cpu_hz(), r.emulation())));
      }
    }
    if (r.wall_over_cpu() > 0) clock.push_back(absl::StrFormat("wall/CPU %.3f", r.wall_over_cpu()));
    line("clock", absl::StrJoin(clock, ", "));
  }
  if (!r.timer().empty() || !r.emulation().empty() || r.timer_resolution_s() > 0) {
    std::string timer = OrDash(r.timer());
    if (!r.emulation().empty()) absl::StrAppend(&timer, " (", r.emulation(), ")");
    if (r.timer_resolution_s() > 0) {
      absl::StrAppend(&timer, ", tick ", stats::SecondsText(r.timer_resolution_s()));
    }
    line("timer", timer);
  }
  if (!r.model_cycles().empty() && r.model_cycles_size() == r.model_instructions_size()) {
    std::vector<double> cycles(r.model_cycles().begin(), r.model_cycles().end());
    std::vector<double> instructions(r.model_instructions().begin(), r.model_instructions().end());
    std::sort(cycles.begin(), cycles.end());
    std::sort(instructions.begin(), instructions.end());
    const double c = cycles[cycles.size() / 2], i = instructions[instructions.size() / 2];
    line("model", absl::StrFormat("%.1f cycles, %.1f instructions per call (median; %.2f per "
                                  "instruction)",
                                  c, i, i > 0 ? c / i : 0.0));
  }
  const v1::StageTimes& st = r.stages();
  line("stages", absl::StrCat("build ", stats::SecondsText(st.build_s()), ", flash ",
                              stats::SecondsText(st.flash_s()), ", handshake ",
                              stats::SecondsText(st.handshake_s()), ", measure ",
                              stats::SecondsText(st.measure_s())));
}

}  // namespace

std::string FormatJob(const v1::Job& job, const catalog::KnobSpace& knobs) {
  std::string out;
  auto line = [&](absl::string_view key, absl::string_view value) { JobLine(&out, key, value); };
  const v1::Trial& t = job.trial();
  line("job", job.job_id());
  line("client", OrDash(job.client_id()));
  line("state", JobStateText(job.state()));
  std::string op = absl::StrCat(t.board_kind(), "/", OpName(t.op()));
  if (t.op().has_template_op() && !t.op().template_op().version().empty()) {
    absl::StrAppend(&op, "@", t.op().template_op().version());
  }
  line("trial", op);
  line("knobs", FormatKnobs(t.op(), knobs));
  if (!t.op().cflags().empty()) line("cflags", absl::StrJoin(t.op().cflags(), " "));
  if (t.args_size() > 0) {
    std::vector<std::string> shapes;
    for (const v1::ArgSpec& a : t.args()) shapes.push_back(absl::StrJoin(a.shape(), "x"));
    line("shapes", absl::StrJoin(shapes, ","));
  }
  line("measure", MeasureOptionsText(t.measure()));
  const std::string board = job.state() == v1::DONE ? job.result().board_id() : job.board_id();
  line("board", absl::StrCat(OrDash(board), " (attempts ", job.attempts_size(), ")"));
  if (job.state() == v1::CANCELLED_STATE && !job.result().message().empty()) {
    line("result", job.result().message());
  }
  if (job.state() != v1::DONE) return out;
  AppendCosts(job, &out);
  AppendBoard(job.result(), &out);
  return out;
}

absl::Status ShowJobs(const TrackerClient& tracker, const std::vector<std::string>& job_ids,
                      bool json, std::ostream& out) {
  v1::ListResultsResponse all;
  for (const std::string& id : job_ids) {
    v1::GetJobRequest request;
    request.set_job_id(id);
    RETURN_IF_ERROR(Call(tracker, &v1::Tracker::StubInterface::GetJob, request, all.add_jobs(),
                         absl::StrCat("GetJob ", id)));
  }
  if (json) return JsonOut(all, out);
  for (int i = 0; i < all.jobs_size(); ++i) {
    if (i > 0) out << "\n";
    out << FormatJob(all.jobs(i), catalog::BuiltinKnobSpace());
  }
  return absl::OkStatus();
}

// ---- cancel -------------------------------------------------------------------------------------

absl::Status PrintJobLog(const TrackerClient& tracker, const std::string& job_id, int attempt,
                         bool json, std::ostream& out) {
  v1::GetJobLogRequest request;
  request.set_job_id(job_id);
  request.set_attempt(attempt);
  v1::GetJobLogResponse response;
  RETURN_IF_ERROR(Call(tracker, &v1::Tracker::StubInterface::GetJobLog, request, &response,
                       absl::StrCat("GetJobLog ", job_id)));
  if (json) return JsonOut(response, out);
  if (response.logs().empty()) {
    out << "job " << job_id << " has no log yet (an attempt's log comes with its result)\n";
  }
  for (const v1::AttemptLog& log : response.logs()) {
    out << "--- job " << job_id << " attempt " << log.attempt() << " on board " << log.board_id()
        << " ---\n"
        << log.text();
    if (!log.text().empty() && log.text().back() != '\n') out << "\n";
  }
  return absl::OkStatus();
}

absl::Status Cancel(const TrackerClient& tracker, const std::vector<std::string>& job_ids,
                    std::ostream& out) {
  absl::Status first;
  for (const std::string& id : job_ids) {
    v1::CancelJobRequest request;
    request.set_job_id(id);
    v1::CancelJobResponse response;
    absl::Status status = Call(tracker, &v1::Tracker::StubInterface::CancelJob, request, &response,
                               absl::StrCat("CancelJob ", id));
    if (status.ok()) {
      out << id << " " << JobStateText(response.job().state()) << "\n";
    } else if (first.ok()) {
      first = status;
    }
  }
  return first;
}

// ---- the operator catalog -------------------------------------------------------------------

namespace {

std::string KnobsText(const v1::OpTemplate& spec) {
  std::vector<std::string> knobs;
  for (const v1::Knob& k : spec.knobs()) {
    std::vector<std::string> values;
    const std::string def = catalog::ValueText(k.default_());
    for (const google::protobuf::Value& v : k.values()) {
      std::string text = catalog::ValueText(v);
      if (absl::StrContains(text, ' ')) text = absl::StrCat("\"", text, "\"");  // options
      values.push_back(catalog::ValueText(v) == def ? text + "*" : text);
    }
    knobs.push_back(absl::StrCat(k.name(), "=", absl::StrJoin(values, "|")));
  }
  return knobs.empty() ? "-" : absl::StrJoin(knobs, " ");
}

// The operator's compile options: its own, and the knobs that add theirs ("-" for none).
std::string CflagsText(const v1::OpTemplate& spec) {
  std::vector<std::string> parts;
  if (!spec.cflags().empty()) {
    parts.push_back(absl::StrCat(absl::StrJoin(spec.cflags(), " "), " (every candidate)"));
  }
  for (const v1::Knob& k : spec.knobs()) {
    if (k.cflag()) parts.push_back(absl::StrCat("knob ", k.name(), "'s value"));
  }
  return parts.empty() ? "-" : absl::StrJoin(parts, ", then ");
}

std::string ShapesOf(const v1::OpTemplate& spec) {
  absl::StatusOr<std::vector<std::vector<int64_t>>> shapes = catalog::DefaultShapes(spec);
  return shapes.ok() ? catalog::ShapesText(*shapes) : "?";
}

}  // namespace

absl::StatusOr<v1::Operator> LoadOperator(const std::string& path, std::string* dir_out) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    return absl::NotFoundError(absl::StrCat("no such file: ", path));
  const std::string manifest = S_ISDIR(st.st_mode) ? path + "/op.json" : path;
  const size_t slash = manifest.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : manifest.substr(0, slash);
  if (dir_out != nullptr) *dir_out = dir;
  absl::StatusOr<std::string> json = base::ReadFile(manifest);
  if (!json.ok()) return json.status();
  v1::OpTemplate spec;
  google::protobuf::util::JsonParseOptions options;
  if (!google::protobuf::util::JsonStringToMessage(*json, &spec, options).ok()) {
    // OperatorFromManifest below names the problem.
    absl::StatusOr<v1::Operator> op = catalog::OperatorFromManifest(*json, {});
    return absl::InvalidArgumentError(absl::StrCat(manifest, ": ", op.status().message()));
  }
  std::map<std::string, std::string> files;
  for (const std::string& source : spec.sources()) {
    if (source.find('/') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(manifest, ": sources: \"", source, "\" must be a file beside op.json"));
    }
    absl::StatusOr<std::string> text = base::ReadFile(dir + "/" + source);
    if (!text.ok())
      return absl::NotFoundError(absl::StrCat(manifest, ": sources: ", text.status().message()));
    files[source] = *std::move(text);
  }
  if (DIR* d = opendir(dir.c_str())) {  // headers the sources include
    while (struct dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() > 2 && name[0] != '.' && absl::EndsWith(name, ".h") &&
          files.count(name) == 0) {
        absl::StatusOr<std::string> text = base::ReadFile(dir + "/" + name);
        if (text.ok()) files[name] = *std::move(text);
      }
    }
    closedir(d);
  }
  absl::StatusOr<v1::Operator> op = catalog::OperatorFromManifest(*json, std::move(files));
  if (!op.ok())
    return absl::InvalidArgumentError(absl::StrCat(manifest, ": ", op.status().message()));
  return op;
}

absl::Status AddOperator(const TrackerClient& tracker, v1::Operator op, bool json,
                         std::ostream& out) {
  v1::AddOperatorRequest request;
  *request.mutable_op() = std::move(op);
  v1::AddOperatorResponse response;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::AddOperator, request, &response, "AddOperator");
  if (!status.ok()) return status;
  if (json) return JsonOut(response, out);
  out << response.op().name() << " version " << response.op().version() << ": "
      << (response.created()       ? "added"
          : response.made_latest() ? "already in the catalog; the latest again"
                                   : "already in the catalog")
      << "\n";
  return absl::OkStatus();
}

absl::Status RetireOperator(const TrackerClient& tracker, const std::string& name,
                            const std::string& version, bool json, std::ostream& out) {
  v1::RetireOperatorRequest request;
  request.set_name(name);
  request.set_version(version);
  v1::RetireOperatorResponse response;
  RETURN_IF_ERROR(Call(tracker, &v1::Tracker::StubInterface::RetireOperator, request, &response,
                       "RetireOperator"));
  if (json) return JsonOut(response, out);
  out << name << " version " << response.op().version() << ": "
      << (response.already() ? "already retired" : "retired") << "; ";
  if (response.has_latest()) {
    out << "new trials of " << name << " run version " << response.latest().version()
        << " (the latest)";
  } else {
    out << "every version of " << name << " is retired: new trials of it are refused until one's "
        << "source is added again";
  }
  out << "; its results stay\n";
  return absl::OkStatus();
}

// Who owns an operator's name / added a version, as the tables show it.
std::string OwnerText(const v1::Operator& op) {
  if (op.builtin()) return "-";
  return op.owner().empty() ? "(none)" : op.owner();
}

std::string AddedByText(const v1::Operator& op) {
  if (op.builtin()) return "-";
  return op.added_by().empty() ? "(unknown)" : op.added_by();
}

std::string AddedAtText(const google::protobuf::Timestamp& added) {
  if (added.seconds() == 0 && added.nanos() == 0) return "-";
  const absl::Time at = absl::FromUnixSeconds(added.seconds());
  return absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", at, absl::UTCTimeZone());
}

absl::Status PrintOperators(const TrackerClient& tracker, const std::string& name,
                            bool all_versions, bool json, std::ostream& out) {
  v1::ListOperatorsRequest request;
  request.set_name(name);
  request.set_all_versions(all_versions);
  v1::ListOperatorsResponse response;
  absl::Status status = Call(tracker, &v1::Tracker::StubInterface::ListOperators, request,
                             &response, "ListOperators");
  if (!status.ok()) return status;
  if (json) return JsonOut(response, out);
  std::vector<std::string> columns = {"OP", "VERSION", "SOURCE", "OWNER"};
  if (all_versions) columns.insert(columns.end(), {"ADDED BY", "ADDED"});
  columns.insert(columns.end(), {"SHAPES", "KNOBS (* default)"});
  Table table(columns);
  for (const v1::Operator& op : response.ops()) {
    std::string version = op.version();
    if (op.state().retired()) {
      version += " (retired)";
    } else if (all_versions && op.latest()) {
      version += " (latest)";
    }
    std::vector<std::string> row = {op.name(), version, op.builtin() ? "built-in" : "user",
                                    OwnerText(op)};
    if (all_versions) row.insert(row.end(), {AddedByText(op), AddedAtText(op.added_at())});
    row.insert(row.end(), {ShapesOf(op.spec()), KnobsText(op.spec())});
    table.Add(row);
  }
  table.Print(out);
  return absl::OkStatus();
}

absl::Status SetOperatorOwner(const TrackerClient& tracker, const std::string& name,
                              const std::string& owner, std::ostream& out) {
  v1::SetOperatorOwnerRequest request;
  request.set_name(name);
  request.set_owner(owner);
  v1::Operator op;
  absl::Status status = Call(tracker, &v1::Tracker::StubInterface::SetOperatorOwner, request, &op,
                             "SetOperatorOwner");
  if (!status.ok()) return status;
  out << op.name() << ": owner " << op.owner() << "\n";
  return absl::OkStatus();
}

absl::Status ShowOperator(const TrackerClient& tracker, const std::string& name,
                          const std::string& version, bool json, std::ostream& out) {
  v1::GetOperatorRequest request;
  request.set_name(name);
  request.set_version(version);
  v1::Operator op;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::GetOperator, request, &op, "GetOperator");
  if (!status.ok()) return status;
  if (json) return JsonOut(op, out);
  const v1::OpTemplate& spec = op.spec();
  out << "op:        " << op.name() << (op.builtin() ? " (built-in)" : "") << "\n"
      << "version:   " << op.version()
      << (op.state().retired() ? " (retired: new trials may not run it)"
          : op.latest()        ? " (latest)"
                               : "")
      << "\n";
  if (!op.builtin()) {
    out << "owner:     " << OwnerText(op) << "\n"
        << "added:     " << AddedAtText(op.added_at()) << " by " << AddedByText(op) << "\n";
    if (op.state().has_readded_at()) {
      out << "added again: " << AddedAtText(op.state().readded_at()) << "\n";
    }
  }
  out << "entry:     " << spec.entry() << "\n"
      << "reference: " << OrDash(spec.reference_entry()) << "\n";
  for (const v1::OpArg& arg : spec.args()) {
    out << "arg:       " << arg.name() << " " << (arg.role().empty() ? "input" : arg.role()) << " "
        << (arg.dtype().empty() ? "float32" : arg.dtype()) << " ["
        << absl::StrJoin(arg.shape(), ", ") << "]";
    if (arg.range_size() == 2) out << " in [" << arg.range(0) << ", " << arg.range(1) << "]";
    out << "\n";
  }
  if (spec.has_atol() || spec.has_rtol()) {
    out << "tolerance: " << (spec.has_atol() ? absl::StrCat("atol ", spec.atol()) : "")
        << (spec.has_atol() && spec.has_rtol() ? ", " : "")
        << (spec.has_rtol() ? absl::StrCat("rtol ", spec.rtol()) : "") << "\n";
  }
  out << "shapes:    " << ShapesOf(spec) << " (default)\n"
      << "knobs:     " << KnobsText(spec) << "\n"
      << "cflags:    " << CflagsText(spec) << "\n";
  std::map<std::string, std::string> files(op.files().begin(), op.files().end());
  for (const auto& [file, content] : files)
    out << "file:      " << file << " (" << content.size() << " bytes)\n";
  return absl::OkStatus();
}

absl::StatusOr<catalog::KnobSpace> FetchKnobSpace(const TrackerClient& tracker) {
  v1::ListOperatorsResponse response;
  absl::Status status = Call(tracker, &v1::Tracker::StubInterface::ListOperators,
                             v1::ListOperatorsRequest(), &response, "ListOperators");
  if (!status.ok()) return status;
  return catalog::KnobSpace({response.ops().begin(), response.ops().end()});
}

absl::StatusOr<v1::Operator> FetchOperator(const TrackerClient& tracker, const std::string& name,
                                           const std::string& version) {
  v1::GetOperatorRequest request;
  request.set_name(name);
  request.set_version(version);
  v1::Operator op;
  absl::Status status =
      Call(tracker, &v1::Tracker::StubInterface::GetOperator, request, &op, "GetOperator");
  if (!status.ok()) return status;
  return op;
}

}  // namespace benchfarm::farmctl
