// PostgresServer: a throwaway PostgreSQL 15 server for a test — Debian's postgresql-15 binaries
// (/usr/lib/postgresql/15/bin), a fresh cluster in a temporary directory, listening on a free
// loopback port — so tests run against a real server, not a mock.
//
// Start() runs `initdb` (trust authentication, superuser "benchfarm", UTF-8, C locale) into
// $TEST_TMPDIR/postgres.XXXXXX/data (/tmp when TEST_TMPDIR is unset), then `postgres -D DATA -p
// PORT -k '' -c listen_addresses=127.0.0.1 -c fsync=on` as a process::Subprocess (its own process
// group, SIGKILLed if the test process dies, however it dies), and waits until it accepts
// connections (PQping). Unix-domain sockets are off (`-k ''`): Bazel's TEST_TMPDIR is longer than
// a socket path may be, and every connection goes over TCP anyway. The server's log is
// DIR/server.log; every error of Start() and Restart() ends with its tail.
//
// As root (CI), PostgreSQL refuses to run: initdb and postgres then run as the `postgres` user
// Debian's package creates, through `setpriv --reuid postgres --regid postgres --clear-groups
// --pdeathsig KILL` (the death signal is set after the uid changes, which would clear it). The
// directory is given to that user, and each of its parent directories that others cannot search
// gets o+x (only that bit; e.g. /root, where Bazel keeps its output), which is printed on stderr.
// Inside Bazel's linux-sandbox as root only uid 0 exists, so such tests are tagged no-sandbox.
//
// Thread-safety: none; one thread uses an object (the connections its users open are theirs).

#ifndef BENCHFARM_TESTS_POSTGRES_SERVER_H_
#define BENCHFARM_TESTS_POSTGRES_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "process/subprocess.h"

namespace benchfarm::testing {

struct PostgresServerOptions {
  // Where the PostgreSQL 15 server programs are.
  std::string bin_dir = "/usr/lib/postgresql/15/bin";
  // How long initdb, and the server to accept connections, may take.
  absl::Duration start_timeout = absl::Seconds(60);
  // How long a fast shutdown (SIGINT) may take before SIGKILL.
  absl::Duration stop_timeout = absl::Seconds(10);
};

class PostgresServer {
 public:
  static constexpr char kUser[] = "benchfarm";

  // A new cluster, started. Errors: FailedPrecondition when PostgreSQL 15 is not installed (naming
  // the package) or, as root, there is no `postgres` user; Internal when initdb fails or the
  // server exits or does not accept connections in time (with its output or log's tail).
  static absl::StatusOr<std::unique_ptr<PostgresServer>> Start(PostgresServerOptions options = {});

  // Stops the server: fast shutdown (SIGINT), SIGKILL to its process group after stop_timeout.
  ~PostgresServer();

  PostgresServer(const PostgresServer&) = delete;
  PostgresServer& operator=(const PostgresServer&) = delete;

  int port() const { return port_; }
  const std::string& data_dir() const { return data_dir_; }
  bool running() const { return process_ != nullptr; }

  // The libpq connection string for `dbname` as the superuser: "host=127.0.0.1 port=N dbname=...
  // user=benchfarm".
  std::string ConnInfo(const std::string& dbname) const;

  // Creates a database and returns its connection string. Errors: Internal with the server's
  // message (e.g. it exists), Unavailable when the server does not answer.
  absl::StatusOr<std::string> CreateDatabase(const std::string& dbname);

  // Runs `sql` (one or more statements, text protocol) on `dbname` over a connection of its own;
  // returns the first column of the first row of the last statement's result ("" if none).
  // Errors: Internal with the server's message, Unavailable when it cannot connect.
  absl::StatusOr<std::string> Query(const std::string& dbname, const std::string& sql) const;

  // A crash: SIGKILL to the server's process group (postmaster and backends at once), reaped.
  void Kill();

  // A hung server: SIGSTOP (true) or SIGCONT (false) to the postmaster and its children. Stopped,
  // it still accepts TCP connections (the kernel does) but answers nothing.
  void Freeze(bool frozen);

  // Fast shutdown (SIGINT: active transactions are rolled back, connections closed), SIGKILL
  // after stop_timeout. Returns an error if it had to be killed. No-op if it is not running.
  absl::Status Stop();

  // Stops the server if it runs, then starts it again on the same data directory and port (after
  // Kill(), PostgreSQL recovers from its WAL). Errors: as Start().
  absl::Status Restart();

  // The last `bytes` of the server's log.
  std::string LogTail(size_t bytes = 4096) const;

 private:
  PostgresServer(PostgresServerOptions options, std::string dir, bool as_postgres_user);

  // Starts postgres on port_ and waits until it accepts connections.
  absl::Status Launch();
  // argv run as the server's user (through setpriv when this process is root).
  std::vector<std::string> AsServerUser(std::vector<std::string> argv) const;

  const PostgresServerOptions options_;
  const std::string dir_;       // the temporary directory: data/, server.log
  const std::string data_dir_;  // dir_/data
  const std::string log_path_;  // dir_/server.log
  const bool as_postgres_user_;
  int port_ = 0;
  std::unique_ptr<process::Subprocess> process_;
};

// The test binary's one server, for tests that each want a fresh database rather than a server of
// their own: started on first use (a failure is kept and returned to every later caller, not
// retried) and stopped once every test has run (a GoogleTest environment). The start-up time is
// printed on stdout.
absl::StatusOr<PostgresServer*> SharedPostgresServer();

}  // namespace benchfarm::testing

#endif  // BENCHFARM_TESTS_POSTGRES_SERVER_H_
