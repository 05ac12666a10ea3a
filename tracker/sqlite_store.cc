#include "tracker/sqlite_store.h"

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"

namespace benchfarm::tracker {
namespace {

// The schema of version 1. seq is AUTOINCREMENT so a sequence number is never reused, even after
// the newest job is deleted by hand: clients page with after_seq. The single-column indexes also
// order by seq (SQLite appends the rowid to every index), so "state = ? AND seq > ? ORDER BY seq"
// is one index range. submissions.job_ids is a serialized v1::SubmitTrialsResponse: the answer a
// retried submission gets.
constexpr char kSchemaSql[] = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT UNIQUE NOT NULL,
  client_id TEXT NOT NULL,
  state INTEGER NOT NULL,
  board_kind TEXT NOT NULL,
  op TEXT NOT NULL,
  priority INTEGER NOT NULL,
  data BLOB NOT NULL  -- serialized v1::Job
);
CREATE INDEX IF NOT EXISTS jobs_client_seq ON jobs (client_id, seq);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs (state);
CREATE INDEX IF NOT EXISTS jobs_board_kind ON jobs (board_kind);
CREATE TABLE IF NOT EXISTS submissions (
  client_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  job_ids BLOB NOT NULL,  -- serialized v1::SubmitTrialsResponse
  PRIMARY KEY (client_id, request_id)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS boards (
  board_id TEXT PRIMARY KEY NOT NULL,
  data BLOB NOT NULL  -- serialized v1::Board
);
)sql";

// Version 2 adds the operator catalog.
constexpr char kSchemaV2Sql[] = R"sql(
CREATE TABLE IF NOT EXISTS operators (
  seq INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  data BLOB NOT NULL,  -- serialized v1::Operator
  UNIQUE (name, version)
);
)sql";

// Version 3 adds who each operator name belongs to.
constexpr char kSchemaV3Sql[] = R"sql(
CREATE TABLE IF NOT EXISTS operator_owners (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL
);
)sql";

// Resets a cached statement and drops its bindings when a use of it ends, whatever the path out,
// so the next use starts clean and no statement keeps a read transaction open. Build any error
// status before this runs: sqlite3_errmsg belongs to the last call.
class StatementUse {
 public:
  explicit StatementUse(sqlite3_stmt* statement) : statement_(statement) {}
  ~StatementUse() {
    sqlite3_reset(statement_);
    sqlite3_clear_bindings(statement_);
  }
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;

 private:
  sqlite3_stmt* statement_;
};

bool IsConstraintViolation(int rc) { return (rc & 0xff) == SQLITE_CONSTRAINT; }

// Failures that mean "this file cannot serve as the store" when they happen while opening it;
// anything else at that point is an unexpected SQLite failure (Internal).
absl::StatusCode OpenErrorCode(int rc) {
  switch (rc & 0xff) {
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
    case SQLITE_IOERR:
    case SQLITE_FULL:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return absl::StatusCode::kInternal;
  }
}

// What stands out about `path` on the file system when SQLite could not use it, as a hint for
// the operator ("" if nothing does). SQLite's own errno can mislead: after failing to create a
// file it retries read-only and reports that attempt's ENOENT.
std::string LocationProblem(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "."
                          : slash == 0               ? "/"
                                                     : path.substr(0, slash);
  struct stat info;
  if (stat(dir.c_str(), &info) != 0) {
    return absl::StrCat("directory ", dir, ": ", std::generic_category().message(errno));
  }
  if (!S_ISDIR(info.st_mode)) return absl::StrCat(dir, " is not a directory");
  if (access(dir.c_str(), W_OK) != 0) return absl::StrCat("directory ", dir, " is not writable");
  if (stat(path.c_str(), &info) == 0) {
    if (S_ISDIR(info.st_mode)) return "the path is a directory";
    if (access(path.c_str(), W_OK) != 0) return "the file is not writable";
  }
  return "";
}

// Adds LocationProblem's hint to a failure of Open that is about the file.
absl::Status WithLocationHint(absl::Status status, const std::string& path) {
  if (status.code() != absl::StatusCode::kFailedPrecondition) return status;
  const std::string problem = LocationProblem(path);
  if (problem.empty()) return status;
  return absl::Status(status.code(), absl::StrCat(status.message(), " [", problem, "]"));
}

std::string_view ColumnBytes(sqlite3_stmt* statement, int column) {
  // Call order matters: sqlite3_column_bytes after sqlite3_column_blob (SQLite's documented rule).
  const void* bytes = sqlite3_column_blob(statement, column);
  int size = sqlite3_column_bytes(statement, column);
  if (bytes == nullptr) return {};  // NULL or a zero-length blob
  return std::string_view(static_cast<const char*>(bytes), static_cast<size_t>(size));
}

}  // namespace

