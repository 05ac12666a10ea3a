#include "tests/postgres_server.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <postgresql/libpq-fe.h>  // /usr/include/postgresql: see //third_party:pq
#include <pwd.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <system_error>
#include <utility>
#include <vector>

#include "absl/memory/memory.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "base/files.h"
#include "base/os_error.h"
#include "gtest/gtest.h"
#include "process/run_command.h"
#include "tests/http_probe.h"

namespace benchfarm::testing {
namespace {

constexpr char kSetpriv[] = "/usr/bin/setpriv";
constexpr char kInstallHint[] =
    "PostgreSQL 15's server is not installed (apt install postgresql-15; ./farm installs it)";

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

std::string Trimmed(const char* message) {
  return std::string(absl::StripAsciiWhitespace(message != nullptr ? message : ""));
}

// The pids whose parent is `pid` (from /proc/*/stat).
std::vector<pid_t> ChildrenOf(pid_t pid) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    pid_t candidate = 0;
    if (!absl::SimpleAtoi(entry->d_name, &candidate)) continue;
    // Not a stream iterator: reading a process that exits after the open throws (ESRCH).
    const std::string stat =
        base::ReadFile(absl::StrCat("/proc/", candidate, "/stat")).value_or("");
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses; the last ')' ends it.
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty());
    pid_t parent = 0;
    if (fields.size() > 1 && absl::SimpleAtoi(fields[1], &parent) && parent == pid) {
      children.push_back(candidate);
    }
  }
  closedir(proc);
  return children;
}

// Whether `pid` has ended (gone, or a zombie waiting for its new parent to reap it).
bool Ended(pid_t pid) {
  const std::string stat = base::ReadFile(absl::StrCat("/proc/", pid, "/stat")).value_or("");
  const size_t close = stat.rfind(')');
  return close == std::string::npos || stat.size() < close + 3 || stat[close + 2] == 'Z' ||
         stat[close + 2] == 'X';
}

}  // namespace

PostgresServer::PostgresServer(PostgresServerOptions options, std::string dir,
                               bool as_postgres_user)
    : options_(std::move(options)),
      dir_(std::move(dir)),
      data_dir_(dir_ + "/data"),
      log_path_(dir_ + "/server.log"),
      as_postgres_user_(as_postgres_user) {}

