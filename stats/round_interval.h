// The interval a re-measurement lands in: a result's median interval widened by the spread between
// its rounds (issue 37 §5).
//
// A board measures a candidate in rounds (device::MeasureRound: a few repeats each, the candidates
// of a batch taking turns), so its costs come in time-ordered groups. The order-statistics
// interval of all the costs (stats/summary.h, the "within" interval) treats them as one sample:
// it shrinks as 1/sqrt(n) however much the machine drifted between rounds, and a fresh
// measurement a minute later lands outside it. The spread of the round medians sees that drift.
// From k >= 2 rounds, the "between" half-width is a prediction interval for the median of another
// measurement of as many rounds: with y_i = log(round median i) and s their sample standard
// deviation,
//     half = t(k - 1, (1 + level) / 2) * s * sqrt(1/k + 1/k)
// (the first measurement's centre and the fresh one's each carry s^2 / k), stated relative as
// sinh(half). A pooled estimate from the other candidates of the batch (their rounds were taken
// in the same turns, so they saw the same drift) may be given: then s is the larger of the two and
// t has the pooled degrees of freedom (a candidate with few rounds is not stuck with
// t(1) = 12.7). The stated interval is the union of the two around the median of all costs.
//
// The rounds disagree when their medians spread more than the noise inside the rounds explains:
// s > kDisagreeRatio * 1.2533 * sigma_within / sqrt(m), where sigma_within is the pooled robust
// (1.4826 * MAD) spread of log costs about their round's median and m the mean round size
// (1.2533 sigma / sqrt(m): the standard error of a median of m normal values). That needs 3 rounds.
//
// Thread-safety: pure functions.

#ifndef BENCHFARM_STATS_ROUND_INTERVAL_H_
#define BENCHFARM_STATS_ROUND_INTERVAL_H_

#include "absl/types/span.h"

namespace benchfarm::stats {

// How much more the round medians may spread than the within-round noise explains before the
// rounds are said to disagree (a variance ratio of 4: rare for steady costs from 3 rounds on).
inline constexpr double kDisagreeRatio = 2.0;

// The spread between one candidate's rounds, for pooling over a batch.
struct RoundSpread {
  double log_sd = 0;  // sample standard deviation of log(round median)
  int df = 0;         // rounds - 1 (0: fewer than 2 rounds, no estimate)
};

struct RoundInterval {
  double median = 0;  // of all costs
  int rounds = 0;     // rounds used (1 when round_sizes do not describe the costs)
  // Relative half-widths: the order-statistics interval of all costs (Summarize), the rounds'
  // prediction interval (0 for fewer than 2 rounds), and the stated one (of the union).
  double within_rel_half_width = 0;
  double between_rel_half_width = 0;
  double rel_half_width = 0;
  double ci_low = 0, ci_high = 0;  // the stated interval (contains the within one)
  bool rounds_disagree = false;
  RoundSpread spread;  // this candidate's own
};

// Of `costs` in the order taken, `round_sizes` costs per round in order. Round sizes that do not
// add up to costs.size() (or none, or a cost <= 0) mean one round: the within interval alone, as
// before rounds were recorded. `pooled`: the batch's spread (PoolSpreads), df 0 for none.
// `level` in (0, 1).
RoundInterval IntervalOf(absl::Span<const double> costs, absl::Span<const int> round_sizes,
                         RoundSpread pooled = {}, double level = 0.95);

// The pooled spread of several candidates' rounds: sqrt(sum df_i s_i^2 / sum df_i), df summed.
RoundSpread PoolSpreads(absl::Span<const RoundSpread> spreads);

// The p-quantile of Student's t with `df` degrees of freedom (df >= 1; p in (0, 1)): exact for 1
// and 2, a Cornish-Fisher expansion beyond (within 0.2 % of the tables at p = 0.975).
double StudentT(int df, double p);

}  // namespace benchfarm::stats

#endif  // BENCHFARM_STATS_ROUND_INTERVAL_H_
