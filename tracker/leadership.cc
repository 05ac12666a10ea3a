#include "tracker/leadership.h"

#include <fcntl.h>
#include <postgresql/libpq-fe.h>  // /usr/include/postgresql: see //third_party:pq
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "base/files.h"

namespace benchfarm::tracker {

FileLeadership::FileLeadership(std::string path) : path_(std::move(path)) {}

FileLeadership::~FileLeadership() {
  if (fd_ >= 0) close(fd_);  // releases the lock
}

absl::StatusOr<bool> FileLeadership::TryAcquire() {
  if (leading_) return true;
  if (fd_ < 0) {
    fd_ = open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0) {
      return absl::InternalError(
          absl::StrCat("leadership: cannot open ", path_, ": ", std::strerror(errno)));
    }
  }
  if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return false;
    return absl::InternalError(
        absl::StrCat("leadership: cannot lock ", path_, ": ", std::strerror(errno)));
  }
  leading_ = true;
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd_, 0) != 0 || pwrite(fd_, pid.data(), pid.size(), 0) < 0) {
    // Only the standby's message needs it: leadership holds without.
  }
  return true;
}

absl::StatusOr<bool> Leadership::Acquire(absl::FunctionRef<bool()> stop, absl::Duration poll) {
  for (;;) {
    absl::StatusOr<bool> led = TryAcquire();
    if (led.ok() ? *led : !absl::IsUnavailable(led.status())) return led;
    if (stop()) return false;
    absl::SleepFor(poll);
  }
}

std::string FileLeadership::Leader() const {
  const int pid = LeaderPid();
  return pid > 0 ? absl::StrCat("tracker pid ", pid) : "";
}

int FileLeadership::LeaderPid() const {
  absl::StatusOr<std::string> text = base::ReadFile(path_);
  int pid = 0;
  if (!text.ok() || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &pid)) return 0;
  return pid;
}

// ---- PostgreSQL -------------------------------------------------------------------------------

namespace {

// Dead peers found in seconds, on both ends: this side's libpq and the server's session.
constexpr const char* kKeepalives[][2] = {
    {"keepalives", "1"},          {"keepalives_idle", "5"},
    {"keepalives_interval", "2"}, {"keepalives_count", "3"},
    {"connect_timeout", "5"},     {"application_name", "benchfarm-tracker-leadership"}};

}  // namespace

PgLeadership::PgLeadership(std::string conninfo, std::string name)
    : conninfo_(std::move(conninfo)), name_(std::move(name)) {}

PgLeadership::~PgLeadership() { Disconnect(); }

void PgLeadership::Disconnect() {
  if (conn_ != nullptr) PQfinish(conn_);  // ends the session: the lock goes with it
  conn_ = nullptr;
  leading_ = false;
}

absl::StatusOr<bool> PgLeadership::TryAcquire() {
  if (leading_) return true;
  if (conn_ == nullptr || PQstatus(conn_) != CONNECTION_OK) {
    Disconnect();
    std::vector<const char*> keys = {"dbname"}, values = {conninfo_.c_str()};
    for (const auto& [k, v] : kKeepalives) {
      keys.push_back(k);
      values.push_back(v);
    }
    keys.push_back(nullptr);
    values.push_back(nullptr);
    conn_ = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = absl::StripTrailingAsciiWhitespace(PQerrorMessage(conn_)).data();
      Disconnect();
      return absl::UnavailableError(
          absl::StrCat("leadership: postgres ", name_, ": cannot connect: ", why));
    }
    // The server drops the session of a leader that went silent within seconds, too.
    PQclear(PQexec(conn_,
                   "SET tcp_keepalives_idle = 5; SET tcp_keepalives_interval = 2; "
                   "SET tcp_keepalives_count = 3"));
  }
  const std::string sql = absl::StrCat("SELECT pg_try_advisory_lock(", kLockKey, ")");
  PGresult* result = PQexec(conn_, sql.c_str());
  const bool ok = PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1;
  const bool got = ok && std::strcmp(PQgetvalue(result, 0, 0), "t") == 0;
  std::string why = ok ? "" : PQerrorMessage(conn_);
  PQclear(result);
  if (!ok) {
    Disconnect();
    return absl::UnavailableError(absl::StrCat("leadership: postgres ", name_, ": ",
                                               absl::StripTrailingAsciiWhitespace(why)));
  }
  leading_ = got;
  return got;
}

bool PgLeadership::StillLeading() {
  if (!leading_ || conn_ == nullptr) return false;
  PGresult* result = PQexec(conn_, "SELECT 1");
  const bool alive = PQresultStatus(result) == PGRES_TUPLES_OK;
  PQclear(result);
  if (!alive) Disconnect();
  return alive;
}

std::string PgLeadership::Leader() const {
  if (conn_ == nullptr) return "";
  const std::string sql = absl::StrCat(
      "SELECT a.pid, coalesce(host(a.client_addr), 'local') FROM pg_locks l "
      "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted "
      "AND ((l.classid::bigint << 32) | l.objid::bigint) = ",
      kLockKey);
  PGresult* result = PQexec(conn_, sql.c_str());
  std::string who;
  if (PQresultStatus(result) == PGRES_TUPLES_OK && PQntuples(result) == 1) {
    who = absl::StrCat("the tracker of database session ", PQgetvalue(result, 0, 0), " (from ",
                       PQgetvalue(result, 0, 1), ")");
  }
  PQclear(result);
  return who;
}

std::string PgLeadership::Lock() const {
  return absl::StrCat("advisory lock ", kLockKey, " on postgres ", name_);
}

}  // namespace benchfarm::tracker