void SqliteStore::StatementDeleter::operator()(sqlite3_stmt* statement) const {
  sqlite3_finalize(statement);
}

SqliteStore::SqliteStore(std::string path, sqlite3* db) : path_(std::move(path)), db_(db) {}

SqliteStore::~SqliteStore() {
  // Statements first: sqlite3_close_v2 would otherwise keep a connection alive as a zombie. The
  // reader closes first, so the writer is the last connection and checkpoints the WAL.
  {
    absl::MutexLock lock(&read_mu_);
    list_statements_.clear();
    for (Statement& statement : read_statements_) statement.reset();
    sqlite3_close_v2(reader_);  // null (Open failed before it) is a no-op
  }
  absl::MutexLock lock(&mu_);
  for (Statement& statement : statements_) statement.reset();
  sqlite3_close_v2(db_);
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               SqliteStoreOptions options) {
  if (path.empty()) return absl::InvalidArgumentError("sqlite store: empty database path");
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite store ", path, ": busy_timeout_ms is negative (", options.busy_timeout_ms, ")"));
  }
  if (options.wal_truncate_pages <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("sqlite store ", path,
                                                   ": wal_truncate_pages is not positive (",
                                                   options.wal_truncate_pages, ")"));
  }
  sqlite3* db = nullptr;
  // NOMUTEX: mu_ already serializes every use of the connection.
  const int rc = sqlite3_open_v2(
      path.c_str(), &db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE,
      nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    const int system_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
    if (system_errno != 0) {
      absl::StrAppend(&message, " (", std::generic_category().message(system_errno), ")");
    }
    sqlite3_close_v2(db);  // a handle is returned even on failure; null is a no-op
    return WithLocationHint(
        absl::Status(OpenErrorCode(rc),
                     absl::StrCat("sqlite store ", path, ": cannot open: ", message)),
        path);
  }
  auto store = absl::WrapUnique(new SqliteStore(path, db));
  absl::Status status;
  {
    absl::MutexLock lock(&store->mu_);
    status = store->Configure(options);
    if (status.ok()) status = store->CreateOrCheckSchema();
    if (status.ok()) status = store->PrepareStatements();
  }
  if (status.ok()) status = store->OpenReader(options);
  if (!status.ok()) return WithLocationHint(std::move(status), path);
  return store;
}

