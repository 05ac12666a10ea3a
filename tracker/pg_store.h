// PgStore: the tracker's Store on a PostgreSQL database (15 or later), through libpq's C API
// (Debian's libpq-dev), so several trackers — or a tracker and its tools — can share one store.
//
// The database holds the same tables as SqliteStore's file — jobs (each v1::Job serialized as
// BYTEA beside indexed copies of the fields ListJobs filters on), submissions ((client_id,
// request_id) -> job ids), boards, operators (the catalog, one row per (name, version), in
// insertion order), operator_owners (who each operator name belongs to), operator_states (what
// changed about each version after it was added: retired, added again), attempt_logs (each
// attempt's log, by job and attempt) — and benchfarm_meta, one
// row with the schema version (kSchemaVersion) and the highest job sequence number ever given, so
// LastSeq never goes backwards even when the newest job row is deleted by hand. Open creates the
// schema in an empty database (under an advisory lock, so trackers opening it at once do not race)
// and refuses a database with other tables but no benchfarm schema, or a schema written by a newer
// benchfarm.
//
// Durability: each Apply is one transaction (BEGIN ... COMMIT); when it returns OK, PostgreSQL
// has committed it, which with the server's defaults (fsync=on, synchronous_commit=on) means it
// is on stable storage. The writes of a batch are sent pipelined (libpq pipeline mode, a
// synchronization point every kPipelineChunk statements), so a batch costs two round trips plus
// one per chunk, not one per write. Statements are prepared once per connection; parameters and
// results travel in binary format (BYTEA as raw bytes).
//
// Connections: two, one for writes (Apply, InsertOperator, LastSeq) and one for reads, each
// guarded by its own mutex, so a read does not wait behind a commit. Reads see every call that
// returned before them (READ COMMITTED; each read is its own statement).
//
// A lost connection (the server restarted, crashed or is unreachable): a call returns
// Unavailable naming the store and the cause ("postgres store 127.0.0.1:5432/farm: GetJob:
// connection lost: server closed the connection unexpectedly", or "...: connection lost;
// reconnecting: ... Connection refused") and drops the connection; the next call connects
// afresh, so the store heals by itself when the server is back — it is never reopened. A call
// that finds the connection it had from an earlier call dead is made once more on a fresh one
// when that is safe — a read, or a write whose COMMIT was not yet sent (nothing can have been
// committed) — so a server restarted between calls costs no error. A write whose connection is
// lost during COMMIT may have been committed and is Unavailable: the tracker's group commit sends
// such a batch again as a replay (WriteBatch::replay), which stores it once.
//
// Errors, beyond the Store contract (every message starts "postgres store HOST:PORT/DB: " and
// carries PostgreSQL's own message):
//   Open: InvalidArgument for a conninfo libpq cannot parse or a bad option; Unavailable when
//     connecting fails (no server, or it refuses: no such database, authentication), with
//     libpq's message; FailedPrecondition for a database that is not a benchfarm store
//     (other tables, a newer schema version); Internal for any other failure.
//   Apply: AlreadyExists (SQLSTATE 23505, unique_violation) also when a job to insert repeats a
//     job_id or a sequence number of the batch; InvalidArgument for an empty job_id / board_id,
//     an insert without a sequence number, or text PostgreSQL refuses (SQLSTATE class 22: e.g. a
//     NUL byte, which TEXT cannot hold).
//   Unavailable for a lost connection, for a server that sends nothing for answer_timeout
//     within a call (stopped, hung, or cut off behind a connection that still looks alive: the
//     connection is dropped, the next call connects afresh), and for the server refusing work it
//     may accept later (shutting down, too many connections, out of disk: SQLSTATE classes 08,
//     53, 57P).
//   Internal for any other SQL failure, and for stored rows that no longer parse as their proto.
//
// Thread-safety: every method may be called from any thread.

#ifndef BENCHFARM_TRACKER_PG_STORE_H_
#define BENCHFARM_TRACKER_PG_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/benchfarm.pb.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

struct PgStoreOptions {
  // How long connecting (at Open and when reconnecting) may take; > 0. Unless the conninfo sets
  // connect_timeout itself.
  int connect_timeout_seconds = 10;
  // The application_name the server shows for the store's connections (pg_stat_activity), unless
  // the conninfo sets it.
  std::string application_name = "benchfarm-tracker";
  // How long the store waits for any sign of the server within a call (a result, or room to
  // send) before it drops the connection as Unavailable: a stopped or hung server, or a network
  // cut that leaves the connection looking alive. > 0.
  int answer_timeout_seconds = 30;
};

class PgStore final : public Store {
 public:
  // The schema this build writes and reads (benchfarm_meta.schema_version).
  static constexpr int kSchemaVersion = 4;
  // Statements sent per pipeline synchronization point in Apply.
  static constexpr int kPipelineChunk = 256;

  // Connects with `conninfo` (libpq's "host=... port=... dbname=... user=..." or a postgresql://
  // URI), creates the schema if the database has none, checks its version and prepares the
  // statements. Errors: see the file comment.
  static absl::StatusOr<std::unique_ptr<PgStore>> Open(const std::string& conninfo,
                                                       PgStoreOptions options = {});

  // Closes the connections. Must not race with calls on the store.
  ~PgStore() override;

  PgStore(const PgStore&) = delete;
  PgStore& operator=(const PgStore&) = delete;

  // "HOST:PORT/DB", as every message names the store.
  const std::string& name() const { return name_; }
  // The same for a conninfo, without connecting (InvalidArgument if libpq cannot parse it): what
  // logs may show of it (never its password).
  static absl::StatusOr<std::string> NameOf(const std::string& conninfo);
  // Whether a tracker's database_path names a PostgreSQL database (a postgresql:// or
  // postgres:// URI) rather than a SQLite file.
  static bool IsUri(const std::string& database);

  // Store.
  absl::StatusOr<std::optional<std::vector<std::string>>> FindSubmission(
      const std::string& client_id, const std::string& request_id) override;
  absl::Status Apply(const WriteBatch& batch) override;
  absl::StatusOr<int64_t> LastSeq() override;
  absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& job_id) override;
  // filter.limit <= 0 returns no jobs.
  absl::StatusOr<std::vector<StoredJob>> ListJobs(const JobFilter& filter) override;
  absl::StatusOr<std::vector<v1::AttemptLog>> GetAttemptLogs(const std::string& job_id) override;
  absl::StatusOr<std::vector<StoredJob>> LoadUnfinishedJobs() override;
  // Boards are keyed by board_id; LoadBoards returns them in board_id order (bytewise, as
  // SqliteStore, whatever the database's collation).
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

 private:
  class Connection;  // one libpq connection, its prepared statements and its mutex

  // Runs `call` (a read, or a write that may run twice) under `connection`'s lock, once more on a
  // fresh connection if the one it used, made before this call, turned out to be lost.
  template <typename Call>
  static auto WithRetry(Connection& connection, Call call) -> decltype(call());

  PgStore(std::string name, std::unique_ptr<Connection> writer, std::unique_ptr<Connection> reader);

  const std::string name_;
  const std::unique_ptr<Connection> writer_;
  const std::unique_ptr<Connection> reader_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_PG_STORE_H_
