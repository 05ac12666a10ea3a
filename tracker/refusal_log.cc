#include "tracker/refusal_log.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "grpc/support/log.h"
#include "spdlog/spdlog.h"

namespace benchfarm::tracker {
namespace {

std::function<void(const char*, const std::string&)>* g_on_handshake_failure = nullptr;

constexpr char kHandshakeFailed[] = "Handshake failed with fatal error ";

void LogFromGrpc(gpr_log_func_args* args) {
  const std::string message = args->message != nullptr ? args->message : "";
  if (g_on_handshake_failure != nullptr && absl::StartsWith(message, kHandshakeFailed)) {
    const std::string detail = message.substr(sizeof(kHandshakeFailed) - 1);
    (*g_on_handshake_failure)(HandshakeFailureReason(detail), detail);
    return;
  }
  switch (args->severity) {
    case GPR_LOG_SEVERITY_ERROR:
      spdlog::error("grpc: {} ({}:{})", message, args->file, args->line);
      break;
    case GPR_LOG_SEVERITY_INFO:
      spdlog::info("grpc: {}", message);
      break;
    default:
      spdlog::debug("grpc: {}", message);
  }
}

}  // namespace

bool RefusalLog::Note(absl::string_view line, absl::Time now) {
  int64_t held = 0;
  {
    absl::MutexLock lock(&mu_);
    if (now - window_start_ >= period_) {
      window_start_ = now;
      in_window_ = 0;
    }
    if (in_window_ >= burst_) {
      ++held_back_;
      return false;
    }
    ++in_window_;
    std::swap(held, held_back_);
  }
  const std::string text(line);
  if (held > 0) {
    spdlog::warn("{} (and {} more refusals not logged)", text, held);
  } else {
    spdlog::warn("{}", text);
  }
  return true;
}

const char* HandshakeFailureReason(absl::string_view openssl_text) {
  for (const char* plain : {"wrong version number", "http request", "WRONG_VERSION_NUMBER",
                            "HTTP_REQUEST", "packet length too long"}) {
    if (absl::StrContains(openssl_text, plain)) return "PLAINTEXT_CLIENT";
  }
  for (const char* distrust : {"alert unknown ca", "alert bad certificate",
                               "alert certificate unknown", "alert handshake failure"}) {
    if (absl::StrContains(openssl_text, distrust)) return "CLIENT_REFUSED_CERTIFICATE";
  }
  return "HANDSHAKE_FAILED";
}

void RouteGrpcLogs(
    std::function<void(const char* reason, const std::string& detail)> on_handshake_failure) {
  delete g_on_handshake_failure;
  g_on_handshake_failure =
      new std::function<void(const char*, const std::string&)>(std::move(on_handshake_failure));
  gpr_set_log_function(LogFromGrpc);
}

}  // namespace benchfarm::tracker