absl::Status SqliteStore::OpenReader(const SqliteStoreOptions& options) {
  absl::MutexLock lock(&read_mu_);
  // NOMUTEX: read_mu_ serializes every use of the connection.
  const int rc =
      sqlite3_open_v2(path_.c_str(), &reader_,
                      SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nullptr);
  if (rc != SQLITE_OK) {
    if (reader_ == nullptr) {
      return absl::InternalError(
          absl::StrCat("sqlite store ", path_, ": cannot open a reader: ", sqlite3_errstr(rc)));
    }
    return ErrorOn(reader_, OpenErrorCode(rc), "opening a reader", rc);
  }
  sqlite3_busy_timeout(reader_, options.busy_timeout_ms);
  const std::string unfinished = absl::StrCat("SELECT seq, data FROM jobs WHERE state IN (",
                                              v1::QUEUED, ", ", v1::RUNNING, ") ORDER BY seq");
  const std::pair<StatementId, std::string> sqls[] = {
      {kFindSubmission, "SELECT job_ids FROM submissions WHERE client_id = ?1 AND request_id = ?2"},
      {kGetJob, "SELECT seq, data FROM jobs WHERE job_id = ?1"},
      {kLoadUnfinished, unfinished},
      {kLoadBoards, "SELECT board_id, data FROM boards ORDER BY board_id"},
      {kLoadOperators, "SELECT name, data FROM operators ORDER BY seq"},
      {kGetOperator, "SELECT name, data FROM operators WHERE name = ?1 AND version = ?2"},
      {kLoadOperatorOwners, "SELECT name, owner FROM operator_owners ORDER BY name"},
      {kMaxSeq, "SELECT coalesce(max(seq), 0) FROM jobs"},
  };
  static_assert(std::size(sqls) == kStatementCount - kFirstRead);
  for (const auto& [id, sql] : sqls) {
    ASSIGN_OR_RETURN(read_statements_[id - kFirstRead], PrepareOn(reader_, sql));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::Configure(const SqliteStoreOptions& options) {
  busy_timeout_ms_ = options.busy_timeout_ms;
  sqlite3_busy_timeout(db_, busy_timeout_ms_);
  wal_truncate_pages_ = options.wal_truncate_pages;
  truncate_at_ = wal_truncate_pages_;
  // Replaces SQLite's autocheckpoint hook (OnWalCommit does its work too).
  sqlite3_wal_hook(db_, &SqliteStore::OnWalCommit, this);

  // SQLite quietly falls back to read-only when the file is not writable; every later write
  // would fail, so refuse now.
  if (sqlite3_db_readonly(db_, "main") == 1) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite store ", path_, ": opened read-only (the file or its directory is not writable)"));
  }

  // The first statement reads the file: a file that is not a database fails here, with
  // SQLITE_NOTADB. A crashed writer's WAL is recovered here too, before the check reads it.
  sqlite3_stmt* raw_check = nullptr;
  int rc = sqlite3_prepare_v2(db_, "PRAGMA quick_check(10)", -1, &raw_check, nullptr);
  Statement check(raw_check);
  if (rc != SQLITE_OK) return Error(OpenErrorCode(rc), "PRAGMA quick_check", rc);
  std::vector<std::string> problems;
  while ((rc = sqlite3_step(check.get())) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(check.get(), 0);
    // Multi-line reports ("*** in database main ***\nOn tree page ...") become one line.
    problems.push_back(absl::StrReplaceAll(
        text != nullptr ? reinterpret_cast<const char*>(text) : "", {{"\n", " "}}));
  }
  if (rc != SQLITE_DONE) return Error(OpenErrorCode(rc), "PRAGMA quick_check", rc);
  check.reset();
  if (problems != std::vector<std::string>{"ok"}) {
    return absl::FailedPreconditionError(absl::StrCat(
        "sqlite store ", path_,
        ": the database is damaged; PRAGMA quick_check says: ", absl::StrJoin(problems, "; ")));
  }

  ASSIGN_OR_RETURN(std::string mode, QueryText("PRAGMA journal_mode=WAL"));
  if (mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat("sqlite store ", path_, ": journal_mode is '", mode,
                     "', not 'wal' (WAL needs a local file system with shared memory and a "
                     "writable directory)"));
  }
  RETURN_IF_ERROR(
      Exec(options.synchronous_full ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=ON"));
  // When the WAL starts over after a checkpoint, SQLite cuts a file that grew past this back to
  // it (without a limit the file keeps its largest size: after an outside reader held it for a
  // while, hundreds of MiB).
  ASSIGN_OR_RETURN(std::string page_size_text, QueryText("PRAGMA page_size"));
  int64_t page_size = 0;
  if (!absl::SimpleAtoi(page_size_text, &page_size) || page_size <= 0) {
    return absl::InternalError(
        absl::StrCat("sqlite store ", path_, ": PRAGMA page_size returned '", page_size_text, "'"));
  }
  RETURN_IF_ERROR(
      Exec(absl::StrCat("PRAGMA journal_size_limit=", page_size * wal_truncate_pages_).c_str()));

  for (auto [id, sql] : {std::pair{kBegin, "BEGIN IMMEDIATE"}, std::pair{kCommit, "COMMIT"},
                         std::pair{kRollback, "ROLLBACK"}}) {
    ASSIGN_OR_RETURN(statements_[id], Prepare(sql));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::CreateOrCheckSchema() {
  return InTransaction([&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::string version_text, QueryText("PRAGMA user_version"));
    int version = 0;
    if (!absl::SimpleAtoi(version_text, &version)) {
      return absl::InternalError(absl::StrCat(
          "sqlite store ", path_, ": PRAGMA user_version returned '", version_text, "'"));
    }
    if (version > kSchemaVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("sqlite store ", path_, ": created by a newer benchfarm (schema version ",
                       version, "; this build knows versions up to ", kSchemaVersion, ")"));
    }
    if (version == kSchemaVersion) return absl::OkStatus();
    if (version == 1 || version == 2) {  // from before the catalog, or its owners: add them
      if (version == 1) RETURN_IF_ERROR(Exec(kSchemaV2Sql));
      RETURN_IF_ERROR(Exec(kSchemaV3Sql));
      return Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion).c_str());
    }
    // Version 0: a new, empty file gets the schema; a file with someone else's tables is left
    // alone rather than mixed into.
    ASSIGN_OR_RETURN(std::string objects, QueryText("SELECT count(*) FROM sqlite_master"));
    if (objects != "0") {
      return absl::FailedPreconditionError(absl::StrCat(
          "sqlite store ", path_, ": holds ", objects,
          " tables or indexes but no benchfarm schema version (not a benchfarm store)"));
    }
    RETURN_IF_ERROR(Exec(kSchemaSql));
    RETURN_IF_ERROR(Exec(kSchemaV2Sql));
    RETURN_IF_ERROR(Exec(kSchemaV3Sql));
    return Exec(absl::StrCat("PRAGMA user_version=", kSchemaVersion).c_str());
  });
}

