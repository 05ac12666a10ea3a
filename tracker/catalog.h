// OperatorCatalog: the tracker's operator catalog — the built-in sample operators and every
// version of every user operator added with `farmctl op add` (AddOperator), kept in the Store so
// it survives restarts. A version is the content hash of the operator's spec and files
// (catalog/operator.h): adding changed sources makes a new version, and jobs keep the version they
// were submitted with. Adding content that is already stored returns the stored entry.
//
// Errors: InvalidArgument naming the field for a malformed operator (nothing stored); NotFound for
// an unknown name or version; the Store's errors.
//
// Thread-safety: every method may be called from any thread (one mutex, never held while
// calling anything but the Store).

#ifndef BENCHFARM_TRACKER_CATALOG_H_
#define BENCHFARM_TRACKER_CATALOG_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

class OperatorCatalog {
 public:
  // Holds the built-in operators; `store` is borrowed.
  explicit OperatorCatalog(Store* store);

  // Adds the stored user operators. Call once, before use.
  absl::Status Load();

  struct Added {
    v1::Operator op;  // as stored, files omitted
    bool created = false;
  };
  absl::StatusOr<Added> Add(v1::Operator op, absl::Time now);

  // Files omitted; by name; the latest version of each unless all_versions.
  std::vector<v1::Operator> List(const std::string& name, bool all_versions) const;
  // With files. Empty version: the latest.
  absl::StatusOr<v1::Operator> Get(const std::string& name, const std::string& version) const;
  // The entry (with files), or nullptr. Empty version: the latest.
  std::shared_ptr<const v1::Operator> Find(const std::string& name,
                                           const std::string& version) const;

 private:
  Store* const store_;
  mutable absl::Mutex mu_;
  // name -> versions, oldest first (the last is the latest).
  std::map<std::string, std::vector<std::shared_ptr<const v1::Operator>>> ops_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_CATALOG_H_
