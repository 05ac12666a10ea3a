#include "tracker/catalog.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/time_proto.h"
#include "catalog/operator.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::tracker {

OperatorCatalog::OperatorCatalog(Store* store, CatalogOptions options)
    : store_(store), options_(options) {
  absl::MutexLock lock(&mu_);
  for (const v1::Operator& op : catalog::BuiltinOperators()) {
    ops_[op.name()].push_back(std::make_shared<const v1::Operator>(op));
  }
}

absl::Status OperatorCatalog::Load() {
  ASSIGN_OR_RETURN(std::vector<v1::Operator> stored, store_->LoadOperators());
  using Owners = std::map<std::string, std::string>;
  ASSIGN_OR_RETURN(Owners owners, store_->LoadOperatorOwners());
  absl::MutexLock lock(&mu_);
  for (v1::Operator& op : stored) {
    if (op.builtin()) continue;  // (the store gives them without files)
    auto& versions = ops_[op.name()];
    bool known = false;
    for (const auto& v : versions) known = known || v->version() == op.version();
    if (known) continue;
    Usage& usage = usage_[op.added_by()];
    usage.bytes += op.files_bytes();
    usage.versions += 1;
    versions.push_back(std::make_shared<const v1::Operator>(std::move(op)));
  }
  for (auto& [name, owner] : owners) owners_[name] = std::move(owner);
  return absl::OkStatus();
}

v1::Operator OperatorCatalog::Describe(const Entry& entry, bool latest) const {
  v1::Operator out = *entry;
  out.clear_files();
  out.set_latest(latest);
  auto owner = owners_.find(out.name());
  out.set_owner(owner != owners_.end() ? owner->second : "");
  return out;
}

absl::Status OperatorCatalog::MayAddTo(const std::string& name, const CatalogCaller& caller) const {
  if (!caller.authenticated || caller.admin) return absl::OkStatus();
  auto it = owners_.find(name);
  if (it == owners_.end()) {
    return absl::PermissionDeniedError(
        absl::StrCat("operator ", name,
                     " has no owner (it was added before operators had owners): only an "
                     "admin may add versions of it, or give it to you (farmctl op chown ",
                     name, " ", caller.client, ")"));
  }
  if (it->second != caller.client) {
    return absl::PermissionDeniedError(
        absl::StrCat("operator ", name, " belongs to ", it->second,
                     ": only its owner (or an admin) may add "
                     "versions of it; add yours under another name"));
  }
  return absl::OkStatus();
}

absl::StatusOr<OperatorCatalog::Added> OperatorCatalog::Add(v1::Operator op,
                                                            const CatalogCaller& caller,
                                                            absl::Time now) {
  op.clear_version();
  op.clear_builtin();
  op.clear_added_at();
  op.clear_latest();
  op.clear_owner();
  op.clear_added_by();
  op.clear_files_bytes();
  RETURN_IF_ERROR(catalog::ValidateUserOperator(&op));
  op.set_version(catalog::OperatorVersion(op));
  op.set_added_by(caller.client);
  op.set_files_bytes(FilesBytes(op));
  absl::MutexLock add_lock(&add_mu_);
  bool new_name = false;
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = ops_.find(op.name());
    new_name = it == ops_.end();
    if (!new_name) {
      RETURN_IF_ERROR(MayAddTo(op.name(), caller));
      for (const auto& existing : it->second) {
        if (existing->version() == op.version()) {
          return Added{Describe(existing, existing == it->second.back()), false};
        }
      }
    }
    if (caller.authenticated && !caller.admin) {
      auto used = usage_.find(caller.client);
      const Usage usage = used != usage_.end() ? used->second : Usage();
      const int64_t bytes = op.files_bytes();
      if (usage.versions + 1 > options_.max_versions_per_client) {
        return absl::ResourceExhaustedError(absl::StrCat(
            caller.client, " has added ", usage.versions,
            " operator versions: one more would exceed max_operator_versions_per_client (",
            options_.max_versions_per_client, ")"));
      }
      if (usage.bytes + bytes > options_.max_bytes_per_client) {
        return absl::ResourceExhaustedError(absl::StrCat(
            caller.client, " has added ", usage.bytes, " bytes of operator files: ", bytes,
            " more would exceed max_operator_bytes_per_client (", options_.max_bytes_per_client,
            " bytes)"));
      }
    }
  }
  *op.mutable_added_at() = base::ToProto(now);
  if (new_name && caller.authenticated) {
    // The owner first: a name stored without one would be nobody's.
    RETURN_IF_ERROR(store_->SetOperatorOwner(op.name(), caller.client));
    absl::MutexLock lock(&mu_);
    owners_[op.name()] = caller.client;
  }
  absl::Status stored = store_->InsertOperator(op);
  if (!stored.ok() && !absl::IsAlreadyExists(stored)) return stored;
  WithoutFiles(&op);
  auto entry = std::make_shared<const v1::Operator>(std::move(op));
  absl::MutexLock lock(&mu_);
  ops_[entry->name()].push_back(entry);
  Usage& usage = usage_[entry->added_by()];
  usage.bytes += entry->files_bytes();
  usage.versions += 1;
  return Added{Describe(entry, true), true};
}