absl::Status SqliteStore::PrepareStatements() {
  const std::pair<StatementId, std::string> sqls[] = {
      {kInsertSubmission,
       "INSERT INTO submissions (client_id, request_id, job_ids) VALUES (?1, ?2, ?3)"},
      {kInsertJob,
       "INSERT INTO jobs (job_id, client_id, state, board_kind, op, priority, data, seq) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"},
      // A job's client, kind, op and priority never change after it is inserted: an update
      // leaves those columns (and the indexes on them) alone (?2, ?4-?6 are bound, unused).
      {kUpdateJob, "UPDATE jobs SET state = ?3, data = ?7 WHERE job_id = ?1"},
      // The tracker knows its jobs' seq: the row found by rowid, not through the job_id index.
      {kUpdateJobBySeq, "UPDATE jobs SET state = ?3, data = ?7 WHERE seq = ?8 AND job_id = ?1"},
      {kUpsertBoard,
       "INSERT INTO boards (board_id, data) VALUES (?1, ?2) "
       "ON CONFLICT (board_id) DO UPDATE SET data = excluded.data"},
      {kInsertOperator, "INSERT INTO operators (name, version, data) VALUES (?1, ?2, ?3)"},
      {kSetOperatorOwner,
       "INSERT INTO operator_owners (name, owner) VALUES (?1, ?2) "
       "ON CONFLICT (name) DO UPDATE SET owner = excluded.owner"},
      // AUTOINCREMENT's high-water mark: a number once given is never given again.
      {kInsertSubmissionReplay,
       "INSERT INTO submissions (client_id, request_id, job_ids) VALUES (?1, ?2, ?3) "
       "ON CONFLICT (client_id, request_id) DO NOTHING"},
      {kInsertJobReplay,
       "INSERT INTO jobs (job_id, client_id, state, board_kind, op, priority, data, seq) "
       "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (job_id) DO UPDATE SET "
       "client_id = excluded.client_id, state = excluded.state, board_kind = excluded.board_kind, "
       "op = excluded.op, priority = excluded.priority, data = excluded.data"},
      {kLastSeq,
       "SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'jobs'), 0), "
       "coalesce((SELECT max(seq) FROM jobs), 0))"},
  };
  for (const auto& [id, sql] : sqls) {
    ASSIGN_OR_RETURN(statements_[id], Prepare(sql));
  }
  return absl::OkStatus();
}

absl::StatusOr<SqliteStore::Statement> SqliteStore::PrepareOn(sqlite3* db,
                                                              const std::string& sql) const {
  sqlite3_stmt* statement = nullptr;
  // PERSISTENT: these statements live as long as the store, so SQLite keeps them out of its
  // short-lived lookaside memory.
  const int rc = sqlite3_prepare_v3(db, sql.c_str(), static_cast<int>(sql.size() + 1),
                                    SQLITE_PREPARE_PERSISTENT, &statement, nullptr);
  Statement owned(statement);
  if (rc != SQLITE_OK) {
    return ErrorOn(db, absl::StatusCode::kInternal, absl::StrCat("preparing \"", sql, "\"").c_str(),
                   rc);
  }
  return owned;
}

absl::Status SqliteStore::Exec(const char* sql) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return Error(OpenErrorCode(rc), sql, rc);
  return absl::OkStatus();
}

absl::StatusOr<std::string> SqliteStore::QueryText(const char* sql) {
  ASSIGN_OR_RETURN(Statement statement, Prepare(sql));
  const int rc = sqlite3_step(statement.get());
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE) {
      return absl::InternalError(absl::StrCat("sqlite store ", path_, ": ", sql, ": no result"));
    }
    return Error(OpenErrorCode(rc), sql, rc);
  }
  const unsigned char* text = sqlite3_column_text(statement.get(), 0);
  return std::string(text != nullptr ? reinterpret_cast<const char*>(text) : "");
}

