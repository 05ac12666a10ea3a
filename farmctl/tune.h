// `farmctl tune`: a search over one operator's knob space on a board kind, measured by the farm.
//
// Candidates go to the tracker in batches (one SubmitTrials per batch, with a request id derived
// from the batch's trials and the run key, so a resubmission after a crash returns the same jobs
// and another run never gets this one's); an agent
// builds each batch into one image and measures the candidates on a board. The default knobs are
// always measured first: they are the baseline of the speed-up column.
//
// Strategies:
//   grid    every config in index order (AutoTVM's ConfigSpace numbering, first knob fastest)
//   random  configs in a seeded random order, without repeats
//   model   a first batch at random, then a simple model guides: each knob value is scored by the
//           mean log-cost of the measured configs that use it, a candidate by the sum of its
//           values' scores; each batch takes the best-scored unmeasured configs of a random pool,
//           with a quarter of the batch left to random exploration.
//   gbt     the learned cost model (tuner/strategy.h): gradient-boosted trees with a rank
//           objective, refitted on every result before each batch, simulated annealing over its
//           predictions, 5 % of each batch at random.
//
// Image rounds (--max-flashes K): each batch is a round of ceil(trials / K) configs the strategy
// picks, and every trial of the round names them all (TemplateOperator.image_pool), so an agent
// whose boards hold that many candidates per image (BoardConfig.image_candidates) builds the round
// into one image: one flash per board per round, at most K per board for the run. The run reports
// its rounds and the most flashes one board took.
//
// Configs are ranked by the median of their costs (a preempted repeat is slow, never fast, so
// the mean ranks noise); each shows as "12.3 us +-0.4 %" (stats::CostText), UNSTABLE when its
// interval is wider than the tracker's threshold.
//
// --recheck K: after the search the top K configs are measured again in one submission, in
// adaptive mode (target +-1 % unless the run has its own --target), and both rankings are
// printed with whether the top-1 held and Kendall's tau between the two runs' medians.
// Two-stage tuning (--screen KIND_A --confirm KIND_B --top K): the search runs on the fast boards
// of KIND_A (emulated, e.g. the cycle model) and the recheck of the top K on the target boards of
// KIND_B, with both rankings and their agreement.
//
// State lives in the output directory, so an interrupted run resumes where it stopped:
//   tune-state.txt          "run <key>" (RunKey: a run with other shapes, measure options or
//                           operator version does not resume it but measures afresh), then
//                           "done <index> <median cost s | inf> <ErrorCode> [n=<count>
//                           hw=<rel half-width> u=<0|1> hz=<cpu_hz> [emu=<emulation>]]" and
//                           "pending <index> <job id>" lines (appended as they happen); a
//                           recheck adds "recheck <key> pending <index> <job id>" and
//                           "recheck <key> done <index> ..." lines (key: a hash of the recheck's
//                           trials, so the same recheck resumes and another one starts afresh)
//   <op>.autotvm.log        AutoTVM log records (version 0.2) of every finished trial, the
//                           recheck's included; each target names the core of its kind's boards
//                           (autotvm_record.h; the cores from one ListBoards, fetched again for a
//                           kind not among them). A resumed run appends to it: records written
//                           before targets named cores stay as they are, of the same kind.
//   tune-plot.svg           best cost against trials
// A progress line (trials done, best so far) goes to `progress`; the table of the best configs
// and their speed-up over the default to `out`.
//
// Thread-safety: none.

#ifndef BENCHFARM_FARMCTL_TUNE_H_
#define BENCHFARM_FARMCTL_TUNE_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "catalog/knob_space.h"
#include "farmctl/tracker_commands.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

