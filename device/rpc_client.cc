// RpcClient: see rpc_client.h.
#include "device/rpc_client.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"

namespace benchfarm::device {

absl::StatusOr<DeviceInfo> ParseDeviceInfo(absl::string_view text) {
  DeviceInfo info;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("DeviceInfo: line without '=': ", line));
    }
    info.fields[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  auto field = [&](const char* key) -> std::string {
    auto it = info.fields.find(key);
    return it == info.fields.end() ? "" : it->second;
  };
  info.board_kind = field("board_kind");
  info.firmware_hash = field("firmware_hash");
  info.crt_version = field("crt_version");
  if (!field("max_packet_size").empty() &&
      !absl::SimpleAtoi(field("max_packet_size"), &info.max_packet_size)) {
    return absl::InvalidArgumentError("DeviceInfo: max_packet_size is not a number");
  }
  if (!field("timer_resolution_s").empty() &&
      !absl::SimpleAtod(field("timer_resolution_s"), &info.timer_resolution_s)) {
    return absl::InvalidArgumentError("DeviceInfo: timer_resolution_s is not a number");
  }
  if (!field("cpu_hz").empty() && !absl::SimpleAtoi(field("cpu_hz"), &info.cpu_hz)) {
    return absl::InvalidArgumentError("DeviceInfo: cpu_hz is not a number");
  }
  for (auto [key, out] :
       {std::pair<const char*, double*>{"calibration_instructions_per_iteration",
                                        &info.calibration_instructions_per_iteration},
        {"calibration_cycles_per_iteration", &info.calibration_cycles_per_iteration}}) {
    const std::string value = field(key);
    if (!value.empty() && (!absl::SimpleAtod(value, out) || !std::isfinite(*out) || *out < 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("DeviceInfo: ", key, " is not a non-negative number: ", value));
    }
  }
  return info;
}

absl::StatusOr<TimerTotals> ParseTimerTotals(absl::string_view text) {
  TimerTotals totals;
  bool have_cpu = false, have_wall = false, have_intervals = false;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat("TimerTotals: line without '=': ", line));
    }
    absl::string_view key = line.substr(0, eq), value = line.substr(eq + 1);
    bool ok = true;
    if (key == "cpu_s") {
      ok = absl::SimpleAtod(value, &totals.cpu_s) && std::isfinite(totals.cpu_s) &&
           totals.cpu_s >= 0;
      have_cpu = true;
    } else if (key == "wall_s") {
      ok = absl::SimpleAtod(value, &totals.wall_s) && std::isfinite(totals.wall_s) &&
           totals.wall_s >= 0;
      have_wall = true;
    } else if (key == "intervals") {
      ok = absl::SimpleAtoi(value, &totals.intervals) && totals.intervals >= 0;
      have_intervals = true;
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("TimerTotals: ", key, " is not a non-negative number: ", value));
    }
  }
  if (!have_cpu || !have_wall || !have_intervals) {
    return absl::InvalidArgumentError(
        absl::StrCat("TimerTotals: cpu_s, wall_s and intervals are required, got: ", text));
  }
  return totals;
}

RpcClient::RpcClient(HostSession* session) : session_(session) {}

absl::Status RpcClient::Reconnect(absl::Time deadline) {
  constexpr absl::Duration kProbe = absl::Seconds(2);
  for (;;) {
    system_lib_.reset();
    functions_.clear();
    globals_.clear();
    RETURN_IF_ERROR(session_->Connect(deadline));
    out_of_step_ = false;
    absl::StatusOr<uint64_t> probe =
        GetGlobalFunc("runtime.SystemLib", std::min(deadline, absl::Now() + kProbe));
    // Any answer (a handle, or "no such function" from firmware without it) proves the session.
    if (probe.ok() || absl::IsNotFound(probe.status()) || absl::IsUnknown(probe.status())) {
      system_lib_.reset();
      return absl::OkStatus();
    }
    if (!absl::IsDeadlineExceeded(probe.status()) || absl::Now() >= deadline) return probe.status();
  }
}

