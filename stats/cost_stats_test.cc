#include "stats/cost_stats.h"

#include <vector>

#include "gtest/gtest.h"

namespace benchfarm::stats {
namespace {

TEST(CostStatsTest, FromCosts) {
  std::vector<double> costs = {1.00e-3, 1.01e-3, 0.99e-3, 1.02e-3, 0.98e-3,
                               1.00e-3, 1.01e-3, 0.99e-3, 1.00e-3, 1.00e-3};
  v1::CostStats s = CostStatsOf(costs, 1e-9);
  EXPECT_EQ(s.count(), 10);
  EXPECT_DOUBLE_EQ(s.median_s(), 1.00e-3);
  EXPECT_DOUBLE_EQ(s.min_s(), 0.98e-3);
  EXPECT_DOUBLE_EQ(s.max_s(), 1.02e-3);
  // Sorted: .98 .99 .99 1 1 1 1 1.01 1.01 1.02 -> [x2, x9] = [.99, 1.01]: +-1 %.
  EXPECT_NEAR(s.rel_half_width(), 0.01, 1e-9);
  EXPECT_FALSE(s.unstable());
  EXPECT_EQ(s.timer_resolution_s(), 1e-9);
  EXPECT_EQ(PlusMinus(s), "+-1.0 %");
  EXPECT_EQ(CostText(s), "1 ms +-1.0 %");
}

TEST(CostStatsTest, UnstablePastTheThreshold) {
  std::vector<double> costs = {1e-3, 1.3e-3, 0.8e-3, 1.1e-3, 0.9e-3, 1.2e-3};
  v1::CostStats s = CostStatsOf(costs, 0, 0.03);
  EXPECT_TRUE(s.unstable());
  EXPECT_EQ(s.unstable_threshold(), 0.03);
  EXPECT_NE(CostText(s).find("UNSTABLE"), std::string::npos);
  // The same costs under a looser threshold are not.
  EXPECT_FALSE(CostStatsOf(costs, 0, 0.5).unstable());
}

TEST(CostStatsTest, OneCostIsNotFlaggedButSaysItsSpreadIsUnknown) {
  v1::CostStats s = CostStatsOf(std::vector<double>{2e-6}, 0);
  EXPECT_FALSE(s.unstable());
  EXPECT_EQ(PlusMinus(s), "+-?");
  EXPECT_EQ(CostText(s), "2 us +-?");
}

TEST(CostStatsTest, StatsOfOldResultsAreComputed) {
  v1::Result r;
  EXPECT_EQ(StatsOf(r).count(), 0);
  EXPECT_EQ(CostText(StatsOf(r)), "-");
  r.add_costs_s(1e-3);
  r.add_costs_s(3e-3);
  EXPECT_EQ(StatsOf(r).count(), 2);
  EXPECT_DOUBLE_EQ(StatsOf(r).median_s(), 2e-3);
  *r.mutable_stats() = CostStatsOf(std::vector<double>{5e-3}, 0);
  EXPECT_DOUBLE_EQ(StatsOf(r).median_s(), 5e-3);  // stored stats win
}

TEST(CostStatsTest, RoundsWidenAndFlag) {
  // Three tight rounds 4 % apart: as one sample +-2 %; between the rounds much wider, and the
  // rounds disagree (unstable even under a loose threshold).
  std::vector<double> costs;
  for (double level : {1.0, 1.04, 1.02}) {
    for (double n : {0.999, 1.001, 1.0, 0.998, 1.002}) costs.push_back(1e-3 * level * n);
  }
  const v1::CostStats one = CostStatsOf(costs, 0, 0.5);
  EXPECT_EQ(one.rounds(), 1);
  EXPECT_EQ(one.within_rel_half_width(), one.rel_half_width());
  EXPECT_FALSE(one.unstable());
  const v1::CostStats s = CostStatsOf(costs, std::vector<int>{5, 5, 5}, {}, 0, 0.5);
  EXPECT_EQ(s.rounds(), 3);
  EXPECT_DOUBLE_EQ(s.within_rel_half_width(), one.rel_half_width());
  EXPECT_GT(s.between_rel_half_width(), 0.05);
  EXPECT_GE(s.rel_half_width(), s.between_rel_half_width() - 1e-12);
  EXPECT_LT(s.ci_low_s(), one.ci_low_s());
  EXPECT_GT(s.ci_high_s(), one.ci_high_s());
  EXPECT_TRUE(s.rounds_disagree());
  EXPECT_TRUE(s.unstable());
  // The same through a Result's MeasureReport (what the tracker stores).
  v1::Result r;
  for (double c : costs) r.add_costs_s(c);
  for (int size : {5, 5, 5}) r.mutable_measured()->add_round_sizes(size);
  EXPECT_DOUBLE_EQ(CostStatsOfResult(r, 0.5).rel_half_width(), s.rel_half_width());
  EXPECT_DOUBLE_EQ(StatsOf(r).rel_half_width(), s.rel_half_width());
  // The batch's pooled spread only widens.
  r.mutable_measured()->set_batch_round_log_sd(0.2);
  r.mutable_measured()->set_batch_round_df(20);
  EXPECT_GT(CostStatsOfResult(r, 0.5).rel_half_width(), s.rel_half_width());
}

TEST(CostStatsTest, ABoardThatSharedItsCpuIsContendedAndUnstable) {
  // Tight costs in agreeing rounds: stable on their own, however the board's CPU was shared.
  std::vector<double> costs;
  for (int round = 0; round < 3; ++round) {
    for (double n : {0.999, 1.001, 1.0, 0.998, 1.002}) costs.push_back(1e-3 * n);
  }
  v1::Result r;
  for (double c : costs) r.add_costs_s(c);
  for (int size : {5, 5, 5}) r.mutable_measured()->add_round_sizes(size);
  for (double ratio : {0.0, 1.0, 1.02, kContendedWallOverCpu}) {
    r.set_wall_over_cpu(ratio);
    const v1::CostStats s = CostStatsOfResult(r);
    EXPECT_FALSE(s.contended()) << ratio;
    EXPECT_FALSE(s.unstable()) << ratio;
  }
  // Its thread waited for the CPU: the costs moved with the other load whatever they say.
  r.set_wall_over_cpu(1.9);
  const v1::CostStats s = CostStatsOfResult(r);
  EXPECT_TRUE(s.contended());
  EXPECT_TRUE(s.unstable());
  EXPECT_FALSE(s.rounds_disagree());
  EXPECT_LT(s.rel_half_width(), 0.01);  // the interval itself is unchanged: the flag says it
  EXPECT_EQ(CostText(s).substr(CostText(s).size() - 9), " UNSTABLE");
  // One cost says nothing about anything (as with the threshold).
  EXPECT_FALSE(CostStatsOf(std::vector<double>{1e-3}, {}, {}, 0, 0.03, 1.9).unstable());
}

TEST(CostStatsTest, SecondsText) {
  EXPECT_EQ(SecondsText(1.5), "1.5 s");
  EXPECT_EQ(SecondsText(0.0012345), "1.234 ms");
  EXPECT_EQ(SecondsText(70e-6), "70 us");
  EXPECT_EQ(SecondsText(5e-9), "5 ns");
}

}  // namespace
}  // namespace benchfarm::stats