int SqliteStore::OnWalCommit(void* store, sqlite3* db, const char* name, int pages) {
  // Called inside the writer's COMMIT, so with mu_ held (hence no thread-safety analysis).
  auto* self = static_cast<SqliteStore*>(store);
  // Fewer pages than after the commit before: the WAL started over (a checkpoint finished once
  // the reader holding it let go), so a limit raised after a blocked attempt no longer applies.
  if (pages < self->wal_pages_) self->truncate_at_ = self->wal_truncate_pages_;
  self->wal_pages_ = pages;
  constexpr int kAutoCheckpointPages = 1000;  // SQLITE_DEFAULT_WAL_AUTOCHECKPOINT
  if (pages >= kAutoCheckpointPages) {
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
  return SQLITE_OK;
}

void SqliteStore::MaybeTruncateWal() {
  if (wal_pages_ < truncate_at_) return;
  absl::MutexLock read_lock(&read_mu_);  // no read of this store's is in a snapshot meanwhile
  sqlite3_busy_timeout(db_, kTruncateBusyMs);
  const int rc =
      sqlite3_wal_checkpoint_v2(db_, "main", SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  sqlite3_busy_timeout(db_, busy_timeout_ms_);
  if (rc == SQLITE_OK) {
    wal_truncations_.fetch_add(1, std::memory_order_relaxed);
    wal_pages_ = 0;
    truncate_at_ = wal_truncate_pages_;
  } else {
    // Another process's reader (or a failing disk, which the next commit reports): try again
    // once as many pages more have been written, not on every commit.
    wal_truncations_blocked_.fetch_add(1, std::memory_order_relaxed);
    truncate_at_ = static_cast<int64_t>(wal_pages_) + wal_truncate_pages_;
  }
}

StoreUpkeep SqliteStore::Upkeep() const {
  StoreUpkeep upkeep;
  upkeep.wal_truncations = wal_truncations_.load(std::memory_order_relaxed);
  upkeep.wal_truncations_blocked = wal_truncations_blocked_.load(std::memory_order_relaxed);
  return upkeep;
}

template <typename Body>
absl::Status SqliteStore::InTransaction(Body body) {
  RETURN_IF_ERROR(StepDone(statements_[kBegin].get(), "BEGIN IMMEDIATE"));
  absl::Status status = body();
  if (status.ok()) {
    status = StepDone(statements_[kCommit].get(), "COMMIT");
    if (status.ok()) {
      MaybeTruncateWal();
      return status;
    }
  }
  // Some errors (SQLITE_FULL, I/O errors) have already rolled the transaction back.
  if (sqlite3_get_autocommit(db_) == 0) {
    // The first error is the one worth reporting; a failed ROLLBACK leaves nothing committed.
    StepDone(statements_[kRollback].get(), "ROLLBACK").IgnoreError();
  }
  return status;
}

absl::Status SqliteStore::StepDone(sqlite3_stmt* statement, const char* what) {
  StatementUse use(statement);
  const int rc = sqlite3_step(statement);
  if (rc != SQLITE_DONE) return Error(what, rc);
  return absl::OkStatus();
}

absl::Status SqliteStore::ErrorOn(sqlite3* db, absl::StatusCode code, const char* what,
                                  int rc) const {
  const char* message = sqlite3_errmsg(db);
  const char* generic = sqlite3_errstr(rc);
  std::string text = absl::StrCat("sqlite store ", path_, ": ", what, ": ", message);
  if (std::strcmp(message, generic) != 0) absl::StrAppend(&text, " (", generic, ")");
  const int primary = rc & 0xff;
  const int system_errno = sqlite3_system_errno(db);
  if ((primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN || primary == SQLITE_FULL) &&
      system_errno != 0) {
    absl::StrAppend(&text, ": ", std::generic_category().message(system_errno));
  }
  return absl::Status(code, text);
}

namespace {

absl::Status BindText(sqlite3_stmt* statement, int index, std::string_view text) {
  // SQLITE_STATIC: every bound string outlives the statement's use (StatementUse).
  if (sqlite3_bind_text64(statement, index, text.data(), text.size(), SQLITE_STATIC, SQLITE_UTF8) !=
      SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat("binding parameter ", index, " (", text.size(),
                     " bytes): ", sqlite3_errmsg(sqlite3_db_handle(statement))));
  }
  return absl::OkStatus();
}

absl::Status BindBlob(sqlite3_stmt* statement, int index, std::string_view bytes) {
  if (sqlite3_bind_blob64(statement, index, bytes.data(), bytes.size(), SQLITE_STATIC) !=
      SQLITE_OK) {
    return absl::InternalError(
        absl::StrCat("binding parameter ", index, " (", bytes.size(),
                     " bytes): ", sqlite3_errmsg(sqlite3_db_handle(statement))));
  }
  return absl::OkStatus();
}

absl::Status BindInt(sqlite3_stmt* statement, int index, int64_t value) {
  if (sqlite3_bind_int64(statement, index, value) != SQLITE_OK) {
    return absl::InternalError(absl::StrCat("binding parameter ", index, ": ",
                                            sqlite3_errmsg(sqlite3_db_handle(statement))));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SqliteStore::BindJob(sqlite3_stmt* statement, const WriteBatch::JobWrite& job) {
  RETURN_IF_ERROR(BindText(statement, 1, job.job_id));
  RETURN_IF_ERROR(BindText(statement, 2, job.client_id));
  RETURN_IF_ERROR(BindInt(statement, 3, job.state));
  RETURN_IF_ERROR(BindText(statement, 4, job.board_kind));
  RETURN_IF_ERROR(BindText(statement, 5, job.op));
  RETURN_IF_ERROR(BindInt(statement, 6, job.priority));
  return BindBlob(statement, 7, job.data);
}

absl::StatusOr<std::vector<StoredJob>> SqliteStore::ReadJobs(sqlite3_stmt* statement,
                                                             const char* what) {
  StatementUse use(statement);
  std::vector<StoredJob> jobs;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    StoredJob& stored = jobs.emplace_back();
    stored.seq = sqlite3_column_int64(statement, 0);
    const std::string_view data = ColumnBytes(statement, 1);
    if (!stored.job.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return absl::InternalError(absl::StrCat("sqlite store ", path_, ": ", what, ": job seq ",
                                              stored.seq, " does not parse as a v1.Job"));
    }
  }
  if (rc != SQLITE_DONE) return ReadError(what, rc);
  return jobs;
}

absl::StatusOr<std::optional<std::vector<std::string>>> SqliteStore::FindSubmission(
    const std::string& client_id, const std::string& request_id) {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kFindSubmission);
  StatementUse use(statement);
  RETURN_IF_ERROR(BindText(statement, 1, client_id));
  RETURN_IF_ERROR(BindText(statement, 2, request_id));
  const int rc = sqlite3_step(statement);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) return ReadError("FindSubmission", rc);
  const std::string_view data = ColumnBytes(statement, 0);
  v1::SubmitTrialsResponse ids;
  if (!ids.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return absl::InternalError(absl::StrCat("sqlite store ", path_, ": submission (", client_id,
                                            ", ", request_id, ") does not parse"));
  }
  return std::vector<std::string>(ids.job_ids().begin(), ids.job_ids().end());
}

absl::Status SqliteStore::WriteSubmission(const WriteBatch::Submission& submission, bool replay) {
  v1::SubmitTrialsResponse ids;
  for (const std::string& id : submission.job_ids) ids.add_job_ids(id);
  const std::string ids_data = ids.SerializeAsString();
  sqlite3_stmt* statement = statements_[replay ? kInsertSubmissionReplay : kInsertSubmission].get();
  StatementUse use(statement);
  RETURN_IF_ERROR(BindText(statement, 1, submission.client_id));
  RETURN_IF_ERROR(BindText(statement, 2, submission.request_id));
  RETURN_IF_ERROR(BindBlob(statement, 3, ids_data));
  const int rc = sqlite3_step(statement);
  if (IsConstraintViolation(rc)) {
    return absl::AlreadyExistsError(absl::StrCat("sqlite store ", path_, ": submission (",
                                                 submission.client_id, ", ", submission.request_id,
                                                 ") is already stored"));
  }
  if (rc != SQLITE_DONE) return Error("Apply: submission", rc);
  return absl::OkStatus();
}

absl::Status SqliteStore::WriteJob(const WriteBatch::JobWrite& write, bool replay) {
  if (write.job_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite store ", path_, ": Apply: a job has no job_id"));
  }
  if (write.insert && write.seq <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("sqlite store ", path_, ": Apply: job ",
                                                   write.job_id, " to insert has no seq"));
  }
  const StatementId id = write.insert ? (replay ? kInsertJobReplay : kInsertJob)
                                      : (write.seq > 0 ? kUpdateJobBySeq : kUpdateJob);
  sqlite3_stmt* statement = statements_[id].get();
  StatementUse use(statement);
  RETURN_IF_ERROR(BindJob(statement, write));
  if (id != kUpdateJob) RETURN_IF_ERROR(BindInt(statement, 8, write.seq));
  const int rc = sqlite3_step(statement);
  if (write.insert && IsConstraintViolation(rc)) {
    return absl::AlreadyExistsError(absl::StrCat("sqlite store ", path_, ": job ", write.job_id,
                                                 " (seq ", write.seq, ") is already stored"));
  }
  if (rc != SQLITE_DONE) return Error(write.insert ? "Apply: insert job" : "Apply: update job", rc);
  if (!write.insert && sqlite3_changes(db_) == 0) {
    return absl::NotFoundError(
        absl::StrCat("sqlite store ", path_, ": Apply: no job ", write.job_id, " to update"));
  }
  return absl::OkStatus();
}

