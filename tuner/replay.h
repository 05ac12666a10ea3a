// Replays a strategy offline on a ground-truth table (tuner/table.h): each batch it proposes is
// "measured" by looking its configs up, as a tuning run on a deterministic board would measure
// them.
//
// Thread-safety: none (the strategy is driven).

#ifndef BENCHFARM_TUNER_REPLAY_H_
#define BENCHFARM_TUNER_REPLAY_H_

#include <vector>

#include "tuner/strategy.h"
#include "tuner/table.h"

namespace benchfarm::tuner {

// The best cost after each trial: entry i is the lowest cost among the first i + 1 configs
// measured (kFailed while every one failed). Batches of `batch` configs until `budget` trials;
// fewer entries when the strategy runs out of configs. The strategy's space must be the table's.
std::vector<double> Replay(const Table& table, Strategy& strategy, int budget, int batch);

// Summary of many replays' curves at one budget.
struct ReplayStats {
  int runs = 0;
  double mean_ratio = 0;   // mean of best / optimum at the budget
  double worst_ratio = 0;  // the largest best / optimum
  double exact = 0;        // share of runs that found the optimum within the budget
};
ReplayStats Summarize(const std::vector<std::vector<double>>& curves, double optimum, int budget);

// The trials a run needed to come within `within` (0.01: 1 %) of the optimum, or -1 if it never
// did.
int TrialsToReach(const std::vector<double>& curve, double optimum, double within);

}  // namespace benchfarm::tuner

#endif  // BENCHFARM_TUNER_REPLAY_H_
