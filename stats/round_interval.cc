#include "stats/round_interval.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "stats/summary.h"

namespace benchfarm::stats {
namespace {

double NormalQuantile(double p) {
  // Bisection on the normal CDF: 200 halvings of [-40, 40] reach a double's precision.
  double lo = -40, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

double StudentT(int df, double p) {
  if (df <= 1) return std::tan(M_PI * (p - 0.5));
  if (df == 2) return (2 * p - 1) / std::sqrt(2 * p * (1 - p));
  const double z = NormalQuantile(p), v = df;
  const double z2 = z * z, z3 = z2 * z, z5 = z3 * z2, z7 = z5 * z2, z9 = z7 * z2;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * v * v * v) +
         (79 * z9 + 776 * z7 + 1482 * z5 - 1920 * z3 - 945 * z) / (92160 * v * v * v * v);
}

RoundSpread PoolSpreads(absl::Span<const RoundSpread> spreads) {
  RoundSpread out;
  double sum = 0;
  for (const RoundSpread& s : spreads) {
    if (s.df <= 0) continue;
    sum += s.df * s.log_sd * s.log_sd;
    out.df += s.df;
  }
  out.log_sd = out.df > 0 ? std::sqrt(sum / out.df) : 0;
  return out;
}

RoundInterval IntervalOf(absl::Span<const double> costs, absl::Span<const int> round_sizes,
                         RoundSpread pooled, double level) {
  RoundInterval out;
  const Summary all = Summarize(costs, level);
  out.median = all.median;
  out.ci_low = all.ci_low;
  out.ci_high = all.ci_high;
  out.within_rel_half_width = out.rel_half_width = all.rel_half_width;
  out.rounds = costs.empty() ? 0 : 1;
  // Rounds that describe the costs, each as log costs; else one round (the within interval).
  std::vector<std::vector<double>> rounds;
  size_t at = 0;
  bool usable = all.min > 0;
  for (int size : round_sizes) {
    if (size < 0 || at + size > costs.size()) {
      usable = false;
      break;
    }
    if (size == 0) continue;
    std::vector<double> r;
    for (int i = 0; i < size; ++i) r.push_back(std::log(costs[at + i]));
    rounds.push_back(std::move(r));
    at += size;
  }
  if (!usable || at != costs.size() || rounds.size() < 2) return out;
  const int k = static_cast<int>(rounds.size());
  out.rounds = k;

  std::vector<double> medians;
  for (const std::vector<double>& r : rounds) medians.push_back(MedianOf(r));
  double mean = 0;
  for (double m : medians) mean += m;
  mean /= k;
  double sq = 0;
  for (double m : medians) sq += (m - mean) * (m - mean);
  out.spread = {std::sqrt(sq / (k - 1)), k - 1};

  const bool pooling = pooled.df > 0;
  const double s = pooling ? std::max(out.spread.log_sd, pooled.log_sd) : out.spread.log_sd;
  const double t = StudentT(pooling ? std::max(pooled.df, k - 1) : k - 1, (1 + level) / 2);
  const double half = t * s * std::sqrt(2.0 / k);
  out.between_rel_half_width = std::sinh(half);
  if (half > 0 && all.median > 0) {
    out.ci_low = std::min(out.ci_low, all.median * std::exp(-half));
    out.ci_high = std::max(out.ci_high, all.median * std::exp(half));
    out.rel_half_width = (out.ci_high - out.ci_low) / 2 / all.median;
  }

  // Do the round medians spread more than the noise inside the rounds explains?
  if (k >= 3 && out.spread.log_sd > 0) {
    std::vector<double> deviations;
    int in_rounds = 0;
    for (int i = 0; i < k; ++i) {
      if (rounds[i].size() < 2) continue;
      for (double y : rounds[i]) deviations.push_back(std::fabs(y - medians[i]));
      in_rounds += static_cast<int>(rounds[i].size());
    }
    const int judged = static_cast<int>(std::count_if(
        rounds.begin(), rounds.end(), [](const std::vector<double>& r) { return r.size() >= 2; }));
    if (judged > 0) {
      const double sigma_within = 1.4826 * MedianOf(deviations);
      const double per_round = static_cast<double>(in_rounds) / judged;
      const double expected = 1.2533 * sigma_within / std::sqrt(per_round);
      out.rounds_disagree = out.spread.log_sd > kDisagreeRatio * expected;
    }
  }
  return out;
}

}  // namespace benchfarm::stats
