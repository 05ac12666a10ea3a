#include "tracker/pg_connection.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"

namespace benchfarm::tracker {
namespace {

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

// The value of `keyword` in parsed conninfo options, "" if unset.
std::string OptionValue(const PQconninfoOption* options, const char* keyword) {
  for (const PQconninfoOption* option = options; option != nullptr && option->keyword != nullptr;
       ++option) {
    if (std::strcmp(option->keyword, keyword) == 0 && option->val != nullptr) return option->val;
  }
  return "";
}

}  // namespace

namespace pg {

absl::string_view Cell(const PGresult* result, int row, int column) {
  return absl::string_view(PQgetvalue(result, row, column),
                           static_cast<size_t>(PQgetlength(result, row, column)));
}

std::optional<int64_t> Int8Cell(const PGresult* result, int row, int column) {
  const absl::string_view bytes = Cell(result, row, column);
  if (bytes.size() != 8 || PQgetisnull(result, row, column)) return std::nullopt;
  uint64_t value = 0;
  for (char c : bytes) value = (value << 8) | static_cast<unsigned char>(c);
  return static_cast<int64_t>(value);
}

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

}  // namespace pg

using pg::Cell;
using pg::Params;
using pg::Result;
using pg::Statement;

PgStore::Connection::Connection(std::string prefix, std::string conninfo,
                                const PgStoreOptions& options)
    : prefix_(std::move(prefix)),
      conninfo_(std::move(conninfo)),
      connect_timeout_(absl::StrCat(options.connect_timeout_seconds)),
      application_name_(options.application_name),
      answer_timeout_ms_(options.answer_timeout_seconds * 1000) {}

PgStore::Connection::~Connection() { Drop(); }

absl::Status PgStore::Connection::Ready(absl::string_view what) {
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

void PgStore::Connection::Drop() {
  if (conn_ != nullptr) PQfinish(conn_);
  conn_ = nullptr;
  prepared_.clear();
}

absl::Status PgStore::Connection::Failure(const PGresult* result, absl::string_view what,
                                          absl::string_view subject) {
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

absl::StatusOr<Result> PgStore::Connection::Exec(const char* sql, absl::string_view what) {
  RETURN_IF_ERROR(Ready(what));
  if (PQsendQuery(conn_, sql) != 1) return Broken(what);
  ASSIGN_OR_RETURN(Result result, LastResult(what));
  const ExecStatusType status = PQresultStatus(result.get());
  if (result == nullptr || (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK)) {
    return Failure(result.get(), what);
  }
  return result;
}

absl::StatusOr<std::string> PgStore::Connection::QueryText(const char* sql,
                                                           absl::string_view what) {
  ASSIGN_OR_RETURN(Result result, Exec(sql, what));
  if (PQntuples(result.get()) == 0 || PQnfields(result.get()) == 0) return std::string();
  return std::string(Cell(result.get(), 0, 0));
}

void PgStore::Connection::Rollback() {
  if (conn_ == nullptr || PQtransactionStatus(conn_) == PQTRANS_IDLE) return;
  (void)Exec("ROLLBACK", "ROLLBACK");
}

absl::StatusOr<Result> PgStore::Connection::Execute(const Statement& statement,
                                                    const Params& params, absl::string_view what) {
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

absl::Status PgStore::Connection::Write(const std::deque<Command>& commands,
                                        const std::vector<size_t>& must_change,
                                        const Describe& describe, absl::string_view what) {
  const bool reused = connected();
  bool commit_sent = false;
  absl::Status status = WriteOnce(commands, must_change, describe, what, &commit_sent);
  if (!status.ok() && reused && !connected() && !commit_sent) {
    status = WriteOnce(commands, must_change, describe, what, &commit_sent);
  }
  return status;
}

absl::Status PgStore::Connection::WriteOnce(const std::deque<Command>& commands,
                                            const std::vector<size_t>& must_change,
                                            const Describe& describe, absl::string_view what,
                                            bool* commit_sent) {
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

absl::Status PgStore::Connection::Pipeline(const std::deque<Command>& commands,
                                           const Describe& describe, absl::string_view what,
                                           std::vector<int64_t>* affected) {
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

bool PgStore::Connection::ReadChunk(const std::vector<size_t>& sent, const Describe& describe,
                                    absl::string_view what, std::vector<int64_t>* affected,
                                    absl::Status* status) {
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

absl::Status PgStore::Connection::Silent(absl::string_view what) {
  Drop();
  return absl::UnavailableError(absl::StrCat(prefix_, what, ": the server sent nothing for ",
                                             answer_timeout_ms_ / 1000,
                                             " s (stopped or unreachable); connection dropped"));
}

absl::Status PgStore::Connection::Broken(absl::string_view what) {
  const absl::Status failure = Failure(nullptr, what);
  Drop();
  return failure;
}

absl::Status PgStore::Connection::Await(short events, absl::string_view what) {
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

absl::Status PgStore::Connection::Flush(absl::string_view what) {
  for (;;) {
    const int flushed = PQflush(conn_);
    if (flushed == 0) return absl::OkStatus();
    if (flushed < 0) return Broken(what);
    RETURN_IF_ERROR(Await(POLLIN | POLLOUT, what));
    if (PQconsumeInput(conn_) != 1) return Broken(what);
  }
}

absl::StatusOr<Result> PgStore::Connection::Next(absl::string_view what) {
  RETURN_IF_ERROR(Flush(what));
  while (PQisBusy(conn_)) {
    RETURN_IF_ERROR(Await(POLLIN, what));
    if (PQconsumeInput(conn_) != 1) return Broken(what);
  }
  return Result(PQgetResult(conn_));
}

absl::StatusOr<Result> PgStore::Connection::LastResult(absl::string_view what) {
  Result last;
  for (;;) {
    ASSIGN_OR_RETURN(Result result, Next(what));
    if (result == nullptr) return last;
    last = std::move(result);
    if (PQstatus(conn_) == CONNECTION_BAD) return last;
  }
}

absl::Status PgStore::Connection::Prepare(const Statement& statement, absl::string_view what) {
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

}  // namespace benchfarm::tracker
