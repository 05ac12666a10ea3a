// Store: where the tracker keeps what it must not lose — submissions, jobs (with their trial,
// attempts and result) and boards — behind an interface, so the gRPC-free core (JobQueue) is
// tested against a real SQLite file (SqliteStore) and a later PostgreSQL store can serve several
// trackers.
//
// Durability contract: when a mutating call returns OK, its change survives the tracker process
// being killed (kill -9) at any later moment (and, where the store is configured so, power
// loss). Each call is atomic: all of it is stored or none. Writes come as batches (WriteBatch):
// the tracker commits many state changes in one transaction (group commit: tracker/group_commit.h).
//
// Errors: Internal with the database's own message (and the path) for I/O or SQL failures;
// FailedPrecondition when the store is not open; InvalidArgument for a job without an id.
//
// Thread-safety: implementations are safe to call from several threads (the tracker writes from
// its commit thread and reads from request threads).

#ifndef BENCHFARM_TRACKER_STORE_H_
#define BENCHFARM_TRACKER_STORE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::tracker {

// Which jobs ListJobs returns; empty fields match everything.
struct JobFilter {
  std::string client_id;
  std::string board_kind;
  std::string op;  // Trial.op.template_op.op
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;
  // Only jobs with sequence number > after_seq (for paging), in sequence order.
  int64_t after_seq = 0;
  int limit = 1000;

  // Which of the fields above are set, one bit each (a store keys its prepared query by it).
  static constexpr int kByClient = 1;
  static constexpr int kByBoardKind = 2;
  static constexpr int kByOp = 4;
  static constexpr int kByState = 8;
  int Conditions() const {
    return (client_id.empty() ? 0 : kByClient) | (board_kind.empty() ? 0 : kByBoardKind) |
           (op.empty() ? 0 : kByOp) | (state == v1::JOB_STATE_UNSPECIFIED ? 0 : kByState);
  }
};

// A job as stored: the proto and the store's sequence number (submission order, from 1).
struct StoredJob {
  int64_t seq = 0;
  v1::Job job;
};

// What one transaction writes, in this order: submissions, jobs, boards, attempt logs.
struct WriteBatch {
  struct Submission {
    std::string client_id;
    std::string request_id;
    std::vector<std::string> job_ids;  // in submission order
  };
  // A job as the store keeps it: the columns it is found by and the serialized v1::Job.
  struct JobWrite {
    // Given by the caller for an insert (> 0). For an update, 0 or the stored job's seq (then
    // it must match: a job_id with another seq is NotFound; SQLite finds the row by it).
    int64_t seq = 0;
    bool insert = false;  // a new job (else: replaces the stored one)
    std::string job_id;   // Job.job_id
    std::string client_id;
    std::string board_kind;  // Job.trial.board_kind
    std::string op;          // Job.trial.op.template_op.op ("" for a C-source trial)
    int32_t state = 0;       // Job.state
    int32_t priority = 0;    // Job.trial.priority
    std::string data;        // the serialized v1::Job
    static JobWrite Of(int64_t seq, bool insert, const v1::Job& job);
  };
  std::vector<Submission> submissions;
  std::vector<JobWrite> jobs;
  std::vector<v1::Board> boards;  // inserted or replaced, by board_id
  // An attempt's log (JobResult.log), inserted or replaced, by (job_id, log.attempt()); the job
  // need not be stored in the same batch.
  struct LogWrite {
    std::string job_id;
    v1::AttemptLog log;
  };
  std::vector<LogWrite> logs;
  // The batch may already be stored, wholly or in part: it is sent again after a failure that
  // may have come after its commit (a connection lost during COMMIT). Then a submission already
  // stored is kept and a job to insert that is already stored is replaced — neither is
  // AlreadyExists — so applying it twice stores it once.
  bool replay = false;

  bool empty() const {
    return submissions.empty() && jobs.empty() && boards.empty() && logs.empty();
  }
  size_t size() const { return submissions.size() + jobs.size() + boards.size() + logs.size(); }
};

// What a store did on its own to stay healthy, for /metrics; zero where a backend has nothing of
// the kind.
struct StoreUpkeep {
  int64_t wal_truncations = 0;          // SQLite: the WAL checkpointed whole and truncated
  int64_t wal_truncations_blocked = 0;  // SQLite: attempts another process's reader held off
};

