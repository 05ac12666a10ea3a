#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tuner/additive.h"
#include "tuner/replay.h"
#include "tuner/space.h"
#include "tuner/strategy.h"
#include "tuner/table.h"

namespace benchfarm::tuner {
namespace {

std::unique_ptr<Strategy> Make(const std::string& name, const Space& space, uint64_t seed) {
  StrategyOptions o;
  o.seed = seed;
  absl::StatusOr<std::unique_ptr<Strategy>> s = MakeStrategy(name, space, o);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? *std::move(s) : nullptr;
}

TEST(SpaceTest, FeaturesAndIndices) {
  const Table t = SyntheticTable();
  const Space space(t.spec);
  EXPECT_EQ(space.size(), 432);
  // a, b, c: value and log2 each; order: one-hot of 3.
  EXPECT_EQ(space.num_features(), 2 + 2 + 2 + 3);
  const int64_t index = 3 + 6 * 4 + 36 * 3 + 144 * 2;  // a=8 b=16 c=8 order=r
  EXPECT_EQ(space.Describe(index), "a=8 b=16 c=8 order=r");
  std::vector<float> f;
  space.AppendFeatures(index, &f);
  EXPECT_EQ(f, (std::vector<float>{8, 3, 16, 4, 8, 3, 0, 0, 1}));
  EXPECT_EQ(space.ValueOf(index, 2), 3);
  EXPECT_EQ(space.Describe(space.WithValue(index, 3, 0)), "a=8 b=16 c=8 order=p");
}

// Derived features a template declares (OpTemplate.features): a product of integer knobs, its
// value and log2, after the knobs' own, in name order; one that does not parse gives none.
TEST(SpaceTest, DerivedFeatures) {
  Table t = SyntheticTable();
  (*t.spec.mutable_features())["ab"] = "a * b";
  (*t.spec.mutable_features())["abc2"] = "2 * a * b * c";
  (*t.spec.mutable_features())["bad"] = "a * order";
  const Space space(t.spec);
  EXPECT_EQ(space.num_features(), 2 + 2 + 2 + 3 + 2 + 2);
  const int64_t index = 3 + 6 * 4 + 36 * 3 + 144 * 2;  // a=8 b=16 c=8 order=r
  std::vector<float> f;
  space.AppendFeatures(index, &f);
  EXPECT_EQ(f, (std::vector<float>{8, 3, 16, 4, 8, 3, 0, 0, 1, 128, 7, 2048, 11}));
  EXPECT_TRUE(
      catalog::CheckFeatures(space.spec())
          .message()
          .find("features.bad: \"a * order\": knob order has values that are not integers") !=
      std::string::npos)
      << catalog::CheckFeatures(space.spec());
  (*t.spec.mutable_features()).erase("bad");
  EXPECT_TRUE(catalog::CheckFeatures(t.spec).ok());
  for (const char* bad : {"", "a * 0", "q * a", "2 * 3"}) {
    EXPECT_FALSE(catalog::ParseFeature(t.spec, bad).ok()) << bad;
  }
}

TEST(TableTest, SyntheticOptimum) {
  const Table t = SyntheticTable();
  ASSERT_EQ(t.cost.size(), 432u);
  EXPECT_EQ(Space(t.spec).Describe(t.best), "a=16 b=16 c=8 order=r");
  EXPECT_NEAR(t.optimum, 0.77, 1e-9);
  // Written and read back: the same table.
  std::ostringstream text;
  WriteTable(t, {"a comment"}, text);
  absl::StatusOr<Table> back = ParseTable(text.str(), "synthetic");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->cost, t.cost);
  EXPECT_EQ(back->spec.knobs_size(), 4);
  // The additive view is misled: averaged over the space, c=8 looks worst.
  std::vector<std::pair<int64_t, double>> all;
  for (int64_t i = 0; i < 432; ++i) all.emplace_back(i, t.cost[i]);
  const AdditiveScore score(t.spec, all);
  const int64_t c1 = t.best - 36 * 3;  // the optimum with c=1
  EXPECT_GT(score(t.best), score(c1));
}

TEST(TableTest, CorruptTablesAreRefused) {
  const std::string head = "# knob x 1 2\n# knob y p q\nindex\tcost_s\n";
  struct Case {
    std::string text, error;
  } cases[] = {
      {head + "0\t1\n1\t2\n2\t3\n", "config 3 is missing"},
      {head + "0\t1\n1\t2\n2\t3\n3\t4\n3\t4\n", "line 8: config 3 given twice"},
      {head + "0\t1\n1\t2\n2\t3\n4\t4\n", "config 4 is outside the space (4 configs)"},
      {head + "0\t1\n1\t-2\n2\t3\n3\t4\n", "cost \"-2\" is not a positive number or inf"},
      {head + "0\t1\n1 2\n", "expected \"index<TAB>cost\""},
      {head + "0\tinf\n1\tinf\n2\tinf\n3\tinf\n", "no successful config"},
      {"index\tcost_s\n0\t1\n", "no knobs"},
      {"# knob x 1 2\n0\t1\n", "expected the header row"},
      {"", "no header row"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<Table> t = ParseTable(c.text, "bad");
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_NE(t.status().message().find(c.error), std::string::npos) << t.status();
  }
  EXPECT_TRUE(ParseTable(head + "3\t1\n1\tinf\n2\t3\n0\t4\n", "ok").ok());
  EXPECT_EQ(LoadTable("/nonexistent/x.tsv").status().code(), absl::StatusCode::kNotFound);
}

TEST(StrategyTest, UnknownName) {
  const Space space(SyntheticTable().spec);
  absl::StatusOr<std::unique_ptr<Strategy>> s = MakeStrategy("annealing", space, {});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "unknown strategy \"annealing\" (one of random, additive, gbt)");
}

// Every strategy proposes each config once: the whole space, then nothing.
TEST(StrategyTest, NeverProposesAConfigTwice) {
  const Table t = SyntheticTable();
  const Space space(t.spec);
  for (const std::string& name : StrategyNames()) {
    std::unique_ptr<Strategy> s = Make(name, space, 7);
    s->Observe(5, t.cost[5]);  // measured elsewhere (e.g. the default): never proposed
    std::set<int64_t> seen = {5};
    for (;;) {
      const std::vector<int64_t> batch = s->Propose(24);
      if (batch.empty()) break;
      for (int64_t i : batch) {
        EXPECT_TRUE(seen.insert(i).second) << name << " proposed " << i << " again";
        EXPECT_GE(i, 0);
        EXPECT_LT(i, 432);
      }
      // Half the batch measured now, the rest never: still never proposed again.
      for (size_t j = 0; j < batch.size() / 2; ++j) s->Observe(batch[j], t.cost[batch[j]]);
    }
    EXPECT_EQ(seen.size(), 432u) << name;
    EXPECT_TRUE(s->last_error().empty()) << name << ": " << s->last_error();
  }
}

TEST(StrategyTest, SameSeedSameProposals) {
  const Table t = SyntheticTable();
  const Space space(t.spec);
  for (const std::string& name : StrategyNames()) {
    std::unique_ptr<Strategy> a = Make(name, space, 3), b = Make(name, space, 3),
                              c = Make(name, space, 4);
    std::vector<double> ca = Replay(t, *a, 96, 8), cb = Replay(t, *b, 96, 8);
    EXPECT_EQ(ca, cb) << name;
    Replay(t, *c, 96, 8);
    std::vector<int64_t> oa, oc;
    for (const auto& [i, cost] : a->observed()) oa.push_back(i);
    for (const auto& [i, cost] : c->observed()) oc.push_back(i);
    EXPECT_EQ(a->observed(), b->observed()) << name;
    EXPECT_NE(oa, oc) << name << ": another seed, another search";
  }
}

// Failures: a table whose configs with a=1 or a=2 fail (a third of the space) and one where all
// but one fail. The model steers clear of failures and still finds the optimum; nothing breaks.
TEST(StrategyTest, FailuresAreHandled) {
  Table t = SyntheticTable();
  const Space space(t.spec);
  int failed = 0;
  for (int64_t i = 0; i < 432; ++i) {
    if (space.ValueOf(i, 0) <= 1) {
      t.cost[i] = kFailed;
      ++failed;
    }
  }
  ASSERT_EQ(failed, 144);
  int gbt_failures = 0, random_failures = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    std::unique_ptr<Strategy> g = Make("gbt", space, seed), r = Make("random", space, seed);
    const std::vector<double> curve = Replay(t, *g, 128, 16);
    Replay(t, *r, 128, 16);
    EXPECT_EQ(curve.back(), t.optimum) << "seed " << seed;
    for (const auto& [i, cost] : g->observed()) gbt_failures += std::isinf(cost) ? 1 : 0;
    for (const auto& [i, cost] : r->observed()) random_failures += std::isinf(cost) ? 1 : 0;
    EXPECT_TRUE(g->last_error().empty()) << g->last_error();
  }
  std::printf("failed trials in 5 x 128: gbt %d, random %d\n", gbt_failures, random_failures);
  EXPECT_LT(gbt_failures, random_failures / 2);

