// ServeMetrics: see metrics_http.h.
#include "base/metrics_http.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/build_info.h"
#include "prometheus/gauge.h"
#include "prometheus/text_serializer.h"

namespace benchfarm::base {

absl::StatusOr<std::unique_ptr<HttpServer>> ServeMetrics(
    const std::string& address, std::shared_ptr<prometheus::Registry> registry,
    const HttpServerOptions& options) {
  HttpResource resource;
  resource.path = "/metrics";
  resource.content_type = kMetricsContentType;
  resource.body = [registry = std::move(registry)] {
    return prometheus::TextSerializer().Serialize(registry->Collect());
  };
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start(address, std::move(resource), options);
  if (!server.ok()) {
    return absl::UnavailableError(absl::StrCat("metrics: ", server.status().message()));
  }
  return server;
}

void AddBuildInfo(prometheus::Registry& registry) {
  prometheus::BuildGauge()
      .Name("benchfarm_build_info")
      .Help("The version and source commit this daemon was built from (always 1)")
      .Register(registry)
      .Add({{"version", std::string(Version())}, {"commit", std::string(Commit())}})
      .Set(1);
}

}  // namespace benchfarm::base
