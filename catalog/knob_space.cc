// Knob spaces: see knob_space.h.
#include "catalog/knob_space.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/json.h"
#include "base/status_macros.h"
#include "google/protobuf/util/json_util.h"

namespace benchfarm::catalog {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

// Calls `use` with the value's text (see ValueText), a number's or a bool's formatted on the stack.
template <typename Use>
auto WithValueText(const google::protobuf::Value& value, Use use) {
  switch (value.kind_case()) {
    case google::protobuf::Value::kNumberValue: {
      const double d = value.number_value();
      if (d == static_cast<double>(static_cast<int64_t>(d))) {
        return use(absl::AlphaNum(static_cast<int64_t>(d)).Piece());
      }
      return use(absl::AlphaNum(d).Piece());
    }
    case google::protobuf::Value::kStringValue:
      return use(absl::string_view(value.string_value()));
    case google::protobuf::Value::kBoolValue:
      return use(absl::string_view(value.bool_value() ? "1" : "0"));
    default:
      return use(absl::string_view());
  }
}

// `value` (stripped) is one the knob allows; else the error naming them.
absl::Status CheckKnobValue(const v1::OpTemplate& spec, const v1::Knob& knob,
                            absl::string_view value) {
  if (Allows(knob, value)) return absl::OkStatus();
  return Invalid("op.template_op.knobs",
                 absl::StrCat(spec.op(), " knob ", knob.name(), " = \"", value, "\" is not one of ",
                              ValuesText(knob)));
}

}  // namespace

bool ValueIs(const google::protobuf::Value& value, absl::string_view text) {
  return WithValueText(value, [text](absl::string_view t) { return t == text; });
}

std::string ValueText(const google::protobuf::Value& value) {
  return WithValueText(value, [](absl::string_view t) { return std::string(t); });
}

std::string KnobValueJson(absl::string_view text) {
  int64_t n;
  if (absl::SimpleAtoi(text, &n) && absl::StrCat(n) == text) return std::string(text);
  return base::JsonQuote(text);
}

bool IsNumeric(const v1::Knob& knob) {
  return !knob.values().empty() &&
         knob.values(0).kind_case() == google::protobuf::Value::kNumberValue;
}

bool Allows(const v1::Knob& knob, absl::string_view text) {
  for (const google::protobuf::Value& v : knob.values()) {
    if (ValueIs(v, text)) return true;
  }
  return false;
}

std::string ValuesText(const v1::Knob& knob) {
  std::vector<std::string> values;
  for (const google::protobuf::Value& v : knob.values()) values.push_back(ValueText(v));
  return absl::StrJoin(values, ", ");
}

std::string FunctionPiece(const v1::Knob& knob, absl::string_view value) {
  if (!knob.cflag()) return absl::StrReplaceAll(value, {{"-", "m"}});
  absl::string_view rest = value;
  if (absl::ConsumePrefix(&rest, "-") && !rest.empty() && rest.size() <= 8 &&
      std::all_of(rest.begin(), rest.end(),
                  [](char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)); })) {
    return std::string(rest);
  }
  for (int v = 0; v < knob.values_size(); ++v) {
    if (ValueIs(knob.values(v), value)) return absl::StrCat("o", v);
  }
  return "o";  // not a value of the knob: ResolveKnobs refuses it first
}

const v1::Knob* FindKnob(const v1::OpTemplate& spec, absl::string_view name) {
  for (const v1::Knob& k : spec.knobs()) {
    if (k.name() == name) return &k;
  }
  return nullptr;
}

int64_t SpaceSize(const v1::OpTemplate& spec) {
  int64_t size = 1;
  for (const v1::Knob& k : spec.knobs()) size *= k.values_size();
  return size;
}

