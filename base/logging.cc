#include "base/logging.h"

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace benchfarm::base {
namespace {

// %^...%$ marks the part coloured by level (on a terminal only).
constexpr char kPattern[] = "%Y-%m-%d %H:%M:%S.%e %^%L%$ %n: %v";

}  // namespace

absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "trace") return spdlog::level::trace;
  if (lower == "debug") return spdlog::level::debug;
  if (lower == "info") return spdlog::level::info;
  if (lower == "warn" || lower == "warning") return spdlog::level::warn;
  if (lower == "error" || lower == "err") return spdlog::level::err;
  if (lower == "critical") return spdlog::level::critical;
  if (lower == "off") return spdlog::level::off;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown log level \"", name, "\" (one of trace, debug, info, warn, error, critical, off)"));
}

absl::Status InitLogging(absl::string_view program_name, absl::string_view level) {
  auto logger = std::make_shared<spdlog::logger>(
      std::string(program_name), std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
  logger->set_pattern(kPattern);
  logger->set_level(spdlog::level::info);
  spdlog::set_default_logger(logger);

  std::string source = "--log_level";
  if (level.empty()) {
    const char* env = std::getenv(kLogLevelEnv);
    if (env == nullptr || *env == '\0') return absl::OkStatus();
    level = env;
    source = absl::StrCat("$", kLogLevelEnv);
  }
  absl::StatusOr<spdlog::level::level_enum> parsed = ParseLogLevel(level);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", parsed.status().message()));
  }
  logger->set_level(*parsed);
  return absl::OkStatus();
}

}  // namespace benchfarm::base