absl::Status SqliteStore::WriteBoard(const v1::Board& board, std::string* data) {
  if (board.board_id().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite store ", path_, ": Apply: a board has no board_id"));
  }
  if (!board.SerializeToString(data)) {
    return absl::InternalError(
        absl::StrCat("sqlite store ", path_, ": board ", board.board_id(), " does not serialize"));
  }
  sqlite3_stmt* statement = statements_[kUpsertBoard].get();
  StatementUse use(statement);
  RETURN_IF_ERROR(BindText(statement, 1, board.board_id()));
  RETURN_IF_ERROR(BindBlob(statement, 2, *data));
  const int rc = sqlite3_step(statement);
  if (rc != SQLITE_DONE) return Error("Apply: board", rc);
  return absl::OkStatus();
}

absl::Status SqliteStore::Apply(const WriteBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    std::string data;  // reused: one allocation for the whole batch
    for (const WriteBatch::Submission& submission : batch.submissions) {
      RETURN_IF_ERROR(WriteSubmission(submission, batch.replay));
    }
    for (const WriteBatch::JobWrite& write : batch.jobs) {
      RETURN_IF_ERROR(WriteJob(write, batch.replay));
    }
    for (const v1::Board& board : batch.boards) RETURN_IF_ERROR(WriteBoard(board, &data));
    return absl::OkStatus();
  });
}

