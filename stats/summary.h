// Summary statistics of repeated measurements, and how well two rankings agree.
//
// The confidence interval is of the median and distribution-free: with n costs sorted, the
// interval [x(l), x(n+1-l)] covers the true median with probability 1 - 2 P(B <= l - 1),
// B ~ Binomial(n, 1/2); l is the largest index that keeps that at or above the asked level.
// Timings are skewed (a preempted repeat is slow, never fast), so the median and an interval
// that assumes no normality are what a tuner should rank by (as pyperf and Google Benchmark's
// aggregates do). Fewer than 6 costs cannot reach 95 %: their interval is [min, max] and
// `ci_level` says the coverage it has (1 - 2^(1-n); 0 for one cost).
//
// Thread-safety: pure functions.

#ifndef BENCHFARM_STATS_SUMMARY_H_
#define BENCHFARM_STATS_SUMMARY_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"

namespace benchfarm::stats {

struct Summary {
  int count = 0;
  double mean = 0;
  double median = 0;
  double min = 0;
  double max = 0;
  double stddev = 0;  // sample standard deviation (n - 1); 0 for fewer than 2
  double cv = 0;      // stddev / mean (0 when the mean is 0)
  double ci_low = 0;
  double ci_high = 0;
  double ci_level = 0;        // the interval's coverage
  double rel_half_width = 0;  // (ci_high - ci_low) / 2 / median (0 when they are equal)
};

// Of `values` (any order; empty gives a zero Summary). `level` in (0, 1).
Summary Summarize(absl::Span<const double> values, double level = 0.95);

// P(B <= k) for B ~ Binomial(n, 1/2).
double BinomialHalfCdf(int n, int k);

// Kendall's tau-b of two measurements of the same items (a[i] and b[i] are item i): 1 when they
// order every pair alike, -1 when every pair is reversed; ties count as in tau-b. Needs equal
// sizes of at least 2 and not all tied in either (else 0).
double KendallTau(absl::Span<const double> a, absl::Span<const double> b);

// The index of the smallest value (the first of equals); -1 for none.
int ArgMin(absl::Span<const double> values);

}  // namespace benchfarm::stats

#endif  // BENCHFARM_STATS_SUMMARY_H_
