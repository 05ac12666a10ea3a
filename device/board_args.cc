#include "device/board_args.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "benchfarm/data.h"

namespace benchfarm::device {
namespace {

DLDataType Dl(DlDataType t) { return DLDataType{t.code, t.bits, t.lanes}; }

// The session is gone (a timeout, a reset, a lost link): the board freed the tensors with it.
bool SessionLost(const absl::Status& s) {
  return absl::IsDeadlineExceeded(s) || absl::IsAborted(s) || absl::IsUnavailable(s) ||
         absl::IsFailedPrecondition(s);
}

std::string Generated(const TensorArg& a, uint64_t seed, uint64_t stream) {
  std::string bytes(static_cast<size_t>(a.Bytes()), '\0');
  (void)bf_data_fill(bytes.data(), static_cast<size_t>(a.Elements()), Dl(a.dtype), seed, stream,
                     a.lo, a.hi);
  return bytes;
}

CheckReport FromC(const bf_data_report_t& r) {
  CheckReport out;
  out.mismatches = r.mismatches;
  out.first_index = r.first_index;
  out.got = r.got;
  out.want = r.want;
  out.max_abs_error = r.max_abs_error;
  return out;
}

absl::StatusOr<CheckReport> DecodeReport(const Arg& value) {
  if (value.type_code() != TypeCode::kBytes || value.bytes().size() != BF_DATA_REPORT_BYTES) {
    return absl::DataLossError(absl::StrCat("benchfarm.CheckCall returned ", value.DebugString(),
                                            ", not its ", BF_DATA_REPORT_BYTES, "-byte report"));
  }
  const char* p = value.bytes().data();
  bf_data_report_t r;
  std::memcpy(&r.mismatches, p, 8);
  std::memcpy(&r.first_index, p + 8, 8);
  std::memcpy(&r.got, p + 16, 8);
  std::memcpy(&r.want, p + 24, 8);
  std::memcpy(&r.max_abs_error, p + 32, 8);
  return FromC(r);
}

// The host path uploads in pieces of this size, so a link too slow for the trial's data shows after
// the first.
constexpr size_t kUploadChunk = 8 << 10;

// ResourceExhausted when `sent` of `total` bytes took long enough since `start` that the rest
// cannot cross the link by the deadline.
absl::Status CheckLinkTime(int64_t total, int64_t sent, absl::Time start, absl::Time deadline) {
  const double rate = sent / std::max(1e-6, absl::ToDoubleSeconds(absl::Now() - start));
  if (absl::Now() + absl::Seconds((total - sent) / rate) <= deadline) return absl::OkStatus();
  auto tenths = [](absl::Duration d) {
    return absl::FormatDuration(absl::Trunc(d, absl::Milliseconds(100)));
  };
  return absl::ResourceExhaustedError(absl::StrCat(
      "the trial's data does not cross this board's link in its timeout: ", total,
      " bytes (the inputs, and for the check a poisoned output up and two outputs down: the "
      "firmware has no benchfarm.PrepareArgs to make and check them on the board) at the ",
      static_cast<int64_t>(rate / 1000), " KB/s measured take about ",
      tenths(absl::Seconds(total / rate)), ", and ", tenths(deadline - start),
      " were left: raise the trial's timeout (measure.timeout_ms, farmctl --timeout-ms) or use "
      "benchfarm firmware"));
}

// Outputs are allocated with this many bytes after them, filled with a pattern: a kernel that
// writes past the end of its output changes them (the board watches them in CheckCall; the host
// path reads them back).
constexpr uint64_t kGuardBytes = 64;

std::string GuardPattern() {
  std::string pattern(kGuardBytes, '\0');
  (void)bf_data_poison(pattern.data(), kGuardBytes, DLDataType{kDLUInt, 8, 1}, 0x6775);
  return pattern;
}

// A view of `t`'s storage as bytes: its elements and the guard after them.
RemoteTensor Storage(const RemoteTensor& t) {
  RemoteTensor s = t;
  s.shape = {static_cast<int64_t>(t.NumBytes() + kGuardBytes)};
  s.dtype_code = kDLUInt;
  s.dtype_bits = 8;
  s.dtype_lanes = 1;
  return s;
}

// An output tensor of `arg` with the guard after it.
absl::StatusOr<RemoteTensor> AllocGuarded(RpcClient& rpc, const TensorArg& arg,
                                          absl::Time deadline) {
  ASSIGN_OR_RETURN(RemoteTensor storage,
                   rpc.AllocTensor({arg.Bytes() + static_cast<int64_t>(kGuardBytes)},
                                   DlDataType{kDLUInt, 8, 1}, deadline));
  RemoteTensor t = storage;
  t.shape = arg.shape;
  t.dtype_code = arg.dtype.code;
  t.dtype_bits = arg.dtype.bits;
  t.dtype_lanes = arg.dtype.lanes;
  return t;
}

absl::Status WrotePast(absl::string_view who) {
  return absl::InvalidArgumentError(absl::StrCat(who, " wrote past the end of its output (the ",
                                                 kGuardBytes, " bytes after it changed)"));
}

}  // namespace

TensorArg TensorArg::Float32(std::vector<int64_t> shape) {
  TensorArg a;
  a.shape = std::move(shape);
  return a;
}

std::vector<TensorArg> Float32Args(const std::vector<std::vector<int64_t>>& shapes) {
  std::vector<TensorArg> args;
  for (const std::vector<int64_t>& shape : shapes) args.push_back(TensorArg::Float32(shape));
  return args;
}

int64_t TensorArg::Elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d > 0 ? d : 0;
  return n;
}

