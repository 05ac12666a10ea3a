// AutoTVM tuning records from benchfarm results: one finished job -> one line of an AutoTVM log
// (tvm.autotvm.record, log format version 0.2, JSON protocol), so `autotvm.record.load_from_file`,
// `ApplyHistoryBest` and `pick_best` read benchfarm's measurements as if AutoTVM had taken them.
//
// The line has exactly the keys AutoTVM's record.encode writes, in its order:
//
//   {"input": [TARGET, TASK, ARGS, {}],
//    "config": {"index": INDEX, "code_hash": null, "entity": [[KNOB, "ot", VALUE], ...]},
//    "result": [COSTS, ERROR_NO, ALL_COST, TIMESTAMP],
//    "version": 0.2, "tvm_version": "0.18.0"}
//
// How a benchfarm job maps onto it:
//   TARGET    "c -keys=cpu -model=<board_kind>": the C source target microTVM used, with the board
//             kind as -model, so ApplyHistoryBest keeps a best config per board kind
//             (its best_by_model) as well as per target key.
//   TASK      "benchfarm/<op>@<version>" for a template operator (the catalog version the trial
//             ran: a changed kernel source is another task); "benchfarm/c_source/<entry_function>"
//             for a C-source trial.
//   ARGS      one ["TENSOR", [shape...], dtype] per argument, as autotvm.task.serialize_args
//             writes tensors (dtype "float32" when the trial leaves it empty); a template trial
//             that ran on its op's default shapes lists those. So variants, shapes and versions
//             never share a key.
//   INDEX     the config's index in the op's knob space (catalog/knob_space.h: knobs.json order,
//   first knob
//             fastest, like ConfigSpace); -1 for a config outside the space or a C-source trial.
//   entity    every knob of the op in knobs.json order, as an OtherOption ("ot") knob — what
//             cfg.define_knob produces — with its value (an integer, or a string such as "ikj");
//             knobs the trial left out appear with their default. An op farmctl does not know
//             lists the trial's knobs in name order.
//   COSTS     seconds per call, one per repeat; [1e9] when ERROR_NO is not 0 (MeasureResult's
//             convention for failed measurements).
//   ERROR_NO  Result.autotvm_error_no (MeasureErrorNo 0..8); a "successful" result without
//             costs is written as 8 (UNKNOWN_ERROR) with [1e9].
//   ALL_COST  seconds the trial took end to end: build + flash + handshake + measure stages.
//   TIMESTAMP Result.finished_at in Unix seconds (else the last attempt's end, else submitted_at).
//
// Thread-safety: pure functions.

#ifndef BENCHFARM_FARMCTL_AUTOTVM_RECORD_H_
#define BENCHFARM_FARMCTL_AUTOTVM_RECORD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "catalog/knob_space.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

// The tvm_version written into records: crt's names and wire format follow TVM v0.18.
inline constexpr char kAutoTvmTvmVersion[] = "0.18.0";

std::string AutoTvmTarget(absl::string_view board_kind);
std::string AutoTvmTaskName(const v1::OperatorSpec& op);

// One record line (no trailing newline) for a job. Meant for DONE jobs; any other job is
// written as a failed measurement with error_no 8.
std::string FormatAutoTvmRecord(const v1::Job& job, const catalog::KnobSpace& knobs);

// A double as the shortest JSON number that reads back to the same value ("0.0001", "1e+09");
// non-finite values, which JSON cannot carry, as 1e9.
std::string JsonDouble(double value);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_AUTOTVM_RECORD_H_
