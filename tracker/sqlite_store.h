// SqliteStore: the tracker's Store on one SQLite database file (Debian's libsqlite3), in WAL mode.
//
// The file holds seven tables: jobs (each v1::Job serialized, beside indexed copies of the fields
// ListJobs filters on), submissions ((client_id, request_id) -> job ids), boards, operators (the
// catalog: one row per (name, version)), operator_owners (name -> client id), operator_states
// ((name, version) -> v1::OperatorState) and attempt_logs ((job_id, attempt) -> board id and
// text). Its schema version is the database's `PRAGMA user_version` (kSchemaVersion); a file
// without the schema gets it on Open, and an older file the tables it lacks (version 1: the
// catalog; 2: owners; 3: states; 4: attempt logs; 5: the jobs_state index replaced by jobs_live,
// over the QUEUED and RUNNING jobs only).
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
// Connections: two, one for writes (Apply, InsertOperator, LastSeq, and Open's checks) and a
// read-only one for reads (FindSubmission, GetJob, ListJobs, the Load calls), each guarded by its
// own mutex. In WAL mode readers and the writer do not block each other, so a read — a listing
// that walks much of the table — never waits behind a commit and its fsync, nor holds one up.
// Reads see every call that returned before them (each read is its own read transaction).
// ListJobs reads in slices of kListSliceSeqs sequence numbers, each its own read transaction, so
// no read holds a snapshot (or the reader's mutex) for long, however much of the table a listing
// walks.
//
// The WAL: SQLite checkpoints it into the main file every 1,000 pages written (its default), but
// such a checkpoint cannot finish while a reader holds an older snapshot, and the WAL only starts
// over once one has. Readers that never pause (a dashboard listing in a loop) would make it grow
// without end. So when a commit leaves SqliteStoreOptions::wal_truncate_pages or more in the WAL,
// the writer pauses this store's reads (it takes the reader's mutex, which ListJobs holds for one
// slice at a time), checkpoints the whole WAL and truncates it; readers in other processes get
// kTruncateBusyMs to finish, and if one holds on, the writer tries again after as many pages more
// (or as soon as the WAL reaches wal_truncate_pages again once it has started over). When the WAL
// starts over, SQLite also cuts its file back to wal_truncate_pages (journal_size_limit).
//
// Thread-safety: every method may be called from any thread; calls on one connection are
// serialized by its mutex (a SQLite connection serves one thread at a time). The store is not
// shared across fork(): a child process opens its own SqliteStore.

#ifndef BENCHFARM_TRACKER_SQLITE_STORE_H_
#define BENCHFARM_TRACKER_SQLITE_STORE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
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
  // When a commit leaves this many pages in the WAL, the writer checkpoints and truncates it
  // (see "The WAL" above); > 0. 8,192 pages of 4 KiB: 32 MiB.
  int wal_truncate_pages = 8192;
};

class SqliteStore final : public Store {
 public:
  // The schema this build writes and reads (PRAGMA user_version).
  static constexpr int kSchemaVersion = 6;
  // ListJobs reads this many sequence numbers per read transaction.
  static constexpr int64_t kListSliceSeqs = 4096;
  // How long truncating the WAL waits for other processes' readers.
  static constexpr int kTruncateBusyMs = 100;

  // Opens the database at `path`, creating the file and the schema if missing, and checks it
  // (journal_mode=WAL took effect, PRAGMA quick_check passes, the schema version is known).
  // Errors: see the file comment; InvalidArgument for an empty path, a negative busy_timeout_ms
  // or a wal_truncate_pages that is not positive.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           SqliteStoreOptions options = {});

