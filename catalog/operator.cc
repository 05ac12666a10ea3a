#include "catalog/operator.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "base/content_hash.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/util/json_util.h"

namespace benchfarm::catalog {

extern const char kKnobsJson[];  // knobs_json.cc, generated from crt/ops/knobs.json

namespace {

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

bool IsFileName(absl::string_view s) {
  if (s.empty() || s.size() > 64 || s[0] == '.') return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

// Sizes of the op's dims: `bound` (from a trial's shapes, or the op's defaults) plus the derived
// ones, each "A - B + 1"-style sums of dims and integers.
// (Looked up by string_view: a trial's checks allocate no key to find one.)
using DimSizes = std::map<std::string, int64_t, std::less<>>;
absl::StatusOr<DimSizes> WithDerived(const v1::OpTemplate& spec, DimSizes dims) {
  for (const auto& [name, expr] : spec.derived()) {
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
          auto d = dims.find(token);
          if (d == dims.end()) {
            return Invalid(absl::StrCat("derived.", name),
                           absl::StrCat("\"", expr, "\" names no dim \"", token, "\""));
          }
          v = d->second;
        }
        total += sign * v;
      }
    }
    dims[name] = total;
  }
  return dims;
}

std::string KnobList(const v1::Knob& knob) {
  std::vector<std::string> values;
  for (const google::protobuf::Value& v : knob.values()) values.push_back(ValueText(v));
  return absl::StrJoin(values, ", ");
}

}  // namespace