  // Every config but one fails: the search goes on (at random) and finds it.
  Table one = SyntheticTable();
  for (int64_t i = 0; i < 432; ++i) {
    if (i != 200) one.cost[i] = kFailed;
  }
  for (const std::string& name : StrategyNames()) {
    std::unique_ptr<Strategy> s = Make(name, space, 9);
    const std::vector<double> curve = Replay(one, *s, 432, 32);
    ASSERT_EQ(curve.size(), 432u) << name;
    EXPECT_EQ(curve.back(), one.cost[200]) << name;
    EXPECT_TRUE(std::isinf(curve[TrialsToReach(curve, one.cost[200], 0) - 2]));
  }
}

// The learned model sees the interaction the additive one cannot: over fixed seeds, at a small
// budget its mean best/optimum is far closer to 1 than random search's.
TEST(StrategyTest, ModelBeatsRandomOnAnInteraction) {
  const Table t = SyntheticTable();
  const Space space(t.spec);
  constexpr int kBudget = 64, kSeeds = 20;
  std::map<std::string, std::vector<std::vector<double>>> curves;
  for (const std::string& name : StrategyNames()) {
    for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
      std::unique_ptr<Strategy> s = Make(name, space, seed);
      curves[name].push_back(Replay(t, *s, kBudget, 8));
    }
  }
  const ReplayStats random = Summarize(curves["random"], t.optimum, kBudget);
  const ReplayStats additive = Summarize(curves["additive"], t.optimum, kBudget);
  const ReplayStats gbt = Summarize(curves["gbt"], t.optimum, kBudget);
  std::printf("mean best/optimum at %d trials: random %.4f, additive %.4f, gbt %.4f\n", kBudget,
              random.mean_ratio, additive.mean_ratio, gbt.mean_ratio);
  std::printf("optimum found: random %.0f %%, additive %.0f %%, gbt %.0f %%\n", random.exact * 100,
              additive.exact * 100, gbt.exact * 100);
  EXPECT_LT(gbt.mean_ratio - 1, 0.5 * (random.mean_ratio - 1));
  EXPECT_GT(gbt.exact, random.exact + 0.3);
}

