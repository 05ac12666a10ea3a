// OperatorCatalog: the tracker's operator catalog — the built-in sample operators and every
// version of every user operator added with `farmctl op add` (AddOperator), kept in the Store so
// it survives restarts. A version is the content hash of the operator's spec and files
// (catalog/operator.h): adding changed sources makes a new version, and jobs keep the version they
// were submitted with. Adding content that is already stored returns the stored entry.
//
// The latest version of a name — what a trial naming no version gets — is the one added last
// that is not retired. Adding content already stored makes that version the latest again (an
// earlier source added again after a buggy one). Retire hides a version from new trials
// (ForNewTrial refuses it; the latest moves to the one added before it); jobs and results that
// ran it keep it, and offers of jobs already queued still find it. Adding its content again
// brings it back. Both are kept in the Store (OperatorState) and survive restarts.
//
// Names have owners. A name belongs to the client who first added it (on a secure tracker); only
// its owner and admins may add versions of it — anyone else is PermissionDenied naming the owner,
// so nobody can make their code the latest version of someone else's operator (nor retire a
// version of it). A name stored
// before names had owners belongs to nobody: only admins may add to it or give it away
// (SetOwner). On an insecure tracker (no identities) anyone may add anything.
//
// Memory: the catalog keeps every version's spec and metadata, not its files: those stay in the
// Store and are read when needed (an offer to an agent, GetOperator), through a cache of at most
// `cache_bytes`. Each client may add at most `max_bytes_per_client` bytes of files and
// `max_versions_per_client` versions (admins are not limited): ResourceExhausted beyond.
//
// Errors: InvalidArgument naming the field for a malformed operator (nothing stored); NotFound for
// an unknown name or version; PermissionDenied; ResourceExhausted; the Store's errors.
//
// Thread-safety: every method may be called from any thread. Additions and owner changes are
// serialized (add_mu_); lookups take mu_ only, which is held while reading a file body from the
// Store but never while calling anything else.

#ifndef BENCHFARM_TRACKER_CATALOG_H_
#define BENCHFARM_TRACKER_CATALOG_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

struct CatalogOptions {
  int64_t max_bytes_per_client = int64_t{16} << 20;
  int64_t max_versions_per_client = 200;
  int64_t cache_bytes = int64_t{32} << 20;  // files kept in memory for offers
};

// Who is adding or changing an entry.
struct CatalogCaller {
  std::string client;  // the client id; empty on an insecure tracker
  bool admin = false;
  bool authenticated = false;  // false: an insecure tracker, no owners
};

class OperatorCatalog {
 public:
  // Holds the built-in operators; `store` is borrowed.
  OperatorCatalog(Store* store, CatalogOptions options = {});

  // Adds the stored user operators and the names' owners. Call once, before use.
  absl::Status Load();

  struct Added {
    v1::Operator op;  // as stored, files omitted
    bool created = false;
    bool made_latest = false;  // stored already, but not the latest (or retired): now it is
  };
  absl::StatusOr<Added> Add(v1::Operator op, const CatalogCaller& caller, absl::Time now);

  // Hides a version (empty: the latest) from new trials; its owner or an admin (as Add). NotFound
  // for an unknown name or version, or an empty version when every version is retired already;
  // InvalidArgument for a built-in operator. Retiring a retired version changes nothing
  // (already).
  struct Retired {
    v1::Operator op;                     // the retired version, files omitted
    std::optional<v1::Operator> latest;  // the name's latest now (none: every version retired)
    bool already = false;
  };
  absl::StatusOr<Retired> Retire(const std::string& name, const std::string& version,
                                 const CatalogCaller& caller);

  // Gives `name` (every version, and the right to add more) to `owner`; admins only (the caller
  // checks). The latest version, files omitted.
  absl::StatusOr<v1::Operator> SetOwner(const std::string& name, const std::string& owner);

