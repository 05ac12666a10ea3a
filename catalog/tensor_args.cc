#include "catalog/tensor_args.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "benchfarm/data.h"

namespace benchfarm::catalog {
namespace {

absl::Status Invalid(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", problem));
}

constexpr char kDtypes[] = "int8, uint8, int16, uint16, int32, uint32, float16, float32, float64";

}  // namespace

int64_t ArgData::Bytes() const {
  int64_t n = static_cast<int64_t>(bf_data_element_bytes(dtype));
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<std::vector<int64_t>> TrialArgs::Shapes() const {
  std::vector<std::vector<int64_t>> shapes;
  for (const ArgData& a : args) shapes.push_back(a.shape);
  return shapes;
}

int64_t TrialArgs::Bytes(bool check) const {
  int64_t total = 0;
  for (const ArgData& a : args) total += a.Bytes();
  if (check && !args.empty()) total += args.back().Bytes();
  return total;
}

absl::StatusOr<DLDataType> ParseDtype(absl::string_view field, absl::string_view name) {
  if (name.empty()) return DLDataType{kDLFloat, 32, 1};
  DLDataType dtype;
  if (name.size() > 16 || bf_data_parse_dtype(std::string(name).c_str(), &dtype) != 0) {
    return Invalid(field, absl::StrCat("\"", name.substr(0, 16),
                                       "\" is not a dtype benchfarm takes (", kDtypes, ")"));
  }
  return dtype;
}

std::string DtypeName(DLDataType dtype) {
  const char* name = bf_data_dtype_name(dtype);
  return name != nullptr ? name : "?";
}

bool IsFloat(DLDataType dtype) { return dtype.code == kDLFloat; }

absl::Status ResolveRange(absl::string_view field, DLDataType dtype,
                          const google::protobuf::RepeatedField<double>& range, ArgData* arg) {
  arg->dtype = dtype;
  if (range.empty()) {
    bf_data_default_range(dtype, &arg->lo, &arg->hi);
    return absl::OkStatus();
  }
  if (range.size() != 2) return Invalid(field, "give [lo, hi]");
  if (bf_data_check_range(dtype, range[0], range[1]) != 0) {
    double lo, hi;
    bf_data_default_range(dtype, &lo, &hi);
    const std::string rule =
        IsFloat(dtype)
            ? (dtype.bits == 16 ? "finite, within +-65504, lo <= hi" : "finite, lo <= hi")
            : absl::StrCat("whole numbers in ", lo, "..", hi, ", lo <= hi");
    return Invalid(field, absl::StrCat("[", range[0], ", ", range[1], "] is not a range of ",
                                       DtypeName(dtype), " (", rule, ")"));
  }
  arg->lo = range[0];
  arg->hi = range[1];
  return absl::OkStatus();
}

absl::Status ResolveTolerance(absl::string_view field, std::optional<double> atol,
                              std::optional<double> rtol, TrialArgs* args) {
  const DLDataType out = args->args.empty() ? DLDataType{kDLFloat, 32, 1} : args->args.back().dtype;
  if (!IsFloat(out)) {
    if (atol.has_value() || rtol.has_value()) {
      return Invalid(absl::StrCat(field, atol.has_value() ? "atol" : "rtol"),
                     absl::StrCat("the output is ", DtypeName(out),
                                  ": integer outputs must equal the reference's"));
    }
    args->atol = args->rtol = 0;
    return absl::OkStatus();
  }
  const double fallback = out.bits == 16 ? 1e-2 : out.bits == 32 ? 1e-4 : 1e-9;
  for (const auto& [name, value] :
       {std::pair<const char*, std::optional<double>>{"atol", atol}, {"rtol", rtol}}) {
    if (value.has_value() && !(std::isfinite(*value) && *value >= 0)) {
      return Invalid(absl::StrCat(field, name), absl::StrCat(*value, ": must be finite and >= 0"));
    }
  }
  args->atol = atol.value_or(fallback);
  args->rtol = rtol.value_or(fallback);
  return absl::OkStatus();
}

}  // namespace benchfarm::catalog
