#include "agent/measure_request.h"

#include <utility>

namespace benchfarm::agent {

device::MeasureRequest MeasureRequestFor(const v1::Trial& t, const catalog::TrialArgs& args) {
  device::MeasureRequest q;
  q.seed = t.seed() != 0 ? t.seed() : 1;
  q.check = t.check_outputs();
  for (const catalog::ArgData& a : args.args) {
    device::TensorArg arg;
    arg.shape = a.shape;
    arg.dtype = device::DlDataType{a.dtype.code, a.dtype.bits, a.dtype.lanes};
    arg.lo = a.lo;
    arg.hi = a.hi;
    q.args.push_back(std::move(arg));
  }
  q.atol = args.atol;
  q.rtol = args.rtol;
  const catalog::EffectiveMeasureOptions m = catalog::EffectiveMeasure(t.measure());
  q.options.number = m.number;
  q.options.repeat = m.repeat;
  q.options.min_repeat_ms = m.min_repeat_ms;
  q.options.cooldown_interval_ms = m.cooldown_ms;
  if (m.adaptive()) {
    q.target_rel_ci = m.target_rel_ci;
    q.budget = m.budget;
    q.max_repeat = m.max_repeat;
  }
  return q;
}

}  // namespace benchfarm::agent