absl::StatusOr<Reply> RpcClient::Request(const std::string& packet, absl::Time deadline) {
  if (out_of_step_) {
    return absl::FailedPreconditionError(absl::StrCat(
        session_->options().board_id,
        ": an earlier request timed out and its reply may still come; Reconnect() first"));
  }
  session_->DiscardPending();
  RETURN_IF_ERROR(session_->Send(packet, deadline));
  absl::StatusOr<std::string> body_or = session_->Receive(deadline);
  if (absl::IsDeadlineExceeded(body_or.status())) out_of_step_ = true;
  if (!body_or.ok()) return body_or.status();
  std::string body = *std::move(body_or);
  absl::StatusOr<Reply> reply = DecodeReply(body);
  if (!reply.ok()) {
    return absl::DataLossError(absl::StrCat(session_->options().board_id,
                                            ": malformed reply: ", reply.status().message()));
  }
  return reply;
}

namespace {

// A device Exception as a status that names the board.
absl::Status FromReply(const absl::Status& status, const std::string& board) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(board, ": ", status.message()));
}

}  // namespace

absl::StatusOr<uint64_t> RpcClient::GetGlobalFunc(absl::string_view name, absl::Time deadline) {
  ASSIGN_OR_RETURN(Reply reply, Request(EncodeGetGlobalFunc(name), deadline));
  absl::StatusOr<Arg> value = DecodeReturnValue(reply);
  if (!value.ok()) return FromReply(value.status(), session_->options().board_id);
  if (value->handle() == 0) {
    return absl::NotFoundError(
        absl::StrCat(session_->options().board_id, ": no global function ", name));
  }
  return value->handle();
}

absl::StatusOr<Arg> RpcClient::CallFunc(uint64_t function, absl::Span<const Arg> args,
                                        absl::Time deadline) {
  ASSIGN_OR_RETURN(Reply reply, Request(EncodeCallFunc(function, args), deadline));
  absl::StatusOr<Arg> value = DecodeCallResult(reply);
  if (!value.ok()) return FromReply(value.status(), session_->options().board_id);
  return value;
}

absl::StatusOr<uint64_t> RpcClient::SystemLib(absl::Time deadline) {
  if (system_lib_.has_value()) return *system_lib_;
  ASSIGN_OR_RETURN(uint64_t fn, GetGlobalFunc("runtime.SystemLib", deadline));
  ASSIGN_OR_RETURN(Arg lib, CallFunc(fn, {}, deadline));
  if (lib.type_code() != TypeCode::kModuleHandle) {
    return absl::DataLossError("runtime.SystemLib did not return a module");
  }
  system_lib_ = lib.handle();
  return *system_lib_;
}

absl::StatusOr<uint64_t> RpcClient::GetFunction(absl::string_view name, absl::Time deadline) {
  auto it = functions_.find(std::string(name));
  if (it != functions_.end()) return it->second;
  ASSIGN_OR_RETURN(uint64_t lib, SystemLib(deadline));
  ASSIGN_OR_RETURN(uint64_t get, GetGlobalFunc("tvm.rpc.server.ModuleGetFunction", deadline));
  ASSIGN_OR_RETURN(
      Arg f, CallFunc(get, {Arg::ModuleHandle(lib), Arg::Str(name), Arg::Bool(true)}, deadline));
  if (f.type_code() != TypeCode::kPackedFuncHandle) {
    return absl::NotFoundError(
        absl::StrCat(session_->options().board_id, ": the system library has no function ", name));
  }
  functions_[std::string(name)] = f.handle();
  return f.handle();
}

