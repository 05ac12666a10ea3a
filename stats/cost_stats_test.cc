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

TEST(CostStatsTest, SecondsText) {
  EXPECT_EQ(SecondsText(1.5), "1.5 s");
  EXPECT_EQ(SecondsText(0.0012345), "1.234 ms");
  EXPECT_EQ(SecondsText(70e-6), "70 us");
  EXPECT_EQ(SecondsText(5e-9), "5 ns");
}

}  // namespace
}  // namespace benchfarm::stats
