#include "stats/summary.h"

#include <algorithm>
#include <cmath>

namespace benchfarm::stats {

double BinomialHalfCdf(int n, int k) {
  if (k < 0) return 0;
  if (k >= n) return 1;
  // Sum of C(n, i) / 2^n in log space, so n up to thousands neither overflows nor underflows.
  double sum = 0;
  const double log_half_n = n * std::log(0.5);
  for (int i = 0; i <= k; ++i) {
    sum += std::exp(std::lgamma(n + 1.0) - std::lgamma(i + 1.0) - std::lgamma(n - i + 1.0) +
                    log_half_n);
  }
  return std::min(1.0, sum);
}

Summary Summarize(absl::Span<const double> values, double level) {
  Summary s;
  s.count = static_cast<int>(values.size());
  if (values.empty()) return s;
  std::vector<double> x(values.begin(), values.end());
  std::sort(x.begin(), x.end());
  const int n = s.count;
  s.min = x.front();
  s.max = x.back();
  s.median = n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
  // Summed as offsets from the least value, so equal costs have exactly their value as the mean
  // and a spread of exactly 0.
  double offsets = 0;
  for (double v : x) offsets += v - s.min;
  s.mean = s.min + offsets / n;
  if (n >= 2) {
    double sq = 0;
    for (double v : x) sq += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(sq / (n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / s.mean : 0;
  // The largest l (1-based) whose interval still covers at `level`; l = 1 is [min, max].
  const double tail = (1 - level) / 2;
  int l = 1;
  while (l + 1 <= (n + 1) / 2 && BinomialHalfCdf(n, l) <= tail) ++l;
  s.ci_low = x[l - 1];
  s.ci_high = x[n - l];
  s.ci_level = n == 1 ? 0 : 1 - 2 * BinomialHalfCdf(n, l - 1);
  s.rel_half_width = s.ci_high == s.ci_low ? 0
                     : s.median > 0        ? (s.ci_high - s.ci_low) / 2 / s.median
                                           : INFINITY;
  return s;
}

double KendallTau(absl::Span<const double> a, absl::Span<const double> b) {
  if (a.size() != b.size() || a.size() < 2) return 0;
  int64_t concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    for (size_t j = i + 1; j < a.size(); ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;  // tied in both: counts in neither
      if (da == 0) {
        ++ties_a;
      } else if (db == 0) {
        ++ties_b;
      } else if ((da > 0) == (db > 0)) {
        ++concordant;
      } else {
        ++discordant;
      }
    }
  }
  const double n0 = static_cast<double>(concordant + discordant);
  const double denom = std::sqrt((n0 + ties_a) * (n0 + ties_b));
  return denom > 0 ? (concordant - discordant) / denom : 0;
}

int ArgMin(absl::Span<const double> values) {
  if (values.empty()) return -1;
  return static_cast<int>(std::min_element(values.begin(), values.end()) - values.begin());
}

}  // namespace benchfarm::stats
