#include "tracker/pg_store.h"

#include <algorithm>
#include <array>
#include <deque>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "tracker/pg_connection.h"

namespace benchfarm::tracker {
namespace {

using pg::Cell;
using pg::Int8Cell;
using pg::kByteaOid;
using pg::kInt4Oid;
using pg::kInt8Oid;
using pg::kTextOid;
using pg::MakeStatement;
using pg::Params;
using pg::Result;
using pg::Statement;

// The schema of version 1: SqliteStore's tables and columns. SQLite appends the rowid (seq) to
// every index, so its single-column indexes also order by seq; here seq is spelled out, so
// "state = $1 AND seq > $2 ORDER BY seq" is one index range as well. submissions.job_ids is a
// serialized v1::SubmitTrialsResponse. benchfarm_meta has exactly one row.
constexpr char kSchemaSql[] = R"sql(
CREATE TABLE benchfarm_meta (
  id BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (id),
  schema_version INTEGER NOT NULL,
  last_seq BIGINT NOT NULL  -- the highest job seq ever given
);
CREATE TABLE jobs (
  seq BIGINT PRIMARY KEY,
  job_id TEXT UNIQUE NOT NULL,
  client_id TEXT NOT NULL,
  state INTEGER NOT NULL,
  board_kind TEXT NOT NULL,
  op TEXT NOT NULL,
  priority INTEGER NOT NULL,
  data BYTEA NOT NULL  -- serialized v1::Job
);
CREATE INDEX jobs_client_seq ON jobs (client_id, seq);
CREATE INDEX jobs_state ON jobs (state, seq);
CREATE INDEX jobs_board_kind ON jobs (board_kind, seq);
CREATE TABLE submissions (
  client_id TEXT NOT NULL,
  request_id TEXT NOT NULL,
  job_ids BYTEA NOT NULL,  -- serialized v1::SubmitTrialsResponse
  PRIMARY KEY (client_id, request_id)
);
CREATE TABLE boards (
  board_id TEXT PRIMARY KEY,
  data BYTEA NOT NULL  -- serialized v1::Board
);
CREATE TABLE operators (
  seq BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  data BYTEA NOT NULL,  -- serialized v1::Operator
  UNIQUE (name, version)
);
)sql";

// Version 2 adds who each operator name belongs to.
constexpr char kSchemaV2Sql[] = R"sql(
CREATE TABLE operator_owners (
  name TEXT PRIMARY KEY,
  owner TEXT NOT NULL
);
)sql";

// Version 3 adds what changed about each operator version after it was added.
constexpr char kSchemaV3Sql[] = R"sql(
CREATE TABLE operator_states (
  name TEXT NOT NULL,
  version TEXT NOT NULL,
  data BYTEA NOT NULL,  -- serialized v1::OperatorState
  PRIMARY KEY (name, version)
);
)sql";

// Version 4 adds the attempts' logs (text: valid UTF-8 without NUL, as JobResult.log is).
constexpr char kSchemaV4Sql[] = R"sql(
CREATE TABLE attempt_logs (
  job_id TEXT NOT NULL,
  attempt INTEGER NOT NULL,
  board_id TEXT NOT NULL,
  text TEXT NOT NULL,
  PRIMARY KEY (job_id, attempt)
);
)sql";

// Taken while Open creates or checks the schema (transaction-scoped), so trackers opening an
// empty database at once do not both create it.
constexpr char kSchemaLock[] = "SELECT pg_advisory_xact_lock(7206000001)";

// The statements the store runs, each prepared on a connection when it is first run there.
constexpr Statement kFindSubmission = MakeStatement(
    "find_submission", "SELECT job_ids FROM submissions WHERE client_id = $1 AND request_id = $2",
    kTextOid, kTextOid);
constexpr Statement kInsertSubmission =
    MakeStatement("insert_submission",
                  "INSERT INTO submissions (client_id, request_id, job_ids) VALUES ($1, $2, $3)",
                  kTextOid, kTextOid, kByteaOid);
