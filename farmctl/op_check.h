// CheckOperatorBuilds: what `farmctl op add` does before it sends a user operator to the tracker.
// The operator is compiled once for the host as the agent's host-process template compiles it —
// the agent's own generated sources (agent::UserOperatorUnit: the user's files included with every
// knob at its default, the entry and reference under their own names, the system library), each
// *.c compiled with the template's flags (agent/templates/host-process/build) against the crt
// headers — and the object must define the manifest's entry and reference functions as global
// symbols (nm). So the catalog never takes an operator that cannot build, or whose entry or
// reference is misspelt or static; the compiler's errors are shown with the user's own paths.
//
// What is skipped, and said (OpCheck::skipped): no crt tree (the headers) found, no host C
// compiler, or no nm (the symbol check alone). An installed farmctl finds the crt tree through
// $BENCHFARM_CRT, which ./farm install-bin's wrapper sets to PREFIX/share/benchfarm/crt.
//
// Thread-safety: a function of its arguments (it writes only its own temporary directory).

#ifndef BENCHFARM_FARMCTL_OP_CHECK_H_
#define BENCHFARM_FARMCTL_OP_CHECK_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

struct OpCheckOptions {
  // The crt source tree (its include/ and */include/ hold the headers); empty: not found.
  std::string crt_dir;
  std::string cc = "cc";  // $CC, as the template
  std::string nm = "nm";
  absl::Duration time_limit = absl::Seconds(60);  // per command
};

struct OpCheck {
  bool compiled = false;
  bool symbols_checked = false;
  // What was not done, and why ("no host C compiler (cc) ..."); empty when nothing was skipped.
  std::vector<std::string> skipped;
};

// The crt tree farmctl compiles against: $BENCHFARM_CRT, else crt/ (with ops/knobs.json) in the
// working directory or farmctl's data (runfiles, PREFIX/share/benchfarm); "" if none.
std::string FindCrtTree(const char* argv0);

// Compiles `op` (files included, as LoadOperator reads it; `source_dir`: where they are, for
// messages). InvalidArgument "<name> does not compile for the host ...: N errors:" with each
// error line and the compiler's output, or naming a function the sources do not define; a
// command that cannot be run is skipped (OpCheck::skipped), not an error. Internal for a
// temporary directory that cannot be made.
absl::StatusOr<OpCheck> CheckOperatorBuilds(const v1::Operator& op, const std::string& source_dir,
                                            const OpCheckOptions& options);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_OP_CHECK_H_
