// Board errors: see board_errors.h.

#include "agent/board_errors.h"

#include "absl/strings/str_cat.h"

namespace benchfarm::agent {

TrialError ErrorFor(const device::BoardFailure& failure, absl::string_view function,
                    absl::Duration timeout) {
  const std::string& m = failure.message;
  switch (failure.kind) {
    case device::BoardFailure::kFlash:
      return {v1::FLASH_ERROR, m};
    case device::BoardFailure::kSession:
      return {v1::SESSION_ERROR, m};
    case device::BoardFailure::kFirmwareMismatch:
      return {v1::FIRMWARE_MISMATCH, m};
    case device::BoardFailure::kKilledFromOutside:
      // Not the kernel under test: an infrastructure failure, retried by the tracker.
      return {v1::BOARD_LOST, absl::StrCat("the board process was ", m,
                                           " from outside (the OOM killer or an "
                                           "operator; not something ",
                                           function,
                                           " does by itself) while it ran "
                                           "the trial; it was restarted")};
    case device::BoardFailure::kCrashed:
      return {v1::RUNTIME_DEVICE,
              absl::StrCat("the board crashed running ", function, ": ", m, "; it was restarted")};
    case device::BoardFailure::kLinkLost:
      return {v1::SESSION_ERROR,
              absl::StrCat("the call went unanswered (", m, ") but the board is alive",
                           failure.damaged_packets > 0
                               ? absl::StrCat(": the link lost bytes (", failure.damaged_packets,
                                              " damaged packets)")
                               : std::string(" (it answered a new handshake at once): the call "
                                             "or its reply was lost on the link"),
                           "; the board was reconnected")};
    case device::BoardFailure::kHung:
      return {v1::RUN_TIMEOUT,
              absl::StrCat("no answer from the board within the trial's timeout of ",
                           absl::FormatDuration(timeout), " (", m, "); the board was reset")};
    case device::BoardFailure::kRebooted:
      return {v1::DEVICE_RESET, absl::StrCat("the board reset during ", function, ": ", m)};
    case device::BoardFailure::kLinkFailed:
      return {v1::SESSION_ERROR,
              absl::StrCat("the board's link or timing failed during the trial: ", m)};
    case device::BoardFailure::kCallFailed:
      return {v1::RUNTIME_DEVICE, m};
    case device::BoardFailure::kCancelled:
      return {v1::CANCELLED, absl::StrCat("cancelled during ", function, ": ", m)};
  }
  return {v1::UNKNOWN_ERROR, m};  // not a Kind
}

}  // namespace benchfarm::agent
