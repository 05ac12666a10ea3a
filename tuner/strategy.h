// Search strategies over a Space, driven the same way by the replay benchmark (tuner/replay.h,
// benchmarks/tuner_bench.cc) and, later, by `farmctl tune`: Propose(n) gives the next configs to
// measure, Observe(config, cost) reports each result (a failure as kFailed). A strategy never
// proposes a config twice, nor one it was told about through Observe.
//
//   random    configs in a seeded random order
//   additive  `farmctl tune --strategy model`'s search (the baseline): a first batch at random,
//             then each batch takes the best configs of a random pool of 4,000 by AdditiveScore
//             (tuner/additive.h), with a quarter of the batch left to random exploration
//   gbt       a learned cost model (tuner/gbt.h): gradient-boosted trees (XGBoost) with a
//             pairwise-rank objective on the configs' features (Space), refitted before each batch;
//             the batch is the best unmeasured configs by the model found by simulated annealing,
//             plus an epsilon-greedy share of random configs
//
// Deterministic: the same options (seed included) and the same observations, in the same order,
// give the same proposals — whatever the strategy proposed before (a resumed run's new strategy,
// told the results so far, continues as the uninterrupted one would).
//
// Thread-safety: none.

#ifndef BENCHFARM_TUNER_STRATEGY_H_
#define BENCHFARM_TUNER_STRATEGY_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tuner/space.h"

namespace benchfarm::tuner {

// The cost of a config that failed (did not build, crashed, gave wrong results).
inline constexpr double kFailed = std::numeric_limits<double>::infinity();

struct StrategyOptions {
  uint64_t seed = 1;
  // gbt: the share of each batch proposed at random (epsilon-greedy), and how many successful
  // measurements it needs before the model guides (until then: random).
  double epsilon = 0.05;
  int min_train = 8;
  // gbt: XGBoost's boosting rounds, tree depth and learning rate.
  int rounds = 64;
  int max_depth = 3;
  double eta = 0.3;
  // gbt: simulated annealing's walkers, its most steps per batch, and the steps without a better
  // candidate after which it stops.
  int walkers = 128;
  int steps = 500;
  int patience = 50;
  // gbt: transfer learning — results of the same space measured elsewhere (another shape, another
  // board kind; AutoTVM's transfer from earlier logs), each set a ranking group of its own, so
  // only the order inside a set teaches the model (costs of another shape need not be
  // comparable). The model trains on them beside the run's own results, from the first batch
  // when they hold min_train successes. They are not the run's results: their configs may still
  // be proposed.
  std::vector<std::vector<std::pair<int64_t, double>>> prior;
};

class Strategy {
 public:
  virtual ~Strategy() = default;
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  // Up to n configs never proposed or observed before; fewer only when the space runs out.
  std::vector<int64_t> Propose(int n);
  // The result of measuring config `index`: its cost (> 0; seconds or any unit, the same for
  // every call), or kFailed (any cost that is not finite and positive counts as a failure). The
  // first result of a config counts; repeats are ignored.
  void Observe(int64_t index, double cost);

  const std::string& name() const { return name_; }
  const Space& space() const { return space_; }
  // Every result, in the order observed.
  const std::vector<std::pair<int64_t, double>>& observed() const { return observed_; }
  // The last internal error the strategy recovered from (e.g. the model failed to train and the
  // batch was chosen at random); empty when none.
  const std::string& last_error() const { return last_error_; }

 protected:
  Strategy(std::string name, const Space& space, uint64_t seed);

  // Appends up to n configs to `out` through Take (or FillRandom).
  virtual void Choose(int n, std::vector<int64_t>* out) = 0;

  // Whether config `index` was proposed or observed.
  bool Known(int64_t index) const { return known_.count(index) > 0; }
  // Appends `index` when out has fewer than n and the config is new; whether it did.
  bool Take(int64_t index, int n, std::vector<int64_t>* out);
  // Fills `out` up to n with random new configs.
  void FillRandom(int n, std::vector<int64_t>* out);
  // Up to n random configs not yet known (repeats possible), as farmctl's pool.
  std::vector<int64_t> RandomPool(int n);

  const Space& space_;
  std::mt19937_64 rng_;
  std::string last_error_;

 private:
  const std::string name_;
  const uint64_t seed_;
  std::unordered_set<int64_t> known_;
  std::unordered_set<int64_t> observed_set_;
  std::vector<std::pair<int64_t, double>> observed_;
};

// The seed of a batch's random choices: a function of the run's seed and how many results it holds,
// so a resumed run (told the same results) makes the choices the uninterrupted one would.
uint64_t BatchSeed(uint64_t seed, size_t results);

// "random", "additive", "gbt".
const std::vector<std::string>& StrategyNames();
// InvalidArgument "unknown strategy \"x\" (one of random, additive, gbt)". `space` must outlive
// the strategy.
absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const std::string& name, const Space& space,
                                                       const StrategyOptions& options);

}  // namespace benchfarm::tuner

#endif  // BENCHFARM_TUNER_STRATEGY_H_
