#include "tracker/pg_store.h"

// Debian installs libpq's headers in /usr/include/postgresql, which Bazel cannot name as an
// include directory (//third_party:pq); libpq-fe.h's own includes are relative to it.
#include <poll.h>
#include <postgresql/libpq-fe.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/memory/memory.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"

namespace benchfarm::tracker {
namespace {

// Type OIDs of the parameters (catalog/pg_type_d.h, a server header libpq-dev does not ship).
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt4Oid = 23;
constexpr Oid kTextOid = 25;

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

// Taken while Open creates or checks the schema (transaction-scoped), so trackers opening an
// empty database at once do not both create it.
constexpr char kSchemaLock[] = "SELECT pg_advisory_xact_lock(7206000001)";

// The most parameters a statement has.
constexpr int kMaxParams = 8;

// A statement prepared by name on each connection that uses it.
struct Statement {
  const char* name;
  const char* sql;
  std::array<Oid, kMaxParams> types;  // the first `params` are used
  int params;
};

template <typename... Types>
constexpr Statement MakeStatement(const char* name, const char* sql, Types... types) {
  static_assert(sizeof...(types) <= kMaxParams);
  return Statement{name, sql, {types...}, sizeof...(types)};
}

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

// The parameters of one execution, all in binary format: text and BYTEA as their bytes, integers
// in network byte order. Values point into the caller's strings, which must outlive the
// execution; integers are kept here, so a Params never moves.
class Params {
 public:
  static constexpr int kMax = kMaxParams;

  Params() = default;
  Params(const Params&) = delete;
  Params& operator=(const Params&) = delete;

  Params& Bytes(absl::string_view bytes) {
    // A null pointer would be SQL NULL; an empty value still needs an address.
    values_[size_] = bytes.data() != nullptr ? bytes.data() : "";
    lengths_[size_] = static_cast<int>(bytes.size());
    ++size_;
    return *this;
  }
  Params& Int4(int32_t value) { return Integer(static_cast<uint32_t>(value), 4); }
  Params& Int8(int64_t value) { return Integer(static_cast<uint64_t>(value), 8); }

  int size() const { return size_; }
  const char* const* values() const { return values_.data(); }
  const int* lengths() const { return lengths_.data(); }
  const int* formats() const { return kBinary.data(); }

 private:
  static constexpr std::array<int, kMax> kBinary = {1, 1, 1, 1, 1, 1, 1, 1};

  Params& Integer(uint64_t value, int bytes) {
    char* out = integers_[size_].data();
    for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>(value >> (8 * (bytes - 1 - i)));
    values_[size_] = out;
    lengths_[size_] = bytes;
    ++size_;
    return *this;
  }

