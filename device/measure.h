// Measure: one operator function on a connected board — its arguments allocated by dtype and the
// inputs filled from a seed (device/board_args.h: on the board where the firmware can), its output
// checked against a reference kernel's (when asked), then timed with the board's own time
// evaluator (runtime.RPCTimeEvaluator). The agent measures trials with it; `farmctl board time`
// too.
//
// Thread-safety: none (an RpcClient is driven by one thread).

#ifndef BENCHFARM_DEVICE_MEASURE_H_
#define BENCHFARM_DEVICE_MEASURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/board_args.h"
#include "device/board_timer.h"
#include "device/rpc_client.h"
#include "stats/round_interval.h"

namespace benchfarm::device {

struct MeasureRequest {
  std::string function;         // in the system library
  std::string reference;        // compared with when check is set
  std::vector<TensorArg> args;  // inputs..., output
  uint64_t seed = 1;            // inputs drawn from it (crt/data), each in its range
  bool check = false;
  // The check of a float output: |got - want| <= atol + rtol * |want|; integers must be equal.
  double atol = 1e-4, rtol = 1e-4;
  // Make and check the data on the host even where the board could (BoardArgs: the benchmark's
  // baseline).
  bool data_on_host = false;
  // Time the function even when its output differs from the reference (farmctl shows both);
  // otherwise a mismatch returns without costs (AutoTVM reports none for a wrong answer).
  bool time_on_mismatch = false;
  // Fixed mode (AutoTVM's): options.repeat costs of options.number calls, number grown by the
  // board until a repeat lasts options.min_repeat_ms.
  TimeEvaluatorOptions options;
  // Adaptive mode when target_rel_ci > 0: the first round calibrates number so one repeat lasts
  // options.min_repeat_ms (0: 10 ms); then repeats are taken until the 95 % interval of the
  // median is within +-target_rel_ci (from kAdaptiveMinRepeats costs on), `budget` of timing is
  // spent, or max_repeat costs are taken. options.number/repeat are ignored.
  double target_rel_ci = 0;
  absl::Duration budget = absl::Seconds(5);
  int max_repeat = 200;
  // Adaptive mode judges the target on the interval that counts the spread between rounds
  // (stats::IntervalOf: what a re-measurement needs). false: on all costs as one sample (the
  // rule before issue 37 §5; fidelity_bench measures both).
  bool rounds_in_interval = true;
};

inline constexpr int kAdaptiveMinRepeats = 10;
// Costs an adaptive round takes when nothing else decides (Measure): small rounds give the
// between-round interval enough rounds to judge.
inline constexpr int kAdaptiveRoundSize = 5;

struct MeasureOutcome {
  std::vector<double> costs;  // seconds per call, one per repeat
  // An emulated board's cycle model: modeled cycles and executed instructions per call, one per
  // repeat (empty for other timers).
  std::vector<double> cycles, instructions;
  bool checked = false;
  bool matches = true;
  double max_abs_error = 0;
  // Where the first mismatch is, for the message: "output element 3 is 12, the reference
  // dwconv_reference gives 11 (2 of 64 elements differ, max error 1)".
  std::string mismatch;
  int64_t number = 0;            // calls per repeat (adaptive: as calibrated)
  int rounds = 0;                // MeasureRound calls that timed
  std::vector<int> round_sizes;  // costs each of them took, in order
  // "fixed", or why adaptive mode stopped: "target", "budget", "max_repeat".
  std::string stop;
  // The board timer's CPU and wall seconds over the timed calls, for boards that time with a CPU
  // clock (benchfarm.TimerTotals); 0 when the board does not say.
  double timer_cpu_s = 0, timer_wall_s = 0;
  absl::Duration timing_spent;  // host time spent in timing calls (adaptive budget)
  // The spread between rounds of the batch this candidate takes turns with, pooled over its
  // candidates so far (stats::PoolSpreads; set by the caller before each round, df 0: none).
  // The adaptive stop judges the interval the tracker will state, which widens by it.
  stats::RoundSpread batch_spread;
  bool done = false;  // every cost taken (or a stop rule fired, or a mismatch)

  // Wall time / CPU time over the timed calls; 0 when the board does not say.
  double WallOverCpu() const { return timer_cpu_s > 0 ? timer_wall_s / timer_cpu_s : 0; }
};

// Errors: the RpcClient's (DeadlineExceeded when the board does not answer in time, Aborted for
// a reset, Unavailable for a lost link, Unknown for an exception on the board, NotFound for a
// missing function), Cancelled for a call abandoned (Board::Interrupt). After DeadlineExceeded,
// Aborted, Unavailable or Cancelled `args` is forgotten (the board's session is gone with it).
//
// One round of a measurement, so candidates of a batch can take turns (A B C A B C ...) and
// drift hits them alike. The first round (outcome->number == 0) checks outputs when asked and,
// in adaptive mode, calibrates number; every round adds up to `chunk` costs (fixed mode: never
// past options.repeat). Sets outcome->done when nothing is left to take. `args` may be shared by
// the rounds of several requests (BoardArgs); null: the round allocates and frees its own.
//
// `timer` is how the board's timed calls become costs (board_timer.h; null: the board's own
// timer, as for every board but an emulated one in CYCLES timing).
absl::Status MeasureRound(RpcClient& rpc, const MeasureRequest& request, int chunk,
                          MeasureOutcome* outcome, absl::Time deadline, BoardArgs* args = nullptr,
                          BoardTimer* timer = nullptr);

// The whole measurement in one go (rounds until done): `farmctl board time` and single trials.
absl::StatusOr<MeasureOutcome> Measure(RpcClient& rpc, const MeasureRequest& request,
                                       absl::Time deadline, BoardTimer* timer = nullptr);

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_MEASURE_H_
