// BoardTimer, CycleModelTimer: see board_timer.h.

#include "device/board_timer.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

// How long after a call returned its intervals may still be on their way through the pipe (they
// were written before the reply left the board: only the reader thread's latency).
constexpr absl::Duration kIntervalGrace = absl::Seconds(2);
constexpr double kMaxNumber = double{int64_t{1} << 30};

}  // namespace

absl::StatusOr<TimedCosts> BoardTimer::TimeFunction(RpcClient& rpc, absl::string_view function,
                                                    const TimedArgs& args,
                                                    const TimeEvaluatorOptions& options,
                                                    absl::Time deadline) {
  TimedCosts out;
  ASSIGN_OR_RETURN(out.costs, rpc.TimeFunction(function, args, options, deadline));
  return out;
}

absl::StatusOr<TimedInterval> BoardTimer::TimedCall(RpcClient& rpc, const std::string& global,
                                                    const std::vector<int64_t>& args,
                                                    absl::Time deadline) {
  TimedInterval out;
  ASSIGN_OR_RETURN(out.seconds, rpc.TimedGlobal(global, args, deadline));
  return out;
}

CycleModelTimer::CycleModelTimer(std::function<CycleStream*()> stream,
                                 std::function<double()> cpu_hz, int icount_shift,
                                 std::string board)
    : stream_(std::move(stream)),
      cpu_hz_(std::move(cpu_hz)),
      icount_shift_(icount_shift),
      board_(std::move(board)) {}

absl::StatusOr<CycleStream*> CycleModelTimer::Stream() const {
  CycleStream* s = stream_ ? stream_() : nullptr;
  if (s == nullptr) {
    return absl::UnavailableError(
        absl::StrCat(board_, ": no cycle model runs (QEMU is not running with its plugin)"));
  }
  return s;
}

absl::StatusOr<double> CycleModelTimer::Hz() const {
  const double hz = cpu_hz_ ? cpu_hz_() : 0;
  if (!(hz > 0)) {
    return absl::FailedPreconditionError(absl::StrCat(
        board_, ": the board states no clock (DeviceInfo cpu_hz): modeled cycles cannot be timed"));
  }
  return hz;
}

absl::Status CycleModelTimer::CheckInStep(const ModeledInterval& iv, double board_seconds,
                                          size_t repeat) const {
  // The board's timer (SysTick under -icount) ticks at its clock; allow a few ticks and the timer
  // calls around the markers, plus 1 %.
  const double expected = static_cast<double>(iv.instructions) * std::ldexp(1e-9, icount_shift_);
  const double slack = 0.01 * expected + 2e-6 + std::ldexp(1e-9, icount_shift_) * 200;
  if (std::fabs(board_seconds - expected) <= slack) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat(board_, ": the cycle model's interval ", repeat + 1, " (", iv.instructions,
                   " instructions) is out of step with the board's own timing of it (",
                   board_seconds, " s, expected about ", expected,
                   " s): the plugin's stream and the board's repeats disagree"));
}

absl::StatusOr<TimedCosts> CycleModelTimer::TimeFunction(RpcClient& rpc, absl::string_view function,
                                                         const TimedArgs& args,
                                                         const TimeEvaluatorOptions& options,
                                                         absl::Time deadline) {
  ASSIGN_OR_RETURN(CycleStream * stream, Stream());
  ASSIGN_OR_RETURN(double hz, Hz());
  TimeEvaluatorOptions o = options;
  o.cooldown_interval_ms = 0;
  o.number = std::max<int64_t>(1, o.number);
  if (o.min_repeat_ms > 0) {
    // Size number from the model, as silicon would from its own clock: one call, timed.
    TimeEvaluatorOptions probe = o;
    probe.number = 1;
    probe.repeat = 1;
    probe.min_repeat_ms = 0;
    stream->Discard();
    ASSIGN_OR_RETURN(std::vector<double> one, rpc.TimeFunction(function, args, probe, deadline));
    ASSIGN_OR_RETURN(std::vector<ModeledInterval> iv,
                     stream->Take(1, std::min(deadline, absl::Now() + kIntervalGrace)));
    if (!one.empty()) RETURN_IF_ERROR(CheckInStep(iv[0], one[0], 0));
    const double per_call = static_cast<double>(iv[0].cycles) / hz;
    const double wanted = per_call > 0 ? std::ceil(o.min_repeat_ms / 1e3 / per_call) : kMaxNumber;
    o.number = std::max<int64_t>(o.number, static_cast<int64_t>(std::min(wanted, kMaxNumber)));
    o.min_repeat_ms = 0;
  }
  stream->Discard();
  ASSIGN_OR_RETURN(std::vector<double> board_costs, rpc.TimeFunction(function, args, o, deadline));
  ASSIGN_OR_RETURN(
      std::vector<ModeledInterval> ivs,
      stream->Take(board_costs.size(), std::min(deadline, absl::Now() + kIntervalGrace)));
  TimedCosts out;
  out.number = o.number;
  const double n = static_cast<double>(o.number);
  for (size_t i = 0; i < ivs.size(); ++i) {
    RETURN_IF_ERROR(CheckInStep(ivs[i], board_costs[i] * n, i));
    out.costs.push_back(static_cast<double>(ivs[i].cycles) / n / hz);
    out.cycles.push_back(static_cast<double>(ivs[i].cycles) / n);
    out.instructions.push_back(static_cast<double>(ivs[i].instructions) / n);
  }
  return out;
}

absl::StatusOr<TimedInterval> CycleModelTimer::TimedCall(RpcClient& rpc, const std::string& global,
                                                         const std::vector<int64_t>& args,
                                                         absl::Time deadline) {
  ASSIGN_OR_RETURN(CycleStream * stream, Stream());
  ASSIGN_OR_RETURN(double hz, Hz());
  stream->Discard();
  ASSIGN_OR_RETURN(double board_seconds, rpc.TimedGlobal(global, args, deadline));
  ASSIGN_OR_RETURN(std::vector<ModeledInterval> iv,
                   stream->Take(1, std::min(deadline, absl::Now() + kIntervalGrace)));
  RETURN_IF_ERROR(CheckInStep(iv[0], board_seconds, 0));
  TimedInterval out;
  out.cycles = static_cast<double>(iv[0].cycles);
  out.instructions = static_cast<double>(iv[0].instructions);
  out.seconds = out.cycles / hz;
  return out;
}

}  // namespace benchfarm::device