  // Files omitted; by name; the latest version of each unless all_versions (a name whose
  // versions are all retired: its last one, marked retired).
  std::vector<v1::Operator> List(const std::string& name, bool all_versions) const;
  // With files (read from the Store). Empty version: the latest.
  absl::StatusOr<v1::Operator> Get(const std::string& name, const std::string& version) const;
  // The entry without its files, or nullptr. Empty version: the latest (nullptr when every
  // version is retired); a named version is found retired or not.
  std::shared_ptr<const v1::Operator> Find(const std::string& name,
                                           const std::string& version) const;
  // The version a new trial of `name` runs: `version`, or the latest when empty. InvalidArgument
  // naming the trial's field (op.template_op.op / .version) for an unknown name or version, a
  // retired version, or a name whose versions are all retired.
  absl::StatusOr<std::shared_ptr<const v1::Operator>> ForNewTrial(const std::string& name,
                                                                  const std::string& version) const;
  // The entry with its files (built-ins have none): from the cache, or read from the Store.
  // NotFound for an unknown entry; the Store's errors.
  absl::StatusOr<std::shared_ptr<const v1::Operator>> WithFiles(const std::string& name,
                                                                const std::string& version) const;

  // What a client has added (bytes of files, versions), for its quota.
  struct Usage {
    int64_t bytes = 0;
    int64_t versions = 0;
  };
  Usage UsageOf(const std::string& client) const;

 private:
  using Entry = std::shared_ptr<const v1::Operator>;

  // The entry as callers see it: owner, latest and state filled in, files omitted.
  v1::Operator Describe(const Entry& entry) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  Entry FindLocked(const std::string& name, const std::string& version) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The name's latest version: the last of ops_[name] that is not retired; nullptr if none.
  Entry LatestLocked(const std::string& name) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  const v1::OperatorState& StateLocked(const v1::Operator& entry) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // When the version became the latest last: added, or added again.
  static absl::Time LatestSince(const v1::Operator& entry, const v1::OperatorState& state);
  // A time for a version of `name` that becomes the latest now: `now`, or just after the newest
  // of its versions (so the order survives a clock that went back).
  absl::Time StampLocked(const std::string& name, absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // OK for a user operator's name; NotFound for an unknown one, InvalidArgument for a built-in
  // one ("operator matmul is built in: <built_in>").
  absl::Status CheckUserName(const std::string& name, absl::string_view built_in) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Whether `caller` may change an existing name (`what`: "add versions of it"): OK, or
  // PermissionDenied naming why.
  absl::Status MayChange(const std::string& name, const CatalogCaller& caller,
                         absl::string_view what) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Stores the version's new state, then makes it the catalog's (moved to the end of its name's
  // versions when `to_end`: the latest unless retired).
  absl::Status SetState(const Entry& entry, const v1::OperatorState& state, bool to_end)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(add_mu_);

  Store* const store_;
  const CatalogOptions options_;
  absl::Mutex add_mu_;  // Add and SetOwner, one at a time (an owner is decided, then stored)
  mutable absl::Mutex mu_;
  // name -> versions in the order they became the latest (added, or added again), without
  // files; the latest is the last that is not retired.
  std::map<std::string, std::vector<Entry>> ops_ ABSL_GUARDED_BY(mu_);
  // "name@version" -> what changed since it was added (absent: nothing).
  std::map<std::string, v1::OperatorState> states_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::string> owners_ ABSL_GUARDED_BY(mu_);  // name -> client
  std::map<std::string, Usage> usage_ ABSL_GUARDED_BY(mu_);         // added_by -> usage
  // Entries with files, most recently used first, at most options_.cache_bytes of files.
  mutable std::list<Entry> cache_ ABSL_GUARDED_BY(mu_);
  // "name@version" -> its place in cache_.
  mutable std::map<std::string, std::list<Entry>::iterator> cache_index_ ABSL_GUARDED_BY(mu_);
  mutable int64_t cache_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_CATALOG_H_
