// KnobSpace: the schedule knobs of template operators as crt/ops/knobs.json describes them, and
// what farmctl needs around them:
//   - checking a knob value as a user writes it ("tile_m=8", "order=ikj"): a Trial carries each
//     value as text, exactly as knobs.json writes it (TemplateOperator.knobs);
//   - a full knob assignment -> its index in the op's config space, the way AutoTVM's ConfigSpace
//     numbers configs: mixed radix over the knobs in knobs.json order, the first knob varying
//     fastest (ConfigSpace.get(i): knob k takes values[i % len(values_k)], then i //= len).
//
// The sample operators' table is compiled in (SampleKnobs(), generated from crt/ops/knobs.json
// at build time), so an installed farmctl needs no data files.
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
  std::vector<Knob> knobs;  // in knobs.json order

  const Knob* Find(absl::string_view name) const;
  // The number of configs: the product of the knobs' value counts (1 for an op without knobs).
  int64_t SpaceSize() const;
};

using KnobTable = std::map<std::string, OpKnobs, std::less<>>;  // op name -> its knobs

// Parses a knobs.json document (schema_version 1). InvalidArgument naming what is malformed.
absl::StatusOr<KnobTable> ParseKnobsJson(absl::string_view json);

// The sample operators' knobs (add, matmul, conv2d), from the knobs.json compiled in.
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
