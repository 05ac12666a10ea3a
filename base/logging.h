// Logging set-up for benchfarm's daemons (tracker, agent): spdlog, Debian's libspdlog-dev.
//
// A daemon calls InitLogging() once at the top of main(); everything else logs through spdlog's
// own API on the default logger, e.g.
//
//   spdlog::info("registered {} boards with {}", n, address);
//   spdlog::warn("spool: {} is unreadable; moved aside as .corrupt", path);
//
// Lines go to stderr, one per message, flushed as written, in the form
//
//   2025-01-31 12:00:00.123 I tracker: stopping
//
// (date and local time with milliseconds, the level's letter — T D I W E C — the program's name,
// the message), coloured by level only when stderr is a terminal. Machine-readable output a
// daemon promises on stdout (e.g. the tracker's "tracker: listening on ..." line) is not logging
// and does not go through here.
//
// Library code logs the same way and needs no set-up: without InitLogging() spdlog's own default
// logger (stdout, its default pattern) takes the messages, as in unit tests.
//
// Thread-safety: InitLogging() must run before other threads log (it replaces the default
// logger); spdlog's logging calls are thread-safe.

#ifndef BENCHFARM_BASE_LOGGING_H_
#define BENCHFARM_BASE_LOGGING_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "spdlog/common.h"

namespace benchfarm::base {

// The environment variable that sets the level when the daemon's --log_level flag is empty.
inline constexpr char kLogLevelEnv[] = "BENCHFARM_LOG_LEVEL";

// Makes the default spdlog logger a stderr logger named `program_name` with the format above.
// Its level is `level` (the daemon's --log_level flag) if not empty, else $BENCHFARM_LOG_LEVEL if
// set and not empty, else info. Errors: InvalidArgument for a level ParseLogLevel() refuses,
// naming where it came from; logging is then set up at info, so the caller can log the error.
absl::Status InitLogging(absl::string_view program_name, absl::string_view level = "");

// "trace", "debug", "info", "warn" or "warning", "error" or "err", "critical", "off" (any case).
// Errors: InvalidArgument naming the accepted values.
absl::StatusOr<spdlog::level::level_enum> ParseLogLevel(absl::string_view name);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_LOGGING_H_
