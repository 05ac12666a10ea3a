// SqliteStore: the tracker's Store on one SQLite database file (Debian's libsqlite3), in WAL mode.
//
// The file holds four tables: jobs (each v1::Job serialized, beside indexed copies of the fields
// ListJobs filters on), submissions ((client_id, request_id) -> job ids), boards and operators
// (the catalog: one row per (name, version)). A version-1 file (before the catalog) gets the
// operators table on Open. Its schema
// version is the database's `PRAGMA user_version` (kSchemaVersion); a file without the schema
// gets it on Open.
//
// Durability: every mutating call (Apply: a batch of writes) is one `BEGIN IMMEDIATE ... COMMIT`
// transaction, rolled back if any part fails. With synchronous=NORMAL a committed call survives
// the tracker process being killed at any moment (the Store contract); an OS crash or power loss
// may lose the last commits but never corrupts the file. SqliteStoreOptions::synchronous_full
// (the tracker's default) also survives those, at the cost of an fsync per transaction — which
// the tracker's group commit shares among every change of a batch.
//
// Indexed columns: jobs.client_id is the job's own client_id (Job.client_id), board_kind and
// priority come from Job.trial, op from Job.trial.op.template_op.op ("" for a C-source trial),
// state from Job.state. They are rewritten from the proto on every job write.
//
// Errors, beyond the Store contract (every message names the database path):
//   Open: FailedPrecondition when the file cannot be used as a benchfarm store — it cannot be
//     opened or created (missing or unwritable directory, a directory, no permission), it opens
//     only read-only, it is not a database or fails `PRAGMA quick_check`, WAL cannot be enabled,
//     it holds another application's tables, or it was created by a newer benchfarm (user_version
//     above kSchemaVersion). Internal for any other SQLite failure. SQLite's own message is part
//     of the status message, followed for FailedPrecondition by what stands out on the file system
//     ("[directory /x is not writable]") when something does.
//   Apply: AlreadyExists also when a job to insert repeats a job_id or a sequence number of the
//     batch (nothing is written then); InvalidArgument for an empty job_id / board_id or an
//     insert without a sequence number.
//   Stored rows that no longer parse as their proto: Internal naming the row.
//   A lock held by another process beyond busy_timeout_ms: Internal ("database is locked").
//
// Thread-safety: every method may be called from any thread; calls are serialized by one mutex
// (a SQLite connection serves one thread at a time). The store is not shared across fork(): a
// child process opens its own SqliteStore.

#ifndef BENCHFARM_TRACKER_SQLITE_STORE_H_
#define BENCHFARM_TRACKER_SQLITE_STORE_H_

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"

// sqlite3.h stays out of users' includes.
struct sqlite3;
struct sqlite3_stmt;

namespace benchfarm::tracker {

struct SqliteStoreOptions {
  // false: synchronous=NORMAL, commits survive a killed process (see Durability above).
  // true: synchronous=FULL, commits also survive an OS crash or power loss.
  bool synchronous_full = false;
  // How long a call waits for a lock held by another connection before failing; >= 0.
  int busy_timeout_ms = 5000;
};

class SqliteStore final : public Store {
 public:
  // The schema this build writes and reads (PRAGMA user_version).
  static constexpr int kSchemaVersion = 2;

  // Opens the database at `path`, creating the file and the schema if missing, and checks it
  // (journal_mode=WAL took effect, PRAGMA quick_check passes, the schema version is known).
  // Errors: see the file comment; InvalidArgument for an empty path or a negative
  // busy_timeout_ms.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           SqliteStoreOptions options = {});

  // Closes the connection (SQLite checkpoints the WAL into the main file if this is the last
  // connection). Must not race with calls on the store.
  ~SqliteStore() override;

  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  const std::string& path() const { return path_; }

  // Store. Reads see every call that returned before them.
  absl::StatusOr<std::optional<std::vector<std::string>>> FindSubmission(
      const std::string& client_id, const std::string& request_id) override;
  absl::Status Apply(const WriteBatch& batch) override;
  absl::StatusOr<int64_t> LastSeq() override;
  absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& job_id) override;
  // filter.limit <= 0 returns no jobs.
  absl::StatusOr<std::vector<StoredJob>> ListJobs(const JobFilter& filter) override;
  absl::StatusOr<std::vector<StoredJob>> LoadUnfinishedJobs() override;
  // Boards are keyed by board_id; LoadBoards returns them in board_id order.
  absl::StatusOr<std::vector<v1::Board>> LoadBoards() override;
  absl::Status InsertOperator(const v1::Operator& op) override;
  absl::StatusOr<std::vector<v1::Operator>> LoadOperators() override;

 private:
  struct StatementDeleter {
    void operator()(sqlite3_stmt* statement) const;
  };
  using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

  // The fixed statements, prepared once in Open; indexes into statements_.
  enum StatementId {
    kBegin,
    kCommit,
    kRollback,
    kFindSubmission,
    kInsertSubmission,
    kInsertJob,
    kUpdateJob,
    kUpdateJobBySeq,
    kGetJob,
    kLoadUnfinished,
    kUpsertBoard,
    kLoadBoards,
    kInsertOperator,
    kLoadOperators,
    kLastSeq,
    kInsertSubmissionReplay,  // WriteBatch::replay: an existing row is kept
    kInsertJobReplay,         // WriteBatch::replay: an existing row is replaced
    kStatementCount,
  };

  SqliteStore(std::string path, sqlite3* db);

  // Open's steps after sqlite3_open_v2, on a store that owns the connection.
  absl::Status Configure(const SqliteStoreOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CreateOrCheckSchema() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PrepareStatements() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Open's helpers; their SQLite failures are classified as Open's (see the file comment).
  // Exec runs `sql` (one or more statements, no results wanted) with sqlite3_exec.
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs a statement whose first row's first column is returned as text.
  absl::StatusOr<std::string> QueryText(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Statement> Prepare(const std::string& sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Runs `body` between BEGIN IMMEDIATE and COMMIT; rolls back if body or COMMIT fails.
  template <typename Body>
  absl::Status InTransaction(Body body) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Steps a statement that returns no rows (INSERT/UPDATE/BEGIN...) and resets it.
  absl::Status StepDone(sqlite3_stmt* statement, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads (seq, data) rows of a jobs query; resets the statement.
  absl::StatusOr<std::vector<StoredJob>> ReadJobs(sqlite3_stmt* statement, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Binds the indexed columns and the data of `job` to parameters ?1..?7 of kInsertJob/kUpdateJob
  // (job_id, client_id, state, board_kind, op, priority, data); ?8 of the inserts and of
  // kUpdateJobBySeq is the seq.
  absl::Status BindJob(sqlite3_stmt* statement, const WriteBatch::JobWrite& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A status with `code`, naming the path, `what` and SQLite's message for `rc`.
  absl::Status Error(absl::StatusCode code, const char* what, int rc) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Apply's parts, inside its transaction.
  absl::Status WriteSubmission(const WriteBatch::Submission& submission, bool replay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteJob(const WriteBatch::JobWrite& write, bool replay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteBoard(const v1::Board& board, std::string* data)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const char* what, int rc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Error(absl::StatusCode::kInternal, what, rc);
  }

  const std::string path_;
  mutable absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);  // owned; never null
  std::array<Statement, kStatementCount> statements_ ABSL_GUARDED_BY(mu_);
  // ListJobs statements, prepared on first use, keyed by which filter fields are set (bit mask).
  absl::flat_hash_map<int, Statement> list_statements_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_SQLITE_STORE_H_
