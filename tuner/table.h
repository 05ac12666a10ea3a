// Ground-truth tables for replaying tuners offline: every config of a space with its cost
// (benchmarks/data/*.tsv, read by benchmarks/tuner_bench.cc).
//
// The file is text:
//   # any comment
//   # op matmul                          the operator's name
//   # knob tile_m 1 2 4 8 16 32          one line per knob, in spec order: its values
//   index<TAB>cost_s                     a header row
//   0<TAB>0.00123                        one row per config, every index 0..size-1 once, in
//   ...                                  any order; cost > 0, or "inf" for a failed config
// Configs are numbered as catalog::KnobsOfIndex numbers them (AutoTVM's ConfigSpace order).
// Written by `cycles_bench --table=FILE` (measured) and by WriteTable (SyntheticTable).
//
// Thread-safety: functions are pure.

#ifndef BENCHFARM_TUNER_TABLE_H_
#define BENCHFARM_TUNER_TABLE_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/knobs.pb.h"

namespace benchfarm::tuner {

struct Table {
  std::string name;  // the file's name without .tsv, e.g. "matmul-m3"
  v1::OpTemplate spec;
  std::vector<double> cost;  // by config index; kFailed (+inf) for a failed config
  double optimum = 0;        // the lowest cost
  int64_t best = -1;         // its config (the lowest index among equals)
};

// Configs a table may hold: a larger space is refused (its rows would not fit in memory well).
inline constexpr int64_t kMaxTableConfigs = 10'000'000;

// InvalidArgument naming `name` and the line: "matmul-m3: line 12: ..." for a malformed line, a
// missing or repeated index, an index outside the space, a cost that is not positive; "no
// successful config", "no knobs", the space larger than kMaxTableConfigs.
absl::StatusOr<Table> ParseTable(absl::string_view text, const std::string& name);
// NotFound "cannot open PATH", or ParseTable's errors; the name is the file's base name without
// ".tsv".
absl::StatusOr<Table> LoadTable(const std::string& path);
// The table as ParseTable reads it, `comment` lines first (each prefixed "# ").
void WriteTable(const Table& table, const std::vector<std::string>& comment, std::ostream& out);

// A synthetic space with a known interaction, from a formula (no measurement): knobs a, b (1..32),
// c (1..8) and order (p, q, r), 432 configs. On average over the space c=8 is the worst value of
// c, yet the optimum (a=16 b=16 c=8 order=r, cost 0.77; the next best is 3.9 % off) needs c=8
// with b >= 16, and order=r only pays with a >= 16: a model that adds up per-value averages is
// misled; one that sees interactions is not.
Table SyntheticTable();

}  // namespace benchfarm::tuner

#endif  // BENCHFARM_TUNER_TABLE_H_
