// The operator catalog's one definition of an operator, shared by the tracker (which stores the
// catalog and checks trials at submission), the agent (which builds candidates) and farmctl
// (which searches knob spaces and writes AutoTVM records). Their knobs are modelled in
// catalog/knob_space.h; what a trial of them may be, in catalog/trial.h.
//
// An operator is a v1::Operator: a knob-space entry (v1::OpTemplate, the JSON shape of one op of
// crt/ops/knobs.json) plus, for a user operator, its C files. The built-in sample operators
// (add, matmul, conv2d) come from the knobs.json compiled into this library; user operators from
// a manifest (`op.json`, the same shape plus "sources") and the files it names.
//
// A user operator's C source reads its knobs with BF_KNOB(name) (crt/ops/include/benchfarm/ops/
// knob.h) or `#if BF_KNOB_<name> == ...`; the agent compiles it once per candidate with the
// candidate's values defined and its entry function renamed, so any number of candidates share
// one image.
//
// Thread-safety: functions are pure; BuiltinOperators() and BuiltinKnobSpace() are safe from any
// thread.

#ifndef BENCHFARM_CATALOG_OPERATOR_H_
#define BENCHFARM_CATALOG_OPERATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalog/knob_space.h"
#include "catalog/trial.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::catalog {

// Limits of a user operator (its args and dims: catalog/trial.h's kMaxArgs, kMaxNdim and
// kMaxElements, as a trial's).
inline constexpr int kMaxKnobs = 16;
inline constexpr int kMaxKnobValues = 256;
inline constexpr int kMaxFiles = 32;
inline constexpr int64_t kMaxFileBytes = int64_t{1} << 20;  // all files together

// The built-in sample operators (crt/ops/knobs.json, compiled in), as catalog entries with their
// versions set and builtin = true.
const std::vector<v1::Operator>& BuiltinOperators();
// The same as a knob space (catalog/knob_space.h).
const KnobSpace& BuiltinKnobSpace();

// A user operator from its manifest (op.json: one knobs.json op plus "sources") and files
// (name -> content), validated and versioned. InvalidArgument naming the field otherwise.
absl::StatusOr<v1::Operator> OperatorFromManifest(absl::string_view manifest_json,
                                                  std::map<std::string, std::string> files);

// Checks a user operator as submitted (name, spec, files): identifiers, knobs with their values
// and default, args with dims and dtypes, sources present among the files, sizes. Fills in what
// has a default (a knob without a default takes its first value; spec.op from name) and returns
// InvalidArgument "op.spec.knobs[1].default: ..." naming the field.
absl::Status ValidateUserOperator(v1::Operator* op);

// The content hash of spec and files: 16 hex digits.
std::string OperatorVersion(const v1::Operator& op);

}  // namespace benchfarm::catalog

#endif  // BENCHFARM_CATALOG_OPERATOR_H_