PostgresServer::~PostgresServer() {
  if (absl::Status stopped = Stop(); !stopped.ok()) {
    std::cerr << "postgres_server: " << stopped << std::endl;
  }
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::vector<std::string> PostgresServer::AsServerUser(std::vector<std::string> argv) const {
  if (!as_postgres_user_) return argv;
  std::vector<std::string> wrapped = {kSetpriv,         "--reuid=postgres", "--regid=postgres",
                                      "--clear-groups", "--pdeathsig=KILL", "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return wrapped;
}

absl::StatusOr<std::unique_ptr<PostgresServer>> PostgresServer::Start(
    PostgresServerOptions options) {
  for (const char* program : {"initdb", "postgres"}) {
    const std::string path = absl::StrCat(options.bin_dir, "/", program);
    if (!Executable(path)) {
      return absl::FailedPreconditionError(absl::StrCat(kInstallHint, ": no executable ", path));
    }
  }
  const bool as_root = geteuid() == 0;
  const passwd* postgres_user = as_root ? getpwnam("postgres") : nullptr;
  if (as_root && postgres_user == nullptr) {
    return absl::FailedPreconditionError(
        "running as root, and PostgreSQL refuses to: its server needs the `postgres` user, which "
        "Debian's postgresql-15 package creates; there is none");
  }
  if (as_root && !Executable(kSetpriv)) {
    return absl::FailedPreconditionError(
        absl::StrCat("running as root: ", kSetpriv,
                     " (util-linux) is needed to run PostgreSQL as "
                     "the postgres user"));
  }

  // As root the server runs as postgres, which must reach its data directory: /tmp (searchable
  // by everyone), not the test's temp directory under root's home. Removed when done.
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string pattern =
      absl::StrCat(!as_root && tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/postgres.XXXXXX");
  if (mkdtemp(pattern.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", base::ErrnoText(errno)));
  }
  auto server = absl::WrapUnique(new PostgresServer(options, pattern, as_root));
  if (as_root) {
    if (chown(server->dir_.c_str(), postgres_user->pw_uid, postgres_user->pw_gid) != 0) {
      return absl::InternalError(
          absl::StrCat("chown postgres ", server->dir_, ": ", base::ErrnoText(errno)));
    }
  }

  process::RunCommandOptions initdb;
  initdb.argv = server->AsServerUser(
      {absl::StrCat(options.bin_dir, "/initdb"), "--pgdata=" + server->data_dir_,
       absl::StrCat("--username=", kUser), "--auth=trust", "--encoding=UTF8", "--locale=C",
       "--no-sync", "--no-instructions"});
  initdb.working_dir = server->dir_;
  initdb.time_limit = options.start_timeout;
  absl::StatusOr<process::CommandRun> run =
      process::RunCommand(initdb, absl::InfiniteFuture(), "initdb");
  if (!run.ok()) return run.status();
  if (!run->succeeded()) {
    return absl::InternalError(absl::StrCat(
        "initdb ", process::CommandLine(run->argv), " failed (",
        run->timed_out ? "timed out" : (run->exit ? run->exit->ToString() : "not reaped"), ")",
        process::OutputForError(run->output, run->output_bytes)));
  }

  // A free port can be taken by someone else before the server binds it: then another one.
  absl::Status launched;
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    server->port_ = *port;
    launched = server->Launch();
    if (launched.ok()) return server;
    if (!absl::StrContains(launched.message(), "could not bind")) break;
  }
  return launched;
}

absl::Status PostgresServer::Launch() {
  process::SubprocessOptions options;
  options.argv = AsServerUser({absl::StrCat(options_.bin_dir, "/postgres"), "-D", data_dir_, "-p",
                               absl::StrCat(port_), "-k", "", "-c", "listen_addresses=127.0.0.1",
                               "-c", "fsync=on"});
  options.working_dir = dir_;
  options.stdin_mode = process::StdioMode::kNull;
  options.stdout_mode = process::StdioMode::kNull;
  options.stderr_path = log_path_;
  absl::StatusOr<std::unique_ptr<process::Subprocess>> started =
      process::Subprocess::Start(options);
  if (!started.ok()) return started.status();
  process_ = *std::move(started);

  const std::string ping = absl::StrCat(ConnInfo("postgres"), " connect_timeout=2");
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  while (PQping(ping.c_str()) != PQPING_OK) {
    if (std::optional<base::ProcessExit> exit = process_->ExitStatus(); exit.has_value()) {
      process_.reset();
      return absl::InternalError(absl::StrCat("postgres on port ", port_, " ", exit->ToString(),
                                              " before accepting connections; its log ends:\n",
                                              LogTail()));
    }
    if (absl::Now() > deadline) {
      Kill();
      return absl::InternalError(absl::StrCat(
          "postgres on port ", port_, " accepted no connection within ",
          absl::FormatDuration(options_.start_timeout), "; its log ends:\n", LogTail()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return absl::OkStatus();
}

std::string PostgresServer::ConnInfo(const std::string& dbname) const {
  return absl::StrCat("host=127.0.0.1 port=", port_, " dbname=", dbname, " user=", kUser);
}

absl::StatusOr<std::string> PostgresServer::Query(const std::string& dbname,
                                                  const std::string& sql) const {
  PGconn* conn = PQconnectdb(absl::StrCat(ConnInfo(dbname), " connect_timeout=10").c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string message = Trimmed(PQerrorMessage(conn));
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("postgres on port ", port_, ": ", message));
  }
  PGresult* result = PQexec(conn, sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  absl::StatusOr<std::string> value;
  if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK) {
    value = PQntuples(result) > 0 && PQnfields(result) > 0 ? PQgetvalue(result, 0, 0) : "";
  } else {
    value = absl::InternalError(absl::StrCat("postgres on port ", port_, ": ", sql, ": ",
                                             Trimmed(PQresultErrorMessage(result))));
  }
  PQclear(result);
  PQfinish(conn);
  return value;
}

absl::StatusOr<std::string> PostgresServer::CreateDatabase(const std::string& dbname) {
  absl::Status status =
      Query("postgres", absl::StrCat("CREATE DATABASE \"", dbname, "\"")).status();
  if (!status.ok()) return status;
  return ConnInfo(dbname);
}

void PostgresServer::Kill() {
  if (process_ == nullptr) return;
  // Each backend leads a process group of its own, so the group's SIGKILL reaches the postmaster
  // only: its children are killed by pid too, before they notice and shut down on their own.
  const std::vector<pid_t> children = ChildrenOf(process_->pid());
  process_->Signal(SIGKILL);
  for (pid_t child : children) kill(child, SIGKILL);
  if (absl::StatusOr<base::ProcessExit> exit = process_->WaitExit(absl::Now() + absl::Seconds(10));
      !exit.ok()) {
    std::cerr << "postgres_server: Kill: " << exit.status() << std::endl;
  }
  process_.reset();
  // Until they are gone, a new server on this data directory would find them attached to the old
  // shared memory and refuse to start.
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  for (pid_t child : children) {
    while (!Ended(child) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(5));
  }
}

void PostgresServer::Freeze(bool frozen) {
  if (process_ == nullptr) return;
  const int signal = frozen ? SIGSTOP : SIGCONT;
  process_->Signal(signal);
  for (pid_t child : ChildrenOf(process_->pid())) kill(child, signal);
}

absl::Status PostgresServer::Stop() {
  if (process_ == nullptr) return absl::OkStatus();
  process_->Signal(SIGINT);  // fast shutdown
  absl::StatusOr<base::ProcessExit> exit = process_->WaitExit(absl::Now() + options_.stop_timeout);
  if (exit.ok()) {
    process_.reset();
    return absl::OkStatus();
  }
  Kill();
  return absl::DeadlineExceededError(
      absl::StrCat("postgres on port ", port_, " did not stop within ",
                   absl::FormatDuration(options_.stop_timeout), " of SIGINT (",
                   exit.status().message(), "); killed"));
}

absl::Status PostgresServer::Restart() {
  if (absl::Status stopped = Stop(); !stopped.ok()) return stopped;
  return Launch();
}

std::string PostgresServer::LogTail(size_t bytes) const {
  std::string log = base::ReadFile(log_path_).value_or("");
  if (log.size() > bytes) log = "..." + log.substr(log.size() - bytes);
  return log;
}

namespace {

// Owns the shared server; GoogleTest tears it down after the last test.
class SharedServerEnvironment : public ::testing::Environment {
 public:
  absl::StatusOr<PostgresServer*> Get() {
    absl::MutexLock lock(&mu_);
    if (!started_) {
      started_ = true;
      const absl::Time start = absl::Now();
      absl::StatusOr<std::unique_ptr<PostgresServer>> server = PostgresServer::Start();
      if (server.ok()) {
        server_ = *std::move(server);
        std::cout << "postgres_server: PostgreSQL started on port " << server_->port() << " in "
                  << absl::FormatDuration(absl::Now() - start) << std::endl;
      } else {
        failure_ = server.status();
      }
    }
    if (server_ == nullptr) return failure_;
    return server_.get();
  }

  void TearDown() override {
    absl::MutexLock lock(&mu_);
    server_.reset();
  }

 private:
  absl::Mutex mu_;
  bool started_ = false;
  std::unique_ptr<PostgresServer> server_;
  absl::Status failure_;
};

// Registered before main() runs RUN_ALL_TESTS (GoogleTest owns it).
SharedServerEnvironment* const shared_environment = static_cast<SharedServerEnvironment*>(
    ::testing::AddGlobalTestEnvironment(new SharedServerEnvironment));

}  // namespace

absl::StatusOr<PostgresServer*> SharedPostgresServer() { return shared_environment->Get(); }

}  // namespace benchfarm::testing
