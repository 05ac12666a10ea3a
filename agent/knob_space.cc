#include "agent/knob_space.h"

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"

namespace benchfarm::agent {

std::string ValueText(const google::protobuf::Value& value) {
  if (value.kind_case() == google::protobuf::Value::kNumberValue) {
    double d = value.number_value();
    if (d == static_cast<double>(static_cast<int64_t>(d))) {
      return std::to_string(static_cast<int64_t>(d));
    }
    return absl::StrCat(d);
  }
  if (value.kind_case() == google::protobuf::Value::kStringValue) return value.string_value();
  if (value.kind_case() == google::protobuf::Value::kBoolValue) {
    return value.bool_value() ? "1" : "0";
  }
  return "";
}

absl::StatusOr<KnobSpace> KnobSpace::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("knob space ", path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<KnobSpace> space = Parse(text.str());
  if (!space.ok()) {
    return absl::Status(space.status().code(),
                        absl::StrCat("knob space ", path, ": ", space.status().message()));
  }
  return space;
}

absl::StatusOr<KnobSpace> KnobSpace::Parse(const std::string& json) {
  KnobSpace space;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(json, &space.space_, options);
  if (!status.ok()) return absl::InvalidArgumentError(std::string(status.message()));
  if (space.space_.ops().empty()) return absl::InvalidArgumentError("no ops");
  return space;
}

const v1::OpTemplate* KnobSpace::Find(const std::string& op) const {
  for (const v1::OpTemplate& t : space_.ops()) {
    if (t.op() == op) return &t;
  }
  return nullptr;
}

absl::StatusOr<Candidate> KnobSpace::Resolve(const v1::TemplateOperator& op) const {
  Candidate c;
  c.op = Find(op.op());
  if (c.op == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("op.template_op.op: unknown operator \"", op.op(), "\""));
  }
  for (const auto& [name, value] : op.knobs()) {
    bool known = false;
    for (const v1::Knob& k : c.op->knobs()) known = known || k.name() == name;
    if (!known) {
      return absl::InvalidArgumentError(
          absl::StrCat("op.template_op.knobs: ", op.op(), " has no knob \"", name, "\""));
    }
  }
  c.function = absl::StrCat("bf_cand_", op.op());
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const v1::Knob& k : c.op->knobs()) {
    auto given = op.knobs().find(k.name());
    std::string value = given == op.knobs().end() ? ValueText(k.default_())
                                                  : std::string(absl::StripAsciiWhitespace(given->second));
    bool allowed = false;
    std::vector<std::string> choices;
    for (const google::protobuf::Value& v : k.values()) {
      choices.push_back(ValueText(v));
      allowed = allowed || choices.back() == value;
    }
    if (!allowed) {
      return absl::InvalidArgumentError(
          absl::StrCat("op.template_op.knobs: ", op.op(), " knob ", k.name(), " = \"", value,
                       "\" is not one of ", absl::StrJoin(choices, ", ")));
    }
    c.knobs.emplace_back(k.name(), value);
    absl::StrAppend(&c.function, "_", value);
    replacements.emplace_back(absl::StrCat("{", k.name(), "}"), value);
  }
  replacements.emplace_back("{fn}", c.function);
  c.instantiate = absl::StrReplaceAll(c.op->instantiate(), replacements);
  return c;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> KnobSpace::DefaultShapes(
    const std::string& op) const {
  const v1::OpTemplate* t = Find(op);
  if (t == nullptr) return absl::NotFoundError(absl::StrCat("unknown operator \"", op, "\""));
  std::map<std::string, int64_t> dims(t->dims().begin(), t->dims().end());
  // Derived dims are "A - B + 1"-style sums of dims and integers.
  for (const auto& [name, expr] : t->derived()) {
    int64_t total = 0;
    int sign = 1;
    for (absl::string_view token : absl::StrSplit(expr, ' ', absl::SkipEmpty())) {
      if (token == "+") {
        sign = 1;
      } else if (token == "-") {
        sign = -1;
      } else {
        int64_t v = 0;
        if (!absl::SimpleAtoi(token, &v)) {
          auto d = dims.find(std::string(token));
          if (d == dims.end()) {
            return absl::InvalidArgumentError(
                absl::StrCat(op, ": derived dim ", name, " = \"", expr, "\" is not understood"));
          }
          v = d->second;
        }
        total += sign * v;
      }
    }
    dims[name] = total;
  }
  std::vector<std::vector<int64_t>> shapes;
  for (const v1::OpArg& arg : t->args()) {
    std::vector<int64_t> shape;
    for (const std::string& d : arg.shape()) {
      auto it = dims.find(d);
      if (it == dims.end()) {
        return absl::InvalidArgumentError(absl::StrCat(op, ": arg ", arg.name(), " names unknown dim ", d));
      }
      shape.push_back(it->second);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

}  // namespace benchfarm::agent
