// KnobSpace: see knob_space.h.
#include "farmctl/knob_space.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace benchfarm::farmctl {

// The text of crt/ops/knobs.json, generated into knobs_json.cc by the BUILD file's genrule.
extern const char kKnobsJson[];

namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

absl::Status Malformed(absl::string_view where, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("knobs.json: ", where, ": ", what));
}

const Value* Field(const Struct& s, const std::string& name) {
  auto it = s.fields().find(name);
  return it == s.fields().end() ? nullptr : &it->second;
}

// A JSON number that is an exact integer (knobs.json has no fractional knob values).
bool AsInteger(const Value& v, int64_t* out) {
  if (v.kind_case() != Value::kNumberValue) return false;
  double d = v.number_value();
  if (std::floor(d) != d || std::fabs(d) > 9.0e15) return false;
  *out = static_cast<int64_t>(d);
  return true;
}

absl::StatusOr<Knob> ParseKnob(const Value& value, const std::string& where) {
  if (value.kind_case() != Value::kStructValue) return Malformed(where, "not an object");
  const Struct& k = value.struct_value();
  const Value* name = Field(k, "name");
  const Value* values = Field(k, "values");
  const Value* def = Field(k, "default");
  if (name == nullptr || name->string_value().empty()) return Malformed(where, "no name");
  Knob knob;
  knob.name = name->string_value();
  std::string at = absl::StrCat(where, " (", knob.name, ")");
  if (values == nullptr || values->kind_case() != Value::kListValue ||
      values->list_value().values_size() == 0) {
    return Malformed(at, "values must be a non-empty list");
  }
  const ListValue& list = values->list_value();
  knob.numeric = list.values(0).kind_case() == Value::kNumberValue;
  for (const Value& v : list.values()) {
    int64_t n;
    if (knob.numeric) {
      if (!AsInteger(v, &n)) return Malformed(at, "values mix integers and other things");
      knob.values.push_back(absl::StrCat(n));
    } else {
      if (v.kind_case() != Value::kStringValue)
        return Malformed(at, "values mix strings and other things");
      knob.values.push_back(v.string_value());
    }
  }
  if (def == nullptr) return Malformed(at, "no default");
  std::string def_text;
  int64_t n;
  if (AsInteger(*def, &n)) {
    def_text = absl::StrCat(n);
  } else if (def->kind_case() == Value::kStringValue) {
    def_text = def->string_value();
  } else {
    return Malformed(at, "default is neither an integer nor a string");
  }
  if (!CheckKnobValue(knob, def_text).ok())
    return Malformed(at, "default is not one of the values");
  knob.default_value = def_text;
  return knob;
}

}  // namespace

const Knob* OpKnobs::Find(absl::string_view name) const {
  for (const Knob& k : knobs) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

int64_t OpKnobs::SpaceSize() const {
  int64_t size = 1;
  for (const Knob& k : knobs) size *= static_cast<int64_t>(k.values.size());
  return size;
}

absl::StatusOr<KnobTable> ParseKnobsJson(absl::string_view json) {
  Struct doc;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &doc, options);
  if (!parsed.ok()) return Malformed("document", std::string(parsed.message()));
  const Value* ops = Field(doc, "ops");
  if (ops == nullptr || ops->kind_case() != Value::kListValue)
    return Malformed("ops", "not a list");
  KnobTable table;
  for (int i = 0; i < ops->list_value().values_size(); ++i) {
    const Value& op_value = ops->list_value().values(i);
    std::string where = absl::StrCat("ops[", i, "]");
    if (op_value.kind_case() != Value::kStructValue) return Malformed(where, "not an object");
    const Struct& op = op_value.struct_value();
    const Value* name = Field(op, "op");
    if (name == nullptr || name->string_value().empty()) return Malformed(where, "no op name");
    OpKnobs entry;
    entry.op = name->string_value();
    const Value* knobs = Field(op, "knobs");
    if (knobs != nullptr) {
      if (knobs->kind_case() != Value::kListValue) return Malformed(where, "knobs is not a list");
      for (int k = 0; k < knobs->list_value().values_size(); ++k) {
        absl::StatusOr<Knob> knob =
            ParseKnob(knobs->list_value().values(k), absl::StrCat(where, ".knobs[", k, "]"));
        if (!knob.ok()) return knob.status();
        entry.knobs.push_back(std::move(*knob));
      }
    }
    std::string op_name = entry.op;
    if (!table.emplace(op_name, std::move(entry)).second) {
      return Malformed(where, absl::StrCat("op \"", op_name, "\" listed twice"));
    }
  }
  return table;
}

const KnobTable& SampleKnobs() {
  static const KnobTable* table = [] {
    absl::StatusOr<KnobTable> parsed = ParseKnobsJson(kKnobsJson);
    // The compiled-in file is checked by knob_space_test; an empty table only loses validation
    // and config indices, so never abort here.
    return new KnobTable(parsed.ok() ? std::move(*parsed) : KnobTable{});
  }();
  return *table;
}

absl::Status CheckKnobValue(const Knob& knob, absl::string_view text) {
  for (const std::string& v : knob.values) {
    if (v == text) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat("knob ", knob.name, "=", text, ": not one of ",
                                                 absl::StrJoin(knob.values, ", ")));
}

std::string KnobValueJson(absl::string_view text) {
  int64_t n;
  if (absl::SimpleAtoi(text, &n) && absl::StrCat(n) == text) return std::string(text);
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

int64_t ConfigIndex(const OpKnobs& op,
                    const google::protobuf::Map<std::string, std::string>& knobs) {
  for (const auto& [name, value] : knobs) {
    if (op.Find(name) == nullptr) return -1;
  }
  int64_t index = 0;
  int64_t stride = 1;
  for (const Knob& knob : op.knobs) {
    auto it = knobs.find(knob.name);
    const std::string& value = it == knobs.end() ? knob.default_value : it->second;
    auto pos = std::find(knob.values.begin(), knob.values.end(), value);
    if (pos == knob.values.end()) return -1;
    index += static_cast<int64_t>(pos - knob.values.begin()) * stride;
    stride *= static_cast<int64_t>(knob.values.size());
  }
  return index;
}

}  // namespace benchfarm::farmctl
