// AgentMetrics: the agent's Prometheus series (prometheus-cpp), served on /metrics
// (base/metrics_http.h).
//
//   benchfarm_build_info{version,commit}                    gauge: 1 (base/metrics_http.h)
//   benchfarm_agent_tracker_connected                       gauge: 1 while registered
//   benchfarm_agent_boards{state}                           gauge: IDLE, BUSY, RESETTING, OFFLINE
//   benchfarm_agent_builds_total{result}                    counter: OK, FAILED, TIMEOUT
//   benchfarm_agent_build_cache_hits_total                  counter
//   benchfarm_agent_image_cache_evictions_total             counter: images evicted (LRU) to
//                                                           keep image_cache_max_bytes
//   benchfarm_agent_flashes_total{board}                    counter
//   benchfarm_agent_flash_skips_total{board}                counter: image already on the board
//   benchfarm_agent_handshakes_total{board,result}          counter: OK, FAILED
//   benchfarm_agent_link_crc_errors_total{board}            counter
//   benchfarm_agent_trial_leftovers_killed_total{board}     counter: processes trials left
//                                                           running, killed after their calls
//   benchfarm_agent_link_dropped_packets_total{board}       counter
//   benchfarm_agent_trials_total{error_code}                counter: results by ErrorCode name
//   benchfarm_agent_stage_seconds{stage}                    histogram: BUILD, FLASH, HANDSHAKE,
//                                                           MEASURE
//   benchfarm_agent_spooled_results                         gauge: results not yet acknowledged
//
// Every label value comes from the agent's config (board ids) or from a fixed set (results,
// stages, ErrorCode names), so the series are bounded; fixed values are upper case on both daemons
// (base/metrics_http.h).
//
// The HTTP server (base/http_server.h) is one thread over non-blocking sockets: idle or slow
// connections cost a descriptor each, never a worker; each must send its request within
// request_timeout, and past max_connections the oldest idle one is closed for a new one, so no
// number of them keeps a scrape from being answered.
//
// Thread-safety: safe from any thread.

#ifndef BENCHFARM_AGENT_METRICS_H_
#define BENCHFARM_AGENT_METRICS_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/http_server.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace benchfarm::agent {

struct AgentMetricsOptions {
  // The /metrics server's request_timeout (5 s) and max_connections (1024).
  base::HttpServerOptions server;
};

class AgentMetrics {
 public:
  AgentMetrics() : AgentMetrics(AgentMetricsOptions()) {}
  explicit AgentMetrics(AgentMetricsOptions options);

  // Serves /metrics on address ("127.0.0.1:9471", "[::]:9471"; port 0 picks one) with options'
  // server, until destroyed. Call it once. Errors: Unavailable naming the address and why when it
  // is malformed or cannot be bound.
  absl::Status Serve(const std::string& address);
  // The port actually bound (after Serve with port 0), or 0.
  int port() const;

  void SetConnected(bool connected);
  void SetBoards(const std::map<std::string, int>& by_state);
  void Build(const std::string& result);
  void CacheHit();
  void CacheEviction();
  void Flash(const std::string& board);
  void FlashSkip(const std::string& board);
  void Handshake(const std::string& board, bool ok);
  // The link's running totals; the counters advance by the difference.
  void Link(const std::string& board, uint64_t crc_errors, uint64_t dropped);
  void LeftoversKilled(const std::string& board, int processes);
  void Trial(const std::string& error_code);
  void Stage(const std::string& stage, double seconds);
  void SetSpooled(int64_t n);
  // What the board's last calibration measured: cycles (instructions under -icount) per second.
  void SetBoardClock(const std::string& board, double clock_hz);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

 private:
  const AgentMetricsOptions options_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<base::HttpServer> server_;
  prometheus::Gauge& connected_;
  prometheus::Family<prometheus::Gauge>& boards_;
  prometheus::Family<prometheus::Counter>& builds_;
  prometheus::Counter& cache_hits_;
  prometheus::Counter& cache_evictions_;
  prometheus::Family<prometheus::Counter>& flashes_;
  prometheus::Family<prometheus::Counter>& leftovers_killed_;
  prometheus::Family<prometheus::Counter>& flash_skips_;
  prometheus::Family<prometheus::Counter>& handshakes_;
  prometheus::Family<prometheus::Counter>& crc_errors_;
  prometheus::Family<prometheus::Counter>& dropped_;
  prometheus::Family<prometheus::Counter>& trials_;
  prometheus::Family<prometheus::Histogram>& stages_;
  prometheus::Gauge& spooled_;
  prometheus::Family<prometheus::Gauge>& clock_hz_;

  absl::Mutex mu_;
  std::map<std::string, std::pair<uint64_t, uint64_t>> link_seen_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_METRICS_H_
