#include "tracker/board_registry.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace benchfarm::tracker {
namespace {

// Health checks' ids (never a submitted job's).
constexpr char kHealthCheckPrefix[] = "health-";

}  // namespace

void BoardRegistry::KindMemory::Count(int64_t bytes, int sign) {
  if (bytes <= 0) {
    unknown += sign;
  } else if (sign > 0) {
    known.insert(bytes);
  } else if (auto it = known.find(bytes); it != known.end()) {
    known.erase(it);
  }
}

bool BoardRegistry::HasFreeSlot(const BoardRecord& record) {
  const v1::Board& board = record.board;
  return (board.state() == v1::IDLE || board.state() == v1::BUSY) &&
         static_cast<int>(record.running.size()) < std::max(1, board.slots());
}

bool BoardRegistry::AwaitsHealthCheck(const BoardRecord& record) {
  return record.board.state() == v1::QUARANTINED && !record.board.held() &&
         record.health_job_id.empty();
}

bool BoardRegistry::HealthCheckDue(const BoardRecord& record, absl::Time now) {
  return AwaitsHealthCheck(record) && now >= record.next_health_check;
}

void BoardRegistry::Reindex(BoardRecord* record) {
  const std::string& id = record->board.board_id();
  const bool free = HasFreeSlot(*record);
  if (!record->free_kind.empty() && (!free || record->free_kind != record->board.kind())) {
    auto kind = free_by_kind_.find(record->free_kind);
    kind->second.erase(id);
    if (kind->second.empty()) free_by_kind_.erase(kind);
    record->free_kind.clear();
  }
  if (free && record->free_kind.empty()) {
    free_by_kind_[record->board.kind()].insert(id);
    record->free_kind = record->board.kind();
  }
  if (AwaitsHealthCheck(*record)) {
    awaiting_health_.insert(id);
  } else {
    awaiting_health_.erase(id);
  }
  if (!record->health_job_id.empty()) {
    checking_health_.insert(id);
  } else {
    checking_health_.erase(id);
  }
}

void BoardRegistry::CountMemory(const v1::Board& board, int sign) {
  memory_by_kind_[board.kind()].Count(board.memory_bytes(), sign);
}

std::optional<int64_t> BoardRegistry::LargestMemory(const std::string& kind) const {
  auto memory = memory_by_kind_.find(kind);
  if (memory == memory_by_kind_.end() || memory->second.unknown != 0 ||
      memory->second.known.empty()) {
    return std::nullopt;
  }
  return *memory->second.known.rbegin();
}

absl::Status BoardRegistry::CheckIndexes() const {
  size_t free = 0, awaiting = 0, checking = 0;
  std::map<std::string, KindMemory> memory;
  for (const auto& [id, record] : boards_) {
    memory[record.board.kind()].Count(record.board.memory_bytes(), 1);
    const bool want_free = HasFreeSlot(record);
    auto kind = free_by_kind_.find(record.board.kind());
    const bool is_free = kind != free_by_kind_.end() && kind->second.count(id) > 0;
    if (want_free != is_free || want_free != !record.free_kind.empty()) {
      return absl::InternalError(
          absl::StrCat("board ", id, " (", v1::BoardState_Name(record.board.state()), ", ",
                       record.running.size(), " of ", record.board.slots(), " slots) is ",
                       is_free ? "" : "not ", "indexed as free"));
    }
    if (AwaitsHealthCheck(record) != (awaiting_health_.count(id) > 0)) {
      return absl::InternalError(absl::StrCat("board ", id, ": awaiting_health_ is wrong"));
    }
    if (record.health_job_id.empty() == (checking_health_.count(id) > 0)) {
      return absl::InternalError(absl::StrCat("board ", id, ": checking_health_ is wrong"));
    }
    if (!record.health_job_id.empty()) {
      auto check = health_checks_.find(record.health_job_id);
      if (check == health_checks_.end() || check->second != id) {
        return absl::InternalError(absl::StrCat("board ", id, ": its health check is not indexed"));
      }
    }
    free += want_free;
    awaiting += AwaitsHealthCheck(record);
    checking += !record.health_job_id.empty();
  }
  for (const auto& [kind, m] : memory_by_kind_) {
    if (!(m == memory[kind])) {
      return absl::InternalError(absl::StrCat("memory_by_kind_[", kind, "] is wrong"));
    }
  }
  size_t indexed_free = 0;
  for (const auto& [kind, ids] : free_by_kind_) indexed_free += ids.size();
  if (indexed_free != free || awaiting_health_.size() != awaiting ||
      checking_health_.size() != checking || health_checks_.size() != checking) {
    return absl::InternalError("an index names a board that is not there");
  }
  return absl::OkStatus();
}

