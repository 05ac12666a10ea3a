// The trial contract: what a measurement trial (v1::Trial) may hold and what its measure options
// mean, declared once for the tracker (which checks trials at submission), the agent (which checks
// again what it is offered, then measures it with the effective options) and farmctl (whose flags
// obey the same limits).
//
// Limits (below): a byte cap on every string of a trial; at most kMaxArgs arguments of 1..kMaxNdim
// dims, each dim and each argument at most kMaxElements elements (the submission limit: whether
// the arguments fit a board's memory is the tracker's check against BoardRegistration.memory_bytes,
// not the contract's); measure options in their ranges; a priority in 0..kMaxPriority. The same
// argument limits bound a user operator's args and dims (catalog/operator.h).
//
// Defaults: EffectiveMeasure gives a trial's measure options with each 0 replaced by its default
// (MeasureOptions' documented ones: number 10, repeat 1, timeout 10 s, adaptive budget half the
// timeout, max_repeat 200) and the most costs its result may carry.
//
// Checks: CheckTrial checks everything about a trial that does not depend on boards — sizes, a
// board kind given, the operator (a template operator's knobs and shapes against its spec, which
// the caller looks up; a one-off C source's functions, arguments and compile options, cflags.h),
// the measure options and the priority — and returns its argument shapes. Whether the board kind
// exists, a pin (board id, labels) some board satisfies and arguments that fit a board of the kind
// are the tracker's.
// Errors are InvalidArgument "FIELD: PROBLEM" naming the trial's field ("measure.repeat: must be
// in 0..1024"); the tracker prefixes the trial's index ("trials[2].").
//
// Thread-safety: functions are pure.

#ifndef BENCHFARM_CATALOG_TRIAL_H_
#define BENCHFARM_CATALOG_TRIAL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "catalog/tensor_args.h"
#include "google/protobuf/map.h"
#include "proto/benchfarm.pb.h"
#include "proto/knobs.pb.h"

namespace benchfarm::catalog {

// ---- limits -------------------------------------------------------------------------------------

// Byte caps on a trial's strings (the tracker applies the board ones, labels and board kinds to
// registrations too).
inline constexpr size_t kMaxBoardIdBytes = 128;  // Trial.board_id (and boards, results)
inline constexpr size_t kMaxBoardKindBytes = 128;
inline constexpr size_t kMaxBoardCpuBytes = 32;  // BoardRegistration.cpu ("cortex-m55")
inline constexpr int kMaxLabels = 32;            // per trial and per board
inline constexpr size_t kMaxLabelKeyBytes = 128;
inline constexpr size_t kMaxLabelValueBytes = 256;
inline constexpr size_t kMaxOpNameBytes = 128;  // TemplateOperator.op (a user operator's: 48)
inline constexpr size_t kMaxVersionBytes = 64;  // TemplateOperator.version (16 hex digits)
inline constexpr int kMaxTrialKnobs = 64;       // TemplateOperator.knobs entries
inline constexpr size_t kMaxKnobNameBytes = 128;
inline constexpr size_t kMaxKnobValueBytes = 256;
inline constexpr size_t kMaxFunctionBytes = 64;  // entry_function, reference_function
inline constexpr size_t kMaxDtypeBytes = 16;
inline constexpr int kMaxImagePool = 4096;  // entries
inline constexpr size_t kMaxImagePoolEntryBytes = 1024;
inline constexpr size_t kMaxImagePoolBytes = 512 << 10;  // all entries together
inline constexpr size_t kMaxCSourceBytes = 1 << 20;

// Arguments (a trial's and a user operator's).
inline constexpr int kMaxArgs = 16;
inline constexpr int kMaxNdim = 6;
inline constexpr int64_t kMaxElements = int64_t{1} << 28;  // per dim and per argument

// Measure options (MeasureOptions; 0 is always allowed: the default).
inline constexpr int kMaxNumber = 1000000;
inline constexpr int kMaxCosts = 1024;  // repeat, max_repeat (and Result.costs_s)
inline constexpr int kMaxMinRepeatMs = 600000;
inline constexpr int kMaxCooldownMs = 600000;
inline constexpr int kMaxTimeoutMs = 3600000;
inline constexpr int kMaxBudgetMs = 3600000;
inline constexpr int kMaxPriority = 100;

// An attempt's log (JobResult.log: README "Per-job logs"): what the agent sends and the tracker
// keeps, cut in the middle beyond this (base::BoundedText).
inline constexpr size_t kMaxAttemptLogBytes = 64 << 10;
// The most results one agent message carries (AgentMessage.result and .results): the tracker
// refuses a message with more, ending the stream.
inline constexpr int kMaxResultsPerMessage = 1024;

// ---- defaults -----------------------------------------------------------------------------------

inline constexpr int kDefaultNumber = 10;
inline constexpr int kDefaultRepeat = 1;
inline constexpr int kDefaultTimeoutMs = 10000;
inline constexpr int kDefaultMaxRepeat = 200;

// A trial's measure options as measured: every 0 (or negative) replaced by its default.
struct EffectiveMeasureOptions {
  int64_t number;  // calls per repeat (adaptive: calibrated from min_repeat_ms)
  int repeat;      // costs in fixed mode
  int min_repeat_ms;
  int cooldown_ms;
  absl::Duration timeout;  // the whole measurement on the board
  double target_rel_ci;    // > 0: adaptive mode
  absl::Duration budget;   // adaptive: timing spent at most
  int max_repeat;          // adaptive: costs at most (at most kMaxCosts)

