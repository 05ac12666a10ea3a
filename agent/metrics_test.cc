// AgentMetrics: /metrics answers while any number of idle and slow connections are open, and
// drops them after the request timeout.
#include "agent/metrics.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/build_info.h"
#include "tests/http_probe.h"

namespace benchfarm::agent {
namespace {

using testing::CloseAll;
using testing::ExpectScrapesAnswerWhileStalled;
using testing::HttpGet;
using testing::IsOk;
using testing::OpenStalledConnections;
using testing::ParseSamples;

TEST(AgentMetricsServer, AnswersWhileIdleAndSlowConnectionsAreOpen) {
  AgentMetrics metrics;  // the defaults the agent runs with
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  ASSERT_NE(metrics.port(), 0);
  metrics.Flash("board-0");
  metrics.Trial("NO_ERROR");
  metrics.Handshake("board-0", true);
  // Before the fix each connection held one of civetweb's 8 worker threads until it sent its
  // request or 5 s passed: 64 idle connections stalled every scrape for about 40 s.
  ExpectScrapesAnswerWhileStalled(metrics.port(), 64, 8);
  std::string response = HttpGet(metrics.port(), "/metrics");
  EXPECT_TRUE(IsOk(response)) << response.substr(0, 200);
  std::map<std::string, double> samples = ParseSamples(response);
  EXPECT_EQ(samples["benchfarm_agent_flashes_total{board=\"board-0\"}"], 1);
  EXPECT_EQ(samples["benchfarm_agent_trials_total{error_code=\"NO_ERROR\"}"], 1);
  // Fixed label values are upper case, as on the tracker.
  EXPECT_EQ(samples["benchfarm_agent_handshakes_total{board=\"board-0\",result=\"OK\"}"], 1);
  EXPECT_EQ(samples["benchfarm_agent_builds_total{result=\"TIMEOUT\"}"], 0);
  // Which build serves: one series, 1, its labels the version and commit --version prints.
  const std::string build_info = absl::StrCat("benchfarm_build_info{commit=\"", base::Commit(),
                                              "\",version=\"", base::Version(), "\"}");
  EXPECT_EQ(samples.count(build_info), 1u) << build_info;
  EXPECT_EQ(samples[build_info], 1);
}

TEST(AgentMetricsServer, AnswersWithMoreConnectionsOpenThanTheCap) {
  AgentMetricsOptions options;
  options.server.max_connections = 16;
  AgentMetrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  ExpectScrapesAnswerWhileStalled(metrics.port(), 40, 8);
}

TEST(AgentMetricsServer, DropsStalledConnectionsAfterTheRequestTimeout) {
  AgentMetricsOptions options;
  options.server.request_timeout = absl::Milliseconds(300);
  AgentMetrics metrics(options);
  ASSERT_TRUE(metrics.Serve("127.0.0.1:0").ok());
  std::vector<int> stalled = OpenStalledConnections(metrics.port(), 3, 1);
  absl::Time start = absl::Now();
  std::string response = HttpGet(metrics.port(), "/metrics");
  absl::Duration took = absl::Now() - start;
  EXPECT_TRUE(IsOk(response)) << response.substr(0, 200);
  EXPECT_LT(took, absl::Seconds(2));
  CloseAll(stalled);
}

TEST(AgentMetricsServer, ServeFailsOnAnAddressInUse) {
  AgentMetrics first;
  ASSERT_TRUE(first.Serve("127.0.0.1:0").ok());
  AgentMetrics second;
  absl::Status s = second.Serve(absl::StrCat("127.0.0.1:", first.port()));
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  EXPECT_EQ(second.port(), 0);
}

}  // namespace
}  // namespace benchfarm::agent