absl::StatusOr<RemoteTensor> RpcClient::AllocTensor(std::vector<int64_t> shape, DlDataType dtype,
                                                    absl::Time deadline) {
  RemoteTensor t;
  t.shape = std::move(shape);
  t.dtype_code = dtype.code;
  t.dtype_bits = dtype.bits;
  t.dtype_lanes = dtype.lanes;
  ASSIGN_OR_RETURN(Reply reply, Request(EncodeDevAllocDataWithScope(t), deadline));
  absl::StatusOr<Arg> value = DecodeReturnValue(reply);
  if (!value.ok()) return FromReply(value.status(), session_->options().board_id);
  t.data = value->handle();
  return t;
}

absl::Status RpcClient::FreeTensor(const RemoteTensor& tensor, absl::Time deadline) {
  ASSIGN_OR_RETURN(
      Reply reply,
      Request(EncodeDevFreeData(DlDevice{tensor.device_type, tensor.device_id}, tensor.data),
              deadline));
  return FromReply(DecodeReturnValue(reply).status(), session_->options().board_id);
}

absl::StatusOr<bool> RpcClient::Streams(absl::Time deadline) {
  if (streams_.has_value()) return *streams_;
  absl::StatusOr<uint64_t> info = GetGlobalFunc("benchfarm.DeviceInfo", deadline);
  if (!info.ok() && !absl::IsNotFound(info.status())) return info.status();
  streams_ = info.ok();
  return *streams_;
}

absl::StatusOr<uint64_t> RpcClient::ChunkBytes(int ndim, absl::Time deadline) {
  ASSIGN_OR_RETURN(bool streams, Streams(deadline));
  uint64_t session_limit = session_->options().max_message_bytes - 64;
  if (streams) return session_limit;
  ASSIGN_OR_RETURN(int64_t max, GetMaxPacketSize(deadline));
  int64_t block = max - static_cast<int64_t>(CopyToRemoteOverhead(ndim));
  if (block <= 0) return absl::DataLossError("board's max packet size is too small");
  return std::min<uint64_t>(static_cast<uint64_t>(block), session_limit);
}

absl::Status RpcClient::CopyToRemote(const RemoteTensor& tensor, absl::string_view bytes,
                                     absl::Time deadline) {
  ASSIGN_OR_RETURN(bool streams, Streams(deadline));
  uint64_t block = bytes.size();
  if (!streams) {
    ASSIGN_OR_RETURN(block, ChunkBytes(static_cast<int>(tensor.shape.size()), deadline));
  }
  size_t offset = 0;
  do {
    size_t n = std::min<uint64_t>(block, bytes.size() - offset);
    RemoteTensor chunk = tensor;
    chunk.byte_offset = tensor.byte_offset + offset;
    ASSIGN_OR_RETURN(Reply reply,
                     Request(EncodeCopyToRemote(chunk, bytes.substr(offset, n)), deadline));
    RETURN_IF_ERROR(FromReply(DecodeReturnValue(reply).status(), session_->options().board_id));
    offset += n;
  } while (offset < bytes.size());
  return absl::OkStatus();
}

absl::StatusOr<std::string> RpcClient::CopyFromRemote(const RemoteTensor& tensor, uint64_t nbytes,
                                                      absl::Time deadline) {
  ASSIGN_OR_RETURN(uint64_t block, ChunkBytes(static_cast<int>(tensor.shape.size()), deadline));
  std::string out;
  out.reserve(nbytes);
  uint64_t offset = 0;
  do {
    uint64_t n = std::min(block, nbytes - offset);
    RemoteTensor chunk = tensor;
    chunk.byte_offset = tensor.byte_offset + offset;
    ASSIGN_OR_RETURN(Reply reply, Request(EncodeCopyFromRemote(chunk, n), deadline));
    if (reply.kind == Reply::Kind::kException) {
      return absl::UnknownError(absl::StrCat(session_->options().board_id, ": ", reply.message));
    }
    if (reply.kind != Reply::Kind::kCopyAck || reply.data.size() != n) {
      return absl::DataLossError(absl::StrCat(session_->options().board_id,
                                              ": CopyFromRemote reply of the wrong kind or size"));
    }
    out += reply.data;
    offset += n;
  } while (offset < nbytes);
  return out;
}

