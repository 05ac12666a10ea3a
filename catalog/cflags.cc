// Compile options: see cflags.h.
#include "catalog/cflags.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "catalog/knob_space.h"

namespace benchfarm::catalog {
namespace {

constexpr char kAllowList[] =
    "only -O (optimisation), -f (code generation) and -m (target) options are taken";
constexpr char kRuntime[] = "it needs a runtime library the boards lack";
constexpr char kWrites[] = "it writes files at build time";

struct Refusal {
  const char* prefix;
  const char* reason;
};

// -f options (their names, "no-" taken off) refused although they are -f options.
constexpr Refusal kRefusedF[] = {
    {"plugin", "it loads a compiler plugin (code run at build time)"},
    {"profile", "it reads or writes profile files"},
    {"auto-profile", "it reads a profile file"},
    {"branch-probabilities", "it reads profile files"},
    {"test-coverage", kWrites},
    {"dump", kWrites},
    {"self-test", "it reads the compiler's test files"},
    {"lto", "it moves code generation into the link, which is the board kind's"},
    {"fat-lto-objects", "it moves code generation into the link, which is the board kind's"},
    {"use-ld", "it chooses the linker program"},
    {"use-linker-plugin", "it loads a linker plugin"},
    {"opt-info", kWrites},
    {"save-optimization-record", kWrites},
    {"callgraph-info", kWrites},
    {"stack-usage", kWrites},
    {"compare-debug", "it runs the compiler again with other options"},
    {"sanitize", kRuntime},
    {"openmp", kRuntime},
    {"openacc", kRuntime},
    {"tree-parallelize-loops", kRuntime},
    {"diagnostics", "it changes the compiler's messages, not the code"},
    {"wpa", "it is internal to the compiler"},
    {"ltrans", "it is internal to the compiler"},
    {"resolution", "it is internal to the compiler"},
    {"syntax-only", "it makes no object"},
    {"preprocessed", "it changes how the source is read"},
    {"directives-only", "it changes how the source is read"},
    {"working-directory", "it changes how the source is read"},
    {"input-charset", "it changes how the source is read"},
    {"exec-charset", "it changes how the source is read"},
    {"wide-exec-charset", "it changes how the source is read"},
};

// Options that are not -O, -f or -m, with why they are refused (first match).
constexpr Refusal kRefusedOther[] = {
    {"@", "it reads options from a file"},
    {"-B", "it names where the compiler finds its programs (code run at build time)"},
    {"-specs", "it reads a specs file, which can run programs"},
    {"--specs", "it reads a specs file, which can run programs"},
    {"-wrapper", "it runs the compiler's programs through another program"},
    {"-W", "it passes options to the assembler, linker or preprocessor, or sets warnings"},
    {"-X", "it passes options to the assembler, linker or preprocessor"},
    {"-I", "it reads files (an include path)"},
    {"-i", "it reads files (an include path or file)"},
    {"-L", "it reads files (a library path)"},
    {"-l", "it links a library"},
    {"--sysroot", "it reads files (a system root)"},
    {"-D", "it defines a macro (a knob is BF_KNOB_<name>)"},
    {"-U", "it undefines a macro"},
    {"-save-temps", kWrites},
    {"-dump", kWrites},
    {"-g", "debug information is always on (faults are named with it)"},
};

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '+' ||
         c == '-';
}

bool IsValueChar(char c) { return IsNameChar(c) || c == ':'; }

// "-fNAME[=VALUE]" or "-mNAME[=VALUE]" with the characters cflags.h allows.
bool WellFormed(absl::string_view option) {
  absl::string_view rest = option.substr(2);
  const size_t eq = rest.find('=');
  absl::string_view name = rest.substr(0, eq);
  if (name.empty() || !absl::ascii_isalnum(static_cast<unsigned char>(name[0])) ||
      !std::all_of(name.begin(), name.end(), IsNameChar)) {
    return false;
  }
  if (eq == absl::string_view::npos) return true;
  absl::string_view value = rest.substr(eq + 1);
  return !value.empty() && std::all_of(value.begin(), value.end(), IsValueChar);
}

absl::Status Refuse(absl::string_view field, absl::string_view option, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": \"", option, "\" is refused: ", why));
}

}  // namespace

