// SqliteStore's opening: the file and its checks, the connections' configuration, the schema
// (created, or upgraded from an older version) and the prepared statements. See sqlite_store.h;
// reads, writes and the WAL's upkeep are in sqlite_store.cc.
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <iterator>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "base/status_macros.h"
#include "tracker/sqlite_store.h"

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

// Version 4 adds what changed about each operator version after it was added (retired, added
// again).
constexpr char kSchemaV4Sql[] = R"sql(
CREATE TABLE IF NOT EXISTS operator_states (
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  data BLOB NOT NULL,  -- serialized v1::OperatorState
  PRIMARY KEY (name, version)
) WITHOUT ROWID;
)sql";

// Version 5 adds the attempts' logs (text: valid UTF-8, as JobResult.log is).
constexpr char kSchemaV5Sql[] = R"sql(
CREATE TABLE IF NOT EXISTS attempt_logs (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  board_id TEXT NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY (job_id, attempt)
) WITHOUT ROWID;
)sql";

// Version 6 indexes by state only the live jobs (QUEUED, RUNNING): a job's last write, which ends
// it, no longer moves its entry (one index change fewer per result). Queries name the same
// condition to use it: LoadUnfinishedJobs, ListJobs for a live state.
static_assert(v1::QUEUED == 1 && v1::RUNNING == 2, "kSchemaV6Sql's states");
constexpr char kSchemaV6Sql[] = R"sql(
DROP INDEX IF EXISTS jobs_state;
CREATE INDEX IF NOT EXISTS jobs_live ON jobs (state) WHERE state IN (1, 2);
)sql";

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
  // The condition of the jobs_live index, word for word (so SQLite uses it).
  const std::string unfinished = "SELECT seq, data FROM jobs WHERE state IN (1, 2) ORDER BY seq";
  const std::pair<StatementId, std::string> sqls[] = {
      {kFindSubmission, "SELECT job_ids FROM submissions WHERE client_id = ?1 AND request_id = ?2"},
      {kGetJob, "SELECT seq, data FROM jobs WHERE job_id = ?1"},
      {kLoadUnfinished, unfinished},
      {kLoadBoards, "SELECT board_id, data FROM boards ORDER BY board_id"},
      {kLoadOperators, "SELECT name, data FROM operators ORDER BY seq"},
      {kGetOperator, "SELECT name, data FROM operators WHERE name = ?1 AND version = ?2"},
      {kLoadOperatorOwners, "SELECT name, owner FROM operator_owners ORDER BY name"},
      {kLoadOperatorStates, "SELECT name, version, data FROM operator_states"},
      {kGetAttemptLogs,
       "SELECT attempt, board_id, text FROM attempt_logs WHERE job_id = ?1 ORDER BY attempt"},
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
    if (version >= 1) {  // from before the catalog, its owners, states, logs or live index
      if (version < 2) RETURN_IF_ERROR(Exec(kSchemaV2Sql));
      if (version < 3) RETURN_IF_ERROR(Exec(kSchemaV3Sql));
      if (version < 4) RETURN_IF_ERROR(Exec(kSchemaV4Sql));
      if (version < 5) RETURN_IF_ERROR(Exec(kSchemaV5Sql));
      RETURN_IF_ERROR(Exec(kSchemaV6Sql));
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
    RETURN_IF_ERROR(Exec(kSchemaV4Sql));
    RETURN_IF_ERROR(Exec(kSchemaV5Sql));
    RETURN_IF_ERROR(Exec(kSchemaV6Sql));
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
      {kSetOperatorState,
       "INSERT INTO operator_states (name, version, data) VALUES (?1, ?2, ?3) "
       "ON CONFLICT (name, version) DO UPDATE SET data = excluded.data"},
      {kUpsertAttemptLog,
       "INSERT INTO attempt_logs (job_id, attempt, board_id, text) VALUES (?1, ?2, ?3, ?4) "
       "ON CONFLICT (job_id, attempt) DO UPDATE SET board_id = excluded.board_id, "
       "text = excluded.text"},
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

}  // namespace benchfarm::tracker
