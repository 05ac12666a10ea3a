#include "tuner/strategy.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tuner/additive.h"
#include "tuner/gbt.h"

namespace benchfarm::tuner {

Strategy::Strategy(std::string name, const Space& space, uint64_t seed)
    : space_(space), rng_(seed), name_(std::move(name)), seed_(seed) {}

std::vector<int64_t> Strategy::Propose(int n) {
  std::vector<int64_t> out;
  if (n <= 0) return out;
  // A function of the seed and the results alone: a resumed run (a new strategy told the same
  // results) proposes what the uninterrupted one would.
  rng_.seed(BatchSeed(seed_, observed_.size()));
  Choose(n, &out);
  FillRandom(n, &out);
  return out;
}

uint64_t BatchSeed(uint64_t seed, size_t results) {
  return seed ^ (0x9e3779b97f4a7c15ull * (results + 1));
}

void Strategy::Observe(int64_t index, double cost) {
  if (index < 0 || index >= space_.size() || !observed_set_.insert(index).second) return;
  known_.insert(index);
  observed_.emplace_back(index, std::isfinite(cost) && cost > 0 ? cost : kFailed);
}

bool Strategy::Take(int64_t index, int n, std::vector<int64_t>* out) {
  if (static_cast<int>(out->size()) >= n || index < 0 || index >= space_.size()) return false;
  if (!known_.insert(index).second) return false;
  out->push_back(index);
  return true;
}

void Strategy::FillRandom(int n, std::vector<int64_t>* out) {
  const int64_t size = space_.size();
  if (size <= 0) return;
  std::uniform_int_distribution<int64_t> pick(0, size - 1);
  for (int tries = 0; static_cast<int>(out->size()) < n && tries < 8 * n + 64; ++tries) {
    Take(pick(rng_), n, out);
  }
  // A nearly exhausted space: scan from a random start.
  if (static_cast<int>(out->size()) < n) {
    const int64_t start = pick(rng_);
    for (int64_t i = 0; i < size && static_cast<int>(out->size()) < n; ++i) {
      Take((start + i) % size, n, out);
    }
  }
}

std::vector<int64_t> Strategy::RandomPool(int n) {
  std::vector<int64_t> pool;
  if (space_.size() <= 0) return pool;
  std::uniform_int_distribution<int64_t> pick(0, space_.size() - 1);
  for (int tries = 0; static_cast<int>(pool.size()) < n && tries < n * 8; ++tries) {
    const int64_t i = pick(rng_);
    if (!Known(i)) pool.push_back(i);
  }
  return pool;
}

namespace {

class RandomStrategy : public Strategy {
 public:
  RandomStrategy(const Space& space, uint64_t seed) : Strategy("random", space, seed) {}

 protected:
  void Choose(int n, std::vector<int64_t>* out) override { FillRandom(n, out); }
};

class AdditiveStrategy : public Strategy {
 public:
  AdditiveStrategy(const Space& space, uint64_t seed) : Strategy("additive", space, seed) {}

 protected:
  void Choose(int n, std::vector<int64_t>* out) override {
    if (observed().size() < 8) return;  // the first batch at random
    const int explore = std::max(1, n / 4);
    const AdditiveScore score(space_.spec(), observed());
    std::vector<std::pair<double, int64_t>> scored;
    for (int64_t index : RandomPool(4000)) scored.emplace_back(score(index), index);
    std::sort(scored.begin(), scored.end());
    for (const auto& [s, index] : scored) {
      if (static_cast<int>(out->size()) >= n - explore) break;
      Take(index, n, out);
    }
  }
};

}  // namespace

const std::vector<std::string>& StrategyNames() {
  static const std::vector<std::string> names = {"random", "additive", "gbt"};
  return names;
}

absl::StatusOr<std::unique_ptr<Strategy>> MakeStrategy(const std::string& name, const Space& space,
                                                       const StrategyOptions& options) {
  if (name == "random") return std::make_unique<RandomStrategy>(space, options.seed);
  if (name == "additive") return std::make_unique<AdditiveStrategy>(space, options.seed);
  if (name == "gbt") return MakeGbtStrategy(space, options);
  return absl::InvalidArgumentError(absl::StrCat("unknown strategy \"", name, "\" (one of ",
                                                 absl::StrJoin(StrategyNames(), ", "), ")"));
}

}  // namespace benchfarm::tuner