int64_t TensorArg::Bytes() const { return Elements() * ((dtype.bits * dtype.lanes + 7) / 8); }

bool operator==(const TensorArg& a, const TensorArg& b) {
  return a.shape == b.shape && a.dtype == b.dtype && a.lo == b.lo && a.hi == b.hi;
}

bool operator==(const ArgsSpec& a, const ArgsSpec& b) {
  return a.args == b.args && a.seed == b.seed && a.check == b.check && a.reference == b.reference &&
         a.atol == b.atol && a.rtol == b.rtol && a.data_on_host == b.data_on_host;
}

absl::Status BoardArgs::Prepare(RpcClient& rpc, const ArgsSpec& spec, absl::Time deadline) {
  if (!tensors_.empty() && spec_ == spec) return absl::OkStatus();
  if (spec.args.size() < 2) {
    return absl::InvalidArgumentError("an operator takes at least one input and an output");
  }
  for (size_t i = 0; i < spec.args.size(); ++i) {
    if (bf_data_element_bytes(Dl(spec.args[i].dtype)) == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", i, ": a dtype benchfarm cannot fill or check"));
    }
    if (i + 1 < spec.args.size() &&
        bf_data_check_range(Dl(spec.args[i].dtype), spec.args[i].lo, spec.args[i].hi) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("argument ", i, ": [", spec.args[i].lo, ", ",
                                                     spec.args[i].hi, "] is not a range of ",
                                                     bf_data_dtype_name(Dl(spec.args[i].dtype))));
    }
  }
  if (made_on_board_ && !spec.data_on_host) {
    Forget();  // benchfarm.PrepareArgs frees the set it made before
  } else {
    Release(rpc, deadline);
  }
  spec_ = spec;
  if (!spec.data_on_host) {
    absl::StatusOr<uint64_t> prepare = rpc.CachedGlobal("benchfarm.PrepareArgs", deadline);
    if (prepare.ok()) {
      on_board_ = true;
    } else if (!absl::IsNotFound(prepare.status())) {
      spec_ = ArgsSpec{};
      return prepare.status();
    }
  }
  absl::Status s = Fill(rpc, deadline);
  if (!s.ok()) {
    if (SessionLost(s)) {
      Forget();
    } else {
      Release(rpc, deadline);
    }
  }
  return s;
}

