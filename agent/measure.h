// Measure: one operator function on a connected board — allocate its arguments, fill the inputs
// from a seed, run it once and compare its output with a reference kernel's (when asked), then
// time it with the board's own time evaluator (runtime.RPCTimeEvaluator).
//
// Thread-safety: none (an RpcClient is driven by one thread).

#ifndef BENCHFARM_AGENT_MEASURE_H_
#define BENCHFARM_AGENT_MEASURE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/rpc_client.h"

namespace benchfarm::agent {

struct MeasureRequest {
  std::string function;   // in the system library
  std::string reference;  // compared with when check is set
  std::vector<std::vector<int64_t>> shapes;  // inputs..., output (float32)
  uint64_t seed = 1;      // inputs uniform in [-1, 1)
  bool check = false;
  device::TimeEvaluatorOptions options;
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
absl::StatusOr<MeasureOutcome> Measure(device::RpcClient& rpc, const MeasureRequest& request,
                                       absl::Time deadline);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_MEASURE_H_
