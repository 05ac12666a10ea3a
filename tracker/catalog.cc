#include "tracker/catalog.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/time_proto.h"
#include "catalog/operator.h"
#include "google/protobuf/util/time_util.h"

namespace benchfarm::tracker {
namespace {

// states_'s key.
std::string Key(const std::string& name, const std::string& version) {
  return absl::StrCat(name, "@", version);
}

}  // namespace

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
  ASSIGN_OR_RETURN(Store::OperatorStates states, store_->LoadOperatorStates());
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
  for (auto& [key, state] : states) states_[Key(key.first, key.second)] = std::move(state);
  // Each name's versions in the order they became the latest (added, or added again).
  for (auto& [name, versions] : ops_) {
    std::stable_sort(versions.begin(), versions.end(), [&](const Entry& a, const Entry& b) {
      return LatestSince(*a, StateLocked(*a)) < LatestSince(*b, StateLocked(*b));
    });
  }
  return absl::OkStatus();
}

absl::Time OperatorCatalog::LatestSince(const v1::Operator& entry, const v1::OperatorState& state) {
  absl::Time since =
      entry.has_added_at() ? base::FromProto(entry.added_at()) : absl::InfinitePast();
  if (state.has_readded_at()) since = std::max(since, base::FromProto(state.readded_at()));
  return since;
}

const v1::OperatorState& OperatorCatalog::StateLocked(const v1::Operator& entry) const {
  auto it = states_.find(Key(entry.name(), entry.version()));
  return it != states_.end() ? it->second : v1::OperatorState::default_instance();
}

absl::Time OperatorCatalog::StampLocked(const std::string& name, absl::Time now) const {
  absl::Time stamp = now;
  auto it = ops_.find(name);
  if (it == ops_.end()) return stamp;
  for (const Entry& v : it->second) {
    const absl::Time since = LatestSince(*v, StateLocked(*v));
    if (since != absl::InfinitePast()) stamp = std::max(stamp, since + absl::Microseconds(1));
  }
  return stamp;
}

OperatorCatalog::Entry OperatorCatalog::LatestLocked(const std::string& name) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) return nullptr;
  for (auto v = it->second.rbegin(); v != it->second.rend(); ++v) {
    if (!StateLocked(**v).retired()) return *v;
  }
  return nullptr;
}

v1::Operator OperatorCatalog::Describe(const Entry& entry) const {
  v1::Operator out = *entry;
  out.clear_files();
  const Entry latest = LatestLocked(out.name());
  out.set_latest(latest != nullptr && latest->version() == out.version());
  auto owner = owners_.find(out.name());
  out.set_owner(owner != owners_.end() ? owner->second : "");
  *out.mutable_state() = StateLocked(out);
  if (out.state().ByteSizeLong() == 0) out.clear_state();
  return out;
}

absl::Status OperatorCatalog::CheckUserName(const std::string& name,
                                            absl::string_view built_in) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    return absl::NotFoundError(absl::StrCat("no operator \"", name, "\" in the catalog"));
  }
  if (it->second.back()->builtin()) {
    return absl::InvalidArgumentError(absl::StrCat("operator ", name, " is built in: ", built_in));
  }
  return absl::OkStatus();
}

absl::Status OperatorCatalog::MayChange(const std::string& name, const CatalogCaller& caller,
                                        absl::string_view what) const {
  if (!caller.authenticated || caller.admin) return absl::OkStatus();
  auto it = owners_.find(name);
  if (it == owners_.end()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "operator ", name,
        " has no owner (it was added before operators had owners): only an "
        "admin may ",
        what, ", or give it to you (farmctl op chown ", name, " ", caller.client, ")"));
  }
  if (it->second != caller.client) {
    return absl::PermissionDeniedError(absl::StrCat("operator ", name, " belongs to ", it->second,
                                                    ": only its owner (or an admin) may ", what,
                                                    "; add yours under another name"));
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
  op.clear_state();
  RETURN_IF_ERROR(catalog::ValidateUserOperator(&op));
  op.set_version(catalog::OperatorVersion(op));
  op.set_added_by(caller.client);
  op.set_files_bytes(FilesBytes(op));
  absl::MutexLock add_lock(&add_mu_);
  bool new_name = false;
  Entry known;  // this content, if it is stored already
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = ops_.find(op.name());
    new_name = it == ops_.end();
    if (!new_name) {
      RETURN_IF_ERROR(MayChange(op.name(), caller, "add versions of it"));
      for (const auto& existing : it->second) {
        if (existing->version() == op.version()) known = existing;
      }
      if (known != nullptr && LatestLocked(op.name()) == known) {
        return Added{Describe(known), false, false};
      }
    }
  }
  if (known != nullptr) {
    // An earlier (or retired) version added again: the latest again, in service again.
    v1::OperatorState state;
    {
      absl::ReaderMutexLock lock(&mu_);
      state = StateLocked(*known);
      *state.mutable_readded_at() = base::ToProto(StampLocked(op.name(), now));
    }
    state.set_retired(false);
    RETURN_IF_ERROR(SetState(known, state, /*to_end=*/true));
    absl::ReaderMutexLock lock(&mu_);
    return Added{Describe(known), false, true};
  }
  {
    absl::ReaderMutexLock lock(&mu_);
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
  {
    absl::ReaderMutexLock lock(&mu_);
    *op.mutable_added_at() = base::ToProto(StampLocked(op.name(), now));
  }
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
  return Added{Describe(entry), true, false};
}