// Parameters $1..$7 of both: job_id, client_id, state, board_kind, op, priority, data; $8 seq.
constexpr Statement kInsertJob = MakeStatement(
    "insert_job",
    "INSERT INTO jobs (job_id, client_id, state, board_kind, op, priority, data, seq) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    kTextOid, kTextOid, kInt4Oid, kTextOid, kTextOid, kInt4Oid, kByteaOid, kInt8Oid);
// WriteBatch::replay: an existing submission is kept, an existing job replaced.
constexpr Statement kInsertSubmissionReplay =
    MakeStatement("insert_submission_replay",
                  "INSERT INTO submissions (client_id, request_id, job_ids) VALUES ($1, $2, $3) "
                  "ON CONFLICT (client_id, request_id) DO NOTHING",
                  kTextOid, kTextOid, kByteaOid);
constexpr Statement kInsertJobReplay = MakeStatement(
    "insert_job_replay",
    "INSERT INTO jobs (job_id, client_id, state, board_kind, op, priority, data, seq) "
    "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (job_id) DO UPDATE SET "
    "client_id = EXCLUDED.client_id, state = EXCLUDED.state, board_kind = EXCLUDED.board_kind, "
    "op = EXCLUDED.op, priority = EXCLUDED.priority, data = EXCLUDED.data",
    kTextOid, kTextOid, kInt4Oid, kTextOid, kTextOid, kInt4Oid, kByteaOid, kInt8Oid);
constexpr Statement kUpdateJob = MakeStatement(
    "update_job",
    // Client, kind, op and priority are set once, on insert ($2, $4-$6 bound, unused); $8: the
    // job's seq when the caller knows it (0: any), which must then match.
    "UPDATE jobs SET state = $3, data = $7 WHERE job_id = $1 AND ($8 = 0 OR seq = $8)", kTextOid,
    kTextOid, kInt4Oid, kTextOid, kTextOid, kInt4Oid, kByteaOid, kInt8Oid);
constexpr Statement kRaiseLastSeq = MakeStatement(
    "raise_last_seq", "UPDATE benchfarm_meta SET last_seq = GREATEST(last_seq, $1)", kInt8Oid);
constexpr Statement kLastSeq = MakeStatement(
    "last_seq",
    "SELECT GREATEST(last_seq, COALESCE((SELECT max(seq) FROM jobs), 0)) FROM benchfarm_meta");
constexpr Statement kGetJob =
    MakeStatement("get_job", "SELECT seq, data FROM jobs WHERE job_id = $1", kTextOid);
static_assert(v1::QUEUED == 1 && v1::RUNNING == 2, "kLoadUnfinished's states");
constexpr Statement kLoadUnfinished = MakeStatement(
    "load_unfinished", "SELECT seq, data FROM jobs WHERE state IN (1, 2) ORDER BY seq");
constexpr Statement kUpsertBoard =
    MakeStatement("upsert_board",
                  "INSERT INTO boards (board_id, data) VALUES ($1, $2) "
                  "ON CONFLICT (board_id) DO UPDATE SET data = excluded.data",
                  kTextOid, kByteaOid);
// COLLATE "C": bytewise, as SQLite's default, whatever the database's collation.
constexpr Statement kLoadBoards = MakeStatement(
    "load_boards", "SELECT board_id, data FROM boards ORDER BY board_id COLLATE \"C\"");
constexpr Statement kInsertOperator = MakeStatement(
    "insert_operator", "INSERT INTO operators (name, version, data) VALUES ($1, $2, $3)", kTextOid,
    kTextOid, kByteaOid);
constexpr Statement kLoadOperators =
    MakeStatement("load_operators", "SELECT name, data FROM operators ORDER BY seq");
constexpr Statement kGetOperator = MakeStatement(
    "get_operator", "SELECT name, data FROM operators WHERE name = $1 AND version = $2", kTextOid,
    kTextOid);
constexpr Statement kSetOperatorOwner =
    MakeStatement("set_operator_owner",
                  "INSERT INTO operator_owners (name, owner) VALUES ($1, $2) "
                  "ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner",
                  kTextOid, kTextOid);
constexpr Statement kLoadOperatorOwners = MakeStatement(
    "load_operator_owners", "SELECT name, owner FROM operator_owners ORDER BY name COLLATE \"C\"");
constexpr Statement kSetOperatorState =
    MakeStatement("set_operator_state",
                  "INSERT INTO operator_states (name, version, data) VALUES ($1, $2, $3) "
                  "ON CONFLICT (name, version) DO UPDATE SET data = EXCLUDED.data",
                  kTextOid, kTextOid, kByteaOid);
constexpr Statement kLoadOperatorStates =
    MakeStatement("load_operator_states", "SELECT name, version, data FROM operator_states");
constexpr Statement kUpsertAttemptLog =
    MakeStatement("upsert_attempt_log",
                  "INSERT INTO attempt_logs (job_id, attempt, board_id, text) VALUES ($1, $2, $3, "
                  "$4) ON CONFLICT (job_id, attempt) DO UPDATE SET board_id = EXCLUDED.board_id, "
                  "text = EXCLUDED.text",
                  kTextOid, kInt4Oid, kTextOid, kTextOid);
constexpr Statement kGetAttemptLogs = MakeStatement(
    "get_attempt_logs",
    "SELECT attempt::BIGINT, board_id, text FROM attempt_logs WHERE job_id = $1 ORDER BY attempt",
    kTextOid);

// ListJobs' statement for a set of conditions: only the set fields become conditions, so the
// planner can pick the matching index. Parameters: $1 after_seq, then each set field in bit
// order, then the limit.
const Statement& ListStatement(int mask) {
  struct Built {
    std::string name;
    std::string sql;
    Statement statement;
  };
  static const std::array<Built, 16>* const statements = [] {
    auto* all = new std::array<Built, 16>();
    for (int m = 0; m < 16; ++m) {
      Built& built = (*all)[m];
      Statement& s = built.statement;
      built.name = absl::StrCat("list_jobs_", m);
      built.sql = "SELECT seq, data FROM jobs WHERE seq > $1";
      s.types[s.params++] = kInt8Oid;
      for (auto [bit, column, type] : {std::tuple{JobFilter::kByClient, "client_id", kTextOid},
                                       std::tuple{JobFilter::kByBoardKind, "board_kind", kTextOid},
                                       std::tuple{JobFilter::kByOp, "op", kTextOid},
                                       std::tuple{JobFilter::kByState, "state", kInt4Oid}}) {
        if ((m & bit) == 0) continue;
        s.types[s.params++] = type;
        absl::StrAppend(&built.sql, " AND ", column, " = $", s.params);
      }
      s.types[s.params++] = kInt8Oid;
      absl::StrAppend(&built.sql, " ORDER BY seq LIMIT $", s.params);
      s.name = built.name.c_str();
      s.sql = built.sql.c_str();
    }
    return all;
  }();
  return (*statements)[mask].statement;
}

}  // namespace

