#include "tuner/space.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "catalog/knob_space.h"

namespace benchfarm::tuner {

Space::Space(v1::OpTemplate spec) : spec_(std::move(spec)) {
  for (const v1::Knob& knob : spec_.knobs()) {
    radix_.push_back(knob.values_size());
    stride_.push_back(size_);
    size_ *= knob.values_size();
    KnobFeatures f;
    f.first = num_features_;
    f.numeric = catalog::IsNumeric(knob);
    if (knob.values_size() <= 1) {
      // no feature: every config has the same value
    } else if (f.numeric) {
      f.log2 = true;
      for (const google::protobuf::Value& v : knob.values()) {
        f.values.push_back(std::strtod(catalog::ValueText(v).c_str(), nullptr));
        if (f.values.back() <= 0) f.log2 = false;
      }
      num_features_ += f.log2 ? 2 : 1;
    } else {
      num_features_ += knob.values_size();
    }
    features_.push_back(std::move(f));
  }
  std::map<std::string, std::string> by_name(spec_.features().begin(), spec_.features().end());
  for (const auto& [name, expr] : by_name) {
    absl::StatusOr<catalog::FeatureProduct> p = catalog::ParseFeature(spec_, expr);
    if (!p.ok()) continue;
    Derived d;
    d.product = *std::move(p);
    for (int k : d.product.knobs) {
      for (const google::protobuf::Value& v : spec_.knobs(k).values()) {
        if (std::strtod(catalog::ValueText(v).c_str(), nullptr) <= 0) d.log2 = false;
      }
    }
    num_features_ += d.log2 ? 2 : 1;
    derived_.push_back(std::move(d));
  }
}

int Space::ValueOf(int64_t index, int k) const {
  return static_cast<int>((index / stride_[k]) % radix_[k]);
}

int64_t Space::WithValue(int64_t index, int k, int v) const {
  return index + (v - ValueOf(index, k)) * stride_[k];
}

void Space::AppendFeatures(int64_t index, std::vector<float>* out) const {
  for (int k = 0; k < num_knobs(); ++k) {
    const KnobFeatures& f = features_[k];
    if (radix_[k] <= 1) continue;
    const int v = ValueOf(index, k);
    if (f.numeric) {
      out->push_back(static_cast<float>(f.values[v]));
      if (f.log2) out->push_back(static_cast<float>(std::log2(f.values[v])));
    } else {
      for (int i = 0; i < radix_[k]; ++i) out->push_back(i == v ? 1.0f : 0.0f);
    }
  }
  for (const Derived& d : derived_) {
    double value = d.product.constant;
    for (int k : d.product.knobs) value *= KnobValue(index, k);
    out->push_back(static_cast<float>(value));
    if (d.log2) out->push_back(static_cast<float>(std::log2(value)));
  }
}

double Space::KnobValue(int64_t index, int k) const {
  const KnobFeatures& f = features_[k];
  if (!f.values.empty()) return f.values[ValueOf(index, k)];
  return std::strtod(catalog::ValueText(spec_.knobs(k).values(ValueOf(index, k))).c_str(), nullptr);
}

std::string Space::Describe(int64_t index) const {
  std::string out;
  for (int k = 0; k < num_knobs(); ++k) {
    absl::StrAppend(&out, k > 0 ? " " : "", spec_.knobs(k).name(), "=",
                    catalog::ValueText(spec_.knobs(k).values(ValueOf(index, k))));
  }
  return out;
}

}  // namespace benchfarm::tuner
