// BoardTimer: how a board's timed calls become costs — the one place that knows.
//
//   BoardTimer (itself)  the board's own timer: what the firmware reports (a real Cortex-M's DWT
//                        cycles or SysTick, a host process's CPU clock, QEMU's virtual clock in
//                        host time or under -icount).
//   CycleModelTimer      an emulated Cortex-M whose QEMU runs benchfarm's cycle model (QemuFlasher
//                        kCycles): the plugin counts the modeled cycles of every interval the
//                        firmware's timer times (TVMPlatformTimerStart .. Stop), and a cost becomes
//                        those cycles at the package's clock (DeviceInfo cpu_hz), with the
//                        interval's instructions kept beside them.
//
// The cycle model's number of calls per repeat: the firmware's own timer runs on instructions
// (-icount), so the model sizes it instead — one call is timed first and `number` is raised until a
// repeat lasts min_repeat_ms of modeled time, as silicon would; then every repeat is one interval
// of `number` calls (min_repeat_ms 0 on the board) and the cooldown is skipped (an emulated chip
// does not heat). Each interval is checked against the board's own timing of the same repeat
// (instructions x 2^icount_shift ns): a stream out of step with the board's repeats is an error,
// never a wrong cost.
//
// Thread-safety: none (drives one board's RpcClient).

#ifndef BENCHFARM_DEVICE_BOARD_TIMER_H_
#define BENCHFARM_DEVICE_BOARD_TIMER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "device/cycle_stream.h"
#include "device/minrpc_codec.h"
#include "device/rpc_client.h"

namespace benchfarm::device {

struct TimedCosts {
  std::vector<double> costs;         // seconds per call, one per repeat
  int64_t number = 0;                // calls per repeat when the timer chose it (0: the board did)
  std::vector<double> cycles;        // cycle model: modeled cycles per call, one per repeat
  std::vector<double> instructions;  // cycle model: executed instructions per call, one per repeat
};

struct TimedInterval {
  double seconds = 0;
  double cycles = 0;        // cycle model only
  double instructions = 0;  // cycle model only
};

class BoardTimer {
 public:
  virtual ~BoardTimer() = default;

  // runtime.RPCTimeEvaluator on `function` of the system library with `args`. Errors: the
  // RpcClient's; the cycle model's (CycleStream::Take, and DataLoss for an interval that does not
  // match the board's own timing of its repeat).
  virtual absl::StatusOr<TimedCosts> TimeFunction(RpcClient& rpc, absl::string_view function,
                                                  const TimedArgs& args,
                                                  const TimeEvaluatorOptions& options,
                                                  absl::Time deadline);
  // A board global that times its own work between TVMPlatformTimerStart and Stop and returns
  // the seconds (benchfarm.Calibrate, benchfarm.Microbench), called with integer arguments.
  virtual absl::StatusOr<TimedInterval> TimedCall(RpcClient& rpc, const std::string& global,
                                                  const std::vector<int64_t>& args,
                                                  absl::Time deadline);
  // What results name as their timer: "cycle-model", or "" (the board's own, as DeviceInfo says).
  virtual std::string name() const { return ""; }
};

class CycleModelTimer final : public BoardTimer {
 public:
  // `stream`: the running QEMU's records (null while none runs); `cpu_hz`: the package's clock
  // (DeviceInfo cpu_hz; 0 while unknown); `icount_shift`: QEMU's; `board`: for messages.
  CycleModelTimer(std::function<CycleStream*()> stream, std::function<double()> cpu_hz,
                  int icount_shift, std::string board);

  absl::StatusOr<TimedCosts> TimeFunction(RpcClient& rpc, absl::string_view function,
                                          const TimedArgs& args,
                                          const TimeEvaluatorOptions& options,
                                          absl::Time deadline) override;
  absl::StatusOr<TimedInterval> TimedCall(RpcClient& rpc, const std::string& global,
                                          const std::vector<int64_t>& args,
                                          absl::Time deadline) override;
  std::string name() const override { return "cycle-model"; }

 private:
  absl::StatusOr<CycleStream*> Stream() const;
  absl::StatusOr<double> Hz() const;
  // FailedPrecondition unless `board_seconds` (the board's own timing of an interval) agrees with
  // the interval's instructions at 2^icount_shift ns each.
  absl::Status CheckInStep(const ModeledInterval& iv, double board_seconds, size_t repeat) const;

  std::function<CycleStream*()> stream_;
  std::function<double()> cpu_hz_;
  const int icount_shift_;
  const std::string board_;
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_BOARD_TIMER_H_