  int size_ = 0;
  std::array<const char*, kMax> values_{};
  std::array<int, kMax> lengths_{};
  std::array<std::array<char, 8>, kMax> integers_{};
};

struct ResultDeleter {
  void operator()(PGresult* result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

// libpq's messages end with a newline and indent their detail lines: one line for a status.
std::string OneLine(const char* message) {
  std::string text = absl::StrReplaceAll(message != nullptr ? message : "",
                                         {{"\n\t", " "}, {"\n", "; "}, {"\t", " "}});
  absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  while (absl::ConsumeSuffix(&trimmed, ";")) trimmed = absl::StripTrailingAsciiWhitespace(trimmed);
  return std::string(trimmed);
}

// A failed result's message and detail, without libpq's "ERROR:  " and context lines; "" if it
// has none (the failure was the connection's).
std::string ServerMessage(const PGresult* result) {
  if (result == nullptr) return "";
  const char* primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
  if (primary == nullptr) return OneLine(PQresultErrorMessage(result));
  const char* detail = PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL);
  return detail != nullptr ? absl::StrCat(OneLine(primary), " (", OneLine(detail), ")")
                           : OneLine(primary);
}

std::string SqlState(const PGresult* result) {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  return state != nullptr ? state : "";
}

// What a failed statement's SQLSTATE means for the caller.
absl::StatusCode CodeOf(const std::string& sqlstate) {
  if (sqlstate == "23505") return absl::StatusCode::kAlreadyExists;  // unique_violation
  // 08: connection exception; 53: insufficient resources (disk full, too many connections);
  // 57P: the server is shutting down, crashed or not yet accepting connections.
  if (absl::StartsWith(sqlstate, "08") || absl::StartsWith(sqlstate, "53") ||
      absl::StartsWith(sqlstate, "57P")) {
    return absl::StatusCode::kUnavailable;
  }
  if (absl::StartsWith(sqlstate, "22")) return absl::StatusCode::kInvalidArgument;  // bad data
  return absl::StatusCode::kInternal;
}

absl::string_view Cell(const PGresult* result, int row, int column) {
  return absl::string_view(PQgetvalue(result, row, column),
                           static_cast<size_t>(PQgetlength(result, row, column)));
}

// A binary int8 cell (8 bytes, network byte order); nullopt if it is not one.
std::optional<int64_t> Int8Cell(const PGresult* result, int row, int column) {
  const absl::string_view bytes = Cell(result, row, column);
  if (bytes.size() != 8 || PQgetisnull(result, row, column)) return std::nullopt;
  uint64_t value = 0;
  for (char c : bytes) value = (value << 8) | static_cast<unsigned char>(c);
  return static_cast<int64_t>(value);
}

// The value of `keyword` in parsed conninfo options, "" if unset.
std::string OptionValue(const PQconninfoOption* options, const char* keyword) {
  for (const PQconninfoOption* option = options; option != nullptr && option->keyword != nullptr;
       ++option) {
    if (std::strcmp(option->keyword, keyword) == 0 && option->val != nullptr) return option->val;
  }
  return "";
}

// "HOST:PORT/DB" for messages, from the conninfo with libpq's defaults (environment included)
// for what it leaves out. InvalidArgument if libpq cannot parse it.
absl::StatusOr<std::string> StoreName(const std::string& conninfo) {
  char* error = nullptr;
  PQconninfoOption* parsed = PQconninfoParse(conninfo.c_str(), &error);
  if (parsed == nullptr) {
    std::string message = error != nullptr ? OneLine(error) : "out of memory";
    PQfreemem(error);
    return absl::InvalidArgumentError(
        absl::StrCat("postgres store: cannot parse the connection string: ", message));
  }
  PQconninfoOption* defaults = PQconndefaults();
  auto value = [&](const char* keyword) {
    std::string v = OptionValue(parsed, keyword);
    return v.empty() ? OptionValue(defaults, keyword) : v;
  };
  std::string host = value("host");
  if (host.empty()) host = value("hostaddr");
  if (host.empty()) host = "localhost";
  std::string port = value("port");
  if (port.empty()) port = "5432";
  std::string db = value("dbname");
  if (db.empty()) db = value("user");
  PQconninfoFree(parsed);
  PQconninfoFree(defaults);
  return absl::StrCat(host, ":", port, "/", db);
}

}  // namespace

// One libpq connection: connected on first use and again after it was lost, its statements
// prepared on first use. Every member but the constructor requires mu.
class PgStore::Connection {
 public:
  // A command of a pipelined transaction: a prepared statement and its parameters.
  struct Command {
    const Statement* statement = nullptr;
    Params params;
  };
  // What command i of a transaction writes ("job a (seq 3)"), for messages.
  using Describe = std::function<std::string(size_t)>;

  Connection(std::string prefix, std::string conninfo, const PgStoreOptions& options)
      : prefix_(std::move(prefix)),
        conninfo_(std::move(conninfo)),
        connect_timeout_(absl::StrCat(options.connect_timeout_seconds)),
        application_name_(options.application_name),
        answer_timeout_ms_(options.answer_timeout_seconds * 1000) {}

  ~Connection() { Drop(); }

  absl::Mutex mu;

  bool connected() const { return conn_ != nullptr; }