  // Closes the connections (SQLite checkpoints the WAL into the main file if they are the last
  // ones). Must not race with calls on the store.
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
  absl::StatusOr<std::vector<v1::AttemptLog>> GetAttemptLogs(const std::string& job_id) override;
  absl::StatusOr<std::vector<StoredJob>> LoadUnfinishedJobs() override;
  // Boards are keyed by board_id; LoadBoards returns them in board_id order.
  absl::StatusOr<std::vector<v1::Board>> LoadBoards() override;
  absl::Status InsertOperator(const v1::Operator& op) override;
  absl::StatusOr<std::vector<v1::Operator>> LoadOperators() override;
  absl::StatusOr<std::optional<v1::Operator>> GetOperator(const std::string& name,
                                                          const std::string& version) override;
  absl::Status SetOperatorOwner(const std::string& name, const std::string& owner) override;
  absl::StatusOr<std::map<std::string, std::string>> LoadOperatorOwners() override;
  absl::Status SetOperatorState(const std::string& name, const std::string& version,
                                const v1::OperatorState& state) override;
  absl::StatusOr<OperatorStates> LoadOperatorStates() override;
  // The WAL truncations (see "The WAL" above): those done, and those a reader of another process
  // held off.
  StoreUpkeep Upkeep() const override;

 private:
  struct StatementDeleter {
    void operator()(sqlite3_stmt* statement) const;
  };
  using Statement = std::unique_ptr<sqlite3_stmt, StatementDeleter>;

  // The fixed statements, prepared once in Open; indexes into statements_ (the writes, kLastSeq
  // and the transaction's) or read_statements_ (the reads; see kFirstRead).
  enum StatementId {
    kBegin,
    kCommit,
    kRollback,
    kInsertSubmission,
    kInsertJob,
    kUpdateJob,
    kUpdateJobBySeq,
    kUpsertBoard,
    kInsertOperator,
    kSetOperatorOwner,
    kSetOperatorState,
    kUpsertAttemptLog,
    kLastSeq,
    kInsertSubmissionReplay,  // WriteBatch::replay: an existing row is kept
    kInsertJobReplay,         // WriteBatch::replay: an existing row is replaced
    // From here on, the read-only connection's.
    kFindSubmission,
    kFirstRead = kFindSubmission,
    kGetJob,
    kLoadUnfinished,
    kLoadBoards,
    kLoadOperators,
    kGetOperator,
    kLoadOperatorOwners,
    kLoadOperatorStates,
    kGetAttemptLogs,
    kMaxSeq,  // ListJobs: where the table ends
    kStatementCount,
  };

  SqliteStore(std::string path, sqlite3* db);

  // Open's last step: the read-only connection, once the file has its schema.
  absl::Status OpenReader(const SqliteStoreOptions& options) ABSL_LOCKS_EXCLUDED(read_mu_);