bool IsCIdentifier(absl::string_view s) {
  if (s.empty() || s.size() > 64 || absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

namespace {

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

}  // namespace

bool ValueIs(const google::protobuf::Value& value, absl::string_view text) {
  return WithValueText(value, [text](absl::string_view t) { return t == text; });
}

std::string ValueText(const google::protobuf::Value& value) {
  return WithValueText(value, [](absl::string_view t) { return std::string(t); });
}

absl::StatusOr<v1::KnobSpace> ParseKnobSpace(absl::string_view json) {
  v1::KnobSpace space;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(std::string(json), &space, options);
  if (!status.ok()) return absl::InvalidArgumentError(std::string(status.message()));
  if (space.ops().empty()) return absl::InvalidArgumentError("no ops");
  return space;
}

const std::vector<v1::Operator>& BuiltinOperators() {
  static const std::vector<v1::Operator>* ops = [] {
    auto* out = new std::vector<v1::Operator>();
    absl::StatusOr<v1::KnobSpace> space = ParseKnobSpace(kKnobsJson);
    if (!space.ok()) return out;  // knobs_test keeps the file well-formed
    for (const v1::OpTemplate& t : space->ops()) {
      v1::Operator& op = out->emplace_back();
      op.set_name(t.op());
      *op.mutable_spec() = t;
      op.set_builtin(true);
      op.set_latest(true);
      op.set_version(OperatorVersion(op));
    }
    return out;
  }();
  return *ops;
}

absl::StatusOr<v1::Operator> OperatorFromManifest(absl::string_view manifest_json,
                                                  std::map<std::string, std::string> files) {
  v1::Operator op;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;  // a misspelt key is an error, not a silent default
  auto status = google::protobuf::util::JsonStringToMessage(std::string(manifest_json),
                                                            op.mutable_spec(), options);
  if (!status.ok()) return Invalid("op.json", std::string(status.message()));
  op.set_name(op.spec().op());
  for (auto& [name, content] : files) (*op.mutable_files())[name] = std::move(content);
  RETURN_IF_ERROR(ValidateUserOperator(&op));
  op.set_version(OperatorVersion(op));
  return op;
}

absl::Status ValidateUserOperator(v1::Operator* op) {
  v1::OpTemplate* spec = op->mutable_spec();
  if (op->name().empty()) op->set_name(spec->op());
  if (spec->op().empty()) spec->set_op(op->name());
  if (!IsCIdentifier(op->name()) || op->name().size() > 48) {
    return Invalid("op.name", absl::StrCat("\"", op->name(),
                                           "\" is not a name (a C identifier of at most 48 chars)"));
  }
  if (spec->op() != op->name()) {
    return Invalid("op.spec.op", absl::StrCat("\"", spec->op(), "\" differs from the name \"",
                                              op->name(), "\""));
  }
  for (const v1::Operator& b : BuiltinOperators()) {
    if (b.name() == op->name()) {
      return Invalid("op.name", absl::StrCat("\"", op->name(), "\" is a built-in operator"));
    }
  }
  if (!IsCIdentifier(spec->entry())) {
    return Invalid("op.spec.entry", absl::StrCat("\"", spec->entry(),
                                                 "\" is not a C identifier (the function to time)"));
  }
  if (!spec->reference_entry().empty()) {
    if (!IsCIdentifier(spec->reference_entry())) {
      return Invalid("op.spec.reference_entry",
                     absl::StrCat("\"", spec->reference_entry(), "\" is not a C identifier"));
    }
    if (spec->reference_entry() == spec->entry()) {
      return Invalid("op.spec.reference_entry", "must differ from entry");
    }
  }
  if (!spec->instantiate().empty() || !spec->header().empty() || !spec->symbol().empty()) {
    return Invalid("op.spec", "instantiate, header and symbol are for built-in operators only");
  }
  // Files.
  if (op->files_size() == 0) return Invalid("op.files", "no files");
  if (op->files_size() > kMaxFiles) return Invalid("op.files", absl::StrCat("more than ", kMaxFiles));
  int64_t bytes = 0;
  for (const auto& [name, content] : op->files()) {
    if (!IsFileName(name)) {
      return Invalid("op.files", absl::StrCat("\"", name, "\" is not a plain file name"));
    }
    bytes += static_cast<int64_t>(content.size());
  }
  if (bytes > kMaxFileBytes) return Invalid("op.files", "larger than 1 MiB together");
  if (spec->sources().empty()) return Invalid("op.spec.sources", "name at least one C file");
  for (int i = 0; i < spec->sources_size(); ++i) {
    if (op->files().count(spec->sources(i)) == 0) {
      return Invalid(absl::StrCat("op.spec.sources[", i, "]"),
                     absl::StrCat("\"", spec->sources(i), "\" is not among the files"));
    }
  }
  // Knobs.
  if (spec->knobs_size() > kMaxKnobs) {
    return Invalid("op.spec.knobs", absl::StrCat("more than ", kMaxKnobs));
  }
  std::set<std::string> knob_names;
  for (int k = 0; k < spec->knobs_size(); ++k) {
    v1::Knob* knob = spec->mutable_knobs(k);
    const std::string field = absl::StrCat("op.spec.knobs[", k, "]");
    if (!IsCIdentifier(knob->name())) {
      return Invalid(field + ".name", absl::StrCat("\"", knob->name(), "\" is not a C identifier"));
    }
    if (!knob_names.insert(knob->name()).second) {
      return Invalid(field + ".name", absl::StrCat("\"", knob->name(), "\" appears twice"));
    }
    if (knob->values_size() == 0 || knob->values_size() > kMaxKnobValues) {
      return Invalid(field + ".values", absl::StrCat("need 1..", kMaxKnobValues, " values"));
    }
    std::set<std::string> seen;
    for (int v = 0; v < knob->values_size(); ++v) {
      const google::protobuf::Value& value = knob->values(v);
      const std::string text = ValueText(value);
      int64_t n = 0;
      const bool ok = value.kind_case() == google::protobuf::Value::kNumberValue
                          ? absl::SimpleAtoi(text, &n)
                          : value.kind_case() == google::protobuf::Value::kStringValue &&
                                IsCIdentifier(text);
      if (!ok) {
        return Invalid(absl::StrCat(field, ".values[", v, "]"),
                       "an integer or a C identifier (it becomes a macro value)");
      }
      if (!seen.insert(text).second) {
        return Invalid(absl::StrCat(field, ".values[", v, "]"), absl::StrCat(text, " appears twice"));
      }
    }
    if (knob->default_().kind_case() == google::protobuf::Value::KIND_NOT_SET) {
      *knob->mutable_default_() = knob->values(0);
    } else if (seen.count(ValueText(knob->default_())) == 0) {
      return Invalid(field + ".default", absl::StrCat(ValueText(knob->default_()),
                                                      " is not one of ", KnobList(*knob)));
    }
  }
  // Arguments.
  if (spec->args_size() < 1 || spec->args_size() > kMaxArgs) {
    return Invalid("op.spec.args", absl::StrCat("need 1..", kMaxArgs, " arguments"));
  }
  for (const auto& [name, size] : spec->dims()) {
    if (!IsCIdentifier(name)) return Invalid("op.spec.dims", absl::StrCat("\"", name, "\" is not a name"));
    if (size < 1 || size > kMaxElements) {
      return Invalid(absl::StrCat("op.spec.dims.", name), "must be in 1..2^28");
    }
  }
  for (int a = 0; a < spec->args_size(); ++a) {
    v1::OpArg* arg = spec->mutable_args(a);
    const std::string field = absl::StrCat("op.spec.args[", a, "]");
    if (arg->dtype().empty()) arg->set_dtype("float32");
    if (arg->dtype() != "float32") return Invalid(field + ".dtype", "only float32 is supported");
    const bool last = a == spec->args_size() - 1;
    if (arg->role().empty()) arg->set_role(last ? "output" : "input");
    if (arg->role() != (last ? "output" : "input")) {
      return Invalid(field + ".role", "inputs first, then one output, last");
    }
    if (arg->shape_size() < 1 || arg->shape_size() > kMaxNdim) {
      return Invalid(field + ".shape", absl::StrCat("need 1..", kMaxNdim, " dims"));
    }
  }
  absl::StatusOr<std::vector<std::vector<int64_t>>> shapes = DefaultShapes(*spec);
  if (!shapes.ok()) return Invalid("op.spec", std::string(shapes.status().message()));
  if (ArgumentBytes(*shapes) > kMaxElements * 4) {
    return Invalid("op.spec.dims", "the default shapes hold more than 2^28 elements");
  }
  return absl::OkStatus();
}

std::string OperatorVersion(const v1::Operator& op) {
  std::string material;
  {
    google::protobuf::io::StringOutputStream stream(&material);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    op.spec().SerializeToCodedStream(&coded);
  }
  std::map<std::string, std::string> files(op.files().begin(), op.files().end());
  for (const auto& [name, content] : files) {
    absl::StrAppend(&material, "\n--file ", name, " ", content.size(), "\n", content);
  }
  return base::HashBytes(material);
}

namespace {

// `value` (stripped) is one the knob allows; else the error naming them.
absl::Status CheckKnobValue(const v1::OpTemplate& spec, const v1::Knob& knob,
                            absl::string_view value) {
  for (const google::protobuf::Value& v : knob.values()) {
    if (ValueIs(v, value)) return absl::OkStatus();
  }
  return Invalid("op.template_op.knobs", absl::StrCat(spec.op(), " knob ", knob.name(), " = \"",
                                                      value, "\" is not one of ", KnobList(knob)));
}

}  // namespace

absl::Status CheckKnobs(const v1::OpTemplate& spec,
                        const google::protobuf::Map<std::string, std::string>& knobs) {
  for (const auto& [name, value] : knobs) {
    bool known = false;
    for (const v1::Knob& k : spec.knobs()) known = known || k.name() == name;
    if (!known) {
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

absl::StatusOr<std::vector<std::vector<int64_t>>> DefaultShapes(const v1::OpTemplate& spec) {
  ASSIGN_OR_RETURN(DimSizes dims, WithDerived(spec, {spec.dims().begin(), spec.dims().end()}));
  std::vector<std::vector<int64_t>> shapes;
  for (const v1::OpArg& arg : spec.args()) {
    std::vector<int64_t> shape;
    for (const std::string& d : arg.shape()) {
      auto it = dims.find(d);
      if (it == dims.end()) {
        return Invalid(absl::StrCat("args.", arg.name()), absl::StrCat("names unknown dim ", d));
      }
      if (it->second < 1) {
        return Invalid(absl::StrCat("dims.", d), absl::StrCat("is ", it->second, " (must be >= 1)"));
      }
      shape.push_back(it->second);
    }
    shapes.push_back(std::move(shape));
  }
  return shapes;
}

absl::StatusOr<std::vector<std::vector<int64_t>>> TrialShapes(const v1::OpTemplate& spec,
                                                              const v1::Trial& trial) {
  if (trial.args_size() == 0) return DefaultShapes(spec);
  if (trial.args_size() != spec.args_size()) {
    return Invalid("args", absl::StrCat(spec.op(), " takes ", spec.args_size(),
                                        " arguments, the trial gives ", trial.args_size()));
  }
  // (Error texts are built only on the error paths: this runs for every trial submitted.)
  std::vector<std::vector<int64_t>> shapes;
  shapes.reserve(trial.args_size());
  for (int a = 0; a < trial.args_size(); ++a) {
    const v1::ArgSpec& arg = trial.args(a);
    const absl::string_view want =
        spec.args(a).dtype().empty() ? absl::string_view("float32") : spec.args(a).dtype();
    if (!arg.dtype().empty() && arg.dtype() != want) {
      return Invalid(absl::StrCat("args[", a, "].dtype"),
                     absl::StrCat("\"", arg.dtype(), "\": ", spec.op(), "'s ",
                                  spec.args(a).name(), " is ", want));
    }
    int64_t elements = 1;
    for (int d = 0; d < arg.shape_size(); ++d) {
      if (arg.shape(d) < 1 || arg.shape(d) > kMaxElements) {
        return Invalid(absl::StrCat("args[", a, "].shape[", d, "]"), "must be in 1..2^28");
      }
      elements *= arg.shape(d);
      if (elements > kMaxElements) {
        return Invalid(absl::StrCat("args[", a, "].shape"), "more than 2^28 elements");
      }
    }
    shapes.emplace_back(arg.shape().begin(), arg.shape().end());
  }
  if (spec.any_shape()) {
    for (size_t a = 0; a < shapes.size(); ++a) {
      if (shapes[a].empty()) return Invalid(absl::StrCat("args[", a, "].shape"), "empty");
      if (shapes[a] != shapes[0]) {
        return Invalid(absl::StrCat("args[", a, "].shape"),
                       absl::StrCat(spec.op(), " takes arguments of one shape, args[0] is ",
                                    ShapesText({shapes[0]})));
      }
    }
    return shapes;
  }
  // Bind every dim name to one size.
  DimSizes bound;
  for (int a = 0; a < trial.args_size(); ++a) {
    const v1::OpArg& want = spec.args(a);
    if (static_cast<int>(shapes[a].size()) != want.shape_size()) {
      return Invalid(absl::StrCat("args[", a, "].shape"),
                     absl::StrCat(spec.op(), "'s ", want.name(), " has ", want.shape_size(),
                                  " dims (", absl::StrJoin(want.shape(), ", "), "), the trial ",
                                  shapes[a].size()));
    }
    for (int d = 0; d < want.shape_size(); ++d) {
      const std::string& name = want.shape(d);
      if (spec.derived().count(name) != 0) continue;  // checked below
      auto [it, fresh] = bound.emplace(name, shapes[a][d]);
      if (!fresh && it->second != shapes[a][d]) {
        int first = 0;  // the argument that bound it
        while (std::find(spec.args(first).shape().begin(), spec.args(first).shape().end(), name) ==
               spec.args(first).shape().end()) {
          ++first;
        }
        return Invalid(absl::StrCat("args[", a, "].shape[", d, "]"),
                       absl::StrCat(name, " is ", it->second, " in args[", first, "], ",
                                    shapes[a][d], " here"));
      }
    }
  }
  ASSIGN_OR_RETURN(DimSizes dims, WithDerived(spec, std::move(bound)));
  for (int a = 0; a < trial.args_size(); ++a) {
    const v1::OpArg& want = spec.args(a);
    for (int d = 0; d < want.shape_size(); ++d) {
      auto it = dims.find(want.shape(d));
      if (it == dims.end() || it->second != shapes[a][d]) {
        return Invalid(absl::StrCat("args[", a, "].shape[", d, "]"),
                       absl::StrCat(want.shape(d), " = ", spec.derived().at(want.shape(d)), " is ",
                                    it == dims.end() ? 0 : it->second, ", the trial gives ",
                                    shapes[a][d]));
      }
    }
  }
  return shapes;
}

int64_t ArgumentBytes(const std::vector<std::vector<int64_t>>& shapes) {
  int64_t total = 0;
  for (const auto& shape : shapes) {
    int64_t n = 4;
    for (int64_t d : shape) n *= d;
    total += n;
  }
  return total;
}

std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<std::string> parts;
  for (const auto& s : shapes) parts.push_back(absl::StrJoin(s, "x"));
  return absl::StrJoin(parts, ",");
}

}  // namespace benchfarm::catalog
