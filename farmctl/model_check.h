// `farmctl board check-model`: is the cycle model right for this core? The firmware's
// microbenchmark suite (benchfarm.Microbench: one assembly loop per timing rule,
// crt/boards/cortex-m/microbench.c) runs on two boards of the same core — an emulated one under the
// cycle model, and a real one timed by its own cycle counter (DWT) — and each rule's cycles per
// loop iteration are printed side by side with the model's error.
//
// Cycles per iteration: each loop is timed for N and for 2N iterations; the difference over N
// leaves one iteration (the timer calls and the loop's set-up cancel), turned into cycles at the
// board's clock (DeviceInfo cpu_hz; the cycle model's own cycles for the emulated board). A board
// timed in host time gives the median of three.
//
// Thread-safety: none.

#ifndef BENCHFARM_FARMCTL_MODEL_CHECK_H_
#define BENCHFARM_FARMCTL_MODEL_CHECK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/board.h"

namespace benchfarm::farmctl {

// Each microbenchmark's cycles per iteration on `board`, by name, in the firmware's order.
// Errors: NotFound for firmware without the suite (benchfarm.Microbenchmarks); the timer's.
absl::StatusOr<std::vector<std::pair<std::string, double>>> MicrobenchCycles(device::Board& board,
                                                                             int64_t iterations,
                                                                             absl::Time deadline);

struct ModelCheckRow {
  std::string rule;
  double model = 0;     // cycles per iteration, the emulated board's
  double measured = 0;  // the real board's
  double error = 0;     // (model - measured) / measured
};

// The rows of the rules both boards ran (in the model's order), and the rules only one ran.
struct ModelCheck {
  std::vector<ModelCheckRow> rows;
  std::vector<std::string> only_model, only_measured;
};
ModelCheck CompareMicrobenchmarks(const std::vector<std::pair<std::string, double>>& model,
                                  const std::vector<std::pair<std::string, double>>& measured);

// The table (or JSON): rule, model, measured, error; the boards; the largest error.
std::string FormatModelCheck(const ModelCheck& check, const std::string& model_board,
                             const std::string& measured_board, bool json);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_MODEL_CHECK_H_
