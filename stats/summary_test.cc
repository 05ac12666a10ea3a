#include "stats/summary.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace benchfarm::stats {
namespace {

TEST(SummaryTest, EmptyIsZero) {
  Summary s = Summarize({});
  EXPECT_EQ(s.count, 0);
  EXPECT_EQ(s.median, 0);
}

TEST(SummaryTest, KnownValues) {
  // 1..10 shuffled: mean 5.5, median 5.5, sample sd sqrt(55/6) = 3.0277.
  std::vector<double> v = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
  Summary s = Summarize(v);
  EXPECT_EQ(s.count, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_NEAR(s.stddev, std::sqrt(55.0 / 6.0), 1e-12);
  EXPECT_NEAR(s.cv, std::sqrt(55.0 / 6.0) / 5.5, 1e-12);
  // n = 10 at 95 %: the 2nd and 9th order statistics, coverage 1 - 2 * 11/1024 (tables: 97.9 %).
  EXPECT_DOUBLE_EQ(s.ci_low, 2);
  EXPECT_DOUBLE_EQ(s.ci_high, 9);
  EXPECT_NEAR(s.ci_level, 1 - 22.0 / 1024, 1e-12);
  EXPECT_NEAR(s.rel_half_width, 3.5 / 5.5, 1e-12);
}

TEST(SummaryTest, OddCountMedianAndOrderStatistics) {
  // n = 25 at 95 %: the 8th and 18th (P(B <= 7) = 0.0216 <= 0.025 < P(B <= 8) = 0.0539).
  std::vector<double> v;
  for (int i = 25; i >= 1; --i) v.push_back(i);
  Summary s = Summarize(v);
  EXPECT_DOUBLE_EQ(s.median, 13);
  EXPECT_DOUBLE_EQ(s.ci_low, 8);
  EXPECT_DOUBLE_EQ(s.ci_high, 18);
  EXPECT_NEAR(s.ci_level, 1 - 2 * BinomialHalfCdf(25, 7), 1e-12);
  EXPECT_GT(s.ci_level, 0.95);
}

TEST(SummaryTest, FewCostsGiveTheFullRangeAtTheLevelTheyCan) {
  Summary one = Summarize({{4.0}});
  EXPECT_EQ(one.ci_low, 4);
  EXPECT_EQ(one.ci_high, 4);
  EXPECT_EQ(one.ci_level, 0);
  EXPECT_EQ(one.rel_half_width, 0);
  Summary five = Summarize({{1.0, 2.0, 3.0, 4.0, 5.0}});
  EXPECT_EQ(five.ci_low, 1);
  EXPECT_EQ(five.ci_high, 5);
  EXPECT_NEAR(five.ci_level, 1 - 2.0 / 32, 1e-12);
  // Six reach 95 %: [min, max] at 1 - 2/64.
  Summary six = Summarize({{1.0, 2.0, 3.0, 4.0, 5.0, 6.0}});
  EXPECT_NEAR(six.ci_level, 1 - 2.0 / 64, 1e-12);
}

TEST(SummaryTest, IdenticalCostsHaveNoSpread) {
  for (double cost : {1e-3, 0.0014159, 3.3333333333e-5}) {
    Summary s = Summarize(std::vector<double>(7, cost));
    EXPECT_EQ(s.mean, cost);  // exactly: an emulated board's equal costs have a CV of 0
    EXPECT_EQ(s.stddev, 0);
    EXPECT_EQ(s.cv, 0);
  }
  Summary s = Summarize(std::vector<double>(50, 1e-3));
  EXPECT_EQ(s.rel_half_width, 0);
  EXPECT_GT(s.ci_level, 0.95);
}

TEST(SummaryTest, BinomialCdf) {
  EXPECT_NEAR(BinomialHalfCdf(10, 1), 11.0 / 1024, 1e-15);
  EXPECT_NEAR(BinomialHalfCdf(4, 2), 11.0 / 16, 1e-15);
  EXPECT_EQ(BinomialHalfCdf(4, -1), 0);
  EXPECT_EQ(BinomialHalfCdf(4, 4), 1);
  EXPECT_NEAR(BinomialHalfCdf(1001, 500), 0.5, 1e-12);  // symmetric
}

TEST(SummaryTest, IntervalShrinksWithMoreCosts) {
  // A spread of +-5 % around 1: the interval of 200 costs is much narrower than of 10.
  auto costs = [](int n) {
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(0.95 + 0.1 * ((i * 7919) % n) / (n - 1));
    return v;
  };
  EXPECT_LT(Summarize(costs(200)).rel_half_width, Summarize(costs(10)).rel_half_width / 3);
}

TEST(KendallTauTest, KnownRankings) {
  std::vector<double> a = {1, 2, 3, 4, 5};
  EXPECT_DOUBLE_EQ(KendallTau(a, {{10, 20, 30, 40, 50}}), 1);
  EXPECT_DOUBLE_EQ(KendallTau(a, {{5, 4, 3, 2, 1}}), -1);
  // One adjacent swap of 5: 9 concordant, 1 discordant pair -> 0.8.
  EXPECT_DOUBLE_EQ(KendallTau(a, {{1, 3, 2, 4, 5}}), 0.8);
  // tau-b with a tie in b: pairs (c, d, tied in b) = (5, 0, 1) -> 5 / sqrt(6 * 5).
  EXPECT_NEAR(KendallTau({{1, 2, 3, 4}}, {{1, 1, 2, 3}}), 5 / std::sqrt(30.0), 1e-12);
  EXPECT_EQ(KendallTau({{1.0}}, {{1.0}}), 0);
  EXPECT_EQ(KendallTau({{1.0, 2.0}}, {{1.0}}), 0);
}

TEST(KendallTauTest, ArgMin) {
  EXPECT_EQ(ArgMin({}), -1);
  EXPECT_EQ(ArgMin({{3.0, 1.0, 2.0, 1.0}}), 1);
}

}  // namespace
}  // namespace benchfarm::stats
