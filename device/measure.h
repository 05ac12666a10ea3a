// Measure: one operator function on a connected board — allocate its arguments, fill the inputs
// from a seed (the output is poisoned with NaN), run it once and compare its output with a
// reference kernel's (when asked), then time it with the board's own time evaluator
// (runtime.RPCTimeEvaluator). The agent measures trials with it; `farmctl board time` too.
//
// Thread-safety: none (an RpcClient is driven by one thread).

#ifndef BENCHFARM_DEVICE_MEASURE_H_
#define BENCHFARM_DEVICE_MEASURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/rpc_client.h"

namespace benchfarm::device {

struct MeasureRequest {
  std::string function;   // in the system library
  std::string reference;  // compared with when check is set
  std::vector<std::vector<int64_t>> shapes;  // inputs..., output (float32)
  uint64_t seed = 1;      // inputs uniform in [-1, 1)
  bool check = false;
  // Time the function even when its output differs from the reference (farmctl shows both);
  // otherwise a mismatch returns without costs (AutoTVM reports none for a wrong answer).
  bool time_on_mismatch = false;
  TimeEvaluatorOptions options;
};

struct MeasureOutcome {
  std::vector<double> costs;  // seconds per call, one per repeat
  bool checked = false;
  bool matches = true;
  double max_abs_error = 0;
  std::string mismatch;       // where the first mismatch is, for the message
};

// Errors: the RpcClient's (DeadlineExceeded when the board does not answer in time, Aborted for
// a reset, Unavailable for a lost link, Unknown for an exception on the board, NotFound for a
// missing function). What it allocated is freed on the way out when the link still works.
absl::StatusOr<MeasureOutcome> Measure(RpcClient& rpc, const MeasureRequest& request,
                                       absl::Time deadline);

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_MEASURE_H_
