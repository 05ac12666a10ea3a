#include "tracker/catalog.h"

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "catalog/operator.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::tracker {
namespace {

v1::Operator WithoutFiles(const v1::Operator& op, bool latest) {
  v1::Operator out = op;
  out.clear_files();
  out.set_latest(latest);
  return out;
}

}  // namespace

OperatorCatalog::OperatorCatalog(Store* store) : store_(store) {
  absl::MutexLock lock(&mu_);
  for (const v1::Operator& op : catalog::BuiltinOperators()) {
    ops_[op.name()].push_back(std::make_shared<const v1::Operator>(op));
  }
}

absl::Status OperatorCatalog::Load() {
  ASSIGN_OR_RETURN(std::vector<v1::Operator> stored, store_->LoadOperators());
  absl::MutexLock lock(&mu_);
  for (v1::Operator& op : stored) {
    if (op.builtin()) continue;
    auto& versions = ops_[op.name()];
    bool known = false;
    for (const auto& v : versions) known = known || v->version() == op.version();
    if (!known) versions.push_back(std::make_shared<const v1::Operator>(std::move(op)));
  }
  return absl::OkStatus();
}

absl::StatusOr<OperatorCatalog::Added> OperatorCatalog::Add(v1::Operator op, absl::Time now) {
  op.clear_version();
  op.clear_builtin();
  op.clear_added_at();
  op.clear_latest();
  RETURN_IF_ERROR(catalog::ValidateUserOperator(&op));
  op.set_version(catalog::OperatorVersion(op));
  {
    absl::MutexLock lock(&mu_);
    auto it = ops_.find(op.name());
    if (it != ops_.end()) {
      for (const auto& existing : it->second) {
        if (existing->version() == op.version()) {
          return Added{WithoutFiles(*existing, existing == it->second.back()), false};
        }
      }
    }
  }
  *op.mutable_added_at() =
      google::protobuf::util::TimeUtil::NanosecondsToTimestamp(absl::ToUnixNanos(now));
  absl::Status stored = store_->InsertOperator(op);
  if (!stored.ok() && !absl::IsAlreadyExists(stored)) return stored;
  absl::MutexLock lock(&mu_);
  auto& versions = ops_[op.name()];
  for (const auto& existing : versions) {  // added meanwhile by another call
    if (existing->version() == op.version()) return Added{WithoutFiles(*existing, false), false};
  }
  versions.push_back(std::make_shared<const v1::Operator>(op));
  return Added{WithoutFiles(op, true), true};
}

std::vector<v1::Operator> OperatorCatalog::List(const std::string& name, bool all_versions) const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Operator> out;
  for (const auto& [op_name, versions] : ops_) {
    if (!name.empty() && op_name != name) continue;
    if (all_versions) {
      for (const auto& v : versions) out.push_back(WithoutFiles(*v, v == versions.back()));
    } else {
      out.push_back(WithoutFiles(*versions.back(), true));
    }
  }
  return out;
}

std::shared_ptr<const v1::Operator> OperatorCatalog::Find(const std::string& name,
                                                          const std::string& version) const {
  absl::MutexLock lock(&mu_);
  auto it = ops_.find(name);
  if (it == ops_.end()) return nullptr;
  if (version.empty()) return it->second.back();
  for (const auto& v : it->second) {
    if (v->version() == version) return v;
  }
  return nullptr;
}

absl::StatusOr<v1::Operator> OperatorCatalog::Get(const std::string& name,
                                                  const std::string& version) const {
  std::shared_ptr<const v1::Operator> op = Find(name, version);
  if (op == nullptr) {
    if (Find(name, "") == nullptr) {
      return absl::NotFoundError(absl::StrCat("no operator \"", name, "\" in the catalog"));
    }
    return absl::NotFoundError(absl::StrCat("operator ", name, " has no version \"", version, "\""));
  }
  v1::Operator out = *op;
  std::shared_ptr<const v1::Operator> latest = Find(name, "");
  out.set_latest(latest == op);
  return out;
}

}  // namespace benchfarm::tracker