struct TuneOptions {
  std::string op = "matmul";
  std::string kind = "host-process";
  std::string strategy = "model";  // grid, random, model, gbt
  int trials = 64;                 // budget, the default config included
  int batch = 16;                  // configs per submission (without max_flashes)
  // Flash economy for boards whose images hold many candidates (a microcontroller's flash takes
  // seconds to write): 0, or the most image rounds of the run (above); the batch is then a round.
  int max_flashes = 0;
  uint64_t seed = 1;  // the search's (the strategy's random choices)
  // AutoTVM logs of the same operator and version on other shapes or board kinds that pre-train
  // the learned model (--strategy gbt; farmctl/tune_log.h LoadTransfer).
  std::vector<std::string> transfer;
  uint64_t data_seed = 1;  // the trials' input data (Trial.seed): the same for any search
  std::string out_dir;     // required
  std::string client_id;   // empty: "tune-<op>-<kind>", or with derive_client none
  // A secure tracker names the client itself (the credential's name): send no client_id.
  bool derive_client = false;
  v1::MeasureOptions measure;  // number/repeat 0: 10/3
  bool check = true;
  int priority = 0;
  std::vector<v1::ArgSpec> args;  // empty: the op's default shapes
  // After the search: measure the top `recheck` configs again (adaptive; target_rel_ci 0.01
  // unless `measure` has one) and compare the rankings. recheck_budget_ms/max_repeat bound a
  // recheck of a fixed-mode run (0: the agent's defaults); an adaptive run's own bounds apply.
  int recheck = 0;
  // Two-stage tuning: the board kind the recheck measures on (empty: `kind`, the search's).
  std::string confirm;
  int recheck_budget_ms = 0;
  int recheck_max_repeat = 0;
  bool tty = false;  // redraw one progress line instead of printing one per batch
  absl::Duration batch_timeout = absl::Minutes(30);
  absl::Duration poll = absl::Milliseconds(200);
};

// One measured config.
struct TunePoint {
  int64_t index = 0;
  double cost = 0;  // median seconds per call; +inf for a failed trial
  v1::ErrorCode error = v1::NO_ERROR;
  // What the state file keeps of the result's stats: count, rel_half_width, unstable (median_s
  // is `cost`), and the board's clock; count 0 for states written before stats existed.
  v1::CostStats stats;
  double cpu_hz = 0;
  // The result's emulation ("qemu-icount": cpu_hz counts instructions per second, not cycles).
  std::string emulation;
  // A failure's message, its first line (at most 160 bytes); empty for a success.
  std::string message;
};

// "12.3 us +-0.4 %[ UNSTABLE][ = 12,345 cycles]" of a point; "failed" for a failed one.
std::string PointCostText(const TunePoint& p);

// Every trial of the run before its knobs are set: kind, op and version, args, measure options
// (number 0 becomes the trial's default, 10; repeat 0 becomes 3), check, priority, data_seed.
v1::Trial TrialTemplate(const v1::Operator& op, const TuneOptions& options);

// What makes measurements of two runs interchangeable: the trial template and the output
// directory (absolute). tune-state.txt starts with "run <key>"; a state of another key is set
// aside and the run measures afresh.
std::string RunKey(const v1::Operator& op, const TuneOptions& options);

// The measure options of a recheck: the run's, adaptive (target_rel_ci 0.01 unless the run
// has its own; then its budget and max_repeat, else recheck_budget_ms/max_repeat).
v1::MeasureOptions RecheckMeasure(const TuneOptions& options);

// Runs the search (and the recheck). Errors: InvalidArgument for bad options (naming the flag), the
// tracker's errors (TrackerClient's messages), Internal for files in out_dir that cannot be
// written, DeadlineExceeded when a batch does not finish within batch_timeout.
absl::Status Tune(const TrackerClient& tracker, const catalog::KnobSpace& knobs,
                  const TuneOptions& options, std::ostream& out, std::ostream& progress);

// `farmctl import-log`: the records of an AutoTVM log (this tool's, or a copy from another farm)
// that belong to the run `options` describes — same target kind, operator version and shapes —
// restored into out_dir's state and log, so `tune` with the same options resumes without
// measuring them again. `cpu`: the core of the kind's boards (BoardCores; "" for none or not
// known): a record whose target names another core is another run's; one whose target names
// none (a log written before targets named cores) is the kind's. Prints what it took and what it
// skipped.
absl::Status ImportLog(const v1::Operator& op, const TuneOptions& options, absl::string_view cpu,
                       const std::string& log_path, std::ostream& out);

// The SVG plot against trial number, in measurement order: the best-so-far cost (µs) as a line,
// every trial's cost as a dot, a failed trial as a red cross on the top edge.
std::string PlotSvg(const std::string& title, const std::vector<TunePoint>& points);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_TUNE_H_
