// The trial contract: see trial.h.
#include "catalog/trial.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "catalog/cflags.h"
#include "catalog/knob_space.h"

namespace benchfarm::catalog {
namespace {

absl::Status Invalid(const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

// The first string of the trial over its cap, as "field: N bytes, at most MAX" ("" if none is).
// (In loops the size is tested first: a field name is built only for an error.)
std::string SizeProblem(const v1::Trial& t) {
  const v1::OperatorSpec& op = t.op();
  const v1::TemplateOperator& tpl = op.template_op();
  struct Field {
    const char* name;
    const std::string& value;
    size_t max;
  };
  for (const Field& f : {Field{"board_kind", t.board_kind(), kMaxBoardKindBytes},
                         Field{"board_id", t.board_id(), kMaxBoardIdBytes},
                         Field{"op.entry_function", op.entry_function(), kMaxFunctionBytes},
                         Field{"op.reference_function", op.reference_function(), kMaxFunctionBytes},
                         Field{"op.c_source", op.c_source(), kMaxCSourceBytes},
                         Field{"op.template_op.op", tpl.op(), kMaxOpNameBytes},
                         Field{"op.template_op.version", tpl.version(), kMaxVersionBytes}}) {
    std::string p = Oversized(f.name, f.value, f.max);
    if (!p.empty()) return p;
  }
  if (std::string p = LabelsProblem("labels", t.labels()); !p.empty()) return p;
  for (const auto& [name, value] : tpl.knobs()) {
    if (name.size() > kMaxKnobNameBytes) {
      return absl::StrCat("op.template_op.knobs: a name of ", name.size(), " bytes, at most ",
                          kMaxKnobNameBytes);
    }
    if (value.size() > kMaxKnobValueBytes) {
      return Oversized(absl::StrCat("op.template_op.knobs[\"", name, "\"]"), value,
                       kMaxKnobValueBytes);
    }
  }
  if (tpl.image_pool_size() > kMaxImagePool) {
    return absl::StrCat("op.template_op.image_pool: ", tpl.image_pool_size(), " entries, at most ",
                        kMaxImagePool);
  }
  size_t pool_bytes = 0;
  for (int k = 0; k < tpl.image_pool_size(); ++k) {
    if (tpl.image_pool(k).size() > kMaxImagePoolEntryBytes) {
      return Oversized(absl::StrCat("op.template_op.image_pool[", k, "]"), tpl.image_pool(k),
                       kMaxImagePoolEntryBytes);
    }
    pool_bytes += tpl.image_pool(k).size();
  }
  if (pool_bytes > kMaxImagePoolBytes) {
    return absl::StrCat("op.template_op.image_pool: ", pool_bytes, " bytes in all, at most ",
                        kMaxImagePoolBytes);
  }
  if (op.cflags_size() > kMaxCflags) {
    return absl::StrCat("op.cflags: ", op.cflags_size(), " options, at most ", kMaxCflags);
  }
  for (int k = 0; k < op.cflags_size(); ++k) {
    if (op.cflags(k).size() > kMaxCflagBytes) {
      return Oversized(absl::StrCat("op.cflags[", k, "]"), op.cflags(k), kMaxCflagBytes);
    }
  }
  for (int a = 0; a < t.args_size(); ++a) {
    if (t.args(a).dtype().size() > kMaxDtypeBytes) {
      return Oversized(absl::StrCat("args[", a, "].dtype"), t.args(a).dtype(), kMaxDtypeBytes);
    }
  }
  return "";
}

std::optional<double> Optional(bool has, double value) {
  return has ? std::optional<double>(value) : std::nullopt;
}

// An argument's range; the output is not filled, so it takes none.
absl::Status ResolveArgRange(const std::string& field, DLDataType dtype,
                             const google::protobuf::RepeatedField<double>& range, bool output,
                             ArgData* arg) {
  if (output && !range.empty()) return Invalid(field + ".range", "the output is not filled");
  return ResolveRange(field + ".range", dtype, range, arg);
}

// A template trial's operator: its knobs and shapes against the spec find_spec gives.
absl::StatusOr<TrialArgs> CheckTemplateOp(const v1::Trial& t, FindSpec find_spec) {
  const v1::OperatorSpec& op = t.op();
  const v1::TemplateOperator& tpl = op.template_op();
  if (tpl.op().empty()) return Invalid("op.template_op.op", "required");
  if (tpl.knobs_size() > kMaxTrialKnobs) return Invalid("op.template_op.knobs", "too many");
  ASSIGN_OR_RETURN(const v1::OpTemplate* spec, find_spec(tpl));
  RETURN_IF_ERROR(CheckKnobs(*spec, tpl.knobs()));
  ASSIGN_OR_RETURN(std::vector<std::vector<int64_t>> shapes, TrialShapes(*spec, t));
  if (!op.reference_function().empty() && !IsCIdentifier(op.reference_function())) {
    return Invalid("op.reference_function", "not a C identifier");
  }
  if (op.has_atol() || op.has_rtol()) {
    return Invalid(op.has_atol() ? "op.atol" : "op.rtol",
                   absl::StrCat("a template operator's tolerance is its own (", spec->op(), "'s)"));
  }
  if (op.cflags_size() > 0) {
    return Invalid("op.cflags", absl::StrCat("a template operator's compile options are its own (",
                                             spec->op(), "'s cflags and cflag knobs)"));
  }
  return TemplateArgs(*spec, std::move(shapes), &t);
}

// A one-off C source trial: its functions, and arguments it names itself.
absl::StatusOr<TrialArgs> CheckCSource(const v1::Trial& t) {
  const v1::OperatorSpec& op = t.op();
  if (op.entry_function().empty()) return Invalid("op.entry_function", "required with c_source");
  if (!IsCIdentifier(op.entry_function()))
    return Invalid("op.entry_function", "not a C identifier");
  if (!op.reference_function().empty() && !IsCIdentifier(op.reference_function())) {
    return Invalid("op.reference_function", "not a C identifier");
  }
  if (t.check_outputs() && op.reference_function().empty()) {
    return Invalid("op.reference_function", "required to check the outputs");
  }
  if (t.args_size() < 2) {
    return Invalid("args", "a C source trial names its arguments: inputs, then the output");
  }
  RETURN_IF_ERROR(CheckCflags("op.cflags", op.cflags()));
  TrialArgs args;
  for (int a = 0; a < t.args_size(); ++a) {
    const v1::ArgSpec& arg = t.args(a);
    const std::string field = absl::StrCat("args[", a, "]");
    ASSIGN_OR_RETURN(DLDataType dtype, ParseDtype(field + ".dtype", arg.dtype()));
    if (arg.shape_size() < 1 || arg.shape_size() > kMaxNdim) {
      return Invalid(field + ".shape", absl::StrCat("need 1..", kMaxNdim, " dimensions"));
    }
    int64_t elements = 1;
    for (int d = 0; d < arg.shape_size(); ++d) {
      if (arg.shape(d) < 1 || arg.shape(d) > kMaxElements) {
        return Invalid(absl::StrCat(field, ".shape[", d, "]"), "must be in 1..2^28");
      }
      elements *= arg.shape(d);
      if (elements > kMaxElements) return Invalid(field + ".shape", "more than 2^28 elements");
    }
    ArgData data;
    data.shape.assign(arg.shape().begin(), arg.shape().end());
    RETURN_IF_ERROR(ResolveArgRange(field, dtype, arg.range(), a + 1 == t.args_size(), &data));
    args.args.push_back(std::move(data));
  }
  RETURN_IF_ERROR(ResolveTolerance("op.", Optional(op.has_atol(), op.atol()),
                                   Optional(op.has_rtol(), op.rtol()), &args));
  return args;
}

absl::Status CheckMeasure(const v1::MeasureOptions& m) {
  if (m.number() < 0 || m.number() > kMaxNumber)
    return Invalid("measure.number", "must be in 0..1e6");
  if (m.repeat() < 0 || m.repeat() > kMaxCosts) {
    return Invalid("measure.repeat", absl::StrCat("must be in 0..", kMaxCosts));
  }
  if (m.min_repeat_ms() < 0 || m.min_repeat_ms() > kMaxMinRepeatMs) {
    return Invalid("measure.min_repeat_ms", absl::StrCat("must be in 0..", kMaxMinRepeatMs));
  }
  if (m.cooldown_ms() < 0 || m.cooldown_ms() > kMaxCooldownMs) {
    return Invalid("measure.cooldown_ms", absl::StrCat("must be in 0..", kMaxCooldownMs));
  }
  if (m.timeout_ms() < 0 || m.timeout_ms() > kMaxTimeoutMs) {
    return Invalid("measure.timeout_ms", absl::StrCat("must be in 0..", kMaxTimeoutMs));
  }
  if (!(m.target_rel_ci() >= 0 && m.target_rel_ci() < 1)) {
    return Invalid("measure.target_rel_ci", "must be in [0, 1) (0.01: +-1 %; 0: fixed mode)");
  }
  if (m.budget_ms() < 0 || m.budget_ms() > kMaxBudgetMs) {
    return Invalid("measure.budget_ms", absl::StrCat("must be in 0..", kMaxBudgetMs));
  }
  if (m.max_repeat() < 0 || m.max_repeat() > kMaxCosts) {
    return Invalid("measure.max_repeat", absl::StrCat("must be in 0..", kMaxCosts));
  }
  return absl::OkStatus();
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

}  // namespace

int EffectiveMeasureOptions::max_costs() const {
  return std::min(kMaxCosts, adaptive() ? max_repeat : repeat);
}

EffectiveMeasureOptions EffectiveMeasure(const v1::MeasureOptions& m) {
  EffectiveMeasureOptions e;
  e.number = m.number() > 0 ? m.number() : kDefaultNumber;
  e.repeat = m.repeat() > 0 ? m.repeat() : kDefaultRepeat;
  e.min_repeat_ms = std::max(0, m.min_repeat_ms());
  e.cooldown_ms = std::max(0, m.cooldown_ms());
  e.timeout = absl::Milliseconds(m.timeout_ms() > 0 ? m.timeout_ms() : kDefaultTimeoutMs);
  e.target_rel_ci = m.target_rel_ci();
  e.budget = m.budget_ms() > 0 ? absl::Milliseconds(m.budget_ms()) : e.timeout / 2;
  e.max_repeat = m.max_repeat() > 0 ? std::min(m.max_repeat(), kMaxCosts) : kDefaultMaxRepeat;
  return e;
}

absl::StatusOr<TrialArgs> CheckTrial(const v1::Trial& t, FindSpec find_spec) {
  if (std::string p = SizeProblem(t); !p.empty()) return absl::InvalidArgumentError(p);
  if (t.board_kind().empty()) return Invalid("board_kind", "required");
  if (t.args_size() > kMaxArgs) return Invalid("args", absl::StrCat("more than ", kMaxArgs));
  TrialArgs args;
  switch (t.op().source_case()) {
    case v1::OperatorSpec::kTemplateOp: {
      ASSIGN_OR_RETURN(args, CheckTemplateOp(t, find_spec));
      break;
    }
    case v1::OperatorSpec::kCSource: {
      ASSIGN_OR_RETURN(args, CheckCSource(t));
      break;
    }
    default:
      return Invalid("op", "set template_op or c_source");
  }
  RETURN_IF_ERROR(CheckMeasure(t.measure()));
  if (t.priority() < 0 || t.priority() > kMaxPriority) {
    return Invalid("priority", absl::StrCat("must be in 0..", kMaxPriority));
  }
  return args;
}

absl::StatusOr<TrialArgs> TemplateArgs(const v1::OpTemplate& spec,
                                       std::vector<std::vector<int64_t>> shapes,
                                       const v1::Trial* trial) {
  TrialArgs args;
  args.args.reserve(std::min<size_t>(spec.args_size(), shapes.size()));
  for (int a = 0; a < spec.args_size() && a < static_cast<int>(shapes.size()); ++a) {
    const std::string field = absl::StrCat("args[", a, "]");
    ASSIGN_OR_RETURN(DLDataType dtype, ParseDtype(field + ".dtype", spec.args(a).dtype()));
    const bool given =
        trial != nullptr && a < trial->args_size() && !trial->args(a).range().empty();
    ArgData data;
    data.shape = std::move(shapes[a]);
    RETURN_IF_ERROR(ResolveArgRange(field, dtype,
                                    given ? trial->args(a).range() : spec.args(a).range(),
                                    a + 1 == spec.args_size(), &data));
    args.args.push_back(std::move(data));
  }
  RETURN_IF_ERROR(ResolveTolerance("op.spec.", Optional(spec.has_atol(), spec.atol()),
                                   Optional(spec.has_rtol(), spec.rtol()), &args));
  return args;
}

std::string Oversized(absl::string_view field, absl::string_view value, size_t max) {
  if (value.size() <= max) return "";
  return absl::StrCat(field, ": ", value.size(), " bytes, at most ", max);
}

std::string LabelsProblem(absl::string_view field,
                          const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > static_cast<size_t>(kMaxLabels)) {
    return absl::StrCat(field, ": ", labels.size(), " labels, at most ", kMaxLabels);
  }
  for (const auto& [key, value] : labels) {
    if (key.size() > kMaxLabelKeyBytes) {
      return absl::StrCat(field, ": a key of ", key.size(), " bytes, at most ", kMaxLabelKeyBytes);
    }
    if (value.size() > kMaxLabelValueBytes) {
      return Oversized(absl::StrCat(field, "[\"", key, "\"]"), value, kMaxLabelValueBytes);
    }
  }
  return "";
}

std::string CpuNameProblem(absl::string_view field, absl::string_view cpu) {
  if (std::string p = Oversized(field, cpu, kMaxBoardCpuBytes); !p.empty()) return p;
  if (cpu.empty()) return "";
  const bool named = absl::ascii_islower(static_cast<unsigned char>(cpu[0])) &&
                     std::all_of(cpu.begin(), cpu.end(), [](char c) {
                       return absl::ascii_islower(static_cast<unsigned char>(c)) ||
                              absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.' ||
                              c == '+' || c == '-';
                     });
  if (named) return "";
  return absl::StrCat(field, ": \"", cpu,
                      "\" is not a core as -mcpu names it (lowercase letters, digits, . + -)");
}

bool IsCIdentifier(absl::string_view s) {
  if (s.empty() || s.size() > 64 || absl::ascii_isdigit(static_cast<unsigned char>(s[0]))) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
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
        return Invalid(absl::StrCat("dims.", d),
                       absl::StrCat("is ", it->second, " (must be >= 1)"));
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
                     absl::StrCat("\"", arg.dtype(), "\": ", spec.op(), "'s ", spec.args(a).name(),
                                  " is ", want));
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
      return Invalid(
          absl::StrCat("args[", a, "].shape"),
          absl::StrCat(spec.op(), "'s ", want.name(), " has ", want.shape_size(), " dims (",
                       absl::StrJoin(want.shape(), ", "), "), the trial ", shapes[a].size()));
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
        return Invalid(
            absl::StrCat("args[", a, "].shape[", d, "]"),
            absl::StrCat(want.shape(d), " = ", spec.derived().at(want.shape(d)), " is ",
                         it == dims.end() ? 0 : it->second, ", the trial gives ", shapes[a][d]));
      }
    }
  }
  return shapes;
}

std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<std::string> parts;
  for (const auto& s : shapes) parts.push_back(absl::StrJoin(s, "x"));
  return absl::StrJoin(parts, ",");
}

}  // namespace benchfarm::catalog
