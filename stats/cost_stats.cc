#include "stats/cost_stats.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "stats/summary.h"

namespace benchfarm::stats {

v1::CostStats CostStatsOf(absl::Span<const double> costs_s, double timer_resolution_s,
                          double unstable_threshold) {
  v1::CostStats out;
  if (costs_s.empty()) return out;
  const Summary s = Summarize(costs_s);
  out.set_count(s.count);
  out.set_mean_s(s.mean);
  out.set_median_s(s.median);
  out.set_min_s(s.min);
  out.set_max_s(s.max);
  out.set_stddev_s(s.stddev);
  out.set_cv(s.cv);
  out.set_ci_low_s(s.ci_low);
  out.set_ci_high_s(s.ci_high);
  out.set_ci_level(s.ci_level);
  out.set_rel_half_width(std::isfinite(s.rel_half_width) ? s.rel_half_width : 1e9);
  out.set_unstable_threshold(unstable_threshold);
  out.set_unstable(s.count >= 2 && out.rel_half_width() > unstable_threshold);
  out.set_timer_resolution_s(timer_resolution_s);
  return out;
}

v1::CostStats StatsOf(const v1::Result& result) {
  if (result.stats().count() > 0 || result.costs_s().empty()) return result.stats();
  return CostStatsOf(result.costs_s(), result.timer_resolution_s());
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
