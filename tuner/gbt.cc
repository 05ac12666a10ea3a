#include "tuner/gbt.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace benchfarm::tuner {
namespace {

absl::Status XgbError(const char* what) {
  return absl::InternalError(absl::StrCat("xgboost ", what, ": ", XGBGetLastError()));
}

#define XGB_CHECK(call, what) \
  if ((call) != 0) return XgbError(what)

// A DMatrix, freed when it goes.
class Matrix {
 public:
  Matrix() = default;
  ~Matrix() {
    if (handle_ != nullptr) XGDMatrixFree(handle_);
  }
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;

  absl::Status Make(const std::vector<float>& data, size_t rows, size_t cols) {
    XGB_CHECK(XGDMatrixCreateFromMat(data.data(), rows, cols, std::nanf(""), &handle_), "DMatrix");
    return absl::OkStatus();
  }
  DMatrixHandle get() const { return handle_; }

 private:
  DMatrixHandle handle_ = nullptr;
};

// A trained booster.
class Model {
 public:
  ~Model() { Reset(); }

  void Reset() {
    if (booster_ != nullptr) XGBoosterFree(booster_);
    booster_ = nullptr;
  }
  bool trained() const { return booster_ != nullptr; }

  // Groups of results (index, cost), each ranked on its own.
  absl::Status Train(const Space& space,
                     const std::vector<std::vector<std::pair<int64_t, double>>>& groups,
                     const StrategyOptions& o) {
    Reset();
    std::vector<float> x;
    std::vector<float> y;
    std::vector<unsigned> sizes;
    for (const std::vector<std::pair<int64_t, double>>& group : groups) {
      double worst = std::numeric_limits<double>::infinity();
      for (const auto& [index, cost] : group) {
        if (std::isfinite(cost)) worst = std::min(worst, -std::log(cost));
      }
      unsigned size = 0;
      for (const auto& [index, cost] : group) {
        if (index < 0 || index >= space.size()) continue;
        space.AppendFeatures(index, &x);
        y.push_back(
            static_cast<float>(std::isfinite(cost) && cost > 0 ? -std::log(cost) : worst - 1.0));
        ++size;
      }
      if (size > 0) sizes.push_back(size);
    }
    Matrix train;
    RETURN_IF_ERROR(train.Make(x, y.size(), space.num_features()));
    XGB_CHECK(XGDMatrixSetFloatInfo(train.get(), "label", y.data(), y.size()), "labels");
    XGB_CHECK(XGDMatrixSetUIntInfo(train.get(), "group", sizes.data(), sizes.size()), "group");
    DMatrixHandle handles[] = {train.get()};
    XGB_CHECK(XGBoosterCreate(handles, 1, &booster_), "booster");
    const std::pair<std::string, std::string> params[] = {
        {"objective", "rank:pairwise"},
        {"tree_method", "exact"},
        {"max_depth", std::to_string(o.max_depth)},
        {"eta", std::to_string(o.eta)},
        {"gamma", "0.0001"},
        {"min_child_weight", "1"},
        {"subsample", "1"},
        {"lambda", "1"},
        {"alpha", "0"},
        {"nthread", "1"},
        {"seed", std::to_string(o.seed % 2147483647)},
        {"verbosity", "0"},
    };
    for (const auto& [key, value] : params) {
      XGB_CHECK(XGBoosterSetParam(booster_, key.c_str(), value.c_str()), "parameter");
    }
    for (int i = 0; i < o.rounds; ++i) {
      XGB_CHECK(XGBoosterUpdateOneIter(booster_, i, train.get()), "training");
    }
    return absl::OkStatus();
  }

  // Higher is better.
  absl::Status Predict(const Space& space, const std::vector<int64_t>& configs,
                       std::vector<float>* out) const {
    std::vector<float> x;
    x.reserve(configs.size() * space.num_features());
    for (int64_t index : configs) space.AppendFeatures(index, &x);
    Matrix m;
    RETURN_IF_ERROR(m.Make(x, configs.size(), space.num_features()));
    const char* config =
        R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, )"
        R"("strict_shape": false})";
    const bst_ulong* shape = nullptr;
    bst_ulong dim = 0;
    const float* result = nullptr;
    XGB_CHECK(XGBoosterPredictFromDMatrix(booster_, m.get(), config, &shape, &dim, &result),
              "prediction");
    out->assign(result, result + configs.size());
    return absl::OkStatus();
  }

 private:
  BoosterHandle booster_ = nullptr;
};

class GbtStrategy : public Strategy {
 public:
  GbtStrategy(const Space& space, const StrategyOptions& options)
      : Strategy("gbt", space, options.seed), options_(options) {
    // Quiet: XGBoost's warnings would go to stderr on every fit.
    XGBSetGlobalConfig(R"({"verbosity": 0})");
  }

