// The operator catalog's entries: see operator.h.
#include "catalog/operator.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/content_hash.h"
#include "base/status_macros.h"
#include "catalog/cflags.h"
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

}  // namespace

const std::vector<v1::Operator>& BuiltinOperators() {
  static const std::vector<v1::Operator>* ops = [] {
    auto* out = new std::vector<v1::Operator>();
    absl::StatusOr<KnobSpace> space = KnobSpace::Parse(kKnobsJson);
    if (!space.ok()) return out;  // knobs_test keeps the file well-formed
    for (v1::Operator op : space->ops()) {
      op.set_builtin(true);
      op.set_latest(true);
      op.set_version(OperatorVersion(op));
      out->push_back(std::move(op));
    }
    return out;
  }();
  return *ops;
}

const KnobSpace& BuiltinKnobSpace() {
  static const KnobSpace* space = new KnobSpace(BuiltinOperators());
  return *space;
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
    return Invalid(
        "op.name",
        absl::StrCat("\"", op->name(), "\" is not a name (a C identifier of at most 48 chars)"));
  }
  if (spec->op() != op->name()) {
    return Invalid("op.spec.op",
                   absl::StrCat("\"", spec->op(), "\" differs from the name \"", op->name(), "\""));
  }
  for (const v1::Operator& b : BuiltinOperators()) {
    if (b.name() == op->name()) {
      return Invalid("op.name", absl::StrCat("\"", op->name(), "\" is a built-in operator"));
    }
  }
  if (!IsCIdentifier(spec->entry())) {
    return Invalid(
        "op.spec.entry",
        absl::StrCat("\"", spec->entry(), "\" is not a C identifier (the function to time)"));
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
  if (op->files_size() > kMaxFiles)
    return Invalid("op.files", absl::StrCat("more than ", kMaxFiles));
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
      const std::string value_field = absl::StrCat(field, ".values[", v, "]");
      const std::string text = ValueText(value);
      int64_t n = 0;
      const bool ok =
          knob->cflag() ||  // CheckOperatorCflags, below
          (value.kind_case() == google::protobuf::Value::kNumberValue
               ? absl::SimpleAtoi(text, &n)
               : value.kind_case() == google::protobuf::Value::kStringValue && IsCIdentifier(text));
      if (!ok) {
        return Invalid(value_field, "an integer or a C identifier (it becomes a macro value)");
      }
      if (!seen.insert(text).second) {
        return Invalid(value_field, absl::StrCat(text, " appears twice"));
      }
    }
    if (knob->default_().kind_case() == google::protobuf::Value::KIND_NOT_SET) {
      *knob->mutable_default_() = knob->values(0);
    } else if (seen.count(ValueText(knob->default_())) == 0) {
      return Invalid(field + ".default", absl::StrCat(ValueText(knob->default_()),
                                                      " is not one of ", ValuesText(*knob)));
    }
  }
  // Compile options: the operator's and its cflag knobs' values.
  RETURN_IF_ERROR(CheckOperatorCflags(*spec));
  // Derived features for the learned model.
  if (absl::Status s = CheckFeatures(*spec); !s.ok()) {
    return Invalid("op.spec", std::string(s.message()));
  }
  // Arguments.
  if (spec->args_size() < 1 || spec->args_size() > kMaxArgs) {
    return Invalid("op.spec.args", absl::StrCat("need 1..", kMaxArgs, " arguments"));
  }
  for (const auto& [name, size] : spec->dims()) {
    if (!IsCIdentifier(name))
      return Invalid("op.spec.dims", absl::StrCat("\"", name, "\" is not a name"));
    if (size < 1 || size > kMaxElements) {
      return Invalid(absl::StrCat("op.spec.dims.", name), "must be in 1..2^28");
    }
  }
  for (int a = 0; a < spec->args_size(); ++a) {
    v1::OpArg* arg = spec->mutable_args(a);
    const std::string field = absl::StrCat("op.spec.args[", a, "]");
    if (arg->dtype().empty()) arg->set_dtype("float32");
    RETURN_IF_ERROR(ParseDtype(field + ".dtype", arg->dtype()).status());
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
  for (const std::vector<int64_t>& shape : *shapes) {
    int64_t elements = 1;
    for (int64_t d : shape) elements *= d;
    if (elements > kMaxElements) {
      return Invalid("op.spec.dims", "a default shape holds more than 2^28 elements");
    }
  }
  // Each argument's dtype and range, and the tolerance (the errors name the spec's fields).
  absl::StatusOr<TrialArgs> args = TemplateArgs(*spec, *std::move(shapes));
  if (!args.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(absl::StartsWith(args.status().message(), "op.") ? "" : "op.spec.",
                     args.status().message()));
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

}  // namespace benchfarm::catalog
