#include "agent/calibration.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "stats/cost_stats.h"

namespace benchfarm::agent {
namespace {

constexpr double kTargetSeconds = 2e-3;
constexpr int kSamples = 5;
constexpr int64_t kMaxIterations = int64_t{1} << 36;

}  // namespace

double Calibration::ResultHz() const {
  if (basis == "icount" || basis == "declared" || basis == "device" ||
      absl::StartsWith(basis, "cycle-model")) {
    return clock_hz;
  }
  return 0;
}

absl::StatusOr<Calibration> CalibrateBoard(device::RpcClient& rpc, device::BoardTimer& timer,
                                           const CalibrationInput& input, absl::Time deadline) {
  const device::DeviceInfo& info = *input.info;
  const v1::BoardConfig& config = *input.config;
  const bool icount = input.emulation == "qemu-icount";
  const bool model = input.emulation == "qemu-cycles";
  double per_iteration =
      icount ? info.calibration_instructions_per_iteration : info.calibration_cycles_per_iteration;
  if (per_iteration <= 0 && !model) {
    return absl::NotFoundError("the firmware does not say what its calibration kernel costs");
  }
  auto time_kernel = [&](int64_t iterations) -> absl::StatusOr<double> {
    ASSIGN_OR_RETURN(device::TimedInterval t,
                     timer.TimedCall(rpc, "benchfarm.Calibrate", {iterations}, deadline));
    return t.seconds;
  };
  Calibration c;
  c.iterations = 1 << 14;
  for (;;) {
    ASSIGN_OR_RETURN(double s, time_kernel(c.iterations));
    if (s >= kTargetSeconds / 2 || c.iterations >= kMaxIterations) break;
    const double grow = s > 0 ? kTargetSeconds / s : 64;
    c.iterations =
        std::min(kMaxIterations, static_cast<int64_t>(c.iterations * std::clamp(grow, 2.0, 64.0)));
  }
  std::vector<double> samples;
  for (int i = 0; i < kSamples; ++i) {
    ASSIGN_OR_RETURN(double s, time_kernel(c.iterations));
    samples.push_back(s);
  }
  std::sort(samples.begin(), samples.end());
  c.measured_s = samples[kSamples / 2];
  if (model && per_iteration <= 0) {
    // The package states no cycles for the loop: nothing to check it against.
    c.clock_hz = static_cast<double>(info.cpu_hz);
    c.basis = "cycle-model (unchecked: the package states no calibration cycles)";
    return c;
  }
  const double units = c.iterations * per_iteration;
  c.measured_hz = c.measured_s > 0 ? units / c.measured_s : 0;

  if (model) {
    c.clock_hz = static_cast<double>(info.cpu_hz);
    c.basis = "cycle-model";
  } else if (icount) {
    const int shift = config.qemu().icount_shift();
    c.clock_hz = 1e9 / std::ldexp(1.0, shift);
    c.basis = "icount";
  } else if (config.cpu_hz() > 0) {
    c.clock_hz = config.cpu_hz();
    c.basis = "declared";
  } else if (input.emulation == "qemu") {
    c.basis = "unchecked: QEMU without -icount runs in host time";
    return c;
  } else if (config.has_host_process()) {
    c.basis = "measured";  // reported, not checked
    return c;
  } else if (info.cpu_hz > 0) {
    c.clock_hz = static_cast<double>(info.cpu_hz);
    c.basis = "device";
  } else {
    c.basis = "unchecked: the board states no clock";
    return c;
  }
  c.expected_s = units / c.clock_hz;
  const double tolerance = config.calibration_tolerance() > 0 ? config.calibration_tolerance()
                                                              : kDefaultCalibrationTolerance;
  const double ratio = c.measured_s / c.expected_s;
  if (!(std::fabs(ratio - 1) <= tolerance)) {
    c.problem = absl::StrFormat(
        "calibration: %d iterations of the calibration kernel (%g %s each) took %s by the "
        "board's timer; its %s clock of %.6g MHz says %s (x%.3f, tolerance +-%g %%): the timer "
        "or the clock is wrong, so every cost it measures would be",
        c.iterations, per_iteration, icount ? "instructions" : "cycles",
        stats::SecondsText(c.measured_s), c.basis, c.clock_hz / 1e6,
        stats::SecondsText(c.expected_s), ratio, tolerance * 100);
  }
  return c;
}

}  // namespace benchfarm::agent
