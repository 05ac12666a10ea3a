// A tuning space: one operator's knobs (catalog::KnobSpace's model, v1::OpTemplate.knobs) with
// configs numbered as AutoTVM numbers them (catalog::KnobsOfIndex), and each config's features
// for a learned cost model:
//   an integer knob   two features: its value and log2 of its value (log2 only when every value
//                     of the knob is positive)
//   a string knob     one-hot: one feature per value, 1 for the config's value
//   a derived feature (OpTemplate.features, catalog::ParseFeature: a product of integer knobs)
//                     its value and log2 of it (when every factor's values are positive), in
//                     the features' name order after the knobs'
// A knob with a single value gives no feature; a derived feature that does not parse gives none
// (catalog::CheckFeatures refuses it at the door).
//
// Thread-safety: immutable after construction.

#ifndef BENCHFARM_TUNER_SPACE_H_
#define BENCHFARM_TUNER_SPACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/knob_space.h"
#include "proto/knobs.pb.h"

namespace benchfarm::tuner {

class Space {
 public:
  explicit Space(v1::OpTemplate spec);

  const v1::OpTemplate& spec() const { return spec_; }
  // The number of configs (catalog::SpaceSize).
  int64_t size() const { return size_; }
  int num_knobs() const { return static_cast<int>(radix_.size()); }
  // The number of values of knob k.
  int num_values(int k) const { return radix_[k]; }
  // The position of config `index`'s value of knob k among the knob's values.
  int ValueOf(int64_t index, int k) const;
  // Config `index` with knob k's value replaced by value number `v`.
  int64_t WithValue(int64_t index, int k, int v) const;

  int num_features() const { return num_features_; }
  // The features of config `index` appended to `out` (num_features of them).
  void AppendFeatures(int64_t index, std::vector<float>* out) const;

  // An integer knob k's value in config `index`.
  double KnobValue(int64_t index, int k) const;

  // "tile_m=8 tile_n=4 order=ikj".
  std::string Describe(int64_t index) const;

 private:
  struct KnobFeatures {
    bool numeric = false;
    bool log2 = false;
    std::vector<double> values;  // numeric knobs
    int first = 0;               // index of the knob's first feature
  };
  v1::OpTemplate spec_;
  std::vector<int> radix_;
  std::vector<int64_t> stride_;
  std::vector<KnobFeatures> features_;
  struct Derived {
    catalog::FeatureProduct product;
    bool log2 = true;
  };
  std::vector<Derived> derived_;
  int64_t size_ = 1;
  int num_features_ = 0;
};

}  // namespace benchfarm::tuner

#endif  // BENCHFARM_TUNER_SPACE_H_