absl::Status BoardArgs::Fill(RpcClient& rpc, absl::Time deadline) {
  if (on_board_) return FillOnBoard(rpc, deadline);
  const std::vector<TensorArg>& args = spec_.args;
  const size_t inputs = args.size() - 1;
  for (size_t i = 0; i < args.size(); ++i) {
    ASSIGN_OR_RETURN(RemoteTensor t, i < inputs
                                         ? rpc.AllocTensor(args[i].shape, args[i].dtype, deadline)
                                         : AllocGuarded(rpc, args[i], deadline));
    tensors_.push_back(std::move(t));
  }
  // The data crosses the link: refuse as soon as the link's speed shows it cannot in time.
  int64_t total = args.back().Bytes() * (spec_.check ? 3 : 0), sent = 0;
  for (size_t i = 0; i < inputs; ++i) total += args[i].Bytes();
  const absl::Time start = absl::Now();
  for (size_t i = 0; i < inputs; ++i) {
    const std::string data = Generated(args[i], spec_.seed, i);
    for (size_t at = 0; at < data.size(); at += kUploadChunk) {
      RemoteTensor part = tensors_[i];
      part.byte_offset += at;
      const size_t n = std::min(kUploadChunk, data.size() - at);
      RETURN_IF_ERROR(rpc.CopyToRemote(part, absl::string_view(data).substr(at, n), deadline));
      sent += static_cast<int64_t>(n);
      RETURN_IF_ERROR(CheckLinkTime(total, sent, start, deadline));
    }
  }
  poison_.assign(static_cast<size_t>(args.back().Bytes()), '\0');
  (void)bf_data_poison(poison_.data(), static_cast<size_t>(args.back().Elements()),
                       Dl(args.back().dtype), 0);
  return absl::OkStatus();
}

absl::Status BoardArgs::FillOnBoard(RpcClient& rpc, absl::Time deadline) {
  ASSIGN_OR_RETURN(uint64_t prepare, rpc.CachedGlobal("benchfarm.PrepareArgs", deadline));
  ASSIGN_OR_RETURN(Arg addresses, rpc.CallFunc(prepare,
                                               {Arg::Int(static_cast<int64_t>(spec_.seed)),
                                                Arg::Float(spec_.atol), Arg::Float(spec_.rtol),
                                                Arg::Str(spec_.check ? spec_.reference : ""),
                                                Arg::Bytes(EncodePrepareSpec(spec_.args))},
                                               deadline));
  // The set is on the board from here: a reply without its addresses still leaves it to free.
  made_on_board_ = true;
  const size_t count = spec_.args.size() + (spec_.check ? 1 : 0);
  if (addresses.type_code() != TypeCode::kBytes || addresses.bytes().size() != 8 * count) {
    return absl::DataLossError(absl::StrCat(
        "benchfarm.PrepareArgs returned ", addresses.DebugString(), ", not ", count, " addresses"));
  }
  for (size_t i = 0; i < count; ++i) {
    const TensorArg& a = spec_.args[std::min(i, spec_.args.size() - 1)];  // ref: as the output
    RemoteTensor t;
    std::memcpy(&t.data, addresses.bytes().data() + 8 * i, 8);
    t.shape = a.shape;
    t.dtype_code = a.dtype.code;
    t.dtype_bits = a.dtype.bits;
    t.dtype_lanes = a.dtype.lanes;
    tensors_.push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckReport> BoardArgs::Check(RpcClient& rpc, uint64_t function,
                                             absl::Time deadline) {
  if (tensors_.empty() || !spec_.check) {
    return absl::FailedPreconditionError("no arguments prepared for a check");
  }
  if (!on_board_) return CheckOnHost(rpc, function, deadline);
  ASSIGN_OR_RETURN(uint64_t check_call, rpc.CachedGlobal("benchfarm.CheckCall", deadline));
  ASSIGN_OR_RETURN(Arg report,
                   rpc.CallFunc(check_call, {Arg::PackedFuncHandle(function)}, deadline));
  return DecodeReport(report);
}

absl::StatusOr<CheckReport> BoardArgs::CheckOnHost(RpcClient& rpc, uint64_t function,
                                                   absl::Time deadline) {
  const std::vector<Arg> call = CallArgs().args;
  const RemoteTensor& out = tensors_[spec_.args.size() - 1];
  const RemoteTensor storage = Storage(out);
  const std::string pattern = GuardPattern();
  const uint64_t bytes = out.NumBytes();
  RETURN_IF_ERROR(rpc.CopyToRemote(storage, poison_ + pattern, deadline));
  RETURN_IF_ERROR(rpc.CallFunc(function, call, deadline).status());
  ASSIGN_OR_RETURN(std::string got, rpc.CopyFromRemote(storage, bytes + kGuardBytes, deadline));
  if (got.compare(bytes, kGuardBytes, pattern) != 0) return WrotePast("the candidate");
  ASSIGN_OR_RETURN(uint64_t reference, rpc.GetFunction(spec_.reference, deadline));
  absl::Status s = rpc.CallFunc(reference, call, deadline).status();
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("the reference ", spec_.reference, ": ", s.message()));
  }
  ASSIGN_OR_RETURN(std::string want, rpc.CopyFromRemote(storage, bytes + kGuardBytes, deadline));
  if (want.compare(bytes, kGuardBytes, pattern) != 0) {
    return WrotePast(absl::StrCat("the reference ", spec_.reference));
  }
  got.resize(bytes);
  want.resize(bytes);
  bf_data_report_t r;
  if (got.size() != want.size() ||
      bf_data_compare(got.data(), want.data(), static_cast<size_t>(spec_.args.back().Elements()),
                      Dl(spec_.args.back().dtype), spec_.atol, spec_.rtol, &r) != 0) {
    return absl::InvalidArgumentError("the output cannot be compared (its dtype or tolerance)");
  }
  return FromC(r);
}

