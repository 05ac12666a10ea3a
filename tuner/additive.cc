#include "tuner/additive.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace benchfarm::tuner {

AdditiveScore::AdditiveScore(const v1::OpTemplate& spec,
                             const std::vector<std::pair<int64_t, double>>& measured)
    : space_(spec) {
  for (int k = 0; k < space_.num_knobs(); ++k) {
    order_.push_back(k);
    sums_.emplace_back(space_.num_values(k), std::make_pair(0.0, 0));
  }
  std::sort(order_.begin(), order_.end(),
            [&](int a, int b) { return spec.knobs(a).name() < spec.knobs(b).name(); });
  double worst = -std::numeric_limits<double>::infinity();
  for (const auto& [index, cost] : measured) {
    if (std::isfinite(cost)) worst = std::max(worst, std::log(cost));
  }
  any_success_ = std::isfinite(worst);
  if (!any_success_) return;
  double total = 0, total2 = 0;
  for (const auto& [index, cost] : measured) {
    const double y = std::isfinite(cost) ? std::log(cost) : worst + 1.0;
    total += y;
    total2 += y * y;
    for (int k = 0; k < space_.num_knobs(); ++k) {
      auto& s = sums_[k][space_.ValueOf(index, k)];
      s.first += y;
      s.second++;
    }
  }
  const double n = static_cast<double>(measured.size());
  mean_ = total / n;
  spread_ = std::sqrt(std::max(1e-12, total2 / n - mean_ * mean_));
}

double AdditiveScore::operator()(int64_t index) const {
  if (!any_success_) return 0;
  double score = 0;
  for (int k : order_) {
    const auto& [sum, count] = sums_[k][space_.ValueOf(index, k)];
    const double value_mean = count > 0 ? sum / count : mean_;
    score += value_mean - mean_ - 0.5 * spread_ / std::sqrt(count + 1.0);
  }
  return score;
}

}  // namespace benchfarm::tuner
