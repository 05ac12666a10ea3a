// TrackerProcess: the real tracker daemon (//tracker:tracker) as a child process, for tests and
// benchmarks that need it in a process of its own — to kill it with SIGKILL, to ask the binary
// itself, to measure it over gRPC like production. It is started as a process::Subprocess (its own
// process group, stdout piped, stderr inherited), and Start() waits for the line the tracker
// prints on stdout once it serves: "tracker: listening on HOST:PORT".
//
// The caller's target must have //tracker:tracker in its `data`.
//
// Thread-safety: none; one thread uses an object.

#ifndef BENCHFARM_TESTS_TRACKER_PROCESS_H_
#define BENCHFARM_TESTS_TRACKER_PROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "process/subprocess.h"

namespace benchfarm::testing {

// The tracker binary: `path` if not empty; else tracker/tracker in the runfiles of this test or
// binary ($RUNFILES_DIR, $TEST_SRCDIR, or `argv0` + ".runfiles" when argv0 is given); "" if none
// of those is executable.
std::string FindTrackerBinary(const std::string& path = "", const char* argv0 = nullptr);

class TrackerProcess {
 public:
  explicit TrackerProcess(std::string binary = FindTrackerBinary());
  // Kills (SIGKILL to its process group) and reaps a tracker still running.
  ~TrackerProcess();

  TrackerProcess(const TrackerProcess&) = delete;
  TrackerProcess& operator=(const TrackerProcess&) = delete;

  // Starts the tracker with `flags` (e.g. {"--database=/tmp/t.db", "--listen=127.0.0.1:0",
  // "--metrics=off"}) and waits until it prints its "listening on" line; returns HOST:PORT.
  // Errors: FailedPrecondition if this object's tracker still runs or no binary was found;
  // Subprocess::Start's errors; Unavailable if the tracker exits first (saying how);
  // DeadlineExceeded if it prints no such line within `timeout` (it is killed then).
  absl::StatusOr<std::string> Start(const std::vector<std::string>& flags,
                                    absl::Duration timeout = absl::Seconds(30));
  // Start in two steps: Launch starts the process; WaitListening waits for its "listening on"
  // line (a standby prints it only once it takes over: tracker/leadership.h). Same errors.
  absl::Status Launch(const std::vector<std::string>& flags);
  absl::StatusOr<std::string> WaitListening(absl::Duration timeout = absl::Seconds(30));

  // SIGTERM to the tracker; SIGKILL to its group if it has not exited `grace` later. Returns how
  // it ended — a clean stop is exit code 0, a hang shows as SIGKILL. Errors: FailedPrecondition
  // if none was started since the last Stop()/Kill(); Subprocess::WaitExit's errors.
  absl::StatusOr<base::ProcessExit> Stop(absl::Duration grace = absl::Seconds(5));

  // Waits until the tracker exits by itself and reaps it; DeadlineExceeded if it has not within
  // `timeout`, FailedPrecondition if none runs.
  absl::StatusOr<base::ProcessExit> WaitExit(absl::Duration timeout);

  // SIGKILL to the tracker's process group (a crash, as the tracker sees it), then reaps it.
  // No-op if none runs.
  void Kill();

  // The running tracker's process id, or -1.
  pid_t pid() const;

  const std::string& binary() const { return binary_; }

 private:
  const std::string binary_;
  std::unique_ptr<process::Subprocess> process_;
  int stdout_fd_ = -1;
  std::string argv_;  // for messages
};

}  // namespace benchfarm::testing

#endif  // BENCHFARM_TESTS_TRACKER_PROCESS_H_