// A server restarted since the last call then costs no error.
template <typename Call>
auto PgStore::WithRetry(Connection& connection, Call call) -> decltype(call()) {
  absl::MutexLock lock(&connection.mu);
  const bool reused = connection.connected();
  auto result = call();
  if (!result.ok() && reused && !connection.connected()) return call();
  return result;
}

PgStore::PgStore(std::string name, std::unique_ptr<Connection> writer,
                 std::unique_ptr<Connection> reader)
    : name_(std::move(name)), writer_(std::move(writer)), reader_(std::move(reader)) {}

PgStore::~PgStore() = default;

absl::StatusOr<std::string> PgStore::NameOf(const std::string& conninfo) {
  return pg::StoreName(conninfo);
}

bool PgStore::IsUri(const std::string& database) {
  return absl::StartsWith(database, "postgresql://") || absl::StartsWith(database, "postgres://");
}

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& conninfo,
                                                       PgStoreOptions options) {
  ASSIGN_OR_RETURN(std::string name, pg::StoreName(conninfo));
  const std::string prefix = absl::StrCat("postgres store ", name, ": ");
  if (options.connect_timeout_seconds <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(prefix,
                                                   "connect_timeout_seconds must be positive (",
                                                   options.connect_timeout_seconds, ")"));
  }
  if (options.answer_timeout_seconds <= 0 || options.answer_timeout_seconds > 86400) {
    return absl::InvalidArgumentError(absl::StrCat(prefix,
                                                   "answer_timeout_seconds must be in 1..86400 (",
                                                   options.answer_timeout_seconds, ")"));
  }
  auto store =
      absl::WrapUnique(new PgStore(name, std::make_unique<Connection>(prefix, conninfo, options),
                                   std::make_unique<Connection>(prefix, conninfo, options)));
  Connection& writer = *store->writer_;
  absl::MutexLock lock(&writer.mu);
  absl::Status status = [&]() -> absl::Status {
    RETURN_IF_ERROR(writer.Exec("BEGIN", "Open"));
    RETURN_IF_ERROR(writer.Exec(kSchemaLock, "Open: schema lock"));
    ASSIGN_OR_RETURN(std::string has_meta,
                     writer.QueryText("SELECT to_regclass('benchfarm_meta') IS NOT NULL", "Open"));
    if (has_meta == "t") {
      ASSIGN_OR_RETURN(std::string version_text,
                       writer.QueryText("SELECT schema_version FROM benchfarm_meta", "Open"));
      int version = 0;
      if (!absl::SimpleAtoi(version_text, &version)) {
        return absl::FailedPreconditionError(
            absl::StrCat(prefix, "benchfarm_meta holds no schema version ('", version_text, "')"));
      }
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(
            absl::StrCat(prefix, "created by a newer benchfarm (schema version ", version,
                         "; this build knows versions up to ", kSchemaVersion, ")"));
      }
      if (version < 1) {
        return absl::FailedPreconditionError(
            absl::StrCat(prefix, "unknown schema version ", version));
      }
      if (version < kSchemaVersion) {  // from before operator owners (1), states (2) or logs (3)
        if (version < 2) RETURN_IF_ERROR(writer.Exec(kSchemaV2Sql, "Open: upgrading the schema"));
        if (version < 3) RETURN_IF_ERROR(writer.Exec(kSchemaV3Sql, "Open: upgrading the schema"));
        RETURN_IF_ERROR(writer.Exec(kSchemaV4Sql, "Open: upgrading the schema"));
        RETURN_IF_ERROR(writer.Exec(
            absl::StrCat("UPDATE benchfarm_meta SET schema_version = ", kSchemaVersion).c_str(),
            "Open: upgrading the schema"));
      }
    } else {
      // A new, empty database gets the schema; one with someone else's tables is left alone
      // rather than mixed into.
      ASSIGN_OR_RETURN(std::string tables,
                       writer.QueryText("SELECT count(*) FROM pg_catalog.pg_tables "
                                        "WHERE schemaname = current_schema()",
                                        "Open"));
      if (tables != "0") {
        return absl::FailedPreconditionError(absl::StrCat(
            prefix, "holds ", tables,
            " tables but no benchfarm schema (no benchfarm_meta table): not a benchfarm store"));
      }
      RETURN_IF_ERROR(writer.Exec(kSchemaSql, "Open: creating the schema"));
      RETURN_IF_ERROR(writer.Exec(kSchemaV2Sql, "Open: creating the schema"));
      RETURN_IF_ERROR(writer.Exec(kSchemaV3Sql, "Open: creating the schema"));
      RETURN_IF_ERROR(writer.Exec(kSchemaV4Sql, "Open: creating the schema"));
      RETURN_IF_ERROR(
          writer.Exec(absl::StrCat("INSERT INTO benchfarm_meta (schema_version, last_seq) VALUES (",
                                   kSchemaVersion, ", 0)")
                          .c_str(),
                      "Open: creating the schema"));
    }
    return writer.Exec("COMMIT", "Open: COMMIT").status();
  }();
  if (!status.ok()) {
    writer.Rollback();
    return status;
  }
  // The reading connection too, so a server that takes one connection but not two fails here.
  {
    absl::MutexLock reader_lock(&store->reader_->mu);
    RETURN_IF_ERROR(store->reader_->Ready("Open"));
  }
  return store;
}

