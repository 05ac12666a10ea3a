// Saying why the tracker turned a caller away, without letting bad callers flood the log.
//
// RefusalLog writes a refusal (a call refused with its peer address, a TLS handshake that failed)
// as a warning, at most `burst` lines per `period`; past that it holds lines back and says how
// many it held when it writes again. Counting is the caller's (Metrics::AuthRefused): every
// refusal is counted, logged or not.
//
// RouteGrpcLogs sends gRPC's own log lines to spdlog instead of gRPC's stderr format, and hands a
// failed TLS handshake (gRPC's "Handshake failed with fatal error ...", with OpenSSL's reason) to
// a callback with its reason label (HandshakeFailureReason). gRPC 1.51's handshaker does not name
// the peer of a failed handshake (not even in its debug lines); a plain-text client is refused
// with its peer before gRPC sees it (front_door.h), a call refused after a handshake with its.
//
// Thread-safety: RefusalLog::Note and the callback may be called from any thread.

#ifndef BENCHFARM_TRACKER_REFUSAL_LOG_H_
#define BENCHFARM_TRACKER_REFUSAL_LOG_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace benchfarm::tracker {

class RefusalLog {
 public:
  explicit RefusalLog(int burst = 10, absl::Duration period = absl::Seconds(10))
      : burst_(burst), period_(period) {}

  // Logs `line` as a warning unless `burst` lines were logged within the current `period`
  // (starting at the first of them). Returns whether it was logged.
  bool Note(absl::string_view line, absl::Time now = absl::Now());

 private:
  const int burst_;
  const absl::Duration period_;
  absl::Mutex mu_;
  absl::Time window_start_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int in_window_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t held_back_ ABSL_GUARDED_BY(mu_) = 0;
};

// The reason label (upper case) of a failed TLS handshake from OpenSSL's text:
// PLAINTEXT_CLIENT ("wrong version number", "http request": the client spoke plain text),
// CLIENT_REFUSED_CERTIFICATE (the client did not trust the tracker's certificate: another CA, or
// a name it does not cover), HANDSHAKE_FAILED otherwise.
const char* HandshakeFailureReason(absl::string_view openssl_text);

// Installs the gRPC log function (process-wide; call once, before serving).
// `on_handshake_failure(reason, detail)` gets every failed TLS handshake gRPC logs.
void RouteGrpcLogs(
    std::function<void(const char* reason, const std::string& detail)> on_handshake_failure);

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_REFUSAL_LOG_H_
