// The additive cost score of `farmctl tune --strategy model` (and the tuner's "additive"
// baseline): each knob value is scored by the mean log-cost of the measured configs that use it,
// a config by the sum of its values' scores. It cannot see interactions between knobs.
//
// Thread-safety: immutable after construction.

#ifndef BENCHFARM_TUNER_ADDITIVE_H_
#define BENCHFARM_TUNER_ADDITIVE_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "proto/knobs.pb.h"
#include "tuner/space.h"

namespace benchfarm::tuner {

class AdditiveScore {
 public:
  // `measured`: (config index, cost) in measurement order; a cost that is not finite is a failed
  // config (it counts as a little worse than the worst success).
  AdditiveScore(const v1::OpTemplate& spec,
                const std::vector<std::pair<int64_t, double>>& measured);

  // Lower is better. Sum over knobs of the value's mean log-cost relative to the overall mean,
  // minus an optimism bonus that shrinks as the value is measured more (so values seen rarely or
  // never get tried). 0 for every config while no measurement succeeded.
  double operator()(int64_t index) const;

 private:
  Space space_;
  std::vector<int> order_;  // knobs by name: the order the score adds them up in
  // Per knob, per value: the sum of log-costs and the count of the measured configs using it.
  std::vector<std::vector<std::pair<double, int>>> sums_;
  bool any_success_ = false;
  double mean_ = 0, spread_ = 0;
};

}  // namespace benchfarm::tuner

#endif  // BENCHFARM_TUNER_ADDITIVE_H_