absl::Status PgStore::Apply(const WriteBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  const std::string prefix = absl::StrCat("postgres store ", name_, ": ");
  // Checked before anything is sent: nothing is written then.
  for (const WriteBatch::JobWrite& write : batch.jobs) {
    if (write.job_id.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "Apply: a job has no job_id"));
    }
    if (write.insert && write.seq <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "Apply: job ", write.job_id, " to insert has no seq"));
    }
  }
  // What the commands' parameters point into, beside the batch itself.
  std::vector<std::string> submission_data(batch.submissions.size());
  std::vector<std::string> board_data(batch.boards.size());
  for (size_t i = 0; i < batch.boards.size(); ++i) {
    if (batch.boards[i].board_id().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(prefix, "Apply: a board has no board_id"));
    }
    if (!batch.boards[i].SerializeToString(&board_data[i])) {
      return absl::InternalError(
          absl::StrCat(prefix, "board ", batch.boards[i].board_id(), " does not serialize"));
    }
  }

  for (const WriteBatch::LogWrite& log : batch.logs) {
    if (log.job_id.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(prefix, "Apply: an attempt log has no job_id"));
    }
  }

  // Submissions, jobs, boards, logs (commands in that order), then the highest sequence number.
  std::deque<Connection::Command> commands;
  for (size_t i = 0; i < batch.submissions.size(); ++i) {
    const WriteBatch::Submission& submission = batch.submissions[i];
    v1::SubmitTrialsResponse ids;
    for (const std::string& id : submission.job_ids) ids.add_job_ids(id);
    ids.SerializeToString(&submission_data[i]);
    Connection::Command& command = commands.emplace_back();
    command.statement = batch.replay ? &kInsertSubmissionReplay : &kInsertSubmission;
    command.params.Bytes(submission.client_id)
        .Bytes(submission.request_id)
        .Bytes(submission_data[i]);
  }
  int64_t max_seq = 0;
  std::vector<size_t> updates;
  for (const WriteBatch::JobWrite& write : batch.jobs) {
    if (!write.insert) updates.push_back(commands.size());
    Connection::Command& command = commands.emplace_back();
    command.statement = !write.insert  ? &kUpdateJob
                        : batch.replay ? &kInsertJobReplay
                                       : &kInsertJob;
    command.params.Bytes(write.job_id)
        .Bytes(write.client_id)
        .Int4(write.state)
        .Bytes(write.board_kind)
        .Bytes(write.op)
        .Int4(write.priority)
        .Bytes(write.data);
    command.params.Int8(write.seq);
    if (write.insert) max_seq = std::max(max_seq, write.seq);
  }
  for (size_t i = 0; i < batch.boards.size(); ++i) {
    Connection::Command& command = commands.emplace_back();
    command.statement = &kUpsertBoard;
    command.params.Bytes(batch.boards[i].board_id()).Bytes(board_data[i]);
  }
  for (const WriteBatch::LogWrite& log : batch.logs) {
    Connection::Command& command = commands.emplace_back();
    command.statement = &kUpsertAttemptLog;
    command.params.Bytes(log.job_id)
        .Int4(log.log.attempt())
        .Bytes(log.log.board_id())
        .Bytes(log.log.text());
  }
  if (max_seq > 0) {
    Connection::Command& command = commands.emplace_back();
    command.statement = &kRaiseLastSeq;
    command.params.Int8(max_seq);
  }

  auto describe = [&](size_t i) {
    if (i < batch.submissions.size()) {
      const WriteBatch::Submission& s = batch.submissions[i];
      return absl::StrCat("submission (", s.client_id, ", ", s.request_id, ")");
    }
    i -= batch.submissions.size();
    if (i < batch.jobs.size()) {
      const WriteBatch::JobWrite& j = batch.jobs[i];
      return j.insert ? absl::StrCat("job ", j.job_id, " (seq ", j.seq, ")")
                      : absl::StrCat("job ", j.job_id);
    }
    i -= batch.jobs.size();
    if (i < batch.boards.size()) return absl::StrCat("board ", batch.boards[i].board_id());
    i -= batch.boards.size();
    if (i < batch.logs.size()) {
      return absl::StrCat("the log of job ", batch.logs[i].job_id, " attempt ",
                          batch.logs[i].log.attempt());
    }
    return std::string("the highest sequence number");
  };
  absl::MutexLock lock(&writer_->mu);
  return writer_->Write(commands, updates, describe, "Apply");
}

