// Leadership: of several trackers given the same database, one serves and the others wait to
// take over (active/standby). A standby does not listen: clients and agents given every
// tracker's address (TrackerChannel: "HOST:PORT,HOST:PORT") reach whichever one serves.
//
// PgLeadership is the PostgreSQL form, for trackers on several machines: a session-level
// advisory lock (pg_try_advisory_lock) held on a connection of its own. PostgreSQL releases it
// when that session ends — the leader's process dies (kill -9: the kernel closes its socket) or
// its machine or network goes (TCP keepalives on both ends, a few seconds). A leader that loses
// the connection has lost leadership (a standby may already serve): StillLeading() says so, and
// the tracker stops at once.
//
// FileLeadership is the SQLite form: the trackers share one machine and the database file, and
// leadership is an exclusive lock (flock) on the file "<database>.leader" beside it. The kernel
// releases it when the leader's process ends, however it ends (kill -9 included), and a standby
// that polls it takes over within one poll period. It also keeps a second tracker from ever
// writing a database another one serves. The leader writes its pid into the file (for the
// standby's log).
//
// Thread-safety: one thread uses an object.

#ifndef BENCHFARM_TRACKER_LEADERSHIP_H_
#define BENCHFARM_TRACKER_LEADERSHIP_H_

#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct pg_conn;  // libpq's PGconn: libpq-fe.h stays out of users' includes

namespace benchfarm::tracker {

class Leadership {
 public:
  virtual ~Leadership() = default;  // gives leadership up

  // Leads now if no other tracker does: true, or false (another leads). Errors name the lock.
  virtual absl::StatusOr<bool> TryAcquire() = 0;
  // Waits, trying every `poll`, until this process leads (true) or `stop()` (false). A lock that
  // cannot be reached now (Unavailable: the database is down) is tried again like a held one;
  // other errors end the wait.
  absl::StatusOr<bool> Acquire(absl::FunctionRef<bool()> stop, absl::Duration poll);
  // While leading: false once leadership may have passed to another tracker (its connection to
  // the database is gone). Blocks for at most a round trip.
  virtual bool StillLeading() { return leading_; }
  // Who leads, for a standby's log ("tracker pid 123"), or "" if unknown.
  virtual std::string Leader() const = 0;
  // What the lock is, for logs ("/var/lib/benchfarm/tracker.db.leader").
  virtual std::string Lock() const = 0;

  bool leading() const { return leading_; }

 protected:
  bool leading_ = false;
};

class FileLeadership final : public Leadership {
 public:
  explicit FileLeadership(std::string path);  // the lock file, e.g. "<database>.leader"
  ~FileLeadership() override;

  FileLeadership(const FileLeadership&) = delete;
  FileLeadership& operator=(const FileLeadership&) = delete;

  // Errors: Internal naming the file when it cannot be opened or locked.
  absl::StatusOr<bool> TryAcquire() override;
  std::string Leader() const override;
  std::string Lock() const override { return path_; }
  // The leader's pid as it wrote it into the file, or 0 (none, or unreadable).
  int LeaderPid() const;
  const std::string& path() const { return path_; }

 private:
  const std::string path_;
  int fd_ = -1;
};

// `conninfo`: libpq's, as for PgStore; `name`: the store's "HOST:PORT/DB", for messages.
class PgLeadership final : public Leadership {
 public:
  PgLeadership(std::string conninfo, std::string name);
  ~PgLeadership() override;

  PgLeadership(const PgLeadership&) = delete;
  PgLeadership& operator=(const PgLeadership&) = delete;

  // Errors: Unavailable naming the database when it cannot be reached (a standby keeps trying).
  absl::StatusOr<bool> TryAcquire() override;
  bool StillLeading() override;
  std::string Leader() const override;
  std::string Lock() const override;

  // The advisory lock's key: the same for every benchfarm tracker of a database.
  static constexpr int64_t kLockKey = 0x62656e6368666d;  // "benchfm"

 private:
  void Disconnect();
  const std::string conninfo_;
  const std::string name_;
  ::pg_conn* conn_ = nullptr;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_LEADERSHIP_H_
