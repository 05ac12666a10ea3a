// RpcClient: MinRPC calls to a board over a HostSession — global functions, packed calls,
// tensors on the board, the on-device time evaluator, DeviceInfo — each with a deadline and a
// typed absl::Status.
//
// Errors (besides those of HostSession: DeadlineExceeded, Aborted for a board reset,
// Unavailable for a vanished transport):
//   NotFound        GetGlobalFunc / GetFunction: the board has no such function.
//   Unknown         the board raised an Exception; the message is the board's text.
//   DataLoss        the reply was malformed.
//   InvalidArgument bad arguments from the caller (e.g. a payload that does not fit the tensor).
//   FailedPrecondition after a DeadlineExceeded: MinRPC replies carry no request id, so a late
//                   reply could be taken for the next request's. The client refuses further
//                   calls until Reconnect(), which starts a new session (the board then frees
//                   the tensors and time evaluators of the old one).
//
// Large transfers: benchfarm firmware (it has benchfarm.DeviceInfo) takes a CopyToRemote of any
// size in one message; other MinRPC firmware (TVM's CRT) gets TVM's chunking by
// tvm.rpc.server.GetCRTMaxPacketSize. Reads are split so no reply exceeds the session's
// max_message_bytes (or the board's packet size for TVM firmware).
//
// Thread-safety: none; one thread drives a client (and its session).

#ifndef BENCHFARM_DEVICE_RPC_CLIENT_H_
#define BENCHFARM_DEVICE_RPC_CLIENT_H_

#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "device/host_session.h"
#include "device/minrpc_codec.h"

namespace benchfarm::device {

// What benchfarm.DeviceInfo reports (crt/rpc/README.md).
struct DeviceInfo {
  std::string board_kind;
  std::string firmware_hash;
  std::string crt_version;
  int64_t max_packet_size = 0;
  double timer_resolution_s = 0;
  uint64_t cpu_hz = 0;
  // What one iteration of benchfarm.Calibrate's loop costs on this board (0: not reported, or
  // unknown): instructions (2 on Cortex-M and x86-64: what QEMU -icount charges) and core clock
  // cycles (board.conf CALIBRATION_CYCLES_PER_ITERATION on Cortex-M, nominal; 1 on x86-64).
  double calibration_instructions_per_iteration = 0;
  double calibration_cycles_per_iteration = 0;
  std::map<std::string, std::string> fields;  // every key=value line, including unknown keys
  // False for a board without benchfarm.DeviceInfo (TVM v0.18's own CRT, other MinRPC firmware):
  // it is a board all the same, but only max_packet_size is known (RpcClient::DescribeBoard);
  // kind, firmware hash, CRT version, timer and clock are not (empty / 0).
  bool benchfarm = true;
};

// What a board without benchfarm.DeviceInfo cannot say, as DescribeBoard lists it.
inline constexpr char kUnknownWithoutDeviceInfo[] =
    "board_kind, firmware_hash, crt_version, timer, timer_resolution_s, cpu_hz";

// Parses DeviceInfo's "key=value\n" text. InvalidArgument for a line without '=' or a bad number.
absl::StatusOr<DeviceInfo> ParseDeviceInfo(absl::string_view text);

// What benchfarm.TimerTotals reports (host-process boards): the board's timer summed over every
// TVMPlatformTimerStart/Stop interval since the previous call.
struct TimerTotals {
  double cpu_s = 0;       // what the timer measured: the board thread's CPU seconds
  double wall_s = 0;      // the same intervals on the wall clock (CLOCK_MONOTONIC)
  int64_t intervals = 0;  // completed Start/Stop intervals
};

// Parses "cpu_s=<g>\nwall_s=<g>\nintervals=<n>\n" (other keys ignored). InvalidArgument for a
// line without '=', a bad or negative number, or a missing key.
absl::StatusOr<TimerTotals> ParseTimerTotals(absl::string_view text);

// runtime.RPCTimeEvaluator's options (AutoTVM's names and defaults).
struct TimeEvaluatorOptions {
  int64_t number = 10;
  int64_t repeat = 1;
  int64_t min_repeat_ms = 0;
  int64_t limit_zero_time_iterations = 100;
  int64_t cooldown_interval_ms = 0;
  int64_t repeats_to_cooldown = 1;
};

// What a timed function is called with: these arguments (sent with the call), or on_board: the
// set benchfarm.PrepareArgs made on the board (device/board_args.h), which benchfarm.TimeArgs
// times without a tensor on the link (args then name the same tensors, for reading them).
struct TimedArgs {
  TimedArgs(std::vector<Arg> a) : args(std::move(a)) {}  // NOLINT: implicit, as the list it is
  TimedArgs(std::initializer_list<Arg> a) : args(a) {}
  std::vector<Arg> args;
  bool on_board = false;
};

class RpcClient {
 public:
  // `session` is borrowed, established (Connect) and outlives the client.
  explicit RpcClient(HostSession* session);