absl::StatusOr<std::vector<double>> RpcClient::TimeFunction(absl::string_view name,
                                                            const TimedArgs& args,
                                                            const TimeEvaluatorOptions& o,
                                                            absl::Time deadline) {
  absl::StatusOr<Arg> result;
  if (args.on_board) {
    ASSIGN_OR_RETURN(uint64_t time_args, CachedGlobal("benchfarm.TimeArgs", deadline));
    result = CallFunc(time_args,
                      {Arg::Str(name), Arg::Int(o.number), Arg::Int(o.repeat),
                       Arg::Int(o.min_repeat_ms), Arg::Int(o.limit_zero_time_iterations),
                       Arg::Int(o.cooldown_interval_ms), Arg::Int(o.repeats_to_cooldown)},
                      deadline);
  } else {
    ASSIGN_OR_RETURN(uint64_t lib, SystemLib(deadline));
    ASSIGN_OR_RETURN(uint64_t create, CachedGlobal("runtime.RPCTimeEvaluator", deadline));
    ASSIGN_OR_RETURN(
        Arg evaluator,
        CallFunc(create,
                 {Arg::ModuleHandle(lib), Arg::Str(name), Arg::Int(1), Arg::Int(0),
                  Arg::Int(o.number), Arg::Int(o.repeat), Arg::Int(o.min_repeat_ms),
                  Arg::Int(o.limit_zero_time_iterations), Arg::Int(o.cooldown_interval_ms),
                  Arg::Int(o.repeats_to_cooldown), Arg::Int(0), Arg::Str("")},
                 deadline));
    if (evaluator.type_code() != TypeCode::kPackedFuncHandle) {
      return absl::DataLossError("runtime.RPCTimeEvaluator did not return a function");
    }
    result = CallFunc(evaluator.handle(), args.args, deadline);
    // Free the evaluator whatever happened (benchfarm firmware retires it; TVM's ignores this).
    if (!absl::IsDeadlineExceeded(result.status()) && !absl::IsAborted(result.status()) &&
        !absl::IsUnavailable(result.status())) {
      (void)Request(EncodeFreeHandle(evaluator.handle(), TypeCode::kPackedFuncHandle), deadline);
    }
  }
  if (!result.ok()) return result.status();
  absl::StatusOr<std::vector<double>> costs = DecodeTimeEvaluatorResult(*result);
  if (!costs.ok()) return absl::DataLossError(costs.status().message());
  return costs;
}

absl::StatusOr<DeviceInfo> RpcClient::GetDeviceInfo(absl::Time deadline) {
  ASSIGN_OR_RETURN(uint64_t fn, GetGlobalFunc("benchfarm.DeviceInfo", deadline));
  ASSIGN_OR_RETURN(Arg text, CallFunc(fn, {}, deadline));
  if (text.type_code() != TypeCode::kStr) {
    return absl::DataLossError("benchfarm.DeviceInfo did not return a string");
  }
  return ParseDeviceInfo(text.str());
}

absl::StatusOr<DeviceInfo> RpcClient::DescribeBoard(absl::Time deadline) {
  absl::StatusOr<DeviceInfo> info = GetDeviceInfo(deadline);
  if (!absl::IsNotFound(info.status())) return info;
  // A board that speaks TVM's protocol without benchfarm's extras: a board, its details unknown.
  DeviceInfo stock;
  stock.benchfarm = false;
  stock.fields["benchfarm"] =
      "no (no global function benchfarm.DeviceInfo: TVM's own CRT or other MinRPC firmware, "
      "without benchfarm's extras)";
  absl::StatusOr<int64_t> packet = GetMaxPacketSize(deadline);
  if (!packet.ok() && !absl::IsNotFound(packet.status())) return packet.status();
  stock.max_packet_size = packet.ok() ? *packet : 0;
  stock.fields["max_packet_size"] = packet.ok() ? absl::StrCat(*packet) : "unknown";
  stock.fields["unknown"] = kUnknownWithoutDeviceInfo;
  return stock;
}