void BoardRegistry::Occupy(BoardRecord* record, const std::string& job_id) {
  record->running.insert(job_id);
  v1::Board& board = record->board;
  board.set_current_job_id(*record->running.begin());
  board.set_running_jobs(static_cast<int>(record->running.size()));
  if (board.state() == v1::IDLE || board.state() == v1::OFFLINE) board.set_state(v1::BUSY);
  Reindex(record);
}

void BoardRegistry::Free(BoardRecord* record, const std::string& job_id, bool online) {
  v1::Board& board = record->board;
  record->running.erase(job_id);
  board.set_running_jobs(static_cast<int>(record->running.size()));
  if (record->running.empty()) {
    board.clear_current_job_id();
  } else {
    board.set_current_job_id(*record->running.begin());
  }
  if (board.state() == v1::BUSY && record->running.empty()) {
    board.set_state(online ? v1::IDLE : v1::OFFLINE);
  }
  Reindex(record);
}

bool BoardRegistry::NoteOutcome(BoardRecord* record, bool infra_error, absl::string_view why,
                                int threshold, absl::Time now) {
  v1::Board& board = record->board;
  if (!infra_error && board.consecutive_infra_failures() == 0) return false;  // nothing new
  board.set_consecutive_infra_failures(infra_error ? board.consecutive_infra_failures() + 1 : 0);
  if (infra_error && board.consecutive_infra_failures() >= threshold) {
    board.set_state(v1::QUARANTINED);
    board.set_quarantine_reason(std::string(why.substr(0, kMaxQuarantineReasonBytes)));
    record->next_health_check = now;
    Reindex(record);
  }
  return true;
}

std::string BoardRegistry::StartHealthCheck(BoardRecord* record, absl::Time deadline) {
  const std::string& board_id = record->board.board_id();
  record->health_job_id = absl::StrCat(kHealthCheckPrefix, board_id, "-", next_health_++);
  record->health_deadline = deadline;
  record->board.set_state(v1::HEALTH_CHECK);
  health_checks_[record->health_job_id] = board_id;
  Reindex(record);
  return record->health_job_id;
}

BoardRecord* BoardRegistry::HealthCheck(const std::string& id) {
  auto check = health_checks_.find(id);
  if (check == health_checks_.end()) return nullptr;
  auto board = boards_.find(check->second);
  return board == boards_.end() || board->second.health_job_id != id ? nullptr : &board->second;
}

void BoardRegistry::ForgetHealthCheck(BoardRecord* record) {
  health_checks_.erase(record->health_job_id);
  record->health_job_id.clear();
}

void BoardRegistry::EndHealthCheck(BoardRecord* record, bool passed, const std::string& reason,
                                   absl::Time next) {
  ForgetHealthCheck(record);
  v1::Board& board = record->board;
  if (passed) {
    board.set_state(v1::IDLE);
    board.set_consecutive_infra_failures(0);
    board.clear_quarantine_reason();
  } else {
    board.set_state(v1::QUARANTINED);
    if (!reason.empty()) board.set_quarantine_reason(reason.substr(0, kMaxQuarantineReasonBytes));
    record->next_health_check = next;
  }
  Reindex(record);
}

}  // namespace benchfarm::tracker