absl::StatusOr<int64_t> SqliteStore::LastSeq() {
  absl::MutexLock lock(&mu_);
  sqlite3_stmt* statement = statements_[kLastSeq].get();
  StatementUse use(statement);
  const int rc = sqlite3_step(statement);
  if (rc != SQLITE_ROW) return Error("LastSeq", rc);
  return sqlite3_column_int64(statement, 0);
}

absl::StatusOr<std::optional<StoredJob>> SqliteStore::GetJob(const std::string& job_id) {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kGetJob);
  RETURN_IF_ERROR(BindText(statement, 1, job_id));
  ASSIGN_OR_RETURN(std::vector<StoredJob> jobs, ReadJobs(statement, "GetJob"));
  if (jobs.empty()) return std::nullopt;
  return std::move(jobs.front());
}

absl::StatusOr<sqlite3_stmt*> SqliteStore::ListStatement(int mask) {
  Statement& cached = list_statements_[mask];
  if (cached == nullptr) {
    // Only the set fields become conditions, so SQLite can pick the matching index; parameter
    // numbers stay fixed whichever are present. ?7 ends the slice.
    std::string sql = "SELECT seq, data FROM jobs WHERE seq > ?1 AND seq <= ?7";
    if (mask & JobFilter::kByClient) sql += " AND client_id = ?2";
    if (mask & JobFilter::kByBoardKind) sql += " AND board_kind = ?3";
    if (mask & JobFilter::kByOp) sql += " AND op = ?4";
    if (mask & JobFilter::kByState) sql += " AND state = ?5";
    sql += " ORDER BY seq LIMIT ?6";
    absl::StatusOr<Statement> prepared = PrepareOn(reader_, sql);
    if (!prepared.ok()) {
      list_statements_.erase(mask);
      return prepared.status();
    }
    cached = *std::move(prepared);
  }
  return cached.get();
}

absl::StatusOr<std::vector<StoredJob>> SqliteStore::ListJobs(const JobFilter& filter) {
  std::vector<StoredJob> jobs;
  if (filter.limit <= 0) return jobs;
  const int mask = filter.Conditions();
  const size_t limit = static_cast<size_t>(filter.limit);
  int64_t last = -1;  // the highest seq when the listing began: later jobs wait for the next call
  // Slices of kListSliceSeqs sequence numbers, each a read transaction of its own (see the file
  // comment). Sequence numbers start at 1.
  for (int64_t after = std::max<int64_t>(filter.after_seq, 0); jobs.size() < limit;
       after += kListSliceSeqs) {
    absl::MutexLock lock(&read_mu_);
    if (last < 0) {
      sqlite3_stmt* max_seq = ReadStatement(kMaxSeq);
      StatementUse use(max_seq);
      const int rc = sqlite3_step(max_seq);
      if (rc != SQLITE_ROW) return ReadError("ListJobs", rc);
      last = sqlite3_column_int64(max_seq, 0);
    }
    if (after >= last) break;
    ASSIGN_OR_RETURN(sqlite3_stmt * statement, ListStatement(mask));
    RETURN_IF_ERROR(BindInt(statement, 1, after));
    if (mask & JobFilter::kByClient) RETURN_IF_ERROR(BindText(statement, 2, filter.client_id));
    if (mask & JobFilter::kByBoardKind) {
      RETURN_IF_ERROR(BindText(statement, 3, filter.board_kind));
    }
    if (mask & JobFilter::kByOp) RETURN_IF_ERROR(BindText(statement, 4, filter.op));
    if (mask & JobFilter::kByState) RETURN_IF_ERROR(BindInt(statement, 5, filter.state));
    RETURN_IF_ERROR(BindInt(statement, 6, static_cast<int64_t>(limit - jobs.size())));
    RETURN_IF_ERROR(BindInt(statement, 7, after + kListSliceSeqs));
    ASSIGN_OR_RETURN(std::vector<StoredJob> slice, ReadJobs(statement, "ListJobs"));
    if (jobs.empty()) {
      jobs = std::move(slice);
    } else {
      jobs.insert(jobs.end(), std::make_move_iterator(slice.begin()),
                  std::make_move_iterator(slice.end()));
    }
  }
  return jobs;
}