  // Connects if there is no connection. Unavailable (naming `what`) if that fails.
  absl::Status Ready(absl::string_view what) {
    if (conn_ != nullptr) return absl::OkStatus();
    // Defaults first: the conninfo, expanded in place of dbname, overrides them. Keepalives find a
    // dead peer on this side; on the server's, a session left in a transaction by a client that
    // went away (a network cut mid-write) ends within a minute, releasing its locks.
    const char* keywords[] = {"connect_timeout",  "fallback_application_name",
                              "client_encoding",  "keepalives",
                              "keepalives_idle",  "keepalives_interval",
                              "keepalives_count", "options",
                              "dbname",           nullptr};
    const char* values[] = {connect_timeout_.c_str(),
                            application_name_.c_str(),
                            "UTF8",
                            "1",
                            "10",
                            "5",
                            "3",
                            "-c idle_in_transaction_session_timeout=60s",
                            conninfo_.c_str(),
                            nullptr};
    PGconn* conn = PQconnectdbParams(keywords, values, /*expand_dbname=*/1);
    if (conn == nullptr || PQstatus(conn) != CONNECTION_OK) {
      std::string message = conn != nullptr ? OneLine(PQerrorMessage(conn)) : "out of memory";
      PQfinish(conn);
      return absl::UnavailableError(absl::StrCat(
          prefix_, what,
          ever_connected_ ? ": connection lost; reconnecting: " : ": cannot connect: ", message));
    }
    // Nonblocking: every wait for the server goes through Await, which gives up on a server that
    // stays silent (stopped, hung, a cut network that still looks connected).
    if (PQsetnonblocking(conn, 1) != 0) {
      std::string message = OneLine(PQerrorMessage(conn));
      PQfinish(conn);
      return absl::UnavailableError(absl::StrCat(prefix_, what, ": ", message));
    }
    conn_ = conn;
    ever_connected_ = true;
    return absl::OkStatus();
  }

  // Forgets the connection (and what was prepared on it); the next Ready() connects afresh.
  void Drop() {
    if (conn_ != nullptr) PQfinish(conn_);
    conn_ = nullptr;
    prepared_.clear();
  }

  // The status for a failed command (`result` may be null) about `subject` (may be empty):
  // Unavailable "connection lost" (and the connection dropped) when the connection is gone or
  // the server ended the session; AlreadyExists "SUBJECT is already stored" for a unique
  // violation; otherwise the code of its SQLSTATE. PostgreSQL's message in each.
  absl::Status Failure(const PGresult* result, absl::string_view what,
                       absl::string_view subject = "") {
    const char* severity =
        result != nullptr ? PQresultErrorField(result, PG_DIAG_SEVERITY_NONLOCALIZED) : nullptr;
    std::string message = ServerMessage(result);
    if (message.empty()) message = OneLine(PQerrorMessage(conn_));
    const bool fatal = severity != nullptr &&
                       (std::strcmp(severity, "FATAL") == 0 || std::strcmp(severity, "PANIC") == 0);
    if (PQstatus(conn_) != CONNECTION_OK || fatal) {
      Drop();
      return absl::UnavailableError(absl::StrCat(prefix_, what, ": connection lost: ", message));
    }
    const std::string sqlstate = SqlState(result);
    const absl::StatusCode code = CodeOf(sqlstate);
    const std::string about =
        subject.empty()
            ? ""
            : absl::StrCat(subject,
                           code == absl::StatusCode::kAlreadyExists ? " is already stored" : "",
                           ": ");
    return absl::Status(code, absl::StrCat(prefix_, what, ": ", about, message,
                                           sqlstate.empty() ? "" : " (SQLSTATE " + sqlstate + ")"));
  }

  // Runs SQL without parameters (one or more statements) as a simple query; returns the last
  // statement's result.
  absl::StatusOr<Result> Exec(const char* sql, absl::string_view what) {
    RETURN_IF_ERROR(Ready(what));
    if (PQsendQuery(conn_, sql) != 1) return Broken(what);
    ASSIGN_OR_RETURN(Result result, LastResult(what));
    const ExecStatusType status = PQresultStatus(result.get());
    if (result == nullptr || (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)) {
      return Failure(result.get(), what);
    }
    return result;
  }

