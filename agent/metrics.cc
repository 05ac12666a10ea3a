#include "agent/metrics.h"

#include <cstdint>

#include "base/metrics_http.h"
#include "base/status_macros.h"

namespace benchfarm::agent {
namespace {

const prometheus::Histogram::BucketBoundaries& StageBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{
      0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};
  return *b;
}

}  // namespace

AgentMetrics::AgentMetrics(AgentMetricsOptions options)
    : options_(options),
      registry_(std::make_shared<prometheus::Registry>()),
      connected_(prometheus::BuildGauge()
                     .Name("benchfarm_agent_tracker_connected")
                     .Help("1 while the agent is registered with its tracker")
                     .Register(*registry_)
                     .Add({})),
      boards_(prometheus::BuildGauge()
                  .Name("benchfarm_agent_boards")
                  .Help("The agent's boards by state")
                  .Register(*registry_)),
      builds_(prometheus::BuildCounter()
                  .Name("benchfarm_agent_builds_total")
                  .Help("Firmware builds run, by result")
                  .Register(*registry_)),
      cache_hits_(prometheus::BuildCounter()
                      .Name("benchfarm_agent_build_cache_hits_total")
                      .Help("Images found in the cache instead of built")
                      .Register(*registry_)
                      .Add({})),
      cache_evictions_(prometheus::BuildCounter()
                           .Name("benchfarm_agent_image_cache_evictions_total")
                           .Help("Cached images evicted, least recently used first, to keep "
                                 "image_cache_max_bytes")
                           .Register(*registry_)
                           .Add({})),
      flashes_(prometheus::BuildCounter()
                   .Name("benchfarm_agent_flashes_total")
                   .Help("Images flashed, by board")
                   .Register(*registry_)),
      leftovers_killed_(prometheus::BuildCounter()
                            .Name("benchfarm_agent_trial_leftovers_killed_total")
                            .Help("Processes a trial's code left running on a host-process "
                                  "board, killed after its call, by board")
                            .Register(*registry_)),
      flash_skips_(prometheus::BuildCounter()
                       .Name("benchfarm_agent_flash_skips_total")
                       .Help("Flashes skipped because the board already ran the image")
                       .Register(*registry_)),
      handshakes_(prometheus::BuildCounter()
                      .Name("benchfarm_agent_handshakes_total")
                      .Help("Session handshakes, by board and result")
                      .Register(*registry_)),
      crc_errors_(prometheus::BuildCounter()
                      .Name("benchfarm_agent_link_crc_errors_total")
                      .Help("Link packets dropped for a bad CRC, by board")
                      .Register(*registry_)),
      dropped_(prometheus::BuildCounter()
                   .Name("benchfarm_agent_link_dropped_packets_total")
                   .Help("Link packets dropped (aborted, oversized, malformed), by board")
                   .Register(*registry_)),
      trials_(prometheus::BuildCounter()
                  .Name("benchfarm_agent_trials_total")
                  .Help("Trial results, by error code")
                  .Register(*registry_)),
      stages_(prometheus::BuildHistogram()
                  .Name("benchfarm_agent_stage_seconds")
                  .Help("Duration of a trial's stages (build, flash, handshake, measure)")
                  .Register(*registry_)),
      spooled_(prometheus::BuildGauge()
                   .Name("benchfarm_agent_spooled_results")
                   .Help("Results kept on disk until the tracker acknowledges them")
                   .Register(*registry_)
                   .Add({})),
      clock_hz_(prometheus::BuildGauge()
                    .Name("benchfarm_agent_board_clock_hz")
                    .Help("The clock the board's last timer calibration measured, by board")
                    .Register(*registry_)) {
  base::AddBuildInfo(*registry_);
  for (const char* r : {"OK", "FAILED", "TIMEOUT"}) builds_.Add({{"result", r}});
  for (const char* s : {"BUILD", "FLASH", "HANDSHAKE", "MEASURE"}) {
    stages_.Add({{"stage", s}}, StageBuckets());
  }
}

absl::Status AgentMetrics::Serve(const std::string& address) {
  ASSIGN_OR_RETURN(server_, base::ServeMetrics(address, registry_, options_.server));
  return absl::OkStatus();
}

int AgentMetrics::port() const { return server_ == nullptr ? 0 : server_->port(); }

void AgentMetrics::SetConnected(bool connected) { connected_.Set(connected ? 1 : 0); }

void AgentMetrics::SetBoards(const std::map<std::string, int>& by_state) {
  for (const char* s : {"IDLE", "BUSY", "RESETTING", "OFFLINE"}) {
    auto it = by_state.find(s);
    boards_.Add({{"state", s}}).Set(it == by_state.end() ? 0 : it->second);
  }
}

void AgentMetrics::Build(const std::string& result) {
  builds_.Add({{"result", result}}).Increment();
}
void AgentMetrics::CacheHit() { cache_hits_.Increment(); }
void AgentMetrics::CacheEviction() { cache_evictions_.Increment(); }
void AgentMetrics::Flash(const std::string& board) { flashes_.Add({{"board", board}}).Increment(); }
void AgentMetrics::FlashSkip(const std::string& board) {
  flash_skips_.Add({{"board", board}}).Increment();
}
void AgentMetrics::Handshake(const std::string& board, bool ok) {
  handshakes_.Add({{"board", board}, {"result", ok ? "OK" : "FAILED"}}).Increment();
}

void AgentMetrics::LeftoversKilled(const std::string& board, int processes) {
  leftovers_killed_.Add({{"board", board}}).Increment(processes);
}

void AgentMetrics::Link(const std::string& board, uint64_t crc_errors, uint64_t dropped) {
  absl::MutexLock lock(&mu_);
  auto& seen = link_seen_[board];
  // A new session starts its counters at zero again.
  uint64_t crc_delta = crc_errors >= seen.first ? crc_errors - seen.first : crc_errors;
  uint64_t drop_delta = dropped >= seen.second ? dropped - seen.second : dropped;
  crc_errors_.Add({{"board", board}}).Increment(static_cast<double>(crc_delta));
  dropped_.Add({{"board", board}}).Increment(static_cast<double>(drop_delta));
  seen = {crc_errors, dropped};
}

void AgentMetrics::Trial(const std::string& error_code) {
  trials_.Add({{"error_code", error_code}}).Increment();
}

void AgentMetrics::Stage(const std::string& stage, double seconds) {
  stages_.Add({{"stage", stage}}, StageBuckets()).Observe(seconds);
}

void AgentMetrics::SetSpooled(int64_t n) { spooled_.Set(static_cast<double>(n)); }

void AgentMetrics::SetBoardClock(const std::string& board, double clock_hz) {
  clock_hz_.Add({{"board", board}}).Set(clock_hz);
}

}  // namespace benchfarm::agent