// Transfer: pre-trained on another run of the same space (here the synthetic space at twice the
// cost, as another shape would be: other costs, the same order; 64 configs of it), the model comes
// to the optimum in fewer trials; the prior's configs are not the run's and may still be proposed.
TEST(StrategyTest, TransferReachesTheOptimumInFewerTrials) {
  const Table t = SyntheticTable();
  const Space space(t.spec);
  constexpr int kSeeds = 20;
  std::vector<int> with, without;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    std::mt19937_64 rng(seed + 1000);
    std::vector<std::pair<int64_t, double>> prior;
    for (int i = 0; i < 64; ++i) {
      const int64_t c = static_cast<int64_t>(rng() % static_cast<uint64_t>(space.size()));
      prior.emplace_back(c, 2 * t.cost[c]);
    }
    StrategyOptions o;
    o.seed = seed;
    std::unique_ptr<Strategy> plain = *MakeStrategy("gbt", space, o);
    o.prior = {prior};
    std::unique_ptr<Strategy> transfer = *MakeStrategy("gbt", space, o);
    auto reach = [&](Strategy& s) {
      const int n = TrialsToReach(Replay(t, s, 128, 8), t.optimum, 0);
      return n < 0 ? 1000 : n;
    };
    without.push_back(reach(*plain));
    with.push_back(reach(*transfer));
  }
  std::sort(with.begin(), with.end());
  std::sort(without.begin(), without.end());
  std::printf("trials to the optimum (median, 90th pct.): with transfer %d, %d; without %d, %d\n",
              with[kSeeds / 2], with[kSeeds * 9 / 10], without[kSeeds / 2],
              without[kSeeds * 9 / 10]);
  EXPECT_LT(with[kSeeds / 2], without[kSeeds / 2]);
  EXPECT_LE(with[kSeeds * 9 / 10], without[kSeeds * 9 / 10]);
}

TEST(ReplayTest, Summaries) {
  const std::vector<std::vector<double>> curves = {{4, 2, 2, 1}, {3, 3, 2, 2}};
  const ReplayStats at2 = Summarize(curves, 1, 2);
  EXPECT_EQ(at2.runs, 2);
  EXPECT_DOUBLE_EQ(at2.mean_ratio, 2.5);
  EXPECT_DOUBLE_EQ(at2.worst_ratio, 3);
  EXPECT_DOUBLE_EQ(Summarize(curves, 1, 4).exact, 0.5);
  EXPECT_EQ(TrialsToReach(curves[0], 1, 0.01), 4);
  EXPECT_EQ(TrialsToReach(curves[0], 1, 1.0), 2);
  EXPECT_EQ(TrialsToReach(curves[1], 1, 0.01), -1);
}

}  // namespace
}  // namespace benchfarm::tuner
