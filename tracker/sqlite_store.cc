#include "tracker/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace benchfarm::tracker {
namespace {

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

std::string_view ColumnBytes(sqlite3_stmt* statement, int column) {
  // Call order matters: sqlite3_column_bytes after sqlite3_column_blob (SQLite's documented rule).
  const void* bytes = sqlite3_column_blob(statement, column);
  int size = sqlite3_column_bytes(statement, column);
  if (bytes == nullptr) return {};  // NULL or a zero-length blob
  return std::string_view(static_cast<const char*>(bytes), static_cast<size_t>(size));
}

}  // namespace

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

absl::Status SqliteStore::InTransaction(absl::FunctionRef<absl::Status()> body) {
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

absl::Status SqliteStore::WriteLog(const WriteBatch::LogWrite& write) {
  if (write.job_id.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite store ", path_, ": Apply: an attempt log has no job_id"));
  }
  sqlite3_stmt* statement = statements_[kUpsertAttemptLog].get();
  StatementUse use(statement);
  RETURN_IF_ERROR(BindText(statement, 1, write.job_id));
  RETURN_IF_ERROR(BindInt(statement, 2, write.log.attempt()));
  RETURN_IF_ERROR(BindText(statement, 3, write.log.board_id()));
  RETURN_IF_ERROR(BindText(statement, 4, write.log.text()));
  const int rc = sqlite3_step(statement);
  if (rc != SQLITE_DONE) return Error("Apply: attempt log", rc);
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
    for (const WriteBatch::LogWrite& log : batch.logs) RETURN_IF_ERROR(WriteLog(log));
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

absl::StatusOr<std::vector<v1::AttemptLog>> SqliteStore::GetAttemptLogs(const std::string& job_id) {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kGetAttemptLogs);
  StatementUse use(statement);
  RETURN_IF_ERROR(BindText(statement, 1, job_id));
  std::vector<v1::AttemptLog> logs;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    v1::AttemptLog& log = logs.emplace_back();
    log.set_attempt(sqlite3_column_int(statement, 0));
    log.set_board_id(std::string(ColumnBytes(statement, 1)));
    log.set_text(std::string(ColumnBytes(statement, 2)));
  }
  if (rc != SQLITE_DONE) return ReadError("GetAttemptLogs", rc);
  return logs;
}

absl::StatusOr<sqlite3_stmt*> SqliteStore::ListStatement(int mask, bool live) {
  const int key = mask | (live ? kLiveStateKey : 0);
  Statement& cached = list_statements_[key];
  if (cached == nullptr) {
    // Only the set fields become conditions, so SQLite can pick the matching index; parameter
    // numbers stay fixed whichever are present. ?7 ends the slice.
    std::string sql = "SELECT seq, data FROM jobs WHERE seq > ?1 AND seq <= ?7";
    if (mask & JobFilter::kByClient) sql += " AND client_id = ?2";
    if (mask & JobFilter::kByBoardKind) sql += " AND board_kind = ?3";
    if (mask & JobFilter::kByOp) sql += " AND op = ?4";
    if (mask & JobFilter::kByState) sql += " AND state = ?5";
    if (live) sql += " AND state IN (1, 2)";  // jobs_live's condition
    sql += " ORDER BY seq LIMIT ?6";
    absl::StatusOr<Statement> prepared = PrepareOn(reader_, sql);
    if (!prepared.ok()) {
      list_statements_.erase(key);
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
  // A live state is looked up in jobs_live (whose condition the statement then names).
  const bool live = filter.state == v1::QUEUED || filter.state == v1::RUNNING;
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
    ASSIGN_OR_RETURN(sqlite3_stmt * statement, ListStatement(mask, live));
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

absl::Status SqliteStore::SetOperatorState(const std::string& name, const std::string& version,
                                           const v1::OperatorState& state) {
  if (name.empty() || version.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "sqlite store ", path_, ": SetOperatorState: the operator name and version are required"));
  }
  std::string data;
  if (!state.SerializeToString(&data)) {
    return absl::InternalError(absl::StrCat("sqlite store ", path_, ": the state of operator ",
                                            name, " does not serialize"));
  }
  absl::MutexLock lock(&mu_);
  return InTransaction([&]() -> absl::Status {
    sqlite3_stmt* statement = statements_[kSetOperatorState].get();
    StatementUse use(statement);
    RETURN_IF_ERROR(BindText(statement, 1, name));
    RETURN_IF_ERROR(BindText(statement, 2, version));
    RETURN_IF_ERROR(BindBlob(statement, 3, data));
    const int rc = sqlite3_step(statement);
    if (rc != SQLITE_DONE) return Error("SetOperatorState", rc);
    return absl::OkStatus();
  });
}

absl::StatusOr<Store::OperatorStates> SqliteStore::LoadOperatorStates() {
  absl::MutexLock lock(&read_mu_);
  sqlite3_stmt* statement = ReadStatement(kLoadOperatorStates);
  StatementUse use(statement);
  OperatorStates states;
  int rc;
  while ((rc = sqlite3_step(statement)) == SQLITE_ROW) {
    std::pair<std::string, std::string> key(ColumnBytes(statement, 0), ColumnBytes(statement, 1));
    if (!states[key].ParseFromString(std::string(ColumnBytes(statement, 2)))) {
      return absl::InternalError(absl::StrCat("sqlite store ", path_, ": the state of operator ",
                                              key.first, " version ", key.second,
                                              " does not parse as a v1.OperatorState"));
    }
  }
  if (rc != SQLITE_DONE) return ReadError("LoadOperatorStates", rc);
  return states;
}

}  // namespace benchfarm::tracker