absl::Status PgStore::InsertOperator(const v1::Operator& op) {
  const std::string prefix = absl::StrCat("postgres store ", name_, ": ");
  if (op.name().empty() || op.version().empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "InsertOperator: the operator has no name or version"));
  }
  std::string data;
  if (!op.SerializeToString(&data)) {
    return absl::InternalError(absl::StrCat(prefix, "operator ", op.name(), " does not serialize"));
  }
  std::deque<Connection::Command> commands(1);
  commands.front().statement = &kInsertOperator;
  commands.front().params.Bytes(op.name()).Bytes(op.version()).Bytes(data);
  absl::MutexLock lock(&writer_->mu);
  return writer_->Write(
      commands, {},
      [&](size_t) { return absl::StrCat("operator ", op.name(), " version ", op.version()); },
      "InsertOperator");
}

absl::StatusOr<int64_t> PgStore::LastSeq() {
  return WithRetry(*writer_, [&]() -> absl::StatusOr<int64_t> {
    ASSIGN_OR_RETURN(Result result, writer_->Execute(kLastSeq, Params(), "LastSeq"));
    std::optional<int64_t> seq;
    if (PQntuples(result.get()) == 1) seq = Int8Cell(result.get(), 0, 0);
    if (!seq.has_value()) {
      return absl::InternalError(
          absl::StrCat("postgres store ", name_, ": LastSeq: benchfarm_meta has no row"));
    }
    return *seq;
  });
}

