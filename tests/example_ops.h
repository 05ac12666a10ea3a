// The example user operators of deploy/examples/ops (in the test's runfiles) as catalog entries,
// for tests that register them with a tracker.
#ifndef BENCHFARM_TESTS_EXAMPLE_OPS_H_
#define BENCHFARM_TESTS_EXAMPLE_OPS_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::testing {

// deploy/examples/ops/gemv (y = A x; knobs unroll 1|2|4|8, acc 1|2), its gemv.c passed through
// `edit` first when given (to plant a bug, say). The op.json and gemv.c must be in the runfiles
// (data: "//deploy:example_ops").
absl::StatusOr<v1::Operator> ExampleGemv(
    const std::function<std::string(std::string)>& edit = nullptr);

}  // namespace benchfarm::testing

#endif  // BENCHFARM_TESTS_EXAMPLE_OPS_H_
