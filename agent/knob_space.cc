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
#include "base/status_macros.h"
#include "catalog/operator.h"

namespace benchfarm::agent {

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
  ASSIGN_OR_RETURN(space.space_, catalog::ParseKnobSpace(json));
  return space;
}

KnobSpace KnobSpace::ForOperator(const v1::Operator& op) {
  KnobSpace space;
  *space.space_.add_ops() = op.spec();
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
  ASSIGN_OR_RETURN(c.knobs, catalog::ResolveKnobs(*c.op, op.knobs()));
  c.function = absl::StrCat("bf_cand_", op.op());
  std::vector<std::pair<std::string, std::string>> replacements;
  for (const auto& [name, value] : c.knobs) {
    // A C identifier: integer knobs may be negative.
    absl::StrAppend(&c.function, "_", absl::StrReplaceAll(value, {{"-", "m"}}));
    replacements.emplace_back(absl::StrCat("{", name, "}"), value);
  }
  replacements.emplace_back("{fn}", c.function);
  c.instantiate = absl::StrReplaceAll(c.op->instantiate(), replacements);
  return c;
}

}  // namespace benchfarm::agent
