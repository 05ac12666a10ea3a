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
#include "device/measure.h"
#include "base/status_macros.h"

namespace benchfarm::farmctl {
namespace {

using device::Arg;

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string JsonNumber(double v) { return std::isfinite(v) ? absl::StrFormat("%.9g", v) : "null"; }

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

std::string FormatShapes(const std::vector<Shape>& shapes) {
  return absl::StrJoin(shapes, ",", [](std::string* out, const Shape& s) {
    absl::StrAppend(out, absl::StrJoin(s, "x"));
  });
}

absl::StatusOr<std::vector<Shape>> DefaultShapes(absl::string_view op) {
  if (op == "add") return std::vector<Shape>{{1024}, {1024}, {1024}};
  if (op == "matmul") return std::vector<Shape>{{32, 32}, {32, 32}, {32, 32}};
  if (op == "conv2d") return std::vector<Shape>{{1, 4, 16, 16}, {8, 4, 3, 3}, {1, 8, 14, 14}};
  return absl::NotFoundError(
      absl::StrCat("no default shapes for \"", op, "\" (sample operators: add, matmul, conv2d); "
                   "give --shape"));
}

absl::StatusOr<Arg> ParseCallArg(absl::string_view text) {
  int64_t i;
  double d;
  if (absl::ConsumePrefix(&text, "str:")) return Arg::Str(text);
  if (absl::ConsumePrefix(&text, "int:")) {
    if (!absl::SimpleAtoi(text, &i)) return absl::InvalidArgumentError(absl::StrCat("not an int: ", text));
    return Arg::Int(i);
  }
  if (absl::ConsumePrefix(&text, "float:")) {
    if (!absl::SimpleAtod(text, &d)) return absl::InvalidArgumentError(absl::StrCat("not a float: ", text));
    return Arg::Float(d);
  }
  if (absl::SimpleAtoi(text, &i)) return Arg::Int(i);
  if (absl::SimpleAtod(text, &d)) return Arg::Float(d);
  return absl::InvalidArgumentError(
      absl::StrCat("argument \"", text, "\": use int:N, float:X, str:TEXT or a number"));
}

absl::StatusOr<TimeResult> TimeOperator(device::RpcClient& rpc, const TimeRequest& request,
                                        absl::Time deadline) {
  if (request.shapes.size() < 2) {
    return absl::InvalidArgumentError("an operator takes at least one input and an output");
  }
  TimeResult result;
  result.op = request.op;
  result.shapes = request.shapes;
  result.measure = request.measure;
  absl::StatusOr<device::DeviceInfo> info = rpc.GetDeviceInfo(deadline);
  if (info.ok()) result.info = *info;
  device::MeasureRequest m;
  m.function = request.op;
  m.reference = absl::StrCat(request.op, "_reference");
  m.shapes = request.shapes;
  m.seed = request.seed;
  m.check = request.check;
  m.time_on_mismatch = true;
  m.options = request.measure;
  ASSIGN_OR_RETURN(device::MeasureOutcome outcome, device::Measure(rpc, m, deadline));
  result.costs = outcome.costs;
  result.max_abs_error = outcome.max_abs_error;
  if (outcome.checked) result.check = outcome.matches ? "ok" : "mismatch";

  std::vector<double> sorted = result.costs;
  std::sort(sorted.begin(), sorted.end());
  double sum = 0;
  for (double c : sorted) sum += c;
  result.mean = sum / sorted.size();
  result.min = sorted.front();
  result.max = sorted.back();
  result.median = sorted.size() % 2 ? sorted[sorted.size() / 2]
                                    : (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  double var = 0;
  for (double c : sorted) var += (c - result.mean) * (c - result.mean);
  result.stddev = sorted.size() > 1 ? std::sqrt(var / (sorted.size() - 1)) : 0.0;
  return result;
}

std::string FormatInfo(const device::DeviceInfo& info, absl::string_view board, bool json) {
  if (json) {
    std::vector<std::string> fields;
    fields.push_back(absl::StrCat("\"board\": ", JsonString(board)));
    for (const auto& [key, value] : info.fields) {
      fields.push_back(absl::StrCat(JsonString(key), ": ", JsonString(value)));
    }
    return absl::StrCat("{", absl::StrJoin(fields, ", "), "}\n");
  }
  std::string out = absl::StrFormat("%-20s %s\n", "board", board);
  for (const auto& [key, value] : info.fields) {
    absl::StrAppendFormat(&out, "%-20s %s\n", key, value);
  }
  return out;
}

std::string FormatTime(const TimeResult& r, absl::string_view board, bool json) {
  if (json) {
    std::vector<std::string> costs;
    for (double c : r.costs) costs.push_back(JsonNumber(c));
    return absl::StrCat(
        "{\"board\": ", JsonString(board), ", \"board_kind\": ", JsonString(r.info.board_kind),
        ", \"firmware_hash\": ", JsonString(r.info.firmware_hash), ", \"op\": ",
        JsonString(r.op), ", \"shapes\": ", JsonString(FormatShapes(r.shapes)),
        ", \"number\": ", r.measure.number, ", \"repeat\": ", r.measure.repeat,
        ", \"min_repeat_ms\": ", r.measure.min_repeat_ms, ", \"costs\": [",
        absl::StrJoin(costs, ", "), "], \"mean\": ", JsonNumber(r.mean),
        ", \"median\": ", JsonNumber(r.median), ", \"min\": ", JsonNumber(r.min),
        ", \"max\": ", JsonNumber(r.max), ", \"stddev\": ", JsonNumber(r.stddev),
        ", \"check\": ", JsonString(r.check), ", \"max_abs_error\": ",
        JsonNumber(r.max_abs_error), "}\n");
  }
  std::string out;
  absl::StrAppendFormat(&out, "board    %s (%s, firmware %s)\n", board, r.info.board_kind,
                        r.info.firmware_hash);
  absl::StrAppendFormat(&out, "op       %s  shapes %s\n", r.op, FormatShapes(r.shapes));
  absl::StrAppendFormat(&out, "measure  number %d  repeat %d  min_repeat_ms %d (timed on the board)\n",
                        r.measure.number, r.measure.repeat, r.measure.min_repeat_ms);
  absl::StrAppendFormat(&out, "\n  %-8s %14s\n", "repeat", "cost (us)");
  for (size_t i = 0; i < r.costs.size(); ++i) {
    absl::StrAppendFormat(&out, "  %-8d %14.3f\n", i, r.costs[i] * 1e6);
  }
  absl::StrAppendFormat(&out, "\n  %-8s %14.3f\n  %-8s %14.3f\n  %-8s %14.3f\n  %-8s %14.3f\n",
                        "mean", r.mean * 1e6, "median", r.median * 1e6, "min", r.min * 1e6,
                        "stddev", r.stddev * 1e6);
  absl::StrAppendFormat(&out, "\ncheck    %s", r.check);
  if (r.check != "skipped") {
    absl::StrAppendFormat(&out, " (max abs error %.3g vs %s_reference)", r.max_abs_error, r.op);
  }
  out += "\n";
  return out;
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
    return absl::StrCat("{\"type\": ", JsonString(type), ", \"value\": ", JsonString(text), "}\n");
  }
  if (value.type_code() == TypeCode::kNull) return "(void)\n";
  return absl::StrCat(text, text.empty() || text.back() != '\n' ? "\n" : "");
}

}  // namespace benchfarm::farmctl
