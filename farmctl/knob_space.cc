// KnobSpace: see knob_space.h.
#include "farmctl/knob_space.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "catalog/operator.h"
#include "google/protobuf/struct.pb.h"

namespace benchfarm::farmctl {

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

OpKnobs OpKnobsFromOperator(const v1::Operator& op) {
  OpKnobs entry;
  entry.op = op.name().empty() ? op.spec().op() : op.name();
  entry.version = op.version();
  entry.spec = op.spec();
  for (const v1::Knob& k : op.spec().knobs()) {
    Knob knob;
    knob.name = k.name();
    knob.numeric = !k.values().empty() &&
                   k.values(0).kind_case() == google::protobuf::Value::kNumberValue;
    for (const google::protobuf::Value& v : k.values()) knob.values.push_back(catalog::ValueText(v));
    knob.default_value = catalog::ValueText(k.default_());
    entry.knobs.push_back(std::move(knob));
  }
  return entry;
}

KnobTable KnobTableOf(const std::vector<v1::Operator>& ops) {
  KnobTable table;
  for (const v1::Operator& op : ops) {
    OpKnobs entry = OpKnobsFromOperator(op);
    std::string name = entry.op;
    table[name] = std::move(entry);
  }
  return table;
}

const KnobTable& SampleKnobs() {
  static const KnobTable* table = new KnobTable(KnobTableOf(catalog::BuiltinOperators()));
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
