// Store: where the tracker keeps what it must not lose — submissions, jobs (with their trial,
// attempts and result) and boards — behind an interface, so the gRPC-free core (JobQueue) is
// tested against a real SQLite file (SqliteStore) and a later PostgreSQL store can serve several
// trackers.
//
// Durability contract: when a mutating call returns OK, its change survives the tracker process
// being killed (kill -9) at any later moment. Each call is atomic: all of it is stored or none.
//
// Errors: Internal with the database's own message (and the path) for I/O or SQL failures;
// FailedPrecondition when the store is not open; InvalidArgument for a job without an id.
//
// Thread-safety: implementations are safe to call from several threads; JobQueue calls them
// under its own lock anyway.

#ifndef BENCHFARM_TRACKER_STORE_H_
#define BENCHFARM_TRACKER_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
};

// A job as stored: the proto and the store's sequence number (submission order, from 1).
struct StoredJob {
  int64_t seq = 0;
  v1::Job job;
};

class Store {
 public:
  virtual ~Store() = default;

  // The jobs of an earlier submission with this (client_id, request_id), in submission order,
  // or nullopt if there was none.
  virtual absl::StatusOr<std::optional<std::vector<std::string>>> FindSubmission(
      const std::string& client_id, const std::string& request_id) = 0;

  // Stores a submission and its jobs (each with job_id set) in one transaction. AlreadyExists if
  // the (client_id, request_id) is already stored (nothing is written then). Returns the
  // sequence number given to each job, in order.
  virtual absl::StatusOr<std::vector<int64_t>> InsertSubmission(
      const std::string& client_id, const std::string& request_id,
      const std::vector<v1::Job>& jobs) = 0;

  // Replaces a stored job (matched by job_id; NotFound if absent).
  virtual absl::Status UpdateJob(const v1::Job& job) = 0;

  virtual absl::StatusOr<std::optional<StoredJob>> GetJob(const std::string& job_id) = 0;

  // Jobs matching the filter, in sequence order, at most filter.limit.
  virtual absl::StatusOr<std::vector<StoredJob>> ListJobs(const JobFilter& filter) = 0;

  // Every job in state QUEUED or RUNNING, in sequence order (for recovery after a restart).
  virtual absl::StatusOr<std::vector<StoredJob>> LoadUnfinishedJobs() = 0;

  // Boards: registration data, flashes, quarantine state survive restarts.
  virtual absl::Status UpsertBoard(const v1::Board& board) = 0;
  virtual absl::StatusOr<std::vector<v1::Board>> LoadBoards() = 0;

  // The operator catalog: each (name, version) stored once, never changed (AlreadyExists if it
  // is stored). LoadOperators returns them in the order they were added.
  virtual absl::Status InsertOperator(const v1::Operator& op) = 0;
  virtual absl::StatusOr<std::vector<v1::Operator>> LoadOperators() = 0;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_STORE_H_
