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

// True for failures of the board, link or agent (FLASH_ERROR, SESSION_ERROR, DEVICE_RESET,
// BOARD_LOST, FIRMWARE_MISMATCH, RUN_TIMEOUT): a run of them quarantines a board. Trial faults
// (compile errors, wrong answers, invalid trials) and success are false.
bool IsInfrastructureError(v1::ErrorCode code);

}  // namespace benchfarm

#endif  // BENCHFARM_PROTO_ERROR_CODES_H_
