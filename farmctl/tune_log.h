// AutoTVM logs read back (farmctl/autotvm_record.h writes them): a record's config and result as
// a tune point — for `farmctl import-log` (records of the same run, restored into its state) and
// `farmctl tune --transfer` (records of the same operator and version on other shapes or board
// kinds, pre-training the learned model).
//
// Thread-safety: pure functions (LoadTransfer reads files).

#ifndef BENCHFARM_FARMCTL_TUNE_LOG_H_
#define BENCHFARM_FARMCTL_TUNE_LOG_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "farmctl/tune.h"
#include "google/protobuf/struct.pb.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

// The "input" every AutoTVM record of the run has: the one a trial of it would get, on boards
// whose core is `cpu` ("" for none or not known).
absl::StatusOr<google::protobuf::Value> RunInput(const v1::Operator& op, const TuneOptions& options,
                                                 absl::string_view cpu);

// What a line of an AutoTVM log is to a run: one of its points, a record of another run, or
// unreadable.
enum class LogLine { kPoint, kOtherRun, kMalformed };

// The line's point (into *p) if it is a record of the run whose records have `want_input`: the
// same task and arguments, and a target of the same board kind — the same -model, and the same
// core or none named on one side (SameBoardTarget), so a log written before targets named the
// board's core is still the run's.
LogLine ParseLogLine(const std::string& line, const v1::OpTemplate& spec,
                     const google::protobuf::Value& want_input, TunePoint* p);
// The same for a record already parsed.
LogLine ParseRecord(const google::protobuf::Struct& record, const v1::OpTemplate& spec,
                    const google::protobuf::Value& want_input, TunePoint* p);

// One run's results from a transfer log: configs and median costs (+inf for a failure).
using TransferSet = std::vector<std::pair<int64_t, double>>;

// The records of `options.transfer`'s logs that are of the run's operator and version (its
// AutoTVM task), grouped by run (their "input": board kind — the target's -model, whether or not
// it names the core — and shapes), for
// tuner::StrategyOptions::prior; says on `progress` what it took and skipped. Errors:
// NotFound "--transfer: cannot read PATH"; InvalidArgument "--transfer PATH: no records of TASK
// (it holds ...)" naming what the log holds instead (another operator or version, unreadable
// lines).
absl::StatusOr<std::vector<TransferSet>> LoadTransfer(const v1::Operator& op,
                                                      const TuneOptions& options,
                                                      std::ostream& progress);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_TUNE_LOG_H_