absl::Status CheckKnobs(const v1::OpTemplate& spec,
                        const google::protobuf::Map<std::string, std::string>& knobs) {
  for (const auto& [name, value] : knobs) {
    if (FindKnob(spec, name) == nullptr) {
      return Invalid("op.template_op.knobs",
                     absl::StrCat(spec.op(), " has no knob \"", name, "\""));
    }
  }
  if (knobs.empty()) return absl::OkStatus();
  for (const v1::Knob& k : spec.knobs()) {
    auto given = knobs.find(k.name());
    if (given != knobs.end()) {
      RETURN_IF_ERROR(CheckKnobValue(spec, k, absl::StripAsciiWhitespace(given->second)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ResolveKnobs(
    const v1::OpTemplate& spec, const google::protobuf::Map<std::string, std::string>& knobs) {
  RETURN_IF_ERROR(CheckKnobs(spec, knobs));
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(spec.knobs_size());
  for (const v1::Knob& k : spec.knobs()) {
    auto given = knobs.find(k.name());
    if (given != knobs.end()) {
      out.emplace_back(k.name(), absl::StripAsciiWhitespace(given->second));
    } else {
      const std::string value = ValueText(k.default_());
      RETURN_IF_ERROR(CheckKnobValue(spec, k, value));
      out.emplace_back(k.name(), value);
    }
  }
  return out;
}

int64_t ConfigIndex(const v1::OpTemplate& spec,
                    const google::protobuf::Map<std::string, std::string>& knobs) {
  for (const auto& [name, value] : knobs) {
    if (FindKnob(spec, name) == nullptr) return -1;
  }
  int64_t index = 0;
  int64_t stride = 1;
  for (const v1::Knob& k : spec.knobs()) {
    auto given = knobs.find(k.name());
    const std::string value = given == knobs.end() ? ValueText(k.default_()) : given->second;
    int position = 0;
    while (position < k.values_size() && !ValueIs(k.values(position), value)) ++position;
    if (position == k.values_size()) return -1;
    index += position * stride;
    stride *= k.values_size();
  }
  return index;
}

std::map<std::string, std::string> KnobsOfIndex(const v1::OpTemplate& spec, int64_t index) {
  std::map<std::string, std::string> out;
  for (const v1::Knob& k : spec.knobs()) {
    const int64_t n = k.values_size();
    out[k.name()] = ValueText(k.values(static_cast<int>(index % n)));
    index /= n;
  }
  return out;
}

KnobSpace::KnobSpace(std::vector<v1::Operator> ops) {
  for (v1::Operator& op : ops) {
    if (op.name().empty()) op.set_name(op.spec().op());
    const v1::Operator* known = Find(op.name());
    if (known != nullptr) {
      ops_[known - ops_.data()] = std::move(op);
    } else {
      ops_.push_back(std::move(op));
    }
  }
}

absl::StatusOr<KnobSpace> KnobSpace::Parse(absl::string_view json) {
  v1::KnobSpace space;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(json), &space, options);
  if (!status.ok()) return absl::InvalidArgumentError(std::string(status.message()));
  if (space.ops().empty()) return absl::InvalidArgumentError("no ops");
  std::vector<v1::Operator> ops;
  for (v1::OpTemplate& spec : *space.mutable_ops())
    *ops.emplace_back().mutable_spec() = std::move(spec);
  return KnobSpace(std::move(ops));
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

const v1::Operator* KnobSpace::Find(absl::string_view op) const {
  for (const v1::Operator& entry : ops_) {
    if (entry.name() == op) return &entry;
  }
  return nullptr;
}

absl::StatusOr<FeatureProduct> ParseFeature(const v1::OpTemplate& spec, absl::string_view expr) {
  FeatureProduct product;
  int factors = 0;
  for (absl::string_view factor : absl::StrSplit(expr, '*')) {
    factor = absl::StripAsciiWhitespace(factor);
    ++factors;
    int64_t number = 0;
    if (absl::SimpleAtoi(factor, &number)) {
      if (number <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("\"", expr, "\": ", number, " is not a positive whole number"));
      }
      product.constant *= static_cast<double>(number);
      continue;
    }
    int k = 0;
    for (; k < spec.knobs_size() && spec.knobs(k).name() != factor; ++k) {
    }
    if (k == spec.knobs_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", expr, "\": \"", factor, "\" is neither a knob nor a whole number"));
    }
    if (!IsNumeric(spec.knobs(k))) {
      return absl::InvalidArgumentError(
          absl::StrCat("\"", expr, "\": knob ", factor, " has values that are not integers"));
    }
    product.knobs.push_back(k);
  }
  if (factors == 0 || product.knobs.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("\"", expr, "\": name at least one knob"));
  }
  return product;
}

absl::Status CheckFeatures(const v1::OpTemplate& spec) {
  if (spec.features_size() > kMaxFeatures) {
    return absl::InvalidArgumentError(absl::StrCat("features: more than ", kMaxFeatures));
  }
  for (const auto& [name, expr] : spec.features()) {
    bool identifier = !name.empty() && !absl::ascii_isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name)
      identifier &= absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
    if (!identifier) {
      return absl::InvalidArgumentError(
          absl::StrCat("features: \"", name, "\" is not a C identifier"));
    }
    absl::StatusOr<FeatureProduct> p = ParseFeature(spec, expr);
    if (!p.ok())
      return absl::InvalidArgumentError(
          absl::StrCat("features.", name, ": ", p.status().message()));
  }
  return absl::OkStatus();
}

}  // namespace benchfarm::catalog
