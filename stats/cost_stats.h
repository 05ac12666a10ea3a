// CostStats: a result's quality, from its costs (stats/summary.h). The tracker computes it for
// every result it stores (so no agent can report numbers that disagree with their costs);
// farmctl and the Python client show it as "median +- x %".
//
// Thread-safety: pure functions.

#ifndef BENCHFARM_STATS_COST_STATS_H_
#define BENCHFARM_STATS_COST_STATS_H_

#include <string>

#include "absl/types/span.h"
#include "proto/benchfarm.pb.h"
#include "stats/round_interval.h"

namespace benchfarm::stats {

// The default unstable threshold: a median known only to +-3 % cannot rank candidates that
// differ by a few percent.
inline constexpr double kDefaultUnstableThreshold = 0.03;

// A board that times with its thread's CPU clock (host-process boards: Result.wall_over_cpu) and
// whose timed calls took more wall time than this many times their CPU time shared its CPU while
// timing (issue 37 sec. 5): its thread was preempted, and each switch costs it caches and
// branch predictors the CPU clock still counts. The costs then move with whatever else runs —
// beside a CPU hog a re-measurement landed outside a +-1 % interval in a quarter of the cases,
// though every round agreed — so such a result is CONTENDED and unstable, whatever its spread.
// Idle, a pinned board's ratio is 1.00-1.02.
inline constexpr double kContendedWallOverCpu = 1.10;

// Of `costs_s` (seconds per call) taken in one round. Unstable when the interval's relative
// half-width exceeds `unstable_threshold` (from two costs on; one cost says nothing about its
// spread).
v1::CostStats CostStatsOf(absl::Span<const double> costs_s, double timer_resolution_s,
                          double unstable_threshold = kDefaultUnstableThreshold);

// Of costs taken in rounds (`round_sizes`, stats/round_interval.h): the interval is the wider of
// the within-run and the between-rounds one (widened further by `pooled`, the batch's spread), and
// the result is also unstable when its rounds disagree, or when `wall_over_cpu` (the board's, 0:
// not known) says it shared its CPU (kContendedWallOverCpu).
v1::CostStats CostStatsOf(absl::Span<const double> costs_s, absl::Span<const int> round_sizes,
                          RoundSpread pooled, double timer_resolution_s,
                          double unstable_threshold = kDefaultUnstableThreshold,
                          double wall_over_cpu = 0);

// A result's, from its costs and how they were measured (Result.measured: round sizes, the
// batch's spread; Result.wall_over_cpu): what the tracker stores.
v1::CostStats CostStatsOfResult(const v1::Result& result,
                                double unstable_threshold = kDefaultUnstableThreshold);

// A result's stats: its own when it has them (the tracker stored them), else computed from its
// costs (results stored before stats existed). Empty for a result without costs.
v1::CostStats StatsOf(const v1::Result& result);

// "+-1.2 %" (the interval's half-width relative to the median); "+-?" for a single cost.
std::string PlusMinus(const v1::CostStats& stats);

// "1.234 ms +-0.4 %", with " UNSTABLE" appended past the threshold; "-" without costs.
std::string CostText(const v1::CostStats& stats);

// A duration in s/ms/us/ns with 4 significant digits: "1.234 ms".
std::string SecondsText(double seconds);

}  // namespace benchfarm::stats

#endif  // BENCHFARM_STATS_COST_STATS_H_
