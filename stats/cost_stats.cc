#include "stats/cost_stats.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stats/summary.h"

namespace benchfarm::stats {

v1::CostStats CostStatsOf(absl::Span<const double> costs_s, double timer_resolution_s,
                          double unstable_threshold) {
  return CostStatsOf(costs_s, {}, {}, timer_resolution_s, unstable_threshold);
}

v1::CostStats CostStatsOf(absl::Span<const double> costs_s, absl::Span<const int> round_sizes,
                          RoundSpread pooled, double timer_resolution_s, double unstable_threshold,
                          double wall_over_cpu) {
  v1::CostStats out;
  if (costs_s.empty()) return out;
  const Summary s = Summarize(costs_s);
  const RoundInterval r = IntervalOf(costs_s, round_sizes, pooled);
  auto finite = [](double x) { return std::isfinite(x) ? x : 1e9; };
  out.set_count(s.count);
  out.set_mean_s(s.mean);
  out.set_median_s(s.median);
  out.set_min_s(s.min);
  out.set_max_s(s.max);
  out.set_stddev_s(s.stddev);
  out.set_cv(s.cv);
  out.set_ci_low_s(r.ci_low);
  out.set_ci_high_s(r.ci_high);
  out.set_ci_level(s.ci_level);
  out.set_rel_half_width(finite(r.rel_half_width));
  out.set_within_rel_half_width(finite(r.within_rel_half_width));
  out.set_between_rel_half_width(finite(r.between_rel_half_width));
  out.set_rounds(r.rounds);
  out.set_rounds_disagree(r.rounds_disagree);
  out.set_contended(wall_over_cpu > kContendedWallOverCpu);
  out.set_unstable_threshold(unstable_threshold);
  out.set_unstable(s.count >= 2 && (out.rel_half_width() > unstable_threshold ||
                                    r.rounds_disagree || out.contended()));
  out.set_timer_resolution_s(timer_resolution_s);
  return out;
}

v1::CostStats CostStatsOfResult(const v1::Result& result, double unstable_threshold) {
  const v1::MeasureReport& m = result.measured();
  const std::vector<int> sizes(m.round_sizes().begin(), m.round_sizes().end());
  return CostStatsOf(result.costs_s(), sizes,
                     RoundSpread{m.batch_round_log_sd(), m.batch_round_df()},
                     result.timer_resolution_s(), unstable_threshold, result.wall_over_cpu());
}

v1::CostStats StatsOf(const v1::Result& result) {
  if (result.stats().count() > 0 || result.costs_s().empty()) return result.stats();
  return CostStatsOfResult(result);
}

std::string PlusMinus(const v1::CostStats& stats) {
  if (stats.count() < 2) return "+-?";
  const double pct = stats.rel_half_width() * 100;
  return pct >= 10 ? absl::StrFormat("+-%.0f %%", pct) : absl::StrFormat("+-%.1f %%", pct);
}

std::string SecondsText(double seconds) {
  const double a = std::fabs(seconds);
  if (a >= 1) return absl::StrFormat("%.4g s", seconds);
  if (a >= 1e-3) return absl::StrFormat("%.4g ms", seconds * 1e3);
  if (a >= 1e-6 || a == 0) return absl::StrFormat("%.4g us", seconds * 1e6);
  return absl::StrFormat("%.4g ns", seconds * 1e9);
}

std::string CostText(const v1::CostStats& stats) {
  if (stats.count() == 0) return "-";
  return absl::StrCat(SecondsText(stats.median_s()), " ", PlusMinus(stats),
                      stats.unstable() ? " UNSTABLE" : "");
}

}  // namespace benchfarm::stats
