// ServeMetrics: a prometheus-cpp registry served on GET /metrics (Prometheus's text format,
// prometheus::TextSerializer over the registry's Collect() at each scrape) by an HttpServer:
// what the tracker's Metrics and the agent's AgentMetrics serve.
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

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_METRICS_HTTP_H_