  // The first column of the first row of a simple query, as text; "" if it returned no row.
  absl::StatusOr<std::string> QueryText(const char* sql, absl::string_view what) {
    ASSIGN_OR_RETURN(Result result, Exec(sql, what));
    if (PQntuples(result.get()) == 0 || PQnfields(result.get()) == 0) return std::string();
    return std::string(Cell(result.get(), 0, 0));
  }

  // Rolls back an open transaction, if the connection still has one; its failure is not
  // reported (the first error is the one that matters, and nothing was committed).
  void Rollback() {
    if (conn_ == nullptr || PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
    (void)Exec("ROLLBACK", "ROLLBACK");
  }

  // Runs a prepared statement (preparing it first on this connection) with binary parameters and
  // results.
  absl::StatusOr<Result> Execute(const Statement& statement, const Params& params,
                                 absl::string_view what) {
    RETURN_IF_ERROR(Ready(what));
    RETURN_IF_ERROR(Prepare(statement, what));
    if (PQsendQueryPrepared(conn_, statement.name, params.size(), params.values(), params.lengths(),
                            params.formats(), /*resultFormat=*/1) != 1) {
      return Broken(what);
    }
    ASSIGN_OR_RETURN(Result result, LastResult(what));
    const ExecStatusType status = PQresultStatus(result.get());
    if (result == nullptr || (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)) {
      return Failure(result.get(), what);
    }
    return result;
  }

  // Runs `commands` in one transaction, all or nothing. A command listed in `must_change` that
  // changes no row makes it NotFound ("no SUBJECT to update"). Made once more on a fresh
  // connection when a connection made before this call turns out to be lost before COMMIT was
  // sent (nothing can have been committed then; a connection lost during COMMIT may have
  // committed, and is reported).
  absl::Status Write(const std::deque<Command>& commands, const std::vector<size_t>& must_change,
                     const Describe& describe, absl::string_view what) {
    const bool reused = connected();
    bool commit_sent = false;
    absl::Status status = WriteOnce(commands, must_change, describe, what, &commit_sent);
    if (!status.ok() && reused && !connected() && !commit_sent) {
      status = WriteOnce(commands, must_change, describe, what, &commit_sent);
    }
    return status;
  }

 private:
  absl::Status WriteOnce(const std::deque<Command>& commands,
                         const std::vector<size_t>& must_change, const Describe& describe,
                         absl::string_view what, bool* commit_sent) {
    std::vector<int64_t> affected;
    if (absl::Status status = Pipeline(commands, describe, what, &affected); !status.ok()) {
      Rollback();
      return status;
    }
    for (size_t i : must_change) {
      if (affected[i] == 0) {
        Rollback();
        return absl::NotFoundError(absl::StrCat(prefix_, what, ": no ", describe(i), " to update"));
      }
    }
    *commit_sent = true;
    return Exec("COMMIT", absl::StrCat(what, ": COMMIT")).status();
  }

  // BEGIN, then `commands`, sent in pipeline mode with a synchronization point every
  // kPipelineChunk commands, leaving the transaction open (COMMIT or Rollback() is the caller's).
  // Stops at the first failure. Fills `affected` with each command's changed row count.
  absl::Status Pipeline(const std::deque<Command>& commands, const Describe& describe,
                        absl::string_view what, std::vector<int64_t>* affected) {
    RETURN_IF_ERROR(Ready(what));
    // Prepared before pipeline mode, where PQprepare is not allowed.
    for (const Command& command : commands) RETURN_IF_ERROR(Prepare(*command.statement, what));
    if (PQenterPipelineMode(conn_) != 1) return Failure(nullptr, what);
    affected->reserve(commands.size());
    absl::Status status;
    bool begun = false;
    for (size_t start = 0; status.ok() && (!begun || start < commands.size());) {
      const size_t end = std::min(commands.size(), start + PgStore::kPipelineChunk);
      // Indexes into commands of what was sent; kBegin for BEGIN.
      std::vector<size_t> sent;
      bool send_ok = true;
      if (!begun) {
        send_ok = PQsendQueryParams(conn_, "BEGIN", 0, nullptr, nullptr, nullptr, nullptr, 1) == 1;
        sent.push_back(kBegin);
        begun = true;
      }
      for (size_t i = start; send_ok && i < end; ++i) {
        const Command& command = commands[i];
        send_ok = PQsendQueryPrepared(conn_, command.statement->name, command.params.size(),
                                      command.params.values(), command.params.lengths(),
                                      command.params.formats(), 1) == 1;
        sent.push_back(i);
      }
      if (!send_ok || PQpipelineSync(conn_) != 1) return Broken(what);  // start afresh
      if (absl::Status flushed = Flush(what); !flushed.ok()) return flushed;
      if (!ReadChunk(sent, describe, what, affected, &status)) return status;
      start = end;
    }
    if (PQexitPipelineMode(conn_) != 1) {
      const absl::Status failure = Failure(nullptr, what);
      Drop();
      return status.ok() ? failure : status;
    }
    return status;
  }

  static constexpr size_t kBegin = static_cast<size_t>(-1);

  // Reads the results of one chunk: one per sent command (each followed by a null result), then
  // the synchronization point's. Appends changed row counts to `affected`; the first failure goes
  // to `status`. Returns false when the connection is lost (then dropped, `status` says so).
  bool ReadChunk(const std::vector<size_t>& sent, const Describe& describe, absl::string_view what,
                 std::vector<int64_t>* affected, absl::Status* status) {
    auto lost = [&](const PGresult* result) {
      const absl::Status failure = Failure(result, what);
      if (status->ok()) *status = failure;
      Drop();
      return false;
    };
    auto next = [&](Result* result) {
      absl::StatusOr<Result> got = Next(what);
      if (!got.ok()) {
        if (status->ok()) *status = got.status();
        return false;  // dropped
      }
      *result = std::move(*got);
      return true;
    };
    for (size_t index : sent) {
      Result result;
      if (!next(&result)) return false;
      if (result == nullptr) return lost(nullptr);
      const ExecStatusType state = PQresultStatus(result.get());
      if (state == PGRES_COMMAND_OK) {
        if (index != kBegin) {
          int64_t rows = 0;
          if (!absl::SimpleAtoi(PQcmdTuples(result.get()), &rows)) rows = 0;
          affected->push_back(rows);
        }
      } else if (state != PGRES_PIPELINE_ABORTED) {
        if (PQstatus(conn_) != CONNECTION_OK) return lost(result.get());
        if (status->ok()) {
          *status = index == kBegin ? Failure(result.get(), absl::StrCat(what, ": BEGIN"))
                                    : Failure(result.get(), what, describe(index));
          if (conn_ == nullptr) return false;  // a FATAL error ended the session
        }
      }
      // Each command's results end with a null result.
      Result end;
      if (!next(&end)) return false;
      if (end != nullptr) return lost(end.get());
    }
    Result sync;
    if (!next(&sync)) return false;
    if (PQresultStatus(sync.get()) != PGRES_PIPELINE_SYNC) return lost(sync.get());
    return true;
  }

  // Dropped for a server that stays silent: Unavailable, naming how long it was waited for.
  absl::Status Silent(absl::string_view what) {
    Drop();
    return absl::UnavailableError(absl::StrCat(prefix_, what, ": the server sent nothing for ",
                                               answer_timeout_ms_ / 1000,
                                               " s (stopped or unreachable); connection dropped"));
  }

  // Dropped after a failure that leaves the connection in an unknown state: the cause.
  absl::Status Broken(absl::string_view what) {
    const absl::Status failure = Failure(nullptr, what);
    Drop();
    return failure;
  }

  // Waits until the connection's socket is ready for `events`: OK; Unavailable (connection
  // dropped) after answer_timeout of silence or when poll fails.
  absl::Status Await(short events, absl::string_view what) {
    pollfd fd{PQsocket(conn_), events, 0};
    const absl::Time deadline = absl::Now() + absl::Milliseconds(answer_timeout_ms_);
    for (;;) {
      const int left =
          static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(deadline - absl::Now())));
      const int ready = poll(&fd, 1, left);
      if (ready > 0) return absl::OkStatus();
      if (ready == 0) return Silent(what);
      if (errno != EINTR) {
        const std::string error = std::strerror(errno);
        Drop();
        return absl::UnavailableError(absl::StrCat(prefix_, what, ": poll: ", error));
      }
    }
  }