  // A new session after a timeout or a board reset; forgets cached handles. It returns once the
  // board answers a request on the new session: a board that was busy while the handshake was
  // retried answers every Init it finds queued, and may end up in a later session than the one
  // the host took; the handshake is then run again (until the deadline).
  absl::Status Reconnect(absl::Time deadline);

  // One request and its reply (the building block of everything below).
  absl::StatusOr<Reply> Request(const std::string& packet, absl::Time deadline);

  absl::StatusOr<uint64_t> GetGlobalFunc(absl::string_view name, absl::Time deadline);
  // GetGlobalFunc, remembered (also "not found") until Reconnect: for globals called often.
  absl::StatusOr<uint64_t> CachedGlobal(const std::string& name, absl::Time deadline);
  absl::StatusOr<Arg> CallFunc(uint64_t function, absl::Span<const Arg> args, absl::Time deadline);
  // The system library's module handle (runtime.SystemLib), fetched once.
  absl::StatusOr<uint64_t> SystemLib(absl::Time deadline);
  // A function of the system library.
  absl::StatusOr<uint64_t> GetFunction(absl::string_view name, absl::Time deadline);

  // Allocates a compact tensor on the board (DevAllocDataWithScope).
  absl::StatusOr<RemoteTensor> AllocTensor(std::vector<int64_t> shape, DlDataType dtype,
                                           absl::Time deadline);
  absl::Status FreeTensor(const RemoteTensor& tensor, absl::Time deadline);
  // Writes bytes into the tensor starting at its byte_offset (InvalidArgument past its end).
  absl::Status CopyToRemote(const RemoteTensor& tensor, absl::string_view bytes,
                            absl::Time deadline);
  // Reads nbytes from the tensor starting at its byte_offset.
  absl::StatusOr<std::string> CopyFromRemote(const RemoteTensor& tensor, uint64_t nbytes,
                                             absl::Time deadline);

  // Times system-library function `name` on the board with `args`: `repeat` costs in seconds
  // per call, measured by the board's own timer (runtime.RPCTimeEvaluator; benchfarm.TimeArgs for
  // arguments on the board).
  absl::StatusOr<std::vector<double>> TimeFunction(absl::string_view name, const TimedArgs& args,
                                                   const TimeEvaluatorOptions& options,
                                                   absl::Time deadline);

  // benchfarm.DeviceInfo. NotFound on firmware without it (TVM's CRT).
  absl::StatusOr<DeviceInfo> GetDeviceInfo(absl::Time deadline);
  // What the board says about itself: GetDeviceInfo, or on a board without benchfarm.DeviceInfo
  // (TVM's CRT) a DeviceInfo with benchfarm false, max_packet_size from GetMaxPacketSize (0 if
  // the board lacks that too) and fields saying so: "benchfarm" ("no: no global function
  // benchfarm.DeviceInfo ..."), "max_packet_size", "unknown" (kUnknownWithoutDeviceInfo).
  // Errors: GetDeviceInfo's but NotFound.
  absl::StatusOr<DeviceInfo> DescribeBoard(absl::Time deadline);
  // tvm.rpc.server.GetCRTMaxPacketSize.
  absl::StatusOr<int64_t> GetMaxPacketSize(absl::Time deadline);

  // benchfarm.Calibrate(iterations): the seconds the board's own timer measured for `iterations`
  // iterations of its calibration loop (DeviceInfo says what one iteration costs). NotFound on
  // firmware without it; InvalidArgument for iterations outside 1..2^40 (nothing is sent).
  absl::StatusOr<double> Calibrate(int64_t iterations, absl::Time deadline);
  // A board global that times its own work (benchfarm.Calibrate, benchfarm.Microbench) called with
  // integer arguments: the seconds it returns. NotFound when the firmware lacks it; DataLoss when
  // it returns something other than non-negative seconds.
  absl::StatusOr<double> TimedGlobal(const std::string& name, const std::vector<int64_t>& args,
                                     absl::Time deadline);
  // A board global without arguments that returns a string (benchfarm.Microbenchmarks).
  absl::StatusOr<std::string> StringGlobal(const std::string& name, absl::Time deadline);
  // benchfarm.TimerTotals: the board's timer totals since the previous call, which resets them.
  // NotFound on firmware without it (every board but the host-process board).
  absl::StatusOr<TimerTotals> GetTimerTotals(absl::Time deadline);

  // Sends Shutdown (no reply is expected).
  absl::Status Shutdown(absl::Time deadline);

 private:
  // Whether the board streams large copies (benchfarm firmware); decided once.
  absl::StatusOr<bool> Streams(absl::Time deadline);
  absl::StatusOr<uint64_t> ChunkBytes(int ndim, absl::Time deadline);
  HostSession* session_;
  bool out_of_step_ = false;
  std::optional<uint64_t> system_lib_;
  std::optional<bool> streams_;
  std::optional<int64_t> max_packet_size_;
  std::map<std::string, uint64_t> functions_;
  std::map<std::string, uint64_t> globals_;  // CachedGlobal; 0: the board has none
};

}  // namespace benchfarm::device

#endif  // BENCHFARM_DEVICE_RPC_CLIENT_H_
