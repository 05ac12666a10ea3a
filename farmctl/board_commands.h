// The `farmctl board ...` commands, as functions over a connected RpcClient: what they ask the
// board, and how their answers are printed (human-readable tables, or JSON for scripts).
//
// Thread-safety: none (an RpcClient is single-threaded).

#ifndef BENCHFARM_FARMCTL_BOARD_COMMANDS_H_
#define BENCHFARM_FARMCTL_BOARD_COMMANDS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "device/board_timer.h"
#include "device/minrpc_codec.h"
#include "device/rpc_client.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

using Shape = std::vector<int64_t>;

// "32x32,32x32,32x32" -> {{32,32},{32,32},{32,32}}. InvalidArgument naming the bad part.
absl::StatusOr<std::vector<Shape>> ParseShapes(absl::string_view text);
std::string FormatShapes(const std::vector<Shape>& shapes);

// A trial's arguments from --shape and --dtype: one per shape; --dtype is one dtype for every
// argument or one per argument ("int8,int8,int32"), empty: the operator's (float32 for a C source).
// InvalidArgument naming the flag.
absl::StatusOr<std::vector<v1::ArgSpec>> ArgSpecs(absl::string_view shapes,
                                                  absl::string_view dtypes);

// A sample operator's default argument shapes: the catalog's (catalog::DefaultShapes of the
// built-in's spec, from crt/ops/knobs.json's default dims). NotFound for an operator that is not
// a sample operator (a board's firmware holds only those).
absl::StatusOr<std::vector<Shape>> DefaultShapes(absl::string_view op);

// One `board call` argument: "int:3", "float:1.5", "str:text", or a bare integer / decimal.
absl::StatusOr<device::Arg> ParseCallArg(absl::string_view text);

struct TimeRequest {
  std::string op;             // a float32 operator of the system library: inputs..., output
  std::vector<Shape> shapes;  // one per argument
  device::TimeEvaluatorOptions measure;
  // Adaptive mode when target_rel_ci > 0 (--target PCT / 100): number calibrated so a repeat
  // lasts measure.min_repeat_ms (0: 10 ms), then repeats until the median's 95 % interval is
  // within +-target_rel_ci, `budget` of timing is spent or max_repeat costs are taken
  // (device/measure.h). 0 budget / max_repeat: device::MeasureRequest's defaults.
  double target_rel_ci = 0;
  absl::Duration budget = absl::ZeroDuration();
  int max_repeat = 0;
  bool check = true;  // compare the output with "<op>_reference" on the board
  uint64_t seed = 1;  // inputs are uniform in [-1, 1) from this seed
};

struct TimeResult {
  std::string op;
  std::vector<Shape> shapes;
  device::TimeEvaluatorOptions measure;
  double target_rel_ci = 0;  // as asked (0: fixed mode)
  absl::Duration budget = absl::ZeroDuration();
  int max_repeat = 0;
  device::DeviceInfo info;
  // How the board's costs are to be read (set by the caller from the board): its emulation
  // (device::Board::emulation()), what timed them ("cycle-model", else DeviceInfo's timer) and
  // the rate that turns a cost into the board's units (cycles at DeviceInfo cpu_hz; for QEMU
  // -icount, instructions at 1e9 / 2^shift per second).
  std::string emulation;
  std::string timer;
  double units_hz = 0;
  std::vector<double> costs;                 // seconds per call, one per repeat
  std::vector<double> cycles, instructions;  // the cycle model's, per call, one per repeat
  // count, mean, median, min, max, stddev, CV, the median's interval (stats::CostStatsOf).
  v1::CostStats stats;
  int64_t number = 0;        // calls per repeat (adaptive: as calibrated)
  int rounds = 0;            // timing rounds
  std::string stop;          // "fixed", "target", "budget", "max_repeat"
  double wall_over_cpu = 0;  // 0: the board's timer is not a CPU clock
  // "ok", "skipped", or "mismatch"; max_abs_error is over the output elements.
  std::string check = "skipped";
  double max_abs_error = 0;
};

// Allocates the arguments on the board, fills the inputs, runs the operator (and its reference
// when check is set), then times it with the board's time evaluator through `timer` (the board's
// own, or its cycle model: device::Measure, fixed or adaptive). Frees what it allocated.
// Errors: the RpcClient's and the timer's; NotFound for an unknown operator.
absl::StatusOr<TimeResult> TimeOperator(device::RpcClient& rpc, device::BoardTimer& timer,
                                        const TimeRequest& request, absl::Time deadline);

// "12,345 cycles": `seconds` at `cpu_hz`, rounded, thousands separated.
std::string CyclesText(double seconds, double cpu_hz);
// A cost in the board's own units: "12,345 cycles" at `hz`, or for QEMU -icount (emulation
// "qemu-icount", whose clock is instructions per second) "12,345 instructions": never cycles of
// a pseudo clock.
std::string UnitsText(double seconds, double hz, absl::string_view emulation);

std::string FormatInfo(const device::DeviceInfo& info, absl::string_view board, bool json);
// The table: the costs (each repeat's when there are at most 32), count, mean, median, min, max,
// stddev, CV, the 95 % interval of the median and its +-, calls per repeat, repeats, rounds and
// why it stopped, wall/CPU when the board says, and the output check. `json`: the same as one
// object.
std::string FormatTime(const TimeResult& result, absl::string_view board, bool json);
std::string FormatCallResult(const device::Arg& value, bool json);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_BOARD_COMMANDS_H_