absl::Status OperatorCatalog::SetState(const Entry& entry, const v1::OperatorState& state,
                                       bool to_end) {
  RETURN_IF_ERROR(store_->SetOperatorState(entry->name(), entry->version(), state));
  absl::MutexLock lock(&mu_);
  states_[Key(entry->name(), entry->version())] = state;
  if (to_end) {
    std::vector<Entry>& versions = ops_[entry->name()];
    auto it = std::find(versions.begin(), versions.end(), entry);
    if (it != versions.end()) std::rotate(it, it + 1, versions.end());
  }
  return absl::OkStatus();
}

absl::StatusOr<OperatorCatalog::Retired> OperatorCatalog::Retire(const std::string& name,
                                                                 const std::string& version,
                                                                 const CatalogCaller& caller) {
  absl::MutexLock add_lock(&add_mu_);
  Entry entry;
  v1::OperatorState state;
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckUserName(name, "it cannot be retired"));
    RETURN_IF_ERROR(MayChange(name, caller, "retire versions of it"));
    entry = FindLocked(name, version);
    if (entry == nullptr) {
      return absl::NotFoundError(
          version.empty() ? absl::StrCat("every version of operator ", name, " is retired already")
                          : absl::StrCat("operator ", name, " has no version \"", version, "\""));
    }
    state = StateLocked(*entry);
  }
  const bool already = state.retired();
  if (!already) {
    state.set_retired(true);
    RETURN_IF_ERROR(SetState(entry, state, /*to_end=*/false));
  }
  absl::ReaderMutexLock lock(&mu_);
  Retired out;
  out.op = Describe(entry);
  out.already = already;
  if (Entry latest = LatestLocked(name)) out.latest = Describe(latest);
  return out;
}

absl::StatusOr<v1::Operator> OperatorCatalog::SetOwner(const std::string& name,
                                                       const std::string& owner) {
  if (owner.empty()) return absl::InvalidArgumentError("owner: required (a client id)");
  absl::MutexLock add_lock(&add_mu_);
  {
    absl::ReaderMutexLock lock(&mu_);
    RETURN_IF_ERROR(CheckUserName(name, "it has no owner"));
  }
  RETURN_IF_ERROR(store_->SetOperatorOwner(name, owner));
  absl::MutexLock lock(&mu_);
  owners_[name] = owner;
  const Entry latest = LatestLocked(name);
  return Describe(latest != nullptr ? latest : ops_[name].back());
}

std::vector<v1::Operator> OperatorCatalog::List(const std::string& name, bool all_versions) const {
  absl::ReaderMutexLock lock(&mu_);
  std::vector<v1::Operator> out;
  for (const auto& [op_name, versions] : ops_) {
    if (!name.empty() && op_name != name) continue;
    if (all_versions) {
      for (const auto& v : versions) out.push_back(Describe(v));
    } else {
      const Entry latest = LatestLocked(op_name);
      out.push_back(Describe(latest != nullptr ? latest : versions.back()));
    }
  }
  return out;
}

OperatorCatalog::Entry OperatorCatalog::FindLocked(const std::string& name,
                                                   const std::string& version) const {
  auto it = ops_.find(name);
  if (it == ops_.end()) return nullptr;
  if (version.empty()) return LatestLocked(name);
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

absl::StatusOr<std::shared_ptr<const v1::Operator>> OperatorCatalog::ForNewTrial(
    const std::string& name, const std::string& version) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = ops_.find(name);
  if (it == ops_.end()) {
    return absl::InvalidArgumentError(absl::StrCat("op.template_op.op: unknown operator \"",
                                                   name.substr(0, 64),
                                                   "\" (farmctl ops lists the catalog)"));
  }
  Entry entry = FindLocked(name, version);
  if (entry == nullptr && version.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op.template_op.op: every version of operator ", name,
                     " is retired (farmctl op retire): add its source again to bring one back"));
  }
  if (entry == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("op.template_op.version: operator ", name,
                                                   " has no version \"", version.substr(0, 64),
                                                   "\""));
  }
  if (StateLocked(*entry).retired()) {
    const Entry latest = LatestLocked(name);
    return absl::InvalidArgumentError(absl::StrCat(
        "op.template_op.version: operator ", name, " version ", version,
        " is retired (farmctl op retire): its results stay, new trials may not run it; ",
        latest != nullptr ? absl::StrCat("the latest is ", latest->version(), ", ") : std::string(),
        "or add its source again to bring it back"));
  }
  return entry;
}

absl::StatusOr<std::shared_ptr<const v1::Operator>> OperatorCatalog::WithFiles(
    const std::string& name, const std::string& version) const {
  absl::MutexLock lock(&mu_);
  Entry entry = FindLocked(name, version);
  if (entry == nullptr) {
    if (ops_.count(name) == 0) {
      return absl::NotFoundError(absl::StrCat("no operator \"", name, "\" in the catalog"));
    }
    if (version.empty()) {
      return absl::NotFoundError(absl::StrCat("every version of operator ", name,
                                              " is retired (farmctl ops --op ", name,
                                              " --all-versions lists them)"));
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
  v1::Operator out = Describe(full);
  *out.mutable_files() = full->files();
  return out;
}

OperatorCatalog::Usage OperatorCatalog::UsageOf(const std::string& client) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = usage_.find(client);
  return it != usage_.end() ? it->second : Usage();
}

}  // namespace benchfarm::tracker