  bool adaptive() const { return target_rel_ci > 0; }
  // The most costs a result of the trial may carry: max_repeat (adaptive) or repeat, at most
  // kMaxCosts.
  int max_costs() const;
};
EffectiveMeasureOptions EffectiveMeasure(const v1::MeasureOptions& m);

// ---- checks -------------------------------------------------------------------------------------

// The spec of the operator (and version) a template trial names, or InvalidArgument naming
// "op.template_op.op" or "op.template_op.version". The spec must outlive the CheckTrial call.
using FindSpec =
    absl::FunctionRef<absl::StatusOr<const v1::OpTemplate*>(const v1::TemplateOperator&)>;

// Checks the trial (see the file comment) and returns its arguments (tensor_args.h): its args, or
// a template operator's default shapes when it gives none, each with its dtype and range, and the
// output's tolerance. `find_spec` is called for a template trial once its own fields have passed.
// InvalidArgument "FIELD: PROBLEM" otherwise; a string over its cap is named before anything else
// is checked, so no message quotes an oversized string.
absl::StatusOr<TrialArgs> CheckTrial(const v1::Trial& trial, FindSpec find_spec);

// A template operator's arguments for these shapes (its args' dtypes and ranges, a trial's ranges
// where it gives them, its tolerance).
absl::StatusOr<TrialArgs> TemplateArgs(const v1::OpTemplate& spec,
                                       std::vector<std::vector<int64_t>> shapes,
                                       const v1::Trial* trial = nullptr);

// "FIELD: N bytes, at most MAX" if value is longer than max bytes; "" if it fits.
std::string Oversized(absl::string_view field, absl::string_view value, size_t max);
// Too many labels, or a key or value over its cap ("FIELD: ..."; "" if none is): a trial's or a
// board's labels.
std::string LabelsProblem(absl::string_view field,
                          const google::protobuf::Map<std::string, std::string>& labels);

// A board's core as GCC's -mcpu names it (BoardRegistration.cpu; it goes into AutoTVM targets as
// "-mcpu=<core>"): at most kMaxBoardCpuBytes of lowercase letters, digits, '.', '+' and '-',
// starting with a letter; "" (no core) is one too. "FIELD: PROBLEM" otherwise, "" if it is one.
std::string CpuNameProblem(absl::string_view field, absl::string_view cpu);

// The op's argument shapes from its default dims (and derived dims).
absl::StatusOr<std::vector<std::vector<int64_t>>> DefaultShapes(const v1::OpTemplate& spec);

// The trial's argument shapes: its args, or the op's defaults when it gives none. Checks them
// against the op: the number of args, each one's dtype and rank, every dim name bound to one
// size across the args, derived dims consistent; an any_shape op takes any shape, all args equal.
// InvalidArgument naming the trial's field ("args[1].shape[0]: K is 32 in args[0], 16 here").
absl::StatusOr<std::vector<std::vector<int64_t>>> TrialShapes(const v1::OpTemplate& spec,
                                                              const v1::Trial& trial);

// "A x B" shapes as AutoTVM records and farmctl print them: "32x32,32x32,32x32".
std::string ShapesText(const std::vector<std::vector<int64_t>>& shapes);

// A C identifier of at most 64 characters (function, knob and dim names).
bool IsCIdentifier(absl::string_view s);

}  // namespace benchfarm::catalog

#endif  // BENCHFARM_CATALOG_TRIAL_H_
