// The operator catalog's one definition of an operator, shared by the tracker (which stores the
// catalog and checks trials at submission), the agent (which builds candidates) and farmctl
// (which searches knob spaces and writes AutoTVM records).
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
// Thread-safety: functions are pure; BuiltinOperators() is safe from any thread.

#ifndef BENCHFARM_CATALOG_OPERATOR_H_
#define BENCHFARM_CATALOG_OPERATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/benchfarm.pb.h"
#include "proto/knobs.pb.h"

namespace benchfarm::catalog {

// Limits of a user operator.
inline constexpr int kMaxKnobs = 16;
inline constexpr int kMaxKnobValues = 256;
inline constexpr int kMaxFiles = 32;
inline constexpr int64_t kMaxFileBytes = int64_t{1} << 20;  // all files together
inline constexpr int kMaxArgs = 16;
inline constexpr int kMaxNdim = 6;
inline constexpr int64_t kMaxElements = int64_t{1} << 28;

// A knob value as text: 8 -> "8", "ikj" -> "ikj".
std::string ValueText(const google::protobuf::Value& value);
// ValueText(value) == text, without building the text.
bool ValueIs(const google::protobuf::Value& value, absl::string_view text);

// Parses a knobs.json document (the built-in table, or a file of the same schema).
absl::StatusOr<v1::KnobSpace> ParseKnobSpace(absl::string_view json);

// The built-in sample operators (crt/ops/knobs.json, compiled in), as catalog entries with their
// versions set and builtin = true.
const std::vector<v1::Operator>& BuiltinOperators();

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

// Every knob of the op in spec order with the trial's value or the default. InvalidArgument
// ("op.template_op.knobs: matmul knob tile_m = \"3\" is not one of 1, 2, 4, ...") for an unknown
// knob or a value the knob does not allow.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ResolveKnobs(
    const v1::OpTemplate& spec, const google::protobuf::Map<std::string, std::string>& knobs);
// The same checks of the knobs the trial gives (the tracker's, at submission), building nothing:
// a knob left out takes its default, which is one of its values (ValidateUserOperator checks a
// user's operator; a test, the built-ins).
absl::Status CheckKnobs(const v1::OpTemplate& spec,
                        const google::protobuf::Map<std::string, std::string>& knobs);

// The op's argument shapes from its default dims (and derived dims).
absl::StatusOr<std::vector<std::vector<int64_t>>> DefaultShapes(const v1::OpTemplate& spec);

// The trial's argument shapes: its args, or the op's defaults when it gives none. Checks them
// against the op: the number of args, each one's dtype and rank, every dim name bound to one
// size across the args, derived dims consistent; an any_shape op takes any shape, all args equal.
// InvalidArgument naming the trial's field ("args[1].shape[0]: K is 32 in args[0], 16 here").
absl::StatusOr<std::vector<std::vector<int64_t>>> TrialShapes(const v1::OpTemplate& spec,
                                                              const v1::Trial& trial);

// Bytes the trial's arguments take on the board (float32).
int64_t ArgumentBytes(const std::vector<std::vector<int64_t>>& shapes);

// "A x B" shapes as AutoTVM records and farmctl print them: "32x32,32x32,32x32".
std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes);

bool IsCIdentifier(absl::string_view s);

}  // namespace benchfarm::catalog

#endif  // BENCHFARM_CATALOG_OPERATOR_H_