namespace {

// (seq, data) rows of a jobs query.
absl::StatusOr<std::vector<StoredJob>> ReadJobs(const PGresult* result, const std::string& name,
                                                const char* what) {
  std::vector<StoredJob> jobs;
  const int rows = PQntuples(result);
  jobs.reserve(static_cast<size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    StoredJob& stored = jobs.emplace_back();
    const std::optional<int64_t> seq = Int8Cell(result, row, 0);
    const absl::string_view data = Cell(result, row, 1);
    if (!seq.has_value() ||
        !stored.job.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return absl::InternalError(absl::StrCat("postgres store ", name, ": ", what, ": job seq ",
                                              seq.value_or(-1), " does not parse as a v1.Job"));
    }
    stored.seq = *seq;
  }
  return jobs;
}

// (key, data) rows as protos of type T, for boards and operators.
template <typename T>
absl::StatusOr<std::vector<T>> ReadProtos(const PGresult* result, const std::string& name,
                                          const char* what, const char* kind) {
  std::vector<T> protos;
  const int rows = PQntuples(result);
  protos.reserve(static_cast<size_t>(rows));
  for (int row = 0; row < rows; ++row) {
    const absl::string_view data = Cell(result, row, 1);
    if (!protos.emplace_back().ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return absl::InternalError(absl::StrCat("postgres store ", name, ": ", what, ": ", kind, " ",
                                              Cell(result, row, 0), " does not parse"));
    }
  }
  return protos;
}

}  // namespace