  // Open's steps after sqlite3_open_v2, on a store that owns the connection.
  absl::Status Configure(const SqliteStoreOptions& options) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CreateOrCheckSchema() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PrepareStatements() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Open's helpers; their SQLite failures are classified as Open's (see the file comment).
  // Exec runs `sql` (one or more statements, no results wanted) with sqlite3_exec.
  absl::Status Exec(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs a statement whose first row's first column is returned as text.
  absl::StatusOr<std::string> QueryText(const char* sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Statement> Prepare(const std::string& sql) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return PrepareOn(db_, sql);
  }
  // The same on either connection (the caller holds its mutex).
  absl::StatusOr<Statement> PrepareOn(sqlite3* db, const std::string& sql) const;

  // Runs `body` between BEGIN IMMEDIATE and COMMIT; rolls back if body or COMMIT fails. After a
  // commit, truncates the WAL if it has grown to wal_truncate_pages.
  absl::Status InTransaction(absl::FunctionRef<absl::Status()> body)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // SQLite's WAL hook (sqlite3_wal_hook), called by each commit with the pages in the WAL: notes
  // them (and a WAL that started over) and, from 1,000 on, checkpoints as SQLite's own hook would
  // (PASSIVE).
  static int OnWalCommit(void* store, sqlite3* db, const char* name,
                         int pages) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // The truncation described in the file comment, when wal_pages_ has reached truncate_at_.
  void MaybeTruncateWal() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) ABSL_LOCKS_EXCLUDED(read_mu_);
  // Steps a statement that returns no rows (INSERT/UPDATE/BEGIN...) and resets it.
  absl::Status StepDone(sqlite3_stmt* statement, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ListJobs's statement for the filter fields set in `mask` (naming jobs_live's condition too
  // if `live`: the state asked for is QUEUED or RUNNING), prepared on first use.
  absl::StatusOr<sqlite3_stmt*> ListStatement(int mask, bool live)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_);
  // list_statements_'s key bit for `live` (above JobFilter's condition bits).
  static constexpr int kLiveStateKey = 1 << 8;
  // Reads (seq, data) rows of a jobs query on the read-only connection; resets the statement.
  absl::StatusOr<std::vector<StoredJob>> ReadJobs(sqlite3_stmt* statement, const char* what)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_);
  // Binds the indexed columns and the data of `job` to parameters ?1..?7 of kInsertJob/kUpdateJob
  // (job_id, client_id, state, board_kind, op, priority, data); ?8 of the inserts and of
  // kUpdateJobBySeq is the seq.
  absl::Status BindJob(sqlite3_stmt* statement, const WriteBatch::JobWrite& job)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // A status with `code`, naming the path, `what` and SQLite's message for `rc` on `db` (either
  // connection; the caller holds its mutex).
  absl::Status ErrorOn(sqlite3* db, absl::StatusCode code, const char* what, int rc) const;
  absl::Status Error(absl::StatusCode code, const char* what, int rc) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ErrorOn(db_, code, what, rc);
  }
  // The same for the read-only connection, Internal.
  absl::Status ReadError(const char* what, int rc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_) {
    return ErrorOn(reader_, absl::StatusCode::kInternal, what, rc);
  }
  // An operators row (name, data) as a v1::Operator.
  absl::StatusOr<v1::Operator> OperatorRow(sqlite3_stmt* statement) const;
  sqlite3_stmt* ReadStatement(StatementId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(read_mu_) {
    return read_statements_[id - kFirstRead].get();
  }
  // Apply's parts, inside its transaction.
  absl::Status WriteSubmission(const WriteBatch::Submission& submission, bool replay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteJob(const WriteBatch::JobWrite& write, bool replay)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteBoard(const v1::Board& board, std::string* data)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status WriteLog(const WriteBatch::LogWrite& write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Error(const char* what, int rc) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return Error(absl::StatusCode::kInternal, what, rc);
  }

  const std::string path_;
  // The writer.
  mutable absl::Mutex mu_;
  sqlite3* db_ ABSL_GUARDED_BY(mu_);  // owned; never null
  std::array<Statement, kFirstRead> statements_ ABSL_GUARDED_BY(mu_);
  int busy_timeout_ms_ ABSL_GUARDED_BY(mu_) = 0;
  int wal_truncate_pages_ ABSL_GUARDED_BY(mu_) = 0;
  int wal_pages_ ABSL_GUARDED_BY(mu_) = 0;        // in the WAL after the last commit
  int64_t truncate_at_ ABSL_GUARDED_BY(mu_) = 0;  // wal_truncate_pages_, or more after a failure
  std::atomic<int64_t> wal_truncations_{0};
  std::atomic<int64_t> wal_truncations_blocked_{0};
  // The reader (opened read-only).
  mutable absl::Mutex read_mu_;
  sqlite3* reader_ ABSL_GUARDED_BY(read_mu_) = nullptr;  // owned; set by Open
  std::array<Statement, kStatementCount - kFirstRead> read_statements_ ABSL_GUARDED_BY(read_mu_);
  // ListJobs statements, prepared on first use, keyed by which filter fields are set (bit mask).
  absl::flat_hash_map<int, Statement> list_statements_ ABSL_GUARDED_BY(read_mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_SQLITE_STORE_H_
