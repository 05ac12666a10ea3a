// BoardRegistry: the boards the tracker knows — their records, the indexes that let a look at the
// farm cost what it finds, quarantine, and health checks — with no lock and no store; JobQueue
// holds it under its lock and stores what changes.
//
// Indexes (Reindex after every change of a board's state, slots, jobs, kind or health check):
// the boards with a free slot, by kind; quarantined boards awaiting a health check; boards
// running one; and what the boards of each kind say they hold (memory), for admission.
//
// Health checks have their own entry point: StartHealthCheck gives a quarantined board's check
// an id of its own, HealthCheck(id) finds the board a result is for, and EndHealthCheck returns
// the board to service or keeps it quarantined. A job's result is never taken for a check's.
//
// Thread-safety: none (the caller locks).

#ifndef BENCHFARM_TRACKER_BOARD_REGISTRY_H_
#define BENCHFARM_TRACKER_BOARD_REGISTRY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "proto/benchfarm.pb.h"

namespace benchfarm::tracker {

inline constexpr size_t kMaxQuarantineReasonBytes = 512;  // Board.quarantine_reason, held_reason

struct BoardRecord {
  v1::Board board;
  std::set<std::string> running;  // jobs leased to it
  absl::Time next_health_check;   // while it awaits one
  std::string health_job_id;      // while it runs one
  absl::Time health_deadline;
  // Where Reindex filed it: among the free boards of this kind when not empty.
  std::string free_kind;
};

class BoardRegistry {
 public:
  using Map = absl::node_hash_map<std::string, BoardRecord>;

  // The records, as a map (records stay where they are: pointers to them stay valid).
  Map::iterator begin() { return boards_.begin(); }
  Map::iterator end() { return boards_.end(); }
  Map::const_iterator begin() const { return boards_.begin(); }
  Map::const_iterator end() const { return boards_.end(); }
  Map::iterator find(const std::string& id) { return boards_.find(id); }
  Map::const_iterator find(const std::string& id) const { return boards_.find(id); }
  // The board's record, made (empty) if there is none.
  BoardRecord& operator[](const std::string& id) { return boards_[id]; }
  std::pair<Map::iterator, bool> try_emplace(const std::string& id) {
    return boards_.try_emplace(id);
  }

  // ---- indexes ----
  // An IDLE or BUSY board running fewer jobs than its slots.
  static bool HasFreeSlot(const BoardRecord& record);
  // A quarantined board (not held by an admin) with no health check outstanding.
  static bool AwaitsHealthCheck(const BoardRecord& record);
  // ... whose check is due.
  static bool HealthCheckDue(const BoardRecord& record, absl::Time now);
  // Files the board in the indexes as it is now.
  void Reindex(BoardRecord* record);
  // Adds the board's memory to its kind's (sign 1) or takes it away (-1): around every change
  // of a board's kind or memory.
  void CountMemory(const v1::Board& board, int sign);
  // The most one trial of `kind` may take: nullopt unless every board of the kind says what it
  // holds (BoardRegistration.memory_bytes).
  std::optional<int64_t> LargestMemory(const std::string& kind) const;
  // kind -> ids of its boards with a free slot.
  const std::map<std::string, std::set<std::string>>& free_by_kind() const { return free_by_kind_; }
  // Quarantined boards awaiting a health check (AwaitsHealthCheck); boards running one.
  const std::set<std::string>& awaiting_health() const { return awaiting_health_; }
  const std::set<std::string>& checking_health() const { return checking_health_; }
  // OK when the indexes agree with the records (else which board and how not).
  absl::Status CheckIndexes() const;

  // ---- jobs on boards ----
  // The board holds the job: BUSY (from IDLE or OFFLINE).
  void Occupy(BoardRecord* record, const std::string& job_id);
  // It no longer does: a BUSY board left with none is IDLE, or OFFLINE when its agent is not
  // `online`.
  void Free(BoardRecord* record, const std::string& job_id, bool online);

  // ---- quarantine and health checks ----
  // An attempt on the board ended: an infrastructure error adds one to its consecutive failures,
  // anything else resets them; at `threshold` the board is QUARANTINED with `why` (capped), its
  // health check due at `now`. Whether the board changed.
  bool NoteOutcome(BoardRecord* record, bool infra_error, absl::string_view why, int threshold,
                   absl::Time now);
  // Starts the board's health check: HEALTH_CHECK, leased until `deadline`; its id.
  std::string StartHealthCheck(BoardRecord* record, absl::Time deadline);
  // The board whose running health check has this id, or null.
  BoardRecord* HealthCheck(const std::string& id);
  // Ends the board's health check: passed, the board serves again (IDLE, failures forgotten);
  // else it stays QUARANTINED with `reason` (capped, if given) and is checked again at `next`.
  void EndHealthCheck(BoardRecord* record, bool passed, const std::string& reason, absl::Time next);
  // Forgets the board's running health check, if any (an admin released the board): a result for
  // it is not taken for the board's. Its state is left to the caller.
  void ForgetHealthCheck(BoardRecord* record);

 private:
  Map boards_;
  std::map<std::string, std::set<std::string>> free_by_kind_;
  std::set<std::string> awaiting_health_;
  std::set<std::string> checking_health_;
  absl::flat_hash_map<std::string, std::string> health_checks_;  // check id -> board id
  int64_t next_health_ = 1;
  // What the boards of each kind say they hold.
  struct KindMemory {
    int64_t unknown = 0;           // boards that do not say
    std::multiset<int64_t> known;  // what the others say
    void Count(int64_t bytes, int sign);
    bool operator==(const KindMemory& o) const { return unknown == o.unknown && known == o.known; }
  };
  std::map<std::string, KindMemory> memory_by_kind_;
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_BOARD_REGISTRY_H_
