// Timer calibration: the board times its calibration kernel (benchfarm.Calibrate, a loop of a
// known number of cycles — or, under QEMU's -icount, instructions — per iteration) and the agent
// compares the time with the board's clock. A timer that disagrees with the clock by more than
// the tolerance makes every cost of that board wrong by the same factor, so the board is taken
// out of service (CALIBRATION_ERROR, an infrastructure failure: the tracker quarantines it).
//
// The clock it is checked against, by board:
//   QEMU's cycle model    the package's clock (DeviceInfo cpu_hz) x the cycles per iteration the
//                         firmware states (board.conf CALIBRATION_CYCLES_PER_ITERATION, which the
//                         model's tables give too: cyclemodel/timing_test.cc); the kernel is timed
//                         by the model (device::BoardTimer), so this checks the plugin's intervals
//                         reach the agent whole; a package that states none is reported, unchecked
//   QEMU with -icount     1e9 / 2^icount_shift instructions per second (exact)
//   QEMU in host time     nothing to check (the emulated core runs as fast as the host lets it)
//   declared              BoardConfig.cpu_hz, when set (any board)
//   microcontroller       DeviceInfo.cpu_hz (its board.conf CPU_HZ) x cycles per iteration
//   host-process          nothing to check unless declared: the clock it measured is reported.
//                         (A host core's speed is not a constant: turbo, and a busy SMT sibling
//                         or shared core slowed the loop 1.6x per CPU-second here.)
//
// Thread-safety: none (drives one board's RpcClient).

#ifndef BENCHFARM_AGENT_CALIBRATION_H_
#define BENCHFARM_AGENT_CALIBRATION_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/board_timer.h"
#include "device/rpc_client.h"
#include "proto/config.pb.h"

namespace benchfarm::agent {

struct CalibrationInput {
  const device::DeviceInfo* info = nullptr;
  const v1::BoardConfig* config = nullptr;
  std::string emulation;  // device::Board::emulation(): "", "qemu", "qemu-icount", "qemu-cycles"
};

struct Calibration {
  int64_t iterations = 0;
  double measured_s = 0;   // the median of the samples
  double expected_s = 0;   // 0: nothing to compare with
  double measured_hz = 0;  // cycles (instructions under -icount) per second the timer implies
  double clock_hz = 0;     // what it was compared with (0: none)
  // "cycle-model", "icount", "declared", "device", "measured" (host), "unchecked: ..."
  std::string basis;
  std::string problem;  // empty: agrees within tolerance (or unchecked)

  // The board's clock as results should carry it (Result.cpu_hz): the clock it was checked
  // against and agreed with; 0 when not known. A host-process board's measured clock is not
  // reported with results (it moved from 1.8 to 3.6 GHz between calibrations on this VM, so
  // "cycles" from it would be noise); it is on /metrics.
  double ResultHz() const;
};

inline constexpr double kDefaultCalibrationTolerance = 0.05;

// Runs the kernel (iterations grown until one run lasts about 2 ms, then 5 runs) and compares.
// NotFound when the firmware has no calibration kernel (TVM's CRT, older images): nothing to
// check. Other errors are the RpcClient's.
// `timer` times the kernel (the board's own timer, or its cycle model).
absl::StatusOr<Calibration> CalibrateBoard(device::RpcClient& rpc, device::BoardTimer& timer,
                                           const CalibrationInput& input, absl::Time deadline);

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_CALIBRATION_H_
