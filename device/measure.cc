#include "device/measure.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "stats/round_interval.h"
#include "stats/summary.h"

namespace benchfarm::device {
namespace {

ArgsSpec SpecOf(const MeasureRequest& request) {
  ArgsSpec spec;
  spec.args = request.args;
  spec.seed = request.seed;
  spec.check = request.check;
  if (request.check) {
    spec.reference = request.reference;
    spec.atol = request.atol;
    spec.rtol = request.rtol;
  }
  spec.data_on_host = request.data_on_host;
  return spec;
}

void Record(const MeasureRequest& request, const CheckReport& report, MeasureOutcome* outcome) {
  outcome->checked = true;
  outcome->max_abs_error = report.max_abs_error;
  if (report.mismatches == 0) return;
  const DlDataType dtype = request.args.back().dtype;
  outcome->matches = false;
  outcome->mismatch = absl::StrCat(
      "output element ", report.first_index, " is ", FormatValue(report.got, dtype),
      ", the reference ", request.reference, " gives ", FormatValue(report.want, dtype), " (",
      report.mismatches, " of ", request.args.back().Elements(), " elements differ, max error ",
      FormatValue(report.max_abs_error, DlDataType{}), ")");
}

// The relative half-width the adaptive stop judges.
double AdaptiveHalfWidth(const MeasureRequest& request, const MeasureOutcome& outcome) {
  if (!request.rounds_in_interval) return stats::Summarize(outcome.costs).rel_half_width;
  return stats::IntervalOf(outcome.costs, outcome.round_sizes, outcome.batch_spread).rel_half_width;
}

}  // namespace

absl::Status MeasureRound(RpcClient& rpc, const MeasureRequest& request, int chunk,
                          MeasureOutcome* outcome, absl::Time deadline, BoardArgs* shared,
                          BoardTimer* timer) {
  if (outcome->done) return absl::OkStatus();
  BoardTimer own_timer;
  BoardTimer& clock = timer != nullptr ? *timer : own_timer;
  const bool adaptive = request.target_rel_ci > 0;
  const bool first = outcome->number == 0;
  ASSIGN_OR_RETURN(uint64_t fn, rpc.GetFunction(request.function, deadline));
  BoardArgs own;
  BoardArgs& board_args = shared != nullptr ? *shared : own;
  auto done_with_args = [&] {
    if (shared == nullptr) own.Release(rpc, deadline);
  };
  auto fail = [&](absl::Status s) {
    // After a timeout, a reset or an abandoned call the board's session is gone with its tensors.
    if (absl::IsDeadlineExceeded(s) || absl::IsAborted(s) || absl::IsUnavailable(s) ||
        absl::IsCancelled(s)) {
      board_args.Forget();
    } else {
      done_with_args();
    }
    return s;
  };
  if (absl::Status p = board_args.Prepare(rpc, SpecOf(request), deadline); !p.ok()) return fail(p);
  const TimedArgs args = board_args.CallArgs();

  if (first && request.check) {
    absl::StatusOr<CheckReport> report = board_args.Check(rpc, fn, deadline);
    if (!report.ok()) return fail(report.status());
    Record(request, *report, outcome);
    if (!outcome->matches && !request.time_on_mismatch) {
      done_with_args();
      outcome->done = true;
      return absl::OkStatus();
    }
  }

  TimeEvaluatorOptions options = request.options;
  if (first) {
    outcome->stop = adaptive ? "" : "fixed";
    outcome->number = std::max<int64_t>(1, options.number);
    if (adaptive) {
      // Calibrate: the board grows number from 1 until one repeat lasts min_repeat_ms; the cost
      // per call it reports gives the number for every later repeat (as pyperf calibrates loops).
      const int64_t min_ms = options.min_repeat_ms > 0 ? options.min_repeat_ms : 10;
      TimeEvaluatorOptions probe = options;
      probe.number = 1;
      probe.repeat = 1;
      probe.min_repeat_ms = min_ms;
      const absl::Time t0 = absl::Now();
      absl::StatusOr<TimedCosts> c =
          clock.TimeFunction(rpc, request.function, args, probe, deadline);
      outcome->timing_spent += absl::Now() - t0;
      if (!c.ok()) return fail(c.status());
      const double per_call = c->costs.empty() ? 0 : c->costs.front();
      const double wanted = per_call > 0 ? std::ceil(min_ms / 1e3 / per_call) : 1e6;
      outcome->number = static_cast<int64_t>(std::clamp(wanted, 1.0, double{int64_t{1} << 30}));
    }
  }
  const int limit =
      adaptive ? request.max_repeat : static_cast<int>(std::max<int64_t>(1, options.repeat));
  const int take = std::min(std::max(1, chunk), limit - static_cast<int>(outcome->costs.size()));
  if (take > 0) {
    if (adaptive) {
      options.number = outcome->number;
      options.min_repeat_ms = 0;
    }
    options.repeat = take;
    // Boards that time with a CPU clock also say how much wall time the timed calls took.
    (void)rpc.GetTimerTotals(deadline);  // resets the board's sums
    const absl::Time t0 = absl::Now();
    absl::StatusOr<TimedCosts> costs =
        clock.TimeFunction(rpc, request.function, args, options, deadline);
    outcome->timing_spent += absl::Now() - t0;
    if (!costs.ok()) return fail(costs.status());
    outcome->costs.insert(outcome->costs.end(), costs->costs.begin(), costs->costs.end());
    outcome->cycles.insert(outcome->cycles.end(), costs->cycles.begin(), costs->cycles.end());
    outcome->instructions.insert(outcome->instructions.end(), costs->instructions.begin(),
                                 costs->instructions.end());
    if (costs->number > 0) outcome->number = costs->number;
    outcome->rounds++;
    outcome->round_sizes.push_back(static_cast<int>(costs->costs.size()));
    absl::StatusOr<TimerTotals> totals = rpc.GetTimerTotals(deadline);
    if (totals.ok() && totals->cpu_s > 0) {
      outcome->timer_cpu_s += totals->cpu_s;
      outcome->timer_wall_s += totals->wall_s;
    }
  }
  done_with_args();
  const int n = static_cast<int>(outcome->costs.size());
  if (!adaptive) {
    outcome->done = n >= limit;
  } else if (n >= kAdaptiveMinRepeats &&
             AdaptiveHalfWidth(request, *outcome) <= request.target_rel_ci) {
    outcome->stop = "target";
    outcome->done = true;
  } else if (n >= limit) {
    outcome->stop = "max_repeat";
    outcome->done = true;
  } else if (outcome->timing_spent >= request.budget) {
    outcome->stop = "budget";
    outcome->done = true;
  }
  return absl::OkStatus();
}

absl::StatusOr<MeasureOutcome> Measure(RpcClient& rpc, const MeasureRequest& request,
                                       absl::Time deadline, BoardTimer* timer) {
  MeasureOutcome outcome;
  const bool adaptive = request.target_rel_ci > 0;
  const int chunk = adaptive ? kAdaptiveRoundSize : static_cast<int>(request.options.repeat);
  BoardArgs args;  // one upload for every round
  while (!outcome.done) {
    absl::Status s = MeasureRound(rpc, request, chunk, &outcome, deadline, &args, timer);
    if (!s.ok()) {
      args.Release(rpc, deadline);  // nothing left after a lost session (Forget)
      return s;
    }
  }
  args.Release(rpc, deadline);
  return outcome;
}

}  // namespace benchfarm::device
