// PgStore's connection, tracker/pg_store.h's own part (included by pg_store.cc and
// pg_connection.cc only): one libpq connection with the statements prepared on it, and what its
// calls take and give — statements, binary parameters, results and their cells.

#ifndef BENCHFARM_TRACKER_PG_CONNECTION_H_
#define BENCHFARM_TRACKER_PG_CONNECTION_H_

// Debian installs libpq's headers in /usr/include/postgresql, which Bazel cannot name as an
// include directory (//third_party:pq); libpq-fe.h's own includes are relative to it.
#include <postgresql/libpq-fe.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "tracker/pg_store.h"

namespace benchfarm::tracker {
namespace pg {

// Type OIDs of the parameters (catalog/pg_type_d.h, a server header libpq-dev does not ship).
inline constexpr Oid kByteaOid = 17;
inline constexpr Oid kInt8Oid = 20;
inline constexpr Oid kInt4Oid = 23;
inline constexpr Oid kTextOid = 25;

// The most parameters a statement has.
inline constexpr int kMaxParams = 8;

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

// A cell's bytes.
absl::string_view Cell(const PGresult* result, int row, int column);
// A binary int8 cell (8 bytes, network byte order); nullopt if it is not one.
std::optional<int64_t> Int8Cell(const PGresult* result, int row, int column);

// "HOST:PORT/DB" for messages, from the conninfo with libpq's defaults (environment included)
// for what it leaves out. InvalidArgument if libpq cannot parse it.
absl::StatusOr<std::string> StoreName(const std::string& conninfo);

}  // namespace pg

// One libpq connection: connected on first use and again after it was lost, its statements
// prepared on first use. Every member but the constructor requires mu.
class PgStore::Connection {
 public:
  // A command of a pipelined transaction: a prepared statement and its parameters.
  struct Command {
    const pg::Statement* statement = nullptr;
    pg::Params params;
  };
  // What command i of a transaction writes ("job a (seq 3)"), for messages.
  using Describe = std::function<std::string(size_t)>;

  Connection(std::string prefix, std::string conninfo, const PgStoreOptions& options);
  ~Connection();

  absl::Mutex mu;

  bool connected() const { return conn_ != nullptr; }

  // Connects if there is no connection. Unavailable (naming `what`) if that fails.
  absl::Status Ready(absl::string_view what);

  // Forgets the connection (and what was prepared on it); the next Ready() connects afresh.
  void Drop();

  // The status for a failed command (`result` may be null) about `subject` (may be empty):
  // Unavailable "connection lost" (and the connection dropped) when the connection is gone or
  // the server ended the session; AlreadyExists "SUBJECT is already stored" for a unique
  // violation; otherwise the code of its SQLSTATE. PostgreSQL's message in each.
  absl::Status Failure(const PGresult* result, absl::string_view what,
                       absl::string_view subject = "");

  // Runs SQL without parameters (one or more statements) as a simple query; returns the last
  // statement's result.
  absl::StatusOr<pg::Result> Exec(const char* sql, absl::string_view what);

  // The first column of the first row of a simple query, as text; "" if it returned no row.
  absl::StatusOr<std::string> QueryText(const char* sql, absl::string_view what);

  // Rolls back an open transaction, if the connection still has one; its failure is not
  // reported (the first error is the one that matters, and nothing was committed).
  void Rollback();

  // Runs a prepared statement (preparing it first on this connection) with binary parameters and
  // results.
  absl::StatusOr<pg::Result> Execute(const pg::Statement& statement, const pg::Params& params,
                                     absl::string_view what);

  // Runs `commands` in one transaction, all or nothing. A command listed in `must_change` that
  // changes no row makes it NotFound ("no SUBJECT to update"). Made once more on a fresh
  // connection when a connection made before this call turns out to be lost before COMMIT was
  // sent (nothing can have been committed then; a connection lost during COMMIT may have
  // committed, and is reported).
  absl::Status Write(const std::deque<Command>& commands, const std::vector<size_t>& must_change,
                     const Describe& describe, absl::string_view what);

 private:
  static constexpr size_t kBegin = static_cast<size_t>(-1);

  absl::Status WriteOnce(const std::deque<Command>& commands,
                         const std::vector<size_t>& must_change, const Describe& describe,
                         absl::string_view what, bool* commit_sent);

  // BEGIN, then `commands`, sent in pipeline mode with a synchronization point every
  // kPipelineChunk commands, leaving the transaction open (COMMIT or Rollback() is the caller's).
  // Stops at the first failure. Fills `affected` with each command's changed row count.
  absl::Status Pipeline(const std::deque<Command>& commands, const Describe& describe,
                        absl::string_view what, std::vector<int64_t>* affected);

  // Reads the results of one chunk: one per sent command (each followed by a null result), then
  // the synchronization point's. Appends changed row counts to `affected`; the first failure goes
  // to `status`. Returns false when the connection is lost (then dropped, `status` says so).
  bool ReadChunk(const std::vector<size_t>& sent, const Describe& describe, absl::string_view what,
                 std::vector<int64_t>* affected, absl::Status* status);

  // Dropped for a server that stays silent: Unavailable, naming how long it was waited for.
  absl::Status Silent(absl::string_view what);

  // Dropped after a failure that leaves the connection in an unknown state: the cause.
  absl::Status Broken(absl::string_view what);

  // Waits until the connection's socket is ready for `events`: OK; Unavailable (connection
  // dropped) after answer_timeout of silence or when poll fails.
  absl::Status Await(short events, absl::string_view what);

  // Sends what libpq has buffered, reading meanwhile (the server may answer before it has read
  // everything). Unavailable (connection dropped) when the server stays silent or the connection
  // fails.
  absl::Status Flush(absl::string_view what);

  // The next result (PQgetResult, null at the end of a command's results), waiting at most
  // answer_timeout for each piece of the server's answer. On any error the connection is dropped.
  absl::StatusOr<pg::Result> Next(absl::string_view what);

  // The last result of a command sent outside pipeline mode (as PQexec returns it).
  absl::StatusOr<pg::Result> LastResult(absl::string_view what);

  // Prepares `statement` on this connection unless it was.
  absl::Status Prepare(const pg::Statement& statement, absl::string_view what);

  const std::string prefix_;  // "postgres store HOST:PORT/DB: "
  const std::string conninfo_;
  const std::string connect_timeout_;
  const std::string application_name_;
  const int answer_timeout_ms_;
  PGconn* conn_ = nullptr;  // null: not connected
  bool ever_connected_ = false;
  absl::flat_hash_set<const pg::Statement*> prepared_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_PG_CONNECTION_H_
