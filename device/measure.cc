#include "device/measure.h"

#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"

namespace benchfarm::device {
namespace {

std::vector<float> ToFloats(const std::string& bytes) {
  std::vector<float> out(bytes.size() / sizeof(float));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

absl::StatusOr<MeasureOutcome> Measure(RpcClient& rpc, const MeasureRequest& request,
                                       absl::Time deadline) {
  if (request.shapes.size() < 2) {
    return absl::InvalidArgumentError("an operator takes at least one input and an output");
  }
  MeasureOutcome outcome;
  ASSIGN_OR_RETURN(uint64_t fn, rpc.GetFunction(request.function, deadline));
  std::vector<RemoteTensor> tensors;
  auto fail = [&](absl::Status s) {
    // After a timeout or reset the board's session is gone with its tensors.
    if (!absl::IsDeadlineExceeded(s) && !absl::IsAborted(s) && !absl::IsUnavailable(s)) {
      for (const RemoteTensor& t : tensors) (void)rpc.FreeTensor(t, deadline);
    }
    return s;
  };
  std::mt19937_64 rng(request.seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (size_t i = 0; i < request.shapes.size(); ++i) {
    absl::StatusOr<RemoteTensor> t =
        rpc.AllocTensor(request.shapes[i], DlDataType{}, deadline);
    if (!t.ok()) return fail(t.status());
    tensors.push_back(*t);
    std::vector<float> values(t->NumBytes() / sizeof(float));
    // Inputs from the seed; the output poisoned, so a kernel that writes nothing is caught.
    for (float& v : values) v = i + 1 < request.shapes.size() ? dist(rng) : NAN;
    absl::Status s = rpc.CopyToRemote(
        *t, absl::string_view(reinterpret_cast<const char*>(values.data()), t->NumBytes()),
        deadline);
    if (!s.ok()) return fail(s);
  }
  std::vector<Arg> args;
  for (const RemoteTensor& t : tensors) args.push_back(Arg::Tensor(t));

  if (request.check) {
    absl::Status s = rpc.CallFunc(fn, args, deadline).status();
    if (!s.ok()) return fail(s);
    absl::StatusOr<std::string> got =
        rpc.CopyFromRemote(tensors.back(), tensors.back().NumBytes(), deadline);
    if (!got.ok()) return fail(got.status());
    absl::StatusOr<uint64_t> ref = rpc.GetFunction(request.reference, deadline);
    if (!ref.ok()) return fail(ref.status());
    s = rpc.CallFunc(*ref, args, deadline).status();
    if (!s.ok()) return fail(s);
    absl::StatusOr<std::string> want =
        rpc.CopyFromRemote(tensors.back(), tensors.back().NumBytes(), deadline);
    if (!want.ok()) return fail(want.status());
    std::vector<float> g = ToFloats(*got), w = ToFloats(*want);
    outcome.checked = true;
    for (size_t i = 0; i < g.size() && i < w.size(); ++i) {
      double err = std::fabs(static_cast<double>(g[i]) - w[i]);
      if (std::isnan(err)) err = INFINITY;
      outcome.max_abs_error = std::max(outcome.max_abs_error, err);
      if (!(err <= 1e-4 * (1.0 + std::fabs(w[i]))) && outcome.matches) {
        outcome.matches = false;
        outcome.mismatch = absl::StrCat("output element ", i, " is ", g[i], ", the reference ",
                                        request.reference, " gives ", w[i]);
      }
    }
  }
  if (!outcome.matches && !request.time_on_mismatch) {
    for (const RemoteTensor& t : tensors) (void)rpc.FreeTensor(t, deadline);
    return outcome;
  }
  absl::StatusOr<std::vector<double>> costs =
      rpc.TimeFunction(request.function, args, request.options, deadline);
  if (!costs.ok()) return fail(costs.status());
  outcome.costs = *costs;
  for (const RemoteTensor& t : tensors) (void)rpc.FreeTensor(t, deadline);
  return outcome;
}

}  // namespace benchfarm::device
