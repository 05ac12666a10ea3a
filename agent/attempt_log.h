// AttemptLog: what a board worker did for one attempt of a job — the image's build (command lines
// and compiler output), the flash, the link's events (handshakes, resets, timeouts, fault lines,
// cancels) and the result — sent with the attempt's result (JobResult.log) for the tracker to keep
// (README "Per-job logs"). Each event is a line (or, for a tool's output, lines) stamped with the
// UTC time of day. The text is valid UTF-8 whatever a tool printed (base::ValidUtf8), and bounded:
// an event, and the whole log, at most catalog::kMaxAttemptLogBytes, cut in the middle saying so.
//
// Thread-safety: none; a worker fills each log on its own thread.

#ifndef BENCHFARM_AGENT_ATTEMPT_LOG_H_
#define BENCHFARM_AGENT_ATTEMPT_LOG_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace benchfarm::agent {

class AttemptLog {
 public:
  // One event, e.g. "flash: image 1a2b... in 0.2s"; a multi-line event (a compiler's output)
  // keeps its lines. `at`: when it happened.
  void Add(absl::string_view event, absl::Time at = absl::Now());
  // The log as sent.
  std::string Text() const;
  bool empty() const { return text_.empty(); }

 private:
  std::string text_;
};

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_ATTEMPT_LOG_H_