absl::Status CheckCflag(absl::string_view field, absl::string_view option) {
  if (option.size() > kMaxCflagBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": an option of ", option.size(), " bytes, at most ", kMaxCflagBytes));
  }
  if (option.empty()) return absl::InvalidArgumentError(absl::StrCat(field, ": empty"));
  if (absl::StrContains(option, ' ')) {
    return Refuse(field, option, "one option each, without spaces");
  }
  for (absl::string_view o : {"-O", "-O0", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Og", "-Ofast"}) {
    if (option == o) return absl::OkStatus();
  }
  const bool f = absl::StartsWith(option, "-f");
  if (!f && !absl::StartsWith(option, "-m")) {
    for (const Refusal& r : kRefusedOther) {
      if (absl::StartsWith(option, r.prefix)) {
        return Refuse(field, option, absl::StrCat(r.reason, "; ", kAllowList));
      }
    }
    return Refuse(field, option, absl::StrCat("it is not on the allow-list: ", kAllowList));
  }
  if (f) {
    absl::string_view name = option.substr(2);
    absl::ConsumePrefix(&name, "no-");
    if (absl::StrContains(name.substr(0, name.find('=')), "prefix-map")) {
      return Refuse(field, option, "it rewrites the paths faults are named with");
    }
    for (const Refusal& r : kRefusedF) {
      if (absl::StartsWith(name, r.prefix)) return Refuse(field, option, r.reason);
    }
  }
  if (!WellFormed(option)) {
    return Refuse(field, option,
                  "one option of letters, digits and _ . + - (and : after '='), no path, no "
                  "space");
  }
  return absl::OkStatus();
}

absl::Status CheckCflags(absl::string_view field,
                         const google::protobuf::RepeatedPtrField<std::string>& options) {
  if (options.size() > kMaxCflags) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", options.size(), " options, at most ", kMaxCflags));
  }
  for (int i = 0; i < options.size(); ++i) {
    if (absl::Status s = CheckCflag(absl::StrCat(field, "[", i, "]"), options.Get(i)); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> CflagValueOptions(absl::string_view field,
                                                           absl::string_view value) {
  if (value.size() > kMaxCflags * (kMaxCflagBytes + 1)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", value.size(), " bytes, at most ",
                                                   kMaxCflags * (kMaxCflagBytes + 1)));
  }
  std::vector<std::string> options = absl::StrSplit(value, ' ');
  if (options.size() > static_cast<size_t>(kMaxCflags)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", options.size(), " options, at most ", kMaxCflags));
  }
  for (const std::string& o : options) {
    if (o.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": \"", value, "\": compile options separated by single spaces"));
    }
    if (absl::Status s = CheckCflag(field, o); !s.ok()) return s;
  }
  return options;
}

absl::Status CheckOperatorCflags(const v1::OpTemplate& spec) {
  if (absl::Status s = CheckCflags("op.spec.cflags", spec.cflags()); !s.ok()) return s;
  for (int k = 0; k < spec.knobs_size(); ++k) {
    const v1::Knob& knob = spec.knobs(k);
    if (!knob.cflag()) continue;
    for (int v = 0; v < knob.values_size(); ++v) {
      const std::string field = absl::StrCat("op.spec.knobs[", k, "].values[", v, "]");
      if (knob.values(v).kind_case() != google::protobuf::Value::kStringValue) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ": a cflag knob's values are compile options (strings)"));
      }
      if (absl::Status s = CflagValueOptions(field, knob.values(v).string_value()).status();
          !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> CandidateCflags(
    const v1::OpTemplate& spec, const std::vector<std::pair<std::string, std::string>>& knobs) {
  std::vector<std::string> out(spec.cflags().begin(), spec.cflags().end());
  for (const auto& [name, value] : knobs) {
    const v1::Knob* knob = FindKnob(spec, name);
    if (knob == nullptr || !knob->cflag()) continue;
    for (absl::string_view o : absl::StrSplit(value, ' ', absl::SkipEmpty())) out.emplace_back(o);
  }
  return out;
}

}  // namespace benchfarm::catalog
