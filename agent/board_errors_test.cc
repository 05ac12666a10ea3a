// ErrorFor: each kind of BoardFailure gives its ErrorCode and its message, word for word.

#include "agent/board_errors.h"

#include <gtest/gtest.h>

#include <string>

#include "absl/time/time.h"
#include "device/board.h"

namespace benchfarm::agent {
namespace {

using device::BoardFailure;

TEST(ErrorFor, EachKindHasItsCodeAndMessage) {
  struct Case {
    BoardFailure failure;
    v1::ErrorCode code;
    std::string message;
  };
  const Case cases[] = {
      {{BoardFailure::kFlash, "openocd: no target"}, v1::FLASH_ERROR, "openocd: no target"},
      {{BoardFailure::kSession, "handshake: timed out"}, v1::SESSION_ERROR, "handshake: timed out"},
      {{BoardFailure::kFirmwareMismatch, "board b runs firmware x"},
       v1::FIRMWARE_MISMATCH,
       "board b runs firmware x"},
      {{BoardFailure::kKilledFromOutside, "killed by signal 9 (Killed)"},
       v1::BOARD_LOST,
       "the board process was killed by signal 9 (Killed) from outside (the OOM killer or an "
       "operator; not something fn does by itself) while it ran the trial; it was restarted"},
      {{BoardFailure::kCrashed, "killed by signal 11 (Segmentation fault)"},
       v1::RUNTIME_DEVICE,
       "the board crashed running fn: killed by signal 11 (Segmentation fault); it was "
       "restarted"},
      {{BoardFailure::kLinkLost, "no reply", 3},
       v1::SESSION_ERROR,
       "the call went unanswered (no reply) but the board is alive: the link lost bytes (3 "
       "damaged packets); the board was reconnected"},
      {{BoardFailure::kLinkLost, "no reply"},
       v1::SESSION_ERROR,
       "the call went unanswered (no reply) but the board is alive (it answered a new handshake "
       "at once): the call or its reply was lost on the link; the board was reconnected"},
      {{BoardFailure::kHung, "no reply"},
       v1::RUN_TIMEOUT,
       "no answer from the board within the trial's timeout of 1.5s (no reply); the board was "
       "reset"},
      {{BoardFailure::kRebooted, "fault: MemManage pc=0x1234"},
       v1::DEVICE_RESET,
       "the board reset during fn: fault: MemManage pc=0x1234"},
      {{BoardFailure::kLinkFailed, "link closed"},
       v1::SESSION_ERROR,
       "the board's link or timing failed during the trial: link closed"},
      {{BoardFailure::kCallFailed, "fn returned -1"}, v1::RUNTIME_DEVICE, "fn returned -1"},
      {{BoardFailure::kCancelled, "abandoned"}, v1::CANCELLED, "cancelled during fn: abandoned"},
  };
  for (const Case& c : cases) {
    const TrialError e = ErrorFor(c.failure, "fn", absl::Milliseconds(1500));
    EXPECT_EQ(e.code, c.code) << c.failure.message;
    EXPECT_EQ(e.message, c.message);
  }
}

}  // namespace
}  // namespace benchfarm::agent