TimedArgs BoardArgs::CallArgs() const {
  std::vector<Arg> args;
  for (size_t i = 0; i < spec_.args.size() && i < tensors_.size(); ++i) {
    args.push_back(Arg::Tensor(tensors_[i]));
  }
  TimedArgs timed(std::move(args));
  timed.on_board = on_board_;
  return timed;
}

void BoardArgs::Release(RpcClient& rpc, absl::Time deadline) {
  if (made_on_board_) {
    absl::StatusOr<uint64_t> release = rpc.CachedGlobal("benchfarm.ReleaseArgs", deadline);
    if (release.ok()) (void)rpc.CallFunc(*release, {}, deadline);
  } else {
    for (const RemoteTensor& t : tensors_) (void)rpc.FreeTensor(t, deadline);
  }
  Forget();
}

void BoardArgs::Forget() {
  tensors_.clear();
  spec_ = ArgsSpec{};
  poison_.clear();
  on_board_ = false;
  made_on_board_ = false;
}

std::string EncodePrepareSpec(const std::vector<TensorArg>& args) {
  std::string spec;
  auto put = [&spec](const void* p, size_t n) { spec.append(static_cast<const char*>(p), n); };
  const uint8_t count = static_cast<uint8_t>(args.size());
  put(&count, 1);
  for (const TensorArg& a : args) {
    const uint8_t head[5] = {a.dtype.code, a.dtype.bits, static_cast<uint8_t>(a.dtype.lanes & 0xff),
                             static_cast<uint8_t>(a.dtype.lanes >> 8),
                             static_cast<uint8_t>(a.shape.size())};
    put(head, sizeof(head));
    for (int64_t d : a.shape) put(&d, 8);  // little-endian hosts (as every board is)
    put(&a.lo, 8);
    put(&a.hi, 8);
  }
  return spec;
}

std::string FormatValue(double value, DlDataType dtype) {
  if (dtype.code != 2) return absl::StrCat(static_cast<int64_t>(value));
  // The shortest %g that reads back as the same value of the dtype.
  const int most = dtype.bits == 64 ? 17 : dtype.bits == 32 ? 9 : 6;
  char text[64];
  for (int digits = 6; digits <= most; ++digits) {
    std::snprintf(text, sizeof(text), "%.*g", digits, value);
    const double back = std::strtod(text, nullptr);
    if (dtype.bits == 64 ? back == value : static_cast<float>(back) == static_cast<float>(value)) {
      break;
    }
  }
  return text;
}

}  // namespace benchfarm::device
