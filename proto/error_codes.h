// ErrorCode helpers: every benchfarm error code exported as one of AutoTVM's MeasureErrorNo
// values (0..8), and whether a code blames the infrastructure (board, link, agent) rather than
// the trial — the tracker quarantines boards on runs of those.
#ifndef BENCHFARM_PROTO_ERROR_CODES_H_
#define BENCHFARM_PROTO_ERROR_CODES_H_

#include "proto/benchfarm.pb.h"

namespace benchfarm {

// AutoTVM's MeasureErrorNo for `code`: 0..8 map to themselves; native codes as documented in
// benchfarm.proto; unknown values give UNKNOWN_ERROR (8).
int ToAutoTvmErrorNo(v1::ErrorCode code);

// True for failures of the board, link or agent (FLASH_ERROR, SESSION_ERROR, BOARD_LOST,
// FIRMWARE_MISMATCH, CALIBRATION_ERROR): the tracker retries the job, and a run of them quarantines
// a board. Trial faults are false: compile errors, wrong answers, invalid trials, a trial that
// crashes the board (RUNTIME_DEVICE), makes a microcontroller fault and reset (DEVICE_RESET, the
// fault named) or does not finish in its timeout (RUN_TIMEOUT; the agent resets the board) — as in
// AutoTVM, those are the trial's result — and success. A board that resets by itself fails its next
// handshakes (SESSION_ERROR) and so is quarantined.
bool IsInfrastructureError(v1::ErrorCode code);

}  // namespace benchfarm

#endif  // BENCHFARM_PROTO_ERROR_CODES_H_
