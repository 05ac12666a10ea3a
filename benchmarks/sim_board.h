// What every simulated agent of a tracker_bench run shares: offer arrivals (the latency samples),
// acknowledged results and registrations, whichever load generator the agents run on (gRPC's
// client, or WireAgents).

#ifndef BENCHFARM_BENCHMARKS_SIM_BOARD_H_
#define BENCHFARM_BENCHMARKS_SIM_BOARD_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace benchfarm::bench {

using Steady = std::chrono::steady_clock;

struct Board {
  absl::Mutex mu;
  bool record_offers ABSL_GUARDED_BY(mu) = true;  // note each offer's arrival (latency runs)
  std::map<std::string, Steady::time_point> offered ABSL_GUARDED_BY(mu);
  int64_t acked ABSL_GUARDED_BY(mu) = 0;
  int registered ABSL_GUARDED_BY(mu) = 0;
  // Why an agent's connection or stream ended before the run did (WireAgents), or empty.
  std::string failure ABSL_GUARDED_BY(mu);
};

// The id of a simulated agent's board b: "AGENT-board", "AGENT-board1", ...
inline std::string BoardId(const std::string& agent_id, int b) {
  return b == 0 ? agent_id + "-board" : absl::StrCat(agent_id, "-board", b);
}

}  // namespace benchfarm::bench

#endif  // BENCHFARM_BENCHMARKS_SIM_BOARD_H_
