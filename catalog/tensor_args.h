// What a trial's arguments hold: each one's shape, dtype and the range its values are drawn from,
// and the tolerance of the output check — resolved from the operator's manifest and the trial, by
// the trial contract (catalog/trial.h) for the tracker, the agent and farmctl.
//
// Dtypes are crt/data's (benchfarm/data.h): int8, uint8, int16, uint16, int32, uint32, float16,
// float32, float64. Ranges: [lo, hi], finite, lo <= hi, inside the dtype (whole numbers for
// integers); by default [-1, 1] for floats and the whole dtype for integers; inputs only.
// Tolerances: a float output matches within atol + rtol * |reference|, by default 1e-2 (float16),
// 1e-4 (float32), 1e-9 (float64), each for both; integer outputs must be equal, and giving them a
// tolerance is an error.
//
// Errors are InvalidArgument "FIELD: PROBLEM". Thread-safety: functions are pure.

#ifndef BENCHFARM_CATALOG_TENSOR_ARGS_H_
#define BENCHFARM_CATALOG_TENSOR_ARGS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "dlpack/dlpack.h"
#include "google/protobuf/repeated_field.h"

namespace benchfarm::catalog {

struct ArgData {
  std::vector<int64_t> shape;
  DLDataType dtype{kDLFloat, 32, 1};
  double lo = -1, hi = 1;  // inputs: values drawn from [lo, hi]
  int64_t Bytes() const;
};

struct TrialArgs {
  std::vector<ArgData> args;  // inputs..., output
  double atol = 0, rtol = 0;  // the output's check; 0 for integers (equal)

  std::vector<std::vector<int64_t>> Shapes() const;
  // Bytes the arguments take on a board; with `check` one more output (the reference's).
  int64_t Bytes(bool check) const;
};

// The dtype of a name ("" is float32). InvalidArgument "FIELD: \"int64\" is not a dtype benchfarm
// takes (int8, uint8, ...)".
absl::StatusOr<DLDataType> ParseDtype(absl::string_view field, absl::string_view name);
std::string DtypeName(DLDataType dtype);
bool IsFloat(DLDataType dtype);

// [lo, hi] of an input from `range` (empty: the dtype's default), checked against the dtype.
absl::Status ResolveRange(absl::string_view field, DLDataType dtype,
                          const google::protobuf::RepeatedField<double>& range, ArgData* arg);

// The output's tolerance: the given atol/rtol (unset: the dtype's default), checked (finite,
// >= 0; none for an integer output). Sets args->atol/rtol.
absl::Status ResolveTolerance(absl::string_view field, std::optional<double> atol,
                              std::optional<double> rtol, TrialArgs* args);

}  // namespace benchfarm::catalog

#endif  // BENCHFARM_CATALOG_TENSOR_ARGS_H_