absl::StatusOr<int64_t> RpcClient::GetMaxPacketSize(absl::Time deadline) {
  if (max_packet_size_.has_value()) return *max_packet_size_;
  ASSIGN_OR_RETURN(uint64_t fn, GetGlobalFunc("tvm.rpc.server.GetCRTMaxPacketSize", deadline));
  ASSIGN_OR_RETURN(Arg size, CallFunc(fn, {}, deadline));
  if (size.type_code() != TypeCode::kInt) {
    return absl::DataLossError("GetCRTMaxPacketSize did not return an integer");
  }
  max_packet_size_ = size.int_value();
  return *max_packet_size_;
}

absl::StatusOr<uint64_t> RpcClient::CachedGlobal(const std::string& name, absl::Time deadline) {
  auto it = globals_.find(name);
  if (it == globals_.end()) {
    absl::StatusOr<uint64_t> fn = GetGlobalFunc(name, deadline);
    if (!fn.ok() && !absl::IsNotFound(fn.status())) return fn.status();
    it = globals_.emplace(name, fn.ok() ? *fn : 0).first;
  }
  if (it->second == 0) {
    return absl::NotFoundError(
        absl::StrCat(session_->options().board_id, ": no global function ", name));
  }
  return it->second;
}

absl::StatusOr<double> RpcClient::Calibrate(int64_t iterations, absl::Time deadline) {
  constexpr int64_t kMaxIterations = int64_t{1} << 40;
  if (iterations < 1 || iterations > kMaxIterations) {
    return absl::InvalidArgumentError(
        absl::StrCat("benchfarm.Calibrate: iterations must be 1 to 2^40, not ", iterations));
  }
  return TimedGlobal("benchfarm.Calibrate", {iterations}, deadline);
}

absl::StatusOr<double> RpcClient::TimedGlobal(const std::string& name,
                                              const std::vector<int64_t>& args,
                                              absl::Time deadline) {
  ASSIGN_OR_RETURN(uint64_t fn, CachedGlobal(name, deadline));
  std::vector<Arg> call;
  for (int64_t a : args) call.push_back(Arg::Int(a));
  ASSIGN_OR_RETURN(Arg seconds, CallFunc(fn, call, deadline));
  if (seconds.type_code() != TypeCode::kFloat || !std::isfinite(seconds.float_value()) ||
      seconds.float_value() < 0) {
    return absl::DataLossError(
        absl::StrCat(session_->options().board_id, ": ", name, " did not return seconds"));
  }
  return seconds.float_value();
}

absl::StatusOr<std::string> RpcClient::StringGlobal(const std::string& name, absl::Time deadline) {
  ASSIGN_OR_RETURN(uint64_t fn, CachedGlobal(name, deadline));
  ASSIGN_OR_RETURN(Arg text, CallFunc(fn, {}, deadline));
  if (text.type_code() != TypeCode::kStr) {
    return absl::DataLossError(
        absl::StrCat(session_->options().board_id, ": ", name, " did not return a string"));
  }
  return text.str();
}

absl::StatusOr<TimerTotals> RpcClient::GetTimerTotals(absl::Time deadline) {
  ASSIGN_OR_RETURN(uint64_t fn, CachedGlobal("benchfarm.TimerTotals", deadline));
  ASSIGN_OR_RETURN(Arg text, CallFunc(fn, {}, deadline));
  if (text.type_code() != TypeCode::kStr) {
    return absl::DataLossError(absl::StrCat(session_->options().board_id,
                                            ": benchfarm.TimerTotals did not return a string"));
  }
  absl::StatusOr<TimerTotals> totals = ParseTimerTotals(text.str());
  if (!totals.ok()) {
    return absl::DataLossError(
        absl::StrCat(session_->options().board_id, ": ", totals.status().message()));
  }
  return totals;
}

absl::Status RpcClient::Shutdown(absl::Time deadline) {
  return session_->Send(EncodeShutdown(), deadline);
}

}  // namespace benchfarm::device