// The size of an operator's files: their names and contents.
int64_t FilesBytes(const v1::Operator& op);
// Drops an operator's files, keeping their size in files_bytes (what LoadOperators returns).
void WithoutFiles(v1::Operator* op);

class Store {
 public:
  virtual ~Store() = default;

  // Counters of StoreUpkeep; cheap and lock-free (read on every /metrics scrape).
  virtual StoreUpkeep Upkeep() const { return {}; }

  // The jobs of an earlier submission with this (client_id, request_id), in submission order,
  // or nullopt if there was none.
  virtual absl::StatusOr<std::optional<std::vector<std::string>>> FindSubmission(
      const std::string& client_id, const std::string& request_id) = 0;

  // Applies every write of the batch in one transaction: all of them or none. A submission or a
  // job to insert that is already stored is AlreadyExists (unless batch.replay), a job to update
  // that is not stored is NotFound (nothing is written then); an empty batch is OK and writes
  // nothing.
  virtual absl::Status Apply(const WriteBatch& batch) = 0;

  // The highest job sequence number ever given (0 for none): new jobs take the next ones.
  virtual absl::StatusOr<int64_t> LastSeq() = 0;

  // One write each, as a batch of its own (for tests and tools; the tracker batches).
  // InsertSubmission gives the jobs the next sequence numbers and returns them.
  absl::StatusOr<std::vector<int64_t>> InsertSubmission(const std::string& client_id,
                                                        const std::string& request_id,
                                                        const std::vector<v1::Job>& jobs);
  // Replaces a stored job (matched by job_id; NotFound if absent): its state and everything it
  // holds. Its client, board kind, op and priority are those it was inserted with (they never
  // change: the store does not rewrite them, nor their indexes).
  absl::Status UpdateJob(const v1::Job& job);
  absl::Status UpsertBoard(const v1::Board& board);

  virtual absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& job_id) = 0;

  // Jobs matching the filter, in sequence order, at most filter.limit.
  virtual absl::StatusOr<std::vector<StoredJob>> ListJobs(const JobFilter& filter) = 0;

  // The logs of a job's attempts (WriteBatch::logs), by attempt; none for a job without any (or
  // that is not stored).
  virtual absl::StatusOr<std::vector<v1::AttemptLog>> GetAttemptLogs(const std::string& job_id) = 0;

  // Every job in state QUEUED or RUNNING, in sequence order (for recovery after a restart).
  virtual absl::StatusOr<std::vector<StoredJob>> LoadUnfinishedJobs() = 0;

  // Boards: registration data, flashes, quarantine state survive restarts.
  virtual absl::StatusOr<std::vector<v1::Board>> LoadBoards() = 0;

  // The operator catalog: each (name, version) stored once, never changed (AlreadyExists if it
  // is stored). LoadOperators returns them in the order they were added, without their files
  // (WithoutFiles: files_bytes says their size); GetOperator one of them with its files (nullopt:
  // not stored).
  virtual absl::Status InsertOperator(const v1::Operator& op) = 0;
  virtual absl::StatusOr<std::vector<v1::Operator>> LoadOperators() = 0;
  virtual absl::StatusOr<std::optional<v1::Operator>> GetOperator(const std::string& name,
                                                                  const std::string& version) = 0;
  // Who each operator name belongs to (name -> client id): set, or replaced, by SetOperatorOwner.
  virtual absl::Status SetOperatorOwner(const std::string& name, const std::string& owner) = 0;
  virtual absl::StatusOr<std::map<std::string, std::string>> LoadOperatorOwners() = 0;
  // What changed about an operator version after it was added (retired, added again): set, or
  // replaced, by SetOperatorState (InvalidArgument without a name and version); a version never
  // set has none (a default OperatorState).
  virtual absl::Status SetOperatorState(const std::string& name, const std::string& version,
                                        const v1::OperatorState& state) = 0;
  using OperatorStates = std::map<std::pair<std::string, std::string>, v1::OperatorState>;
  virtual absl::StatusOr<OperatorStates> LoadOperatorStates() = 0;

 private:
  absl::Mutex insert_mu_;  // InsertSubmission: numbers taken and stored together
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_STORE_H_
