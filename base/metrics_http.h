// ServeMetrics: a prometheus-cpp registry served on GET /metrics (Prometheus's text format,
// prometheus::TextSerializer over the registry's Collect() at each scrape) by an HttpServer:
// what the tracker's Metrics and the agent's AgentMetrics serve, and the series both have.
//
// Label values, on both daemons: a value from a fixed set (a state, a result, a reason, a stage,
// an ErrorCode name) is upper case, as the proto enums and farmctl spell them (state="IDLE",
// result="OK", error_code="NO_ERROR"); a value someone chose (a board id, a board kind, a client)
// is as they wrote it.
//
// Thread-safety: the registry is collected on the server's thread; prometheus-cpp's registry and
// metrics are safe to update meanwhile from any thread.

#ifndef BENCHFARM_BASE_METRICS_HTTP_H_
#define BENCHFARM_BASE_METRICS_HTTP_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "base/http_server.h"
#include "prometheus/registry.h"

namespace benchfarm::base {

// The exposition format's Content-Type.
inline constexpr char kMetricsContentType[] = "text/plain; version=0.0.4";

// Serves registry on address (HttpServer::Start's forms; port 0 picks one) with options until
// the returned server is destroyed. Errors: Unavailable "metrics: " and HttpServer::Start's
// message ("cannot listen on ADDRESS: why") when the address is malformed or cannot be bound,
// or the server cannot be set up.
absl::StatusOr<std::unique_ptr<HttpServer>> ServeMetrics(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry,
    const HttpServerOptions& options);

// Adds benchfarm_build_info{version,commit} (a gauge, always 1: the labels are the information;
// base/build_info.h) to registry. Call once per registry.
void AddBuildInfo(prometheus::Registry& registry);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_METRICS_HTTP_H_
