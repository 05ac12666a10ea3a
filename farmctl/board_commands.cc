// The `farmctl board ...` commands: see board_commands.h.
#include "farmctl/board_commands.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "catalog/operator.h"
#include "catalog/trial.h"
#include "device/measure.h"
#include "stats/cost_stats.h"

namespace benchfarm::farmctl {
namespace {

using device::Arg;

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

}  // namespace

absl::StatusOr<std::vector<Shape>> ParseShapes(absl::string_view text) {
  std::vector<Shape> shapes;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    Shape shape;
    for (absl::string_view dim : absl::StrSplit(part, 'x')) {
      int64_t v;
      if (!absl::SimpleAtoi(dim, &v) || v < 0 || v > (int64_t{1} << 28)) {
        return absl::InvalidArgumentError(
            absl::StrCat("--shape: \"", part, "\" is not a shape like 32x32"));
      }
      shape.push_back(v);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

absl::StatusOr<std::vector<v1::ArgSpec>> ArgSpecs(absl::string_view shapes,
                                                  absl::string_view dtypes) {
  if (shapes.empty()) {
    if (!dtypes.empty()) return absl::InvalidArgumentError("--dtype: give --shape too");
    return std::vector<v1::ArgSpec>();
  }
  ASSIGN_OR_RETURN(std::vector<Shape> parsed, ParseShapes(shapes));
  std::vector<std::string> names;
  if (!dtypes.empty()) names = absl::StrSplit(dtypes, ',');
  if (names.size() > 1 && names.size() != parsed.size()) {
    return absl::InvalidArgumentError(absl::StrCat("--dtype: ", names.size(), " dtypes for ",
                                                   parsed.size(),
                                                   " shapes (give one, or one each)"));
  }
  std::vector<v1::ArgSpec> args;
  for (size_t i = 0; i < parsed.size(); ++i) {
    v1::ArgSpec& arg = args.emplace_back();
    for (int64_t d : parsed[i]) arg.add_shape(d);
    if (names.empty()) continue;
    const std::string& name = names.size() == 1 ? names[0] : names[i];
    RETURN_IF_ERROR(catalog::ParseDtype("--dtype", name).status());
    arg.set_dtype(name);
  }
  return args;
}

std::string FormatShapes(const std::vector<Shape>& shapes) {
  return absl::StrJoin(shapes, ",", [](std::string* out, const Shape& s) {
    absl::StrAppend(out, absl::StrJoin(s, "x"));
  });
}

absl::StatusOr<std::vector<Shape>> DefaultShapes(absl::string_view op) {
  const v1::Operator* builtin = catalog::BuiltinKnobSpace().Find(op);
  if (builtin == nullptr) {
    std::vector<std::string> names;
    for (const v1::Operator& o : catalog::BuiltinOperators()) names.push_back(o.name());
    return absl::NotFoundError(absl::StrCat("no default shapes for \"", op,
                                            "\" (sample operators: ", absl::StrJoin(names, ", "),
                                            "); give --shape"));
  }
  return catalog::DefaultShapes(builtin->spec());
}

absl::StatusOr<Arg> ParseCallArg(absl::string_view text) {
  int64_t i;
  double d;
  if (absl::ConsumePrefix(&text, "str:")) return Arg::Str(text);
  if (absl::ConsumePrefix(&text, "int:")) {
    if (!absl::SimpleAtoi(text, &i))
      return absl::InvalidArgumentError(absl::StrCat("not an int: ", text));
    return Arg::Int(i);
  }
  if (absl::ConsumePrefix(&text, "float:")) {
    if (!absl::SimpleAtod(text, &d))
      return absl::InvalidArgumentError(absl::StrCat("not a float: ", text));
    return Arg::Float(d);
  }
  if (absl::SimpleAtoi(text, &i)) return Arg::Int(i);
  if (absl::SimpleAtod(text, &d)) return Arg::Float(d);
  return absl::InvalidArgumentError(
      absl::StrCat("argument \"", text, "\": use int:N, float:X, str:TEXT or a number"));
}

absl::StatusOr<TimeResult> TimeOperator(device::RpcClient& rpc, device::BoardTimer& timer,
                                        const TimeRequest& request, absl::Time deadline) {
  if (request.shapes.size() < 2) {
    return absl::InvalidArgumentError("an operator takes at least one input and an output");
  }
  TimeResult result;
  result.op = request.op;
  result.shapes = request.shapes;
  result.measure = request.measure;
  // Optional: a board without benchfarm.DeviceInfo (TVM's CRT) is timed all the same.
  absl::StatusOr<device::DeviceInfo> info = rpc.DescribeBoard(deadline);
  if (info.ok()) result.info = *info;
  device::MeasureRequest m;
  m.function = request.op;
  m.reference = absl::StrCat(request.op, "_reference");
  m.args = device::Float32Args(request.shapes);
  m.seed = request.seed;
  m.check = request.check;
  m.time_on_mismatch = true;
  m.options = request.measure;
  m.target_rel_ci = request.target_rel_ci;
  if (request.budget > absl::ZeroDuration()) m.budget = request.budget;
  if (request.max_repeat > 0) m.max_repeat = request.max_repeat;
  result.target_rel_ci = request.target_rel_ci;
  result.budget = m.budget;
  result.max_repeat = m.max_repeat;
  ASSIGN_OR_RETURN(device::MeasureOutcome outcome, device::Measure(rpc, m, deadline, &timer));
  result.costs = outcome.costs;
  result.cycles = outcome.cycles;
  result.instructions = outcome.instructions;
  result.max_abs_error = outcome.max_abs_error;
  if (outcome.checked) result.check = outcome.matches ? "ok" : "mismatch";
  result.number = outcome.number;
  result.rounds = outcome.rounds;
  result.stop = outcome.stop;
  result.wall_over_cpu = outcome.WallOverCpu();
  result.stats =
      stats::CostStatsOf(result.costs, outcome.round_sizes, {}, result.info.timer_resolution_s,
                         stats::kDefaultUnstableThreshold, result.wall_over_cpu);
  return result;
}

std::string CyclesText(double seconds, double cpu_hz) {
  const double cycles = std::round(seconds * cpu_hz);
  if (!std::isfinite(cycles)) return "? cycles";
  if (cycles >= 1e18) return absl::StrFormat("%.3g cycles", cycles);
  std::string digits = absl::StrCat(static_cast<int64_t>(cycles));
  std::string grouped;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
    grouped += digits[i];
  }
  return grouped + " cycles";
}

std::string UnitsText(double seconds, double hz, absl::string_view emulation) {
  std::string text = CyclesText(seconds, hz);
  if (emulation == "qemu-icount") text.replace(text.size() - 6, 6, "instructions");
  return text;
}

std::string FormatInfo(const device::DeviceInfo& info, absl::string_view board, bool json) {
  if (json) {
    std::vector<std::string> fields;
    fields.push_back(absl::StrCat("\"board\": ", base::JsonQuote(board)));
    for (const auto& [key, value] : info.fields) {
      fields.push_back(absl::StrCat(base::JsonQuote(key), ": ", base::JsonQuote(value)));
    }
    return absl::StrCat("{", absl::StrJoin(fields, ", "), "}\n");
  }
  std::string out = absl::StrFormat("%-20s %s\n", "board", board);
  for (const auto& [key, value] : info.fields) {
    absl::StrAppendFormat(&out, "%-20s %s\n", key, value);
  }
  return out;
}

namespace {

// FormatTime's JSON object, on one line.
std::string TimeJson(const TimeResult& r, absl::string_view board) {
  const v1::CostStats& s = r.stats;
  const bool adaptive = r.target_rel_ci > 0;
  std::vector<std::string> costs;
  for (double c : r.costs) costs.push_back(JsonNumber(c));
  std::string out = absl::StrCat(
      "{\"board\": ", base::JsonQuote(board),
      ", \"board_kind\": ", base::JsonQuote(r.info.board_kind),
      ", \"firmware_hash\": ", base::JsonQuote(r.info.firmware_hash),
      ", \"benchfarm\": ", r.info.benchfarm ? "true" : "false", ", \"op\": ", base::JsonQuote(r.op),
      ", \"shapes\": ", base::JsonQuote(FormatShapes(r.shapes)), ", \"number\": ", r.measure.number,
      ", \"repeat\": ", r.measure.repeat, ", \"min_repeat_ms\": ", r.measure.min_repeat_ms);
  absl::StrAppend(&out, ", \"target_rel_ci\": ", JsonNumber(r.target_rel_ci),
                  ", \"budget_ms\": ", adaptive ? absl::ToInt64Milliseconds(r.budget) : 0,
                  ", \"max_repeat\": ", adaptive ? r.max_repeat : 0);
  absl::StrAppend(&out, ", \"costs\": [", absl::StrJoin(costs, ", "), "], \"count\": ", s.count(),
                  ", \"mean\": ", JsonNumber(s.mean_s()),
                  ", \"median\": ", JsonNumber(s.median_s()), ", \"min\": ", JsonNumber(s.min_s()),
                  ", \"max\": ", JsonNumber(s.max_s()), ", \"stddev\": ", JsonNumber(s.stddev_s()),
                  ", \"cv\": ", JsonNumber(s.cv()), ", \"ci_low\": ", JsonNumber(s.ci_low_s()),
                  ", \"ci_high\": ", JsonNumber(s.ci_high_s()),
                  ", \"ci_level\": ", JsonNumber(s.ci_level()),
                  ", \"rel_half_width\": ", JsonNumber(s.rel_half_width()),
                  ", \"unstable\": ", s.unstable() ? "true" : "false",
                  ", \"within_rel_half_width\": ", JsonNumber(s.within_rel_half_width()),
                  ", \"between_rel_half_width\": ", JsonNumber(s.between_rel_half_width()),
                  ", \"rounds_disagree\": ", s.rounds_disagree() ? "true" : "false");
  std::vector<std::string> cycles, instructions;
  for (double c : r.cycles) cycles.push_back(JsonNumber(c));
  for (double i : r.instructions) instructions.push_back(JsonNumber(i));
  absl::StrAppend(&out, ", \"timer\": ", base::JsonQuote(r.timer),
                  ", \"emulation\": ", base::JsonQuote(r.emulation),
                  ", \"units_hz\": ", JsonNumber(r.units_hz), ", \"model_cycles\": [",
                  absl::StrJoin(cycles, ", "), "], \"model_instructions\": [",
                  absl::StrJoin(instructions, ", "), "]");
  absl::StrAppend(&out, ", \"measured\": {\"number\": ", r.number,
                  ", \"repeats\": ", r.costs.size(), ", \"rounds\": ", r.rounds,
                  ", \"stop\": ", base::JsonQuote(r.stop),
                  "}, \"wall_over_cpu\": ", JsonNumber(r.wall_over_cpu));
  absl::StrAppend(&out, ", \"check\": ", base::JsonQuote(r.check),
                  ", \"max_abs_error\": ", JsonNumber(r.max_abs_error), "}\n");
  return out;
}

// FormatTime's table.
std::string TimeTable(const TimeResult& r, absl::string_view board) {
  const v1::CostStats& s = r.stats;
  const bool adaptive = r.target_rel_ci > 0;
  std::string out;
  if (r.info.benchfarm) {
    absl::StrAppendFormat(&out, "board    %s (%s, firmware %s)\n", board, r.info.board_kind,
                          r.info.firmware_hash);
  } else {
    absl::StrAppendFormat(&out, "board    %s (no benchfarm.DeviceInfo: unknown %s)\n", board,
                          device::kUnknownWithoutDeviceInfo);
  }
  absl::StrAppendFormat(&out, "op       %s  shapes %s\n", r.op, FormatShapes(r.shapes));
  if (adaptive) {
    absl::StrAppendFormat(&out,
                          "measure  adaptive: target +-%g %%  budget %d ms  max_repeat %d  "
                          "min_repeat_ms %d (timed on the board)\n",
                          r.target_rel_ci * 100, absl::ToInt64Milliseconds(r.budget), r.max_repeat,
                          r.measure.min_repeat_ms);
  } else {
    absl::StrAppendFormat(&out,
                          "measure  number %d  repeat %d  min_repeat_ms %d (timed on the board)\n",
                          r.measure.number, r.measure.repeat, r.measure.min_repeat_ms);
  }
  if (r.costs.size() <= 32) {
    absl::StrAppendFormat(&out, "\n  %-8s %14s\n", "repeat", "cost (us)");
    for (size_t i = 0; i < r.costs.size(); ++i) {
      absl::StrAppendFormat(&out, "  %-8d %14.3f\n", i, r.costs[i] * 1e6);
    }
  }
  absl::StrAppendFormat(&out, "\n  %-8s %14d\n", "count", s.count());
  for (const auto& [name, value] : {std::pair<const char*, double>{"mean", s.mean_s()},
                                    {"median", s.median_s()},
                                    {"min", s.min_s()},
                                    {"max", s.max_s()},
                                    {"stddev", s.stddev_s()}}) {
    absl::StrAppendFormat(&out, "  %-8s %14.3f us\n", name, value * 1e6);
  }
  absl::StrAppendFormat(&out, "  %-8s %14.2f %%\n", "cv", s.cv() * 100);
  if (s.count() > 0) {
    absl::StrAppendFormat(&out, "  %-8s [%.3f, %.3f] us at %.1f %%: %s%s\n", "interval",
                          s.ci_low_s() * 1e6, s.ci_high_s() * 1e6, s.ci_level() * 100,
                          stats::PlusMinus(s), s.unstable() ? " UNSTABLE" : "");
    if (s.rounds() > 1) {
      absl::StrAppendFormat(
          &out, "  %-8s within the run +-%.2f %%, between %d rounds +-%.2f %%%s\n", "",
          s.within_rel_half_width() * 100, s.rounds(), s.between_rel_half_width() * 100,
          s.rounds_disagree() ? " (the rounds disagree)" : "");
    }
  }
  absl::StrAppendFormat(&out, "\nresult   %s", stats::CostText(s));
  const bool instructions = r.emulation == "qemu-icount";
  if (s.count() > 0 && r.units_hz > 0) {
    absl::StrAppendFormat(&out, " = %s at %.6g %s",
                          UnitsText(s.median_s(), r.units_hz, r.emulation), r.units_hz / 1e6,
                          instructions ? "M instructions/s" : "MHz");
  }
  out += "\n";
  std::string timer = r.timer;
  if (auto it = r.info.fields.find("timer"); timer.empty() && it != r.info.fields.end()) {
    timer = it->second;
  }
  if (!timer.empty()) {
    absl::StrAppendFormat(&out, "timer    %s%s\n", timer,
                          r.emulation.empty() ? "" : absl::StrCat(" (", r.emulation, ")"));
  }
  if (!r.cycles.empty() && !r.instructions.empty()) {
    const double cycles = Median(r.cycles), per_call = Median(r.instructions);
    absl::StrAppendFormat(
        &out, "model    %.1f cycles, %.1f instructions per call (%.2f per instruction)\n", cycles,
        per_call, per_call > 0 ? cycles / per_call : 0.0);
  }
  absl::StrAppendFormat(&out, "number   %d calls per repeat%s\n", r.number,
                        adaptive ? " (calibrated)" : "");
  absl::StrAppendFormat(&out, "repeats  %d in %d round%s, stopped: %s\n", r.costs.size(), r.rounds,
                        r.rounds == 1 ? "" : "s", r.stop.empty() ? "-" : r.stop);
  if (r.wall_over_cpu > 0) {
    absl::StrAppendFormat(&out,
                          "wall/cpu %.3f (wall time over the board's CPU time while timing)\n",
                          r.wall_over_cpu);
  }
  absl::StrAppendFormat(&out, "check    %s", r.check);
  if (r.check != "skipped") {
    absl::StrAppendFormat(&out, " (max abs error %.3g vs %s_reference)", r.max_abs_error, r.op);
  }
  out += "\n";
  return out;
}

}  // namespace

std::string FormatTime(const TimeResult& r, absl::string_view board, bool json) {
  return json ? TimeJson(r, board) : TimeTable(r, board);
}

std::string FormatCallResult(const Arg& value, bool json) {
  using device::TypeCode;
  std::string type = device::TypeCodeName(value.type_code());
  std::string text;
  switch (value.type_code()) {
    case TypeCode::kInt:
    case TypeCode::kBool:
      text = absl::StrCat(value.int_value());
      break;
    case TypeCode::kFloat:
      text = JsonNumber(value.float_value());
      break;
    case TypeCode::kStr:
    case TypeCode::kBytes:
      text = value.str();
      break;
    case TypeCode::kNull:
      text = "";
      break;
    default:
      text = absl::StrFormat("0x%x", value.handle());
  }
  if (json) {
    return absl::StrCat("{\"type\": ", base::JsonQuote(type),
                        ", \"value\": ", base::JsonQuote(text), "}\n");
  }
  if (value.type_code() == TypeCode::kNull) return "(void)\n";
  return absl::StrCat(text, text.empty() || text.back() != '\n' ? "\n" : "");
}

}  // namespace benchfarm::farmctl