absl::StatusOr<std::optional<std::vector<std::string>>> PgStore::FindSubmission(
    const std::string& client_id, const std::string& request_id) {
  using Found = std::optional<std::vector<std::string>>;
  return WithRetry(*reader_, [&]() -> absl::StatusOr<Found> {
    Params params;
    params.Bytes(client_id).Bytes(request_id);
    ASSIGN_OR_RETURN(Result result, reader_->Execute(kFindSubmission, params, "FindSubmission"));
    if (PQntuples(result.get()) == 0) return Found();
    const absl::string_view data = Cell(result.get(), 0, 0);
    v1::SubmitTrialsResponse ids;
    if (!ids.ParseFromArray(data.data(), static_cast<int>(data.size()))) {
      return absl::InternalError(absl::StrCat("postgres store ", name_, ": submission (", client_id,
                                              ", ", request_id, ") does not parse"));
    }
    return Found(std::vector<std::string>(ids.job_ids().begin(), ids.job_ids().end()));
  });
}

absl::StatusOr<std::optional<StoredJob>> PgStore::GetJob(const std::string& job_id) {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::optional<StoredJob>> {
    Params params;
    params.Bytes(job_id);
    ASSIGN_OR_RETURN(Result result, reader_->Execute(kGetJob, params, "GetJob"));
    ASSIGN_OR_RETURN(std::vector<StoredJob> jobs, ReadJobs(result.get(), name_, "GetJob"));
    if (jobs.empty()) return std::nullopt;
    return std::move(jobs.front());
  });
}

absl::StatusOr<std::vector<v1::AttemptLog>> PgStore::GetAttemptLogs(const std::string& job_id) {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::vector<v1::AttemptLog>> {
    Params params;
    params.Bytes(job_id);
    ASSIGN_OR_RETURN(Result result, reader_->Execute(kGetAttemptLogs, params, "GetAttemptLogs"));
    std::vector<v1::AttemptLog> logs;
    for (int row = 0; row < PQntuples(result.get()); ++row) {
      v1::AttemptLog& log = logs.emplace_back();
      log.set_attempt(static_cast<int32_t>(Int8Cell(result.get(), row, 0).value_or(0)));
      log.set_board_id(std::string(Cell(result.get(), row, 1)));
      log.set_text(std::string(Cell(result.get(), row, 2)));
    }
    return logs;
  });
}

absl::StatusOr<std::vector<StoredJob>> PgStore::ListJobs(const JobFilter& filter) {
  if (filter.limit <= 0) return std::vector<StoredJob>();
  const int mask = filter.Conditions();
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::vector<StoredJob>> {
    Params params;
    params.Int8(filter.after_seq);
    if (mask & JobFilter::kByClient) params.Bytes(filter.client_id);
    if (mask & JobFilter::kByBoardKind) params.Bytes(filter.board_kind);
    if (mask & JobFilter::kByOp) params.Bytes(filter.op);
    if (mask & JobFilter::kByState) params.Int4(filter.state);
    params.Int8(filter.limit);
    ASSIGN_OR_RETURN(Result result, reader_->Execute(ListStatement(mask), params, "ListJobs"));
    return ReadJobs(result.get(), name_, "ListJobs");
  });
}

absl::StatusOr<std::vector<StoredJob>> PgStore::LoadUnfinishedJobs() {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::vector<StoredJob>> {
    ASSIGN_OR_RETURN(Result result,
                     reader_->Execute(kLoadUnfinished, Params(), "LoadUnfinishedJobs"));
    return ReadJobs(result.get(), name_, "LoadUnfinishedJobs");
  });
}

absl::StatusOr<std::vector<v1::Board>> PgStore::LoadBoards() {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::vector<v1::Board>> {
    ASSIGN_OR_RETURN(Result result, reader_->Execute(kLoadBoards, Params(), "LoadBoards"));
    return ReadProtos<v1::Board>(result.get(), name_, "LoadBoards", "board");
  });
}