  // Sends what libpq has buffered, reading meanwhile (the server may answer before it has read
  // everything). Unavailable (connection dropped) when the server stays silent or the connection
  // fails.
  absl::Status Flush(absl::string_view what) {
    for (;;) {
      const int flushed = PQflush(conn_);
      if (flushed == 0) return absl::OkStatus();
      if (flushed < 0) return Broken(what);
      RETURN_IF_ERROR(Await(POLLIN | POLLOUT, what));
      if (PQconsumeInput(conn_) != 1) return Broken(what);
    }
  }

  // The next result (PQgetResult, null at the end of a command's results), waiting at most
  // answer_timeout for each piece of the server's answer. On any error the connection is dropped.
  absl::StatusOr<Result> Next(absl::string_view what) {
    RETURN_IF_ERROR(Flush(what));
    while (PQisBusy(conn_)) {
      RETURN_IF_ERROR(Await(POLLIN, what));
      if (PQconsumeInput(conn_) != 1) return Broken(what);
    }
    return Result(PQgetResult(conn_));
  }

  // The last result of a command sent outside pipeline mode (as PQexec returns it).
  absl::StatusOr<Result> LastResult(absl::string_view what) {
    Result last;
    for (;;) {
      ASSIGN_OR_RETURN(Result result, Next(what));
      if (result == nullptr) return last;
      last = std::move(result);
      if (PQstatus(conn_) == CONNECTION_BAD) return last;
    }
  }