 protected:
  void Choose(int n, std::vector<int64_t>* out) override {
    int successes = 0;
    for (const auto& [index, cost] : observed()) successes += std::isfinite(cost) ? 1 : 0;
    for (const auto& set : options_.prior) {
      for (const auto& [index, cost] : set) successes += std::isfinite(cost) ? 1 : 0;
    }
    if (successes < std::max(2, options_.min_train) || space_.num_features() == 0) return;
    if (observed().size() != trained_on_ || !model_.trained()) {
      cache_.clear();
      // In index order: the model does not depend on the order results came in.
      std::vector<std::vector<std::pair<int64_t, double>>> groups = options_.prior;
      groups.push_back(observed());
      for (auto& group : groups) std::sort(group.begin(), group.end());
      absl::Status st = model_.Train(space_, groups, options_);
      trained_on_ = observed().size();
      if (!st.ok()) {
        last_error_ = std::string(st.message());
        model_.Reset();
      }
    }
    if (!model_.trained()) return;  // random: Propose fills the batch
    const double share = n * options_.epsilon;
    int explore = static_cast<int>(std::floor(share));
    if (std::uniform_real_distribution<double>(0, 1)(rng_) < share - explore) ++explore;
    const int exploit = n - std::min(n, explore);
    std::vector<int64_t> best;
    absl::Status st = Anneal(exploit, &best);
    if (!st.ok()) {
      last_error_ = std::string(st.message());
      return;
    }
    for (int64_t index : best) Take(index, exploit, out);
  }

 private:
  // Predictions of `configs`, from the cache or the model.
  absl::Status Scores(const std::vector<int64_t>& configs, std::vector<float>* scores) {
    std::vector<int64_t> missing;
    for (int64_t c : configs) {
      if (cache_.count(c) == 0) missing.push_back(c);
    }
    std::sort(missing.begin(), missing.end());
    missing.erase(std::unique(missing.begin(), missing.end()), missing.end());
    if (!missing.empty()) {
      std::vector<float> predicted;
      absl::Status st = model_.Predict(space_, missing, &predicted);
      if (!st.ok()) return st;
      for (size_t i = 0; i < missing.size(); ++i) cache_[missing[i]] = predicted[i];
    }
    scores->clear();
    for (int64_t c : configs) scores->push_back(cache_[c]);
    return absl::OkStatus();
  }

  // The `k` best configs by the model not yet known, best first, found by simulated annealing.
  absl::Status Anneal(int k, std::vector<int64_t>* best) {
    if (k <= 0) return absl::OkStatus();
    std::uniform_int_distribution<int64_t> pick(0, space_.size() - 1);
    // Each batch the walkers start afresh (so proposals depend on the results alone): the best
    // measured configs, then random ones.
    walkers_.clear();
    std::vector<std::pair<double, int64_t>> measured;
    for (const auto& [index, cost] : observed()) measured.emplace_back(cost, index);
    std::sort(measured.begin(), measured.end());
    for (size_t i = 0; i < measured.size() && i < 8; ++i) walkers_.push_back(measured[i].second);
    while (static_cast<int>(walkers_.size()) < options_.walkers) walkers_.push_back(pick(rng_));
    std::vector<float> scores;
    RETURN_IF_ERROR(Scores(walkers_, &scores));
    // Best candidates so far: (score, index), lowest first; at most k.
    std::set<std::pair<float, int64_t>> top;
    std::set<int64_t> in_top;
    auto offer = [&](int64_t index, float score) {
      if (Known(index) || in_top.count(index) > 0) return false;
      if (static_cast<int>(top.size()) >= k) {
        if (!(top.begin()->first < score)) return false;
        in_top.erase(top.begin()->second);
        top.erase(top.begin());
      }
      top.emplace(score, index);
      in_top.insert(index);
      return true;
    };
    for (size_t i = 0; i < walkers_.size(); ++i) offer(walkers_[i], scores[i]);
    std::uniform_real_distribution<double> unit(0, 1);
    std::vector<int64_t> moved(walkers_.size());
    std::vector<float> moved_scores;
    int quiet = 0;
    for (int step = 0; step < options_.steps && quiet < options_.patience; ++step) {
      const double t = 1.0 - static_cast<double>(step) / options_.steps;
      for (size_t i = 0; i < walkers_.size(); ++i) {
        const int knob = std::uniform_int_distribution<int>(0, space_.num_knobs() - 1)(rng_);
        const int values = space_.num_values(knob);
        if (values <= 1) {
          moved[i] = walkers_[i];
          continue;
        }
        int v = std::uniform_int_distribution<int>(0, values - 2)(rng_);
        if (v >= space_.ValueOf(walkers_[i], knob)) ++v;
        moved[i] = space_.WithValue(walkers_[i], knob, v);
      }
      RETURN_IF_ERROR(Scores(moved, &moved_scores));
      bool changed = false;
      for (size_t i = 0; i < walkers_.size(); ++i) {
        changed |= offer(moved[i], moved_scores[i]);
        const double gain = (moved_scores[i] - scores[i]) / (t + 1e-5);
        if (unit(rng_) < std::exp(std::min(gain, 1.0))) {
          walkers_[i] = moved[i];
          scores[i] = moved_scores[i];
        }
      }
      quiet = changed ? 0 : quiet + 1;
    }
    best->clear();
    for (auto it = top.rbegin(); it != top.rend(); ++it) best->push_back(it->second);
    return absl::OkStatus();
  }

  const StrategyOptions options_;
  Model model_;
  size_t trained_on_ = 0;
  std::unordered_map<int64_t, float> cache_;
  std::vector<int64_t> walkers_;
};

}  // namespace

std::unique_ptr<Strategy> MakeGbtStrategy(const Space& space, const StrategyOptions& options) {
  return std::make_unique<GbtStrategy>(space, options);
}

}  // namespace benchfarm::tuner