absl::StatusOr<std::vector<StoredJob>> SqliteStore::LoadUnfinishedJobs() {
  absl::MutexLock lock(&read_mu_);
  return ReadJobs(ReadStatement(kLoadUnfinished), "LoadUnfinishedJobs");
}

absl::StatusOr<std::vector<v1::Board>> SqliteStore::LoadBoards() {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kLoadBoards);
  StatementUse use(statement);
  std::vector<v1::Board> boards;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    const std::string_view data = ColumnBytes(statement, 1);
    if (!boards.emplace_back().ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      const unsigned char* id = sqlite3_column_text(statement, 0);
      return absl::InternalError(absl::StrCat(
          "sqlite store ", path_, ": board ",
          id != nullptr ? reinterpret_cast<const char*>(id) : "", " does not parse as a v1.Board"));
    }
  }
  if (rc != SQLITE_DONE) return ReadError("LoadBoards", rc);
  return boards;
}

absl::Status SqliteStore::InsertOperator(const v1::Operator& op) {
  if (op.name().empty() || op.version().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite store ", path_, ": InsertOperator: the operator has no name or version"));
  }
  std::string data;
  if (!op.SerializeToString(&data)) {
    return absl::InternalError(
        absl::StrCat("sqlite store ", path_, ": operator ", op.name(), " does not serialize"));
  }
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    sqlite3_stmt* statement = statements_[kInsertOperator].get();
    StatementUse use(statement);
    RETURN_IF_ERROR(BindText(statement, 1, op.name()));
    RETURN_IF_ERROR(BindText(statement, 2, op.version()));
    RETURN_IF_ERROR(BindBlob(statement, 3, data));
    const int rc = sqlite3_step(statement);
    if ((rc & 0xff) == SQLITE_CONSTRAINT) {
      return absl::AlreadyExistsError(absl::StrCat("sqlite store ", path_, ": operator ", op.name(),
                                                   " version ", op.version(),
                                                   " is already stored"));
    }
    if (rc != SQLITE_DONE) return Error("InsertOperator", rc);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<v1::Operator>> SqliteStore::LoadOperators() {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kLoadOperators);
  StatementUse use(statement);
  std::vector<v1::Operator> ops;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    ASSIGN_OR_RETURN(v1::Operator op, OperatorRow(statement));
    WithoutFiles(&op);
    ops.push_back(std::move(op));
  }
  if (rc != SQLITE_DONE) return ReadError("LoadOperators", rc);
  return ops;
}

absl::StatusOr<v1::Operator> SqliteStore::OperatorRow(sqlite3_stmt* statement) const {
  const std::string_view data = ColumnBytes(statement, 1);
  v1::Operator op;
  if (!op.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    const unsigned char* name = sqlite3_column_text(statement, 0);
    return absl::InternalError(
        absl::StrCat("sqlite store ", path_, ": operator ",
                     name != nullptr ? reinterpret_cast<const char*>(name) : "",
                     " does not parse as a v1.Operator"));
  }
  return op;
}

absl::StatusOr<std::optional<v1::Operator>> SqliteStore::GetOperator(const std::string& name,
                                                                     const std::string& version) {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kGetOperator);
  StatementUse use(statement);
  RETURN_IF_ERROR(BindText(statement, 1, name));
  RETURN_IF_ERROR(BindText(statement, 2, version));
  const int rc = sqlite3_step(statement);
  if (rc == SQLITE_DONE) return std::nullopt;
  if (rc != SQLITE_ROW) return ReadError("GetOperator", rc);
  return OperatorRow(statement);
}

absl::Status SqliteStore::SetOperatorOwner(const std::string& name, const std::string& owner) {
  if (name.empty() || owner.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite store ", path_, ": SetOperatorOwner: the operator name and owner are required"));
  }
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    sqlite3_stmt* statement = statements_[kSetOperatorOwner].get();
    StatementUse use(statement);
    RETURN_IF_ERROR(BindText(statement, 1, name));
    RETURN_IF_ERROR(BindText(statement, 2, owner));
    const int rc = sqlite3_step(statement);
    if (rc != SQLITE_DONE) return Error("SetOperatorOwner", rc);
    return absl::OkStatus();
  });
}

absl::StatusOr<std::map<std::string, std::string>> SqliteStore::LoadOperatorOwners() {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kLoadOperatorOwners);
  StatementUse use(statement);
  std::map<std::string, std::string> owners;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    owners[std::string(ColumnBytes(statement, 0))] = std::string(ColumnBytes(statement, 1));
  }
  if (rc != SQLITE_DONE) return ReadError("LoadOperatorOwners", rc);
  return owners;
}

}  // namespace benchfarm::tracker
