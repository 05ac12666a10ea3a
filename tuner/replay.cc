#include "tuner/replay.h"

#include <algorithm>

namespace benchfarm::tuner {

std::vector<double> Replay(const Table& table, Strategy& strategy, int budget, int batch) {
  std::vector<double> curve;
  double best = kFailed;
  while (static_cast<int>(curve.size()) < budget) {
    const int n = std::min(std::max(1, batch), budget - static_cast<int>(curve.size()));
    const std::vector<int64_t> configs = strategy.Propose(n);
    if (configs.empty()) break;
    for (int64_t index : configs) {
      const double cost = table.cost[index];
      strategy.Observe(index, cost);
      best = std::min(best, cost);
      curve.push_back(best);
    }
  }
  return curve;
}

ReplayStats Summarize(const std::vector<std::vector<double>>& curves, double optimum, int budget) {
  ReplayStats s;
  for (const std::vector<double>& curve : curves) {
    if (curve.empty()) continue;
    const double best = curve[std::min<size_t>(curve.size(), budget) - 1];
    const double ratio = best / optimum;
    s.mean_ratio += ratio;
    s.worst_ratio = std::max(s.worst_ratio, ratio);
    s.exact += best <= optimum ? 1 : 0;
    ++s.runs;
  }
  if (s.runs > 0) {
    s.mean_ratio /= s.runs;
    s.exact /= s.runs;
  }
  return s;
}

int TrialsToReach(const std::vector<double>& curve, double optimum, double within) {
  for (size_t i = 0; i < curve.size(); ++i) {
    if (curve[i] <= optimum * (1 + within)) return static_cast<int>(i) + 1;
  }
  return -1;
}

}  // namespace benchfarm::tuner
