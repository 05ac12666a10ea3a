// The "gbt" strategy (tuner/strategy.h): an AutoTVM-style learned cost model.
//
// Model: gradient-boosted trees from XGBoost (Debian's libxgboost-dev, its C API) on the configs'
// features (Space), objective rank:pairwise over one group holding the run's measurements (in
// index order) and one per set of StrategyOptions::prior (transfer), label -log(cost) (only the
// order inside a group matters); a failed config gets a label 1 below its group's worst success,
// so the model learns to avoid it. nthread=1 and a seed from StrategyOptions: the same
// observations give the same model. Refitted before a batch when something new was observed.
//
// Batch: simulated annealing over the model's predictions (AutoTVM's SimulatedAnnealingOptimizer):
// `walkers` points (each batch afresh: the best measured configs, then random ones)
// each step move one random knob to another value, a move accepted with probability
// exp((new - old) / T), T falling linearly from 1 to 0 over `steps`; the best-predicted configs
// never proposed before are kept, and the search stops after `patience` steps without a change.
// A share `epsilon` of the batch is random (epsilon-greedy, at least one config for batches of
// 1 / epsilon or more, otherwise with probability n * epsilon). Until `min_train` successes are
// observed (the prior's count), the batch is random.
//
// Thread-safety: none.

#ifndef BENCHFARM_TUNER_GBT_H_
#define BENCHFARM_TUNER_GBT_H_

#include <memory>

#include "tuner/space.h"
#include "tuner/strategy.h"

namespace benchfarm::tuner {

std::unique_ptr<Strategy> MakeGbtStrategy(const Space& space, const StrategyOptions& options);

}  // namespace benchfarm::tuner

#endif  // BENCHFARM_TUNER_GBT_H_