  // Prepares `statement` on this connection unless it was.
  absl::Status Prepare(const Statement& statement, absl::string_view what) {
    if (prepared_.contains(&statement)) return absl::OkStatus();
    if (PQsendPrepare(conn_, statement.name, statement.sql, statement.params,
                      statement.types.data()) != 1) {
      return Broken(absl::StrCat(what, ": preparing \"", statement.sql, "\""));
    }
    ASSIGN_OR_RETURN(Result result, LastResult(what));
    if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
      return Failure(result.get(), absl::StrCat(what, ": preparing \"", statement.sql, "\""));
    }
    prepared_.insert(&statement);
    return absl::OkStatus();
  }

  const std::string prefix_;  // "postgres store HOST:PORT/DB: "
  const std::string conninfo_;
  const std::string connect_timeout_;
  const std::string application_name_;
  const int answer_timeout_ms_;
  PGconn* conn_ = nullptr;  // null: not connected
  bool ever_connected_ = false;
  absl::flat_hash_set<const Statement*> prepared_;
};

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
  return StoreName(conninfo);
}

bool PgStore::IsUri(const std::string& database) {
  return absl::StartsWith(database, "postgresql://") || absl::StartsWith(database, "postgres://");
}

absl::StatusOr<std::unique_ptr<PgStore>> PgStore::Open(const std::string& conninfo,
                                                       PgStoreOptions options) {
  ASSIGN_OR_RETURN(std::string name, StoreName(conninfo));
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
      if (version == 1) {  // from before operator names had owners
        RETURN_IF_ERROR(writer.Exec(kSchemaV2Sql, "Open: upgrading the schema"));
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

  // Submissions, jobs, boards (commands in that order), then the highest sequence number.
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

}  // namespace benchfarm::tracker
