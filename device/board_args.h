// BoardArgs: a measurement's arguments on the board — allocated by dtype, inputs filled from a
// seed, the output checked against the reference's — shared by the candidates of a batch.
//
// Where the data is made and checked:
// - on the board (benchfarm firmware: benchfarm.PrepareArgs/CheckCall/TimeArgs/ReleaseArgs,
//   crt/rpc/include/tvm/runtime/crt/board_data.h): one call allocates the set there, fills the
//   inputs and runs the reference once; each candidate's check is one call that poisons the
//   output, runs the candidate and compares, and its timing one more that names no tensor — a
//   few dozen bytes on the link instead of every input and two outputs;
// - on the host (firmware without those functions, e.g. TVM's own; or when asked, as the
//   benchmark's baseline): inputs made by the same generator (crt/data) and uploaded once per set;
//   each check uploads a poisoned output, runs the candidate, downloads its output, runs the
//   reference into it and downloads that, and compares on the host.
// Either way the same seed gives the same bytes and the same verdict.
//
// Thread-safety: none (an RpcClient is driven by one thread).

#ifndef BENCHFARM_DEVICE_BOARD_ARGS_H_
#define BENCHFARM_DEVICE_BOARD_ARGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "device/rpc_client.h"

namespace benchfarm::device {

// One argument of a measured function.
struct TensorArg {
  std::vector<int64_t> shape;
  DlDataType dtype;  // float32 unless set
  // Inputs: values drawn uniformly in [lo, hi] (crt/data: whole numbers for integer dtypes).
  double lo = -1, hi = 1;

  static TensorArg Float32(std::vector<int64_t> shape);
  int64_t Elements() const;
  int64_t Bytes() const;
  friend bool operator==(const TensorArg& a, const TensorArg& b);
};

// float32 arguments of these shapes, in [-1, 1].
std::vector<TensorArg> Float32Args(const std::vector<std::vector<int64_t>>& shapes);

// What a set of arguments is made for: everything that changes their contents.
struct ArgsSpec {
  std::vector<TensorArg> args;  // inputs..., output
  uint64_t seed = 1;
  bool check = false;     // the reference's output is kept for checks
  std::string reference;  // when check
  double atol = 0, rtol = 0;
  bool data_on_host = false;  // force the host path
  friend bool operator==(const ArgsSpec& a, const ArgsSpec& b);
};

// One candidate's output against the reference's.
struct CheckReport {
  uint64_t mismatches = 0;
  int64_t first_index = -1;
  double got = 0, want = 0;
  double max_abs_error = 0;
};

class BoardArgs {
 public:
  BoardArgs() = default;
  BoardArgs(const BoardArgs&) = delete;
  BoardArgs& operator=(const BoardArgs&) = delete;

  // Allocated and filled for `spec` (and the reference run when it checks), unless they already
  // are. On an error nothing is left half made.
  absl::Status Prepare(RpcClient& rpc, const ArgsSpec& spec, absl::Time deadline);
  // Poisons the output, runs `function` (a system-library handle) into it and compares it with
  // the reference's. Prepare with check first.
  absl::StatusOr<CheckReport> Check(RpcClient& rpc, uint64_t function, absl::Time deadline);
  // Frees them on the board.
  void Release(RpcClient& rpc, absl::Time deadline);
  // The board lost them (a reset, a new link): nothing to free.
  void Forget();

  // The function's arguments: inputs..., output (on_board: the set on the board, which
  // RpcClient::TimeFunction times without sending them).
  TimedArgs CallArgs() const;
  bool on_board() const { return on_board_; }

 private:
  absl::Status Fill(RpcClient& rpc, absl::Time deadline);
  absl::Status FillOnBoard(RpcClient& rpc, absl::Time deadline);
  absl::StatusOr<CheckReport> CheckOnHost(RpcClient& rpc, uint64_t function, absl::Time deadline);

  ArgsSpec spec_;
  std::vector<RemoteTensor> tensors_;  // inputs..., output, then the reference's on the board
  bool on_board_ = false;
  bool made_on_board_ = false;  // benchfarm.PrepareArgs made them: ReleaseArgs frees them
  std::string poison_;          // host path: the output's poison
};

// benchfarm.PrepareArgs's spec of these arguments (inputs..., output; board_data.h).
std::string EncodePrepareSpec(const std::vector<TensorArg>& args);

// A value of the dtype as its type prints it: whole numbers for integers, %g for floats.
std::string FormatValue(double value, DlDataType dtype);

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_BOARD_ARGS_H_
