// KnobSpace: the schedule knobs of template operators as crt/ops/knobs.json describes them, and
// what farmctl needs around them:
//   - checking a knob value as a user writes it ("tile_m=8", "order=ikj"): a Trial carries each
//     value as text, exactly as knobs.json writes it (TemplateOperator.knobs);
//   - a full knob assignment -> its index in the op's config space, the way AutoTVM's ConfigSpace
//     numbers configs: mixed radix over the knobs in knobs.json order, the first knob varying
//     fastest (ConfigSpace.get(i): knob k takes values[i % len(values_k)], then i //= len).
//
// An op's knobs come from its catalog entry (catalog/operator.h): the tracker's ListOperators /
// GetOperator for user operators, and the built-in ones compiled in (SampleKnobs()), so an
// installed farmctl needs no data files.
//
// Thread-safety: the types are plain values; SampleKnobs() is safe from any thread.

#ifndef BENCHFARM_FARMCTL_KNOB_SPACE_H_
#define BENCHFARM_FARMCTL_KNOB_SPACE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/map.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

struct Knob {
  std::string name;
  // The values as knobs.json lists them, written as text ("8", "ikj").
  std::vector<std::string> values;
  // Integer values; otherwise strings (C identifiers).
  bool numeric = true;
  // The value a trial that leaves the knob out gets (the header macro's default), as text.
  std::string default_value;
};

struct OpKnobs {
  std::string op;
  std::string version;      // the catalog version, when it came from the catalog
  v1::OpTemplate spec;      // the catalog entry's spec (args, dims: default shapes)
  std::vector<Knob> knobs;  // in knobs.json order

  const Knob* Find(absl::string_view name) const;
  // The number of configs: the product of the knobs' value counts (1 for an op without knobs).
  int64_t SpaceSize() const;
};

using KnobTable = std::map<std::string, OpKnobs, std::less<>>;  // op name -> its knobs

// One catalog entry's knobs.
OpKnobs OpKnobsFromOperator(const v1::Operator& op);
// A table of catalog entries (ListOperators' answer).
KnobTable KnobTableOf(const std::vector<v1::Operator>& ops);

// The built-in operators' knobs (add, matmul, conv2d), from the knobs.json compiled in.
const KnobTable& SampleKnobs();

// Checks that `text` is one of the knob's values. InvalidArgument "knob tile_m=3: not one of 1, 2,
// 4, ..." otherwise.
absl::Status CheckKnobValue(const Knob& knob, absl::string_view text);

// A knob value as JSON: an integer as a bare number (8), anything else as a string ("ikj").
std::string KnobValueJson(absl::string_view text);

// The config index of a trial's knobs in the op's space (see the file comment). Knobs the trial
// leaves out take their defaults. Returns -1 if a value is not in its knob's list or the trial
// names a knob the op does not have: such a trial lies outside the space.
int64_t ConfigIndex(const OpKnobs& op,
                    const google::protobuf::Map<std::string, std::string>& knobs);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_KNOB_SPACE_H_
