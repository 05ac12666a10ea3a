#include "device/measure.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "stats/summary.h"

namespace benchfarm::device {
namespace {

std::vector<float> ToFloats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

absl::StatusOr<bool> BoardArgs::Prepare(RpcClient& rpc, const MeasureRequest& request,
                                        absl::Time deadline) {
  if (!tensors_.empty() && shapes_ == request.shapes && seed_ == request.seed) return false;
  Release(rpc, deadline);
  shapes_ = request.shapes;
  seed_ = request.seed;
  std::mt19937_64 rng(request.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < request.shapes.size(); ++i) {
    absl::StatusOr<RemoteTensor> t = rpc.AllocTensor(request.shapes[i], DlDataType{}, deadline);
    if (!t.ok()) {
      Release(rpc, deadline);
      return t.status();
    }
    tensors_.push_back(*t);
    std::vector<float> values(t->NumBytes() / sizeof(float));
    // Inputs from the seed; the output poisoned, so a kernel that writes nothing is caught.
    for (float& v : values) v = i + 1 < request.shapes.size() ? dist(rng) : NAN;
    absl::Status s = rpc.CopyToRemote(
        *t, absl::string_view(reinterpret_cast<const char*>(values.data()), t->NumBytes()),
        deadline);
    if (!s.ok()) {
      Release(rpc, deadline);
      return s;
    }
  }
  return true;
}

absl::Status BoardArgs::PoisonOutput(RpcClient& rpc, absl::Time deadline) {
  if (tensors_.empty()) return absl::FailedPreconditionError("no arguments on the board");
  const RemoteTensor& out = tensors_.back();
  std::vector<float> nan(out.NumBytes() / sizeof(float), NAN);
  return rpc.CopyToRemote(
      out, absl::string_view(reinterpret_cast<const char*>(nan.data()), out.NumBytes()), deadline);
}

void BoardArgs::Release(RpcClient& rpc, absl::Time deadline) {
  for (const RemoteTensor& t : tensors_) (void)rpc.FreeTensor(t, deadline);
  Forget();
}

void BoardArgs::Forget() {
  tensors_.clear();
  shapes_.clear();
}

absl::Status MeasureRound(RpcClient& rpc, const MeasureRequest& request, int chunk,
                          MeasureOutcome* outcome, absl::Time deadline, BoardArgs* shared,
                          BoardTimer* timer) {
  if (outcome->done) return absl::OkStatus();
  BoardTimer own_timer;
  BoardTimer& clock = timer != nullptr ? *timer : own_timer;
  if (request.shapes.size() < 2) {
    return absl::InvalidArgumentError("an operator takes at least one input and an output");
  }
  const bool adaptive = request.target_rel_ci > 0;
  const bool first = outcome->number == 0;
  ASSIGN_OR_RETURN(uint64_t fn, rpc.GetFunction(request.function, deadline));
  BoardArgs own;
  BoardArgs& board_args = shared != nullptr ? *shared : own;
  auto done_with_args = [&] {
    if (shared == nullptr) own.Release(rpc, deadline);
  };
  auto fail = [&](absl::Status s) {
    // After a timeout or reset the board's session is gone with its tensors.
    if (absl::IsDeadlineExceeded(s) || absl::IsAborted(s) || absl::IsUnavailable(s)) {
      board_args.Forget();
    } else {
      done_with_args();
    }
    return s;
  };
  absl::StatusOr<bool> fresh = board_args.Prepare(rpc, request, deadline);
  if (!fresh.ok()) return fail(fresh.status());
  std::vector<Arg> args;
  for (const RemoteTensor& t : board_args.tensors()) args.push_back(Arg::Tensor(t));
  const std::vector<RemoteTensor>& tensors = board_args.tensors();

  if (first && request.check) {
    // A set shared with an earlier candidate holds its output: poison it again.
    if (!*fresh) {
      if (absl::Status p = board_args.PoisonOutput(rpc, deadline); !p.ok()) return fail(p);
    }
    absl::Status s = rpc.CallFunc(fn, args, deadline).status();
    if (!s.ok()) return fail(s);
    absl::StatusOr<std::string> got =
        rpc.CopyFromRemote(tensors.back(), tensors.back().NumBytes(), deadline);
    if (!got.ok()) return fail(got.status());
    absl::StatusOr<uint64_t> ref = rpc.GetFunction(request.reference, deadline);
    if (!ref.ok()) return fail(ref.status());
    s = rpc.CallFunc(*ref, args, deadline).status();
    if (!s.ok()) return fail(s);
    absl::StatusOr<std::string> want =
        rpc.CopyFromRemote(tensors.back(), tensors.back().NumBytes(), deadline);
    if (!want.ok()) return fail(want.status());
    std::vector<float> g = ToFloats(*got), w = ToFloats(*want);
    outcome->checked = true;
    for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
      double err = std::fabs(static_cast<double>(g[i]) - w[i]);
      if (std::isnan(err)) err = INFINITY;
      outcome->max_abs_error = std::max(outcome->max_abs_error, err);
      if (!(err <= 1e-4 * (1.0 + std::fabs(w[i]))) && outcome->matches) {
        outcome->matches = false;
        outcome->mismatch = absl::StrCat("output element ", i, " is ", g[i], ", the reference ",
                                         request.reference, " gives ", w[i]);
      }
    }
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
             stats::Summarize(outcome->costs).rel_half_width <= request.target_rel_ci) {
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
  const int chunk = adaptive ? kAdaptiveMinRepeats : static_cast<int>(request.options.repeat);
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
