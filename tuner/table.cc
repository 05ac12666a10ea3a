#include "tuner/table.h"

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "catalog/knob_space.h"

namespace benchfarm::tuner {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

google::protobuf::Value KnobValue(absl::string_view text) {
  google::protobuf::Value v;
  int64_t n = 0;
  if (absl::SimpleAtoi(text, &n)) {
    v.set_number_value(static_cast<double>(n));
  } else {
    v.set_string_value(std::string(text));
  }
  return v;
}

}  // namespace

absl::StatusOr<Table> ParseTable(absl::string_view text, const std::string& name) {
  Table t;
  t.name = name;
  std::vector<char> seen;
  bool header = false;
  int line_no = 0;
  int64_t size = 0;
  auto bad = [&](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": line ", line_no, ": ", why));
  };
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    if (absl::ConsumePrefix(&line, "#")) {
      if (header) continue;
      std::vector<absl::string_view> words =
          absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
      if (words.size() == 2 && words[0] == "op") t.spec.set_op(std::string(words[1]));
      if (!words.empty() && words[0] == "knob") {
        if (words.size() < 3) return bad("a knob needs a name and at least one value");
        v1::Knob* k = t.spec.add_knobs();
        k->set_name(std::string(words[1]));
        for (size_t i = 2; i < words.size(); ++i) *k->add_values() = KnobValue(words[i]);
        *k->mutable_default_() = k->values(0);
      }
      continue;
    }
    if (!header) {
      if (line != "index\tcost_s") return bad("expected the header row \"index<TAB>cost_s\"");
      if (t.spec.knobs_size() == 0) return bad("no knobs (\"# knob NAME VALUES...\" lines)");
      size = 1;
      for (const v1::Knob& k : t.spec.knobs()) {
        size *= k.values_size();
        if (size > kMaxTableConfigs) {
          return bad(absl::StrCat("the space has more than ", kMaxTableConfigs, " configs"));
        }
      }
      t.cost.assign(size, kInf);
      seen.assign(size, 0);
      header = true;
      continue;
    }
    std::vector<absl::string_view> cols = absl::StrSplit(line, '\t');
    int64_t index = 0;
    double cost = 0;
    if (cols.size() != 2 || !absl::SimpleAtoi(cols[0], &index)) {
      return bad("expected \"index<TAB>cost\"");
    }
    if (index < 0 || index >= size) {
      return bad(absl::StrCat("config ", index, " is outside the space (", size, " configs)"));
    }
    if (seen[index]) return bad(absl::StrCat("config ", index, " given twice"));
    seen[index] = 1;
    if (cols[1] == "inf") {
      cost = kInf;
    } else if (!absl::SimpleAtod(cols[1], &cost) || !(cost > 0) || !std::isfinite(cost)) {
      return bad(absl::StrCat("cost \"", cols[1], "\" is not a positive number or inf"));
    }
    t.cost[index] = cost;
  }
  if (!header) return absl::InvalidArgumentError(absl::StrCat(name, ": no header row"));
  for (int64_t i = 0; i < size; ++i) {
    if (!seen[i]) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": config ", i, " is missing"));
    }
  }
  t.optimum = kInf;
  for (int64_t i = 0; i < size; ++i) {
    if (t.cost[i] < t.optimum) {
      t.optimum = t.cost[i];
      t.best = i;
    }
  }
  if (t.best < 0) return absl::InvalidArgumentError(absl::StrCat(name, ": no successful config"));
  return t;
}

absl::StatusOr<Table> LoadTable(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::stringstream text;
  text << in.rdbuf();
  absl::string_view name(path);
  name.remove_prefix(path.find_last_of('/') + 1);  // npos + 1: the whole path
  absl::ConsumeSuffix(&name, ".tsv");
  return ParseTable(text.str(), std::string(name));
}

void WriteTable(const Table& table, const std::vector<std::string>& comment, std::ostream& out) {
  for (const std::string& line : comment) out << "# " << line << "\n";
  out << "# op " << table.spec.op() << "\n";
  for (const v1::Knob& k : table.spec.knobs()) {
    out << "# knob " << k.name();
    for (const google::protobuf::Value& v : k.values()) out << " " << catalog::ValueText(v);
    out << "\n";
  }
  out << "index\tcost_s\n";
  char buf[64];
  for (size_t i = 0; i < table.cost.size(); ++i) {
    if (std::isfinite(table.cost[i])) {
      std::snprintf(buf, sizeof(buf), "%.9g", table.cost[i]);
      out << i << "\t" << buf << "\n";
    } else {
      out << i << "\tinf\n";
    }
  }
}

Table SyntheticTable() {
  std::ostringstream text;
  text << "# op synthetic\n# knob a 1 2 4 8 16 32\n# knob b 1 2 4 8 16 32\n# knob c 1 2 4 8\n"
          "# knob order p q r\nindex\tcost_s\n";
  int64_t index = 0;
  // Index order: the first knob varies fastest.
  for (int order = 0; order < 3; ++order) {
    for (int lc = 0; lc < 4; ++lc) {
      for (int lb = 0; lb < 6; ++lb) {
        for (int la = 0; la < 6; ++la) {
          double cost = 1.0 + 0.04 * (la - 3) * (la - 3) + 0.03 * std::abs(lb - 4) + 0.05 * lc +
                        (order == 1   ? 0.02
                         : order == 2 ? 0.05
                                      : 0.0);
          if (lc == 3) cost += lb >= 4 ? -0.35 : 0.15;
          if (order == 2 && la >= 4) cost -= 0.12;
          char buf[64];
          std::snprintf(buf, sizeof(buf), "%.9g", cost);
          text << index++ << "\t" << buf << "\n";
        }
      }
    }
  }
  absl::StatusOr<Table> t = ParseTable(text.str(), "synthetic");
  return t.ok() ? *std::move(t) : Table{};
}

}  // namespace benchfarm::tuner
