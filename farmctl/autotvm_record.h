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
//   TARGET    "c -keys=arm_cpu,cpu -mcpu=<core> -model=<board_kind>" for a board kind with a core
//             (Board.cpu: the agent reads it from the board package's board.conf, e.g.
//             cortex-m3), as microTVM named a board (tvm.target.target.micro("stm32f746xx") is
//             "c -keys=arm_cpu,cpu -mcpu=cortex-m7 -model=stm32f746xx"); "c -keys=cpu
//             -model=<board_kind>" for one without (host-process), or whose core is not known (no
//             board of the kind registered; records written before targets named cores have this
//             form too). The board kind is -model, so ApplyHistoryBest keeps a best config per
//             board kind (its best_by_model), and the core is in the keys and -mcpu: logs from
//             different cores never share a key.
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

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "catalog/knob_space.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::farmctl {

// The tvm_version written into records: crt's names and wire format follow TVM v0.18.
inline constexpr char kAutoTvmTvmVersion[] = "0.18.0";

// The target of records measured on `board_kind`, whose boards' core is `cpu` ("" for none).
std::string AutoTvmTarget(absl::string_view board_kind, absl::string_view cpu);
std::string AutoTvmTaskName(const v1::OperatorSpec& op);

// What a target names: its -model (the board kind) and -mcpu (the core; "" when it names none).
struct AutoTvmTargetParts {
  std::string model;
  std::string cpu;
};
AutoTvmTargetParts ParseAutoTvmTarget(absl::string_view target);

// Whether records of the two targets are of one board kind: the same -model and the same core,
// or one of them names no core — a record written before targets named cores ("c -keys=cpu
// -model=K") is of kind K whatever its core, so old logs load (import-log, resume) as before.
bool SameBoardTarget(absl::string_view a, absl::string_view b);

// board kind -> the core of its boards (Board.cpu, "" for none); a kind not in it has no board
// registered.
using BoardCores = std::map<std::string, std::string>;

// The cores of the boards' kinds. A kind's serving boards decide (not OFFLINE: an offline board's
// core is what it registered last), else all its boards; boards that name no core (host-process,
// agents older than the field) do not count. FailedPrecondition naming the boards when a kind's
// boards name different cores (the tracker refuses such a registration among connected agents).
absl::StatusOr<BoardCores> CoresOfBoards(
    const google::protobuf::RepeatedPtrField<v1::Board>& boards);

// One record line (no trailing newline) for a job, `cpu` the core of its board kind's boards
// (BoardCores; "" for none or not known). Meant for DONE jobs; any other job is written as a
// failed measurement with error_no 8.
std::string FormatAutoTvmRecord(const v1::Job& job, const catalog::KnobSpace& knobs,
                                absl::string_view cpu);

// A double as the shortest JSON number that reads back to the same value ("0.0001", "1e+09");
// non-finite values, which JSON cannot carry, as 1e9.
std::string JsonDouble(double value);

}  // namespace benchfarm::farmctl

#endif  // BENCHFARM_FARMCTL_AUTOTVM_RECORD_H_