absl::StatusOr<std::vector<v1::Operator>> PgStore::LoadOperators() {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::vector<v1::Operator>> {
    ASSIGN_OR_RETURN(Result result, reader_->Execute(kLoadOperators, Params(), "LoadOperators"));
    ASSIGN_OR_RETURN(std::vector<v1::Operator> ops,
                     ReadProtos<v1::Operator>(result.get(), name_, "LoadOperators", "operator"));
    for (v1::Operator& op : ops) WithoutFiles(&op);
    return ops;
  });
}

absl::StatusOr<std::optional<v1::Operator>> PgStore::GetOperator(const std::string& name,
                                                                 const std::string& version) {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::optional<v1::Operator>> {
    Params params;
    params.Bytes(name).Bytes(version);
    ASSIGN_OR_RETURN(Result result, reader_->Execute(kGetOperator, params, "GetOperator"));
    ASSIGN_OR_RETURN(std::vector<v1::Operator> ops,
                     ReadProtos<v1::Operator>(result.get(), name_, "GetOperator", "operator"));
    if (ops.empty()) return std::nullopt;
    return std::move(ops.front());
  });
}

absl::Status PgStore::SetOperatorOwner(const std::string& name, const std::string& owner) {
  if (name.empty() || owner.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "postgres store ", name_, ": SetOperatorOwner: the operator name and owner are required"));
  }
  std::deque<Connection::Command> commands(1);
  commands.front().statement = &kSetOperatorOwner;
  commands.front().params.Bytes(name).Bytes(owner);
  absl::MutexLock lock(&writer_->mu);
  return writer_->Write(
      commands, {}, [&](size_t) { return absl::StrCat("the owner of operator ", name); },
      "SetOperatorOwner");
}

absl::StatusOr<std::map<std::string, std::string>> PgStore::LoadOperatorOwners() {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<std::map<std::string, std::string>> {
    ASSIGN_OR_RETURN(Result result,
                     reader_->Execute(kLoadOperatorOwners, Params(), "LoadOperatorOwners"));
    std::map<std::string, std::string> owners;
    for (int row = 0; row < PQntuples(result.get()); ++row) {
      owners[std::string(Cell(result.get(), row, 0))] = std::string(Cell(result.get(), row, 1));
    }
    return owners;
  });
}

absl::Status PgStore::SetOperatorState(const std::string& name, const std::string& version,
                                       const v1::OperatorState& state) {
  if (name.empty() || version.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("postgres store ", name_,
                     ": SetOperatorState: the operator name and version are required"));
  }
  std::string data;
  if (!state.SerializeToString(&data)) {
    return absl::InternalError(absl::StrCat("postgres store ", name_, ": the state of operator ",
                                            name, " does not serialize"));
  }
  std::deque<Connection::Command> commands(1);
  commands.front().statement = &kSetOperatorState;
  commands.front().params.Bytes(name).Bytes(version).Bytes(data);
  absl::MutexLock lock(&writer_->mu);
  return writer_->Write(
      commands, {},
      [&](size_t) { return absl::StrCat("the state of operator ", name, " version ", version); },
      "SetOperatorState");
}

absl::StatusOr<Store::OperatorStates> PgStore::LoadOperatorStates() {
  return WithRetry(*reader_, [&]() -> absl::StatusOr<OperatorStates> {
    ASSIGN_OR_RETURN(Result result,
                     reader_->Execute(kLoadOperatorStates, Params(), "LoadOperatorStates"));
    OperatorStates states;
    for (int row = 0; row < PQntuples(result.get()); ++row) {
      std::pair<std::string, std::string> key(Cell(result.get(), row, 0),
                                              Cell(result.get(), row, 1));
      const absl::string_view data = Cell(result.get(), row, 2);
      if (!states[key].ParseFromArray(data.data(), static_cast<int>(data.size()))) {
        return absl::InternalError(absl::StrCat(
            "postgres store ", name_, ": LoadOperatorStates: ", "the state of operator ", key.first,
            " version ", key.second, " does not parse"));
      }
    }
    return states;
  });
}

}  // namespace benchfarm::tracker