absl::StatusOr<v1::Operator> OperatorCatalog::SetOwner(const std::string& name,
                                                       const std::string& owner) {
  if (owner.empty()) return absl::InvalidArgumentError("owner: required (a client id)");
  absl::MutexLock add_lock(&add_mu_);
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = ops_.find(name);
    if (it == ops_.end()) {
      return absl::NotFoundError(absl::StrCat("no operator \"", name, "\" in the catalog"));
    }
    if (it->second.back()->builtin()) {
      return absl::InvalidArgumentError(
          absl::StrCat("operator ", name, " is built in: it has no owner"));
    }
  }
  RETURN_IF_ERROR(store_->SetOperatorOwner(name, owner));
  absl::MutexLock lock(&mu_);
  owners_[name] = owner;
  return Describe(ops_[name].back(), true);
}

std::vector<v1::Operator> OperatorCatalog::List(const std::string& name, bool all_versions) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::Operator> out;
  for (const auto& [op_name, versions] : ops_) {
    if (!name.empty() && op_name != name) continue;
    if (all_versions) {
      for (const auto& v : versions) out.push_back(Describe(v, v == versions.back()));
    } else {
      out.push_back(Describe(versions.back(), true));
    }
  }
  return out;
}

OperatorCatalog::Entry OperatorCatalog::FindLocked(const std::string& name,
                                                   const std::string& version) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) return nullptr;
  if (version.empty()) return it->second.back();
  for (const auto& v : it->second) {
    if (v->version() == version) return v;
  }
  return nullptr;
}

std::shared_ptr<const v1::Operator> OperatorCatalog::Find(const std::string& name,
                                                          const std::string& version) const {
  absl::ReaderMutexLock lock(&mu_);
  return FindLocked(name, version);
}

absl::StatusOr<std::shared_ptr<const v1::Operator>> OperatorCatalog::WithFiles(
    const std::string& name, const std::string& version) const {
  absl::MutexLock lock(&mu_);
  Entry entry = FindLocked(name, version);
  if (entry == nullptr) {
    if (FindLocked(name, "") == nullptr) {
      return absl::NotFoundError(absl::StrCat("no operator \"", name, "\" in the catalog"));
    }
    return absl::NotFoundError(
        absl::StrCat("operator ", name, " has no version \"", version, "\""));
  }
  if (entry->builtin()) return entry;
  const std::string key = absl::StrCat(entry->name(), "@", entry->version());
  if (auto hit = cache_index_.find(key); hit != cache_index_.end()) {
    cache_.splice(cache_.begin(), cache_, hit->second);  // iterators stay valid
    return *hit->second;
  }
  ASSIGN_OR_RETURN(std::optional<v1::Operator> full,
                   store_->GetOperator(entry->name(), entry->version()));
  if (!full.has_value()) {
    return absl::DataLossError(absl::StrCat("operator ", name, " version ", entry->version(),
                                            " is in the catalog but not in the store"));
  }
  full->set_files_bytes(entry->files_bytes());  // rows stored before the field: counted at Load
  auto loaded = std::make_shared<const v1::Operator>(*std::move(full));
  const int64_t bytes = loaded->files_bytes();
  if (bytes <= options_.cache_bytes) {
    cache_.push_front(loaded);
    cache_index_[key] = cache_.begin();
    cache_bytes_ += bytes;
    while (cache_bytes_ > options_.cache_bytes && !cache_.empty()) {
      const Entry& last = cache_.back();
      cache_bytes_ -= last->files_bytes();
      cache_index_.erase(absl::StrCat(last->name(), "@", last->version()));
      cache_.pop_back();
    }
  }
  return loaded;
}

absl::StatusOr<v1::Operator> OperatorCatalog::Get(const std::string& name,
                                                  const std::string& version) const {
  ASSIGN_OR_RETURN(Entry full, WithFiles(name, version));
  absl::ReaderMutexLock lock(&mu_);
  v1::Operator out = Describe(full, FindLocked(name, "")->version() == full->version());
  *out.mutable_files() = full->files();
  return out;
}

OperatorCatalog::Usage OperatorCatalog::UsageOf(const std::string& client) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = usage_.find(client);
  return it != usage_.end() ? it->second : Usage();
}

}  // namespace benchfarm::tracker
