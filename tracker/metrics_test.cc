// Metrics: /metrics answers while any number of idle and slow connections are open; label values
// that clients and agents choose (client ids, board kinds) are capped with the rest under "_other".
#include "tracker/metrics.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/http_probe.h"

namespace benchfarm::tracker {
namespace {

using testing::CloseAll;
using testing::ExpectScrapesAnswerWhileStalled;
using testing::HttpGet;
using testing::IsOk;
using testing::OpenStalledConnections;
using testing::ParseSamples;

// The samples of `name` by the value of `label` (series with other labels are not expected).
std::map<std::string, double> ByLabel(const std::map<std::string, double>& samples,
                                      const std::string& name, const std::string& label) {
  std::map<std::string, double> out;
  const std::string prefix = absl::StrCat(name, "{", label, "=\"");
  for (const auto& [series, value] : samples) {
    if (!absl::StartsWith(series, prefix)) continue;
    std::string rest = series.substr(prefix.size());
    out[rest.substr(0, rest.find('"'))] += value;
  }
  return out;
}

// ---- idle and slow connections ----------------------------------------------------------------

TEST(MetricsServer, AnswersWhileIdleAndSlowConnectionsAreOpen) {
  Metrics metrics;  // the defaults the tracker runs with
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  ASSERT_NE(metrics.port(), 0);
  // Before the fix each connection held one of civetweb's 8 worker threads until it sent its
  // request or 5 s passed: 64 idle connections stalled every scrape for about 40 s.
  ExpectScrapesAnswerWhileStalled(metrics.port(), 64, 8);
  std::string response = HttpGet(metrics.port(), "/metrics");
  EXPECT_TRUE(IsOk(response)) << response.substr(0, 200);
  EXPECT_TRUE(absl::StrContains(response, "\r\nContent-Type: text/plain; version=0.0.4\r\n"));
  EXPECT_TRUE(absl::StrContains(response, "benchfarm_tracker_requeues_total"));
}

TEST(MetricsServer, AnswersWithMoreConnectionsOpenThanTheCap) {
  MetricsOptions options;
  options.server.max_connections = 16;
  Metrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  ExpectScrapesAnswerWhileStalled(metrics.port(), 40, 8);
}

TEST(MetricsServer, DropsStalledConnectionsAfterTheRequestTimeout) {
  MetricsOptions options;
  options.server.request_timeout = absl::Milliseconds(300);
  Metrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  std::vector<int> stalled = OpenStalledConnections(metrics.port(), 3, 1);
  absl::Time start = absl::Now();
  std::string response = HttpGet(metrics.port(), "/metrics");
  absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(IsOk(response)) << response.substr(0, 200);
  EXPECT_LT(took, absl::Seconds(2));
  // And the server has hung up on the idle ones (read returns EOF or an error, not a timeout).
  timeval tv = absl::ToTimeval(absl::Seconds(5));
  setsockopt(stalled[0], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[512];
  start = absl::Now();
  ssize_t n;
  while ((n = read(stalled[0], buf, sizeof(buf))) > 0) {
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(4)) << "the idle connection was kept open";
  CloseAll(stalled);
}

TEST(MetricsServer, ServeFailsOnAnAddressInUse) {
  Metrics first;
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  Metrics second;
  absl::Status s = second.Serve(absl::StrCat("127.0.0.1:", first.port()));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(second.port(), 0);
}

// The store's counters follow the queue's: what grew since the last update is added.
TEST(MetricsStore, CommitsWritesFailuresAndWalTruncationsAreCounted) {
  Metrics metrics;
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  QueueStats stats;
  stats.store_commits = 10;
  stats.store_writes = 250;
  metrics.Update(stats);
  stats.store_commits = 12;
  stats.store_writes = 300;
  stats.store_writes_saved = 90;
  stats.store_failures = 1;
  stats.store_problem = "disk full";
  stats.store_upkeep.wal_truncations = 3;
  stats.store_upkeep.wal_truncations_blocked = 2;
  metrics.Update(stats);
  std::map<std::string, double> samples = ParseSamples(HttpGet(metrics.port(), "/metrics"));
  EXPECT_EQ(samples["benchfarm_tracker_store_commits_total"], 12);
  EXPECT_EQ(samples["benchfarm_tracker_store_writes_total"], 300);
  EXPECT_EQ(samples["benchfarm_tracker_store_writes_saved_total"], 90);
  EXPECT_EQ(samples["benchfarm_tracker_store_failures_total"], 1);
  EXPECT_EQ(samples["benchfarm_tracker_store_up"], 0);
  EXPECT_EQ(samples["benchfarm_tracker_store_wal_truncations_total{result=\"TRUNCATED\"}"], 3);
  EXPECT_EQ(samples["benchfarm_tracker_store_wal_truncations_total{result=\"BLOCKED\"}"], 2);
}

// ---- label cardinality ------------------------------------------------------------------------

TEST(MetricsLabels, ClientsPastTheCapAreCountedUnderOther) {
  MetricsOptions options;
  options.max_clients = 100;
  Metrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());

  // 150 clients; client i has submitted i + 1 trials.
  QueueStats stats;
  double total = 0;
  for (int i = 0; i < 150; ++i) {
    stats.trials_by_client[absl::StrCat("client-", 1000 + i)] = i + 1;
    total += i + 1;
  }
  metrics.Update(stats);
  // More trials from a client with a series of its own and from one counted under "_other";
  // a client literally named "_other" adds to the shared series without taking a place.
  stats.trials_by_client["client-1000"] += 5;
  stats.trials_by_client["client-1149"] += 7;
  stats.trials_by_client["_other"] = 2;
  total += 5 + 7 + 2;
  metrics.Update(stats);

  std::string response = HttpGet(metrics.port(), "/metrics");
  ASSERT_TRUE(IsOk(response)) << response.substr(0, 200);
  std::map<std::string, double> clients =
      ByLabel(ParseSamples(response), "benchfarm_tracker_trials_submitted_total", "client");
  EXPECT_LE(clients.size(), 101u);
  EXPECT_EQ(clients.size(), 101u);
  ASSERT_EQ(clients.count("_other"), 1u);
  double sum = 0;
  for (const auto& [client, n] : clients) sum += n;
  EXPECT_EQ(sum, total);
  // The first 100 (in the order the queue reports them) keep their series.
  EXPECT_EQ(clients["client-1000"], 1 + 5);
  EXPECT_EQ(clients["client-1099"], 100);
  EXPECT_EQ(clients.count("client-1100"), 0u);
  EXPECT_EQ(clients.count("client-1149"), 0u);
  double other = 2 + 7;
  for (int i = 100; i < 150; ++i) other += i + 1;
  EXPECT_EQ(clients["_other"], other);

  // New clients later still go to "_other"; the old ones keep their own series.
  stats.trials_by_client["aaa-late"] = 4;
  stats.trials_by_client["client-1050"] += 1;
  metrics.Update(stats);
  clients = ByLabel(ParseSamples(HttpGet(metrics.port(), "/metrics")),
                    "benchfarm_tracker_trials_submitted_total", "client");
  EXPECT_EQ(clients.size(), 101u);
  EXPECT_EQ(clients.count("aaa-late"), 0u);
  EXPECT_EQ(clients["_other"], other + 4);
  EXPECT_EQ(clients["client-1050"], 51 + 1);
}

TEST(MetricsLabels, TheClientCapIsAnOption) {
  MetricsOptions options;
  options.max_clients = 3;
  Metrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  QueueStats stats;
  for (int i = 0; i < 10; ++i) stats.trials_by_client[absl::StrCat("c", i)] = 1;
  metrics.Update(stats);
  std::map<std::string, double> clients =
      ByLabel(ParseSamples(HttpGet(metrics.port(), "/metrics")),
              "benchfarm_tracker_trials_submitted_total", "client");
  EXPECT_EQ(clients,
            (std::map<std::string, double>{{"c0", 1}, {"c1", 1}, {"c2", 1}, {"_other", 7}}));
}

TEST(MetricsLabels, BoardKindsPastTheCapAreSummedUnderOther) {
  MetricsOptions options;
  options.max_board_kinds = 2;
  Metrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  QueueStats stats;
  stats.queued_by_kind_priority[{"kind-a", 0}] = 1;
  stats.queued_by_kind_priority[{"kind-b", 0}] = 2;
  stats.queued_by_kind_priority[{"kind-c", 0}] = 3;
  stats.queued_by_kind_priority[{"kind-d", 0}] = 4;
  stats.queued_by_kind_priority[{"kind-d", 5}] = 5;
  metrics.Update(stats);
  std::map<std::string, double> samples = ParseSamples(HttpGet(metrics.port(), "/metrics"));
  auto depth = [&](const std::string& kind, int priority) {
    auto it = samples.find(absl::StrCat("benchfarm_tracker_queue_depth{board_kind=\"", kind,
                                        "\",priority=\"", priority, "\"}"));
    return it == samples.end() ? -1 : it->second;
  };
  EXPECT_EQ(depth("kind-a", 0), 1);
  EXPECT_EQ(depth("kind-b", 0), 2);
  EXPECT_EQ(depth("_other", 0), 3 + 4);
  EXPECT_EQ(depth("_other", 5), 5);
  EXPECT_EQ(depth("kind-c", 0), -1);
  EXPECT_EQ(ByLabel(samples, "benchfarm_tracker_queue_depth", "board_kind").size(), 3u);

  // The queue drains: every series it set goes back to 0.
  stats.queued_by_kind_priority.clear();
  stats.queued_by_kind_priority[{"kind-c", 0}] = 1;
  metrics.Update(stats);
  samples = ParseSamples(HttpGet(metrics.port(), "/metrics"));
  EXPECT_EQ(depth("kind-a", 0), 0);
  EXPECT_EQ(depth("kind-b", 0), 0);
  EXPECT_EQ(depth("_other", 0), 1);
  EXPECT_EQ(depth("_other", 5), 0);
}

}  // namespace
}  // namespace benchfarm::tracker
