// Knob spaces: the one model of operators' schedule knobs and their values, shared by the tracker
// (a trial's knobs checked at submission, through catalog/trial.h), the agent (a trial's knobs
// resolved into a candidate of an image) and farmctl (a space searched, configs numbered, knobs
// written into AutoTVM records).
//
// An operator's knobs are its spec's (v1::OpTemplate.knobs, the shape of crt/ops/knobs.json):
// each knob lists the values it allows (integers or C identifiers, as google.protobuf.Value) and
// a default. A trial carries each value as text (TemplateOperator.knobs), written as ValueText
// writes the allowed value ("8", "ikj"); a knob the trial leaves out takes its default.
//
// Configs are numbered the way AutoTVM's ConfigSpace numbers them: mixed radix over the knobs in
// spec order, the first knob varying fastest (ConfigSpace.get(i): knob k takes values[i % n_k],
// then i //= n_k). ConfigIndex and KnobsOfIndex convert both ways.
//
// A KnobSpace is a set of operators by name: the built-in ones (catalog/operator.h,
// BuiltinKnobSpace), a tracker's catalog (ListOperators' answer), a knobs.json file (the agent's
// board kind project) or one user operator (an offer's).
//
// Thread-safety: functions are pure; a KnobSpace is immutable after it is made.

#ifndef BENCHFARM_CATALOG_KNOB_SPACE_H_
#define BENCHFARM_CATALOG_KNOB_SPACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/map.h"
#include "proto/benchfarm.pb.h"
#include "proto/knobs.pb.h"

namespace benchfarm::catalog {

// A knob value as text: 8 -> "8", "ikj" -> "ikj".
std::string ValueText(const google::protobuf::Value& value);
// ValueText(value) == text, without building the text.
bool ValueIs(const google::protobuf::Value& value, absl::string_view text);
// A knob value as JSON (AutoTVM records): an integer as a bare number (8), anything else as a
// string ("ikj").
std::string KnobValueJson(absl::string_view text);

// Whether the knob's values are integers (otherwise C identifiers).
bool IsNumeric(const v1::Knob& knob);
// Whether `text` is one of the knob's values.
bool Allows(const v1::Knob& knob, absl::string_view text);
// The knob's values as text, in order: "1, 2, 4, 8".
std::string ValuesText(const v1::Knob& knob);

// What stands for the knob's value in a candidate's function name (a C identifier piece): the
// value with '-' written 'm' (an integer's sign: -1 -> "m1"); for a cflag knob the option without
// its dash when that is at most 8 letters and digits ("-O3" -> "O3", "-Os" -> "Os"), else "o" and
// the value's index ("-funroll-loops" -> "o2"), which never collides with the short form.
std::string FunctionPiece(const v1::Knob& knob, absl::string_view value);

// The op's knob of that name, or nullptr.
const v1::Knob* FindKnob(const v1::OpTemplate& spec, absl::string_view name);
// The number of configs: the product of the knobs' value counts (1 for an op without knobs).
int64_t SpaceSize(const v1::OpTemplate& spec);

// A derived feature (OpTemplate.features): the product of integer knobs' values (`knobs`: their
// positions in spec.knobs, repeats allowed) and `constant`.
struct FeatureProduct {
  std::vector<int> knobs;
  double constant = 1;
};
inline constexpr int kMaxFeatures = 16;
// "tile_m * tile_n * 2": InvalidArgument naming what is wrong (a factor that is neither a knob
// with integer values nor a positive whole number; an empty product).
absl::StatusOr<FeatureProduct> ParseFeature(const v1::OpTemplate& spec, absl::string_view expr);
// Every spec.features parsed, at most kMaxFeatures, names C identifiers: InvalidArgument
// "features.NAME: ..." for the first bad one.
absl::Status CheckFeatures(const v1::OpTemplate& spec);

// The knobs a trial gives, checked building nothing (the tracker's check at submission): every
// name a knob of the op, every value one the knob allows; a knob left out takes its default, which
// is one of its values (ValidateUserOperator checks a user's operator; a test, the built-ins).
// InvalidArgument "op.template_op.knobs: matmul has no knob \"tile_q\"" or "op.template_op.knobs:
// matmul knob tile_m = \"3\" is not one of 1, 2, 4, ..." otherwise. Values are compared stripped
// of surrounding white space.
absl::Status CheckKnobs(const v1::OpTemplate& spec,
                        const google::protobuf::Map<std::string, std::string>& knobs);
// Every knob of the op in spec order with the trial's value (stripped) or its default; the errors
// of CheckKnobs, and the same for a default the knob does not allow.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ResolveKnobs(
    const v1::OpTemplate& spec, const google::protobuf::Map<std::string, std::string>& knobs);

// The config index of a trial's knobs (see the file comment); knobs left out take their defaults.
// -1 if the trial names a knob the op does not have or a value its knob does not allow: such a
// trial lies outside the space.
int64_t ConfigIndex(const v1::OpTemplate& spec,
                    const google::protobuf::Map<std::string, std::string>& knobs);
// The knobs of config `index` (0 <= index < SpaceSize), by name.
std::map<std::string, std::string> KnobsOfIndex(const v1::OpTemplate& spec, int64_t index);

class KnobSpace {
 public:
  KnobSpace() = default;
  // Catalog entries (a name given twice: the later entry). An entry without a name is named after
  // its spec's op.
  explicit KnobSpace(std::vector<v1::Operator> ops);
  // A knobs.json document: InvalidArgument with the parser's message, or "no ops".
  static absl::StatusOr<KnobSpace> Parse(absl::string_view json);
  // A knobs.json file: NotFound "knob space PATH: cannot open", or Parse's errors naming the path.
  static absl::StatusOr<KnobSpace> Load(const std::string& path);

  // The entry of that name, or nullptr.
  const v1::Operator* Find(absl::string_view op) const;
  // Every entry, in the order given (a knobs.json file's order).
  const std::vector<v1::Operator>& ops() const { return ops_; }

 private:
  std::vector<v1::Operator> ops_;
};

}  // namespace benchfarm::catalog

#endif  // BENCHFARM_CATALOG_KNOB_SPACE_H_
