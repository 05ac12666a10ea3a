// KnobSpace: the board kind project's operator templates and their schedule knobs
// (crt/ops/knobs.json), and what the agent needs of them: a trial's template operator resolved
// into one candidate — every knob given a value the op allows, a C identifier for the function,
// the instantiate line — and the op's default argument shapes.
//
// Thread-safety: immutable after Load; safe to share.

#ifndef BENCHFARM_AGENT_KNOB_SPACE_H_
#define BENCHFARM_AGENT_KNOB_SPACE_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/benchfarm.pb.h"
#include "proto/knobs.pb.h"

namespace benchfarm::agent {

// One instantiation of an operator template.
struct Candidate {
  const v1::OpTemplate* op = nullptr;
  // Every knob of the op in knobs.json order, with its value as written there ("8", "ikj").
  std::vector<std::pair<std::string, std::string>> knobs;
  // A C identifier unique to (op, knob values): "bf_cand_matmul_8_8_16_4_ikj".
  std::string function;
  // The instantiate line with every placeholder replaced.
  std::string instantiate;
};

class KnobSpace {
 public:
  // Parses knobs.json. Errors: NotFound / PermissionDenied for the file; InvalidArgument with the
  // parser's message.
  static absl::StatusOr<KnobSpace> Load(const std::string& path);
  static absl::StatusOr<KnobSpace> Parse(const std::string& json);
  // The space of one user operator from the catalog (its spec; candidates have no instantiate
  // line: UserOperatorUnit compiles the operator's sources once per candidate).
  static KnobSpace ForOperator(const v1::Operator& op);

  const v1::KnobSpace& proto() const { return space_; }
  // nullptr for an op that is not in the space.
  const v1::OpTemplate* Find(const std::string& op) const;

  // The trial's template operator as a candidate; a knob left out takes its default.
  // InvalidArgument naming the op and knob for an unknown op, an unknown knob, or a value the knob
  // does not allow.
  absl::StatusOr<Candidate> Resolve(const v1::TemplateOperator& op) const;


 private:
  v1::KnobSpace space_;
};

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_KNOB_SPACE_H_
