// Compile options a user may give: a user operator's manifest ("cflags": ["-O3"]), a knob whose
// values are compile options ({"name": "opt", "values": ["-O2", "-O3", "-Os"], "cflag": true})
// and a C source trial (OperatorSpec.cflags). The tracker checks them at the door (operators
// added, trials submitted), the agent again before it builds, farmctl before it sends.
//
// The allow-list: options that change only the code the compiler makes —
//   -O, -O0, -O1, -O2, -O3, -Os, -Oz, -Og, -Ofast      optimisation
//   -f[no-]NAME[=VALUE]                                 code generation
//   -m[no-]NAME[=VALUE]                                 target (e.g. -mcpu=cortex-m4, -mthumb)
// NAME is letters, digits and _ . + - (starting with a letter or digit), VALUE letters, digits
// and _ . + : - — no path, no '@', no ',', no space. Refused, with the reason named: every other
// option (@file, -B, -specs=, -wrapper, -I, -L, -D, -include, -Wl,..., -o, -save-temps, -std=,
// -g0, ...), and the -f options that run code or read or write files at build time, or need a
// runtime the boards lack: -fplugin*, -fprofile*, -fauto-profile, -fbranch-probabilities,
// -ftest-coverage, -fdump*, -fself-test, -flto*, -fuse-ld, -fuse-linker-plugin, -f*prefix-map,
// -fopt-info*, -fsave-optimization-record, -fcallgraph-info, -fstack-usage, -fcompare-debug*,
// -fsanitize*, -fopenmp*, -fopenacc*, -ftree-parallelize-loops, -fdiagnostics*, -fwpa,
// -fltrans*, -fresolution, -fsyntax-only, -fpreprocessed, -fworking-directory.
//
// Errors are InvalidArgument "FIELD: PROBLEM" naming the field and the option (never an option
// over kMaxCflagBytes). Thread-safety: functions are pure.

#ifndef BENCHFARM_CATALOG_CFLAGS_H_
#define BENCHFARM_CATALOG_CFLAGS_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/repeated_field.h"
#include "proto/knobs.pb.h"

namespace benchfarm::catalog {

inline constexpr int kMaxCflags = 16;         // an operator's, a trial's or a knob value's
inline constexpr size_t kMaxCflagBytes = 64;  // one option

// One option against the allow-list: "FIELD: \"-fplugin=x\" is refused: it loads a compiler
// plugin (code run at build time)".
absl::Status CheckCflag(absl::string_view field, absl::string_view option);
// A list of options, one each (a manifest's or a trial's): at most kMaxCflags, each checked
// ("FIELD[2]: ...").
absl::Status CheckCflags(absl::string_view field,
                         const google::protobuf::RepeatedPtrField<std::string>& options);
// A cflag knob's value: one or more options separated by single spaces, each checked.
absl::StatusOr<std::vector<std::string>> CflagValueOptions(absl::string_view field,
                                                           absl::string_view value);

// An operator's compile options: spec.cflags ("op.spec.cflags[1]: ...") and every value of its
// cflag knobs, each a string of options ("op.spec.knobs[2].values[0]: ...").
absl::Status CheckOperatorCflags(const v1::OpTemplate& spec);

// A candidate's compile options: the operator's cflags, then each cflag knob's value's options in
// spec order (`knobs`: every knob of the op with its value, as ResolveKnobs gives them). Empty for
// an operator without either. Values are split as CflagValueOptions does (unchecked here).
std::vector<std::string> CandidateCflags(
    const v1::OpTemplate& spec, const std::vector<std::pair<std::string, std::string>>& knobs);

}  // namespace benchfarm::catalog

#endif  // BENCHFARM_CATALOG_CFLAGS_H_
