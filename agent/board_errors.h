// Board errors: the one place where what went wrong on a board — its own diagnosis, a
// device::BoardFailure from EnsureImage or MeasureRound — becomes a trial's ErrorCode and
// message (board_worker.h says what each code means to the tracker).
//
//   kFlash              FLASH_ERROR        the failure's message
//   kSession            SESSION_ERROR      the failure's message
//   kFirmwareMismatch   FIRMWARE_MISMATCH  the failure's message
//   kKilledFromOutside  BOARD_LOST         "the board process was <how> from outside (the OOM
//                                          killer or an operator; ...) ...; it was restarted"
//   kCrashed            RUNTIME_DEVICE     "the board crashed running <function>: <how>; it was
//                                          restarted"
//   kLinkLost           SESSION_ERROR      "the call went unanswered (<error>) but the board is
//                                          alive...; the board was reconnected" (with the damaged
//                                          packets, or the new handshake it answered)
//   kHung               RUN_TIMEOUT        "no answer from the board within the trial's timeout
//                                          of <timeout> (<error>); the board was reset"
//   kRebooted           DEVICE_RESET       "the board reset during <function>: <error>"
//   kLinkFailed         SESSION_ERROR      "the board's link or timing failed during the trial:
//                                          <error>"
//   kCallFailed         RUNTIME_DEVICE     the call's error
//   kCancelled          CANCELLED          "cancelled during <function>: <error>" (the tracker
//                                          cancelled the trial; the worker reports nothing)
//
// Thread-safety: a pure function.

#ifndef BENCHFARM_AGENT_BOARD_ERRORS_H_
#define BENCHFARM_AGENT_BOARD_ERRORS_H_

#include <string>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "device/board.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::agent {

// What a trial's result says went wrong.
struct TrialError {
  v1::ErrorCode code;
  std::string message;
};

// The error of a trial whose board failed as `failure` says (see the file comment); `function`
// is the trial's function and `timeout` its timeout, named in the messages of a round's failure.
TrialError ErrorFor(const device::BoardFailure& failure, absl::string_view function,
                    absl::Duration timeout);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_BOARD_ERRORS_H_
