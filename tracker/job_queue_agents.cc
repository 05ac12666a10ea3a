// JobQueue's agent side: registrations, heartbeats and silence, offers, results, leases. See
// job_queue.h; the client side, attempts and the store's bookkeeping are in job_queue.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/bounded_text.h"
#include "base/status_macros.h"
#include "base/time_proto.h"
#include "catalog/trial.h"
#include "google/protobuf/unknown_field_set.h"
#include "proto/error_codes.h"
#include "spdlog/spdlog.h"
#include "stats/cost_stats.h"
#include "tracker/job_queue.h"

namespace benchfarm::tracker {
namespace {

using base::ToProto;

// The health check when none is configured: add (any shape) checked against its reference.
v1::Trial BuiltinHealthCheck() {
  v1::Trial t;
  t.mutable_op()->mutable_template_op()->set_op("add");
  t.set_check_outputs(true);
  t.set_seed(1);
  t.mutable_measure()->set_number(3);
  t.mutable_measure()->set_repeat(1);
  return t;
}

}  // namespace

// ---- agent side -----------------------------------------------------------------------------

absl::Status JobQueue::RegisterAgent(const v1::Register& reg, bool boards_bound) {
  if (std::string p = RegistrationProblem(reg, options_.max_slots_per_board); !p.empty()) {
    return absl::InvalidArgumentError(p);
  }
  absl::MutexLock lock(&mu_);
  // What the agent holds: by attempt when it says (a job whose current attempt it does not hold
  // loses that attempt), else by job id.
  std::set<std::string> held(reg.held_job_ids().begin(), reg.held_job_ids().end());
  std::set<std::pair<std::string, int>> held_attempts;
  for (const v1::HeldAttempt& h : reg.held()) held_attempts.insert({h.job_id(), h.attempt()});
  auto holds = [&](const std::string& id, int attempt) {
    return reg.held().empty() ? held.count(id) > 0 : held_attempts.count({id, attempt}) > 0;
  };
  std::set<std::string>& mine = agent_boards_[reg.agent_id()];
  for (const v1::BoardRegistration& b : reg.boards()) {
    auto other = boards_.find(b.board_id());
    if (other == boards_.end()) continue;
    const std::string& holder = other->second.board.agent_id();
    if (holder.empty() || holder == reg.agent_id()) continue;
    if (boards_bound) {
      return absl::PermissionDeniedError(absl::StrCat(
          "board ", b.board_id(), " is held by agent ", holder,
          "; another agent may serve it only after an admin moves it (farmctl board move ",
          b.board_id(), " ", reg.agent_id(), ")"));
    }
    if (connected_agents_.count(holder) > 0) {
      return absl::AlreadyExistsError(
          absl::StrCat("board ", b.board_id(), " is registered by connected agent ", holder));
    }
  }
  if (absl::Status cores = CoresAgree(reg); !cores.ok()) return cores;
  connected_agents_.insert(reg.agent_id());
  silent_agents_.erase(reg.agent_id());
  heard_[reg.agent_id()] = clock_->Now();
  for (const v1::BoardRegistration& b : reg.boards()) {
    auto [it, added] = boards_.try_emplace(b.board_id());
    BoardRecord& record = it->second;
    v1::Board& board = record.board;
    if (!added) boards_.CountMemory(board, -1);
    board.set_board_id(b.board_id());
    board.set_kind(b.kind());
    *board.mutable_labels() = b.labels();
    *board.mutable_capabilities() = b.capabilities();
    board.set_agent_id(reg.agent_id());
    board.set_flashes(std::max(board.flashes(), b.flashes()));
    board.set_slots(std::max(1, b.slots()));
    board.set_memory_bytes(std::max<int64_t>(0, b.memory_bytes()));
    board.set_timing(b.timing().substr(0, 32));
    board.set_cpu(b.cpu());  // checked: RegistrationProblem, CoresAgree
    boards_.CountMemory(board, 1);
    record.running.clear();
    board.clear_current_job_id();
    board.set_running_jobs(0);
    if (board.state() != v1::QUARANTINED) board.set_state(v1::IDLE);
    boards_.Reindex(&record);
    kinds_.insert(b.kind());
    mine.insert(b.board_id());
    // Stored with the next batch; a failing store does not keep the agent out.
    (void)SaveBoard(record);
  }
  // Running jobs on this agent's boards that it no longer holds lost their attempt.
  absl::Time now = clock_->Now();
  std::vector<LiveJob*> lost;
  std::vector<LiveJob*> running = RunningJobs(&mine);
  SortBySeq(&running);
  for (LiveJob* job : running) {
    const std::string& id = job->job.job_id();
    if (holds(id, job->job.attempts_size())) {
      job->agent_id = reg.agent_id();
      job->lease_deadline = now + options_.lease;
      boards_.Occupy(&boards_[job->job.board_id()], id);
    } else {
      lost.push_back(job);
    }
  }
  for (LiveJob* job : lost) {
    // Ended in memory whatever the store says (a failed write is counted and logged).
    (void)EndAttemptWithoutResult(job, v1::BOARD_LOST,
                                  "the agent reconnected without this attempt of the job");
  }
  return absl::OkStatus();
}

absl::Status JobQueue::CoresAgree(const v1::Register& reg) const {
  // The cores the registration names, by kind (RegistrationProblem saw they agree among
  // themselves), and its boards: they replace what the tracker knows of them.
  std::map<std::string, std::string> cores;
  std::set<std::string> ids;
  for (const v1::BoardRegistration& b : reg.boards()) {
    ids.insert(b.board_id());
    if (!b.cpu().empty()) cores.emplace(b.kind(), b.cpu());
  }
  if (cores.empty()) return absl::OkStatus();
  // Against the boards other connected agents serve. An offline board's core is what it said
  // last: it is checked again when its agent comes back.
  for (const auto& [id, record] : boards_) {
    const v1::Board& other = record.board;
    if (other.cpu().empty() || ids.count(id) > 0 || other.agent_id() == reg.agent_id() ||
        connected_agents_.count(other.agent_id()) == 0) {
      continue;
    }
    auto core = cores.find(other.kind());
    if (core == cores.end() || core->second == other.cpu()) continue;
    return absl::FailedPreconditionError(absl::StrCat(
        "board kind ", other.kind(), ": this agent's boards are a ", core->second, ", board ", id,
        " of agent ", other.agent_id(), " a ", other.cpu(),
        "; a kind is one core (AutoTVM records name it): give these boards another kind"));
  }
  return absl::OkStatus();
}

void JobQueue::DisconnectAgent(const std::string& agent_id) {
  absl::MutexLock lock(&mu_);
  connected_agents_.erase(agent_id);
  silent_agents_.erase(agent_id);
  heard_.erase(agent_id);
  TakeAgentOffline(agent_id);
}

void JobQueue::TakeAgentOffline(const std::string& agent_id) {
  for (const std::string& id : agent_boards_[agent_id]) {
    auto it = boards_.find(id);
    if (it == boards_.end() || it->second.board.agent_id() != agent_id) continue;
    if (it->second.board.state() != v1::QUARANTINED) it->second.board.set_state(v1::OFFLINE);
    boards_.Reindex(&it->second);
  }
}

void JobQueue::RevokeAgent(const std::string& agent_id, const std::string& why) {
  DisconnectAgent(agent_id);
  std::vector<GroupCommit::Ticket> tickets;
  {
    absl::MutexLock lock(&mu_);
    std::vector<LiveJob*> running = RunningJobs(&agent_boards_[agent_id]);
    SortBySeq(&running);
    for (LiveJob* job : running) {
      if (job->agent_id != agent_id) continue;
      counters_.revoked_attempts++;
      tickets.push_back(EndAttemptWithoutResult(job, v1::BOARD_LOST, why));
    }
  }
  for (GroupCommit::Ticket t : tickets) (void)commit_.Wait(t);
}

void JobQueue::Touch(const std::string& agent_id, const std::vector<v1::HeldAttempt>& held) {
  absl::MutexLock lock(&mu_);
  const absl::Time now = clock_->Now();
  const absl::Time deadline = now + options_.lease;
  if (auto heard = heard_.find(agent_id); heard != heard_.end()) heard->second = now;
  if (silent_agents_.erase(agent_id) > 0) {
    // Back from silence: its boards serve again (their lost attempts re-queued meanwhile).
    connected_agents_.insert(agent_id);
    for (const std::string& id : agent_boards_[agent_id]) {
      auto it = boards_.find(id);
      if (it == boards_.end() || it->second.board.agent_id() != agent_id) continue;
      BoardRecord& record = it->second;
      if (record.board.state() == v1::OFFLINE) {
        record.board.set_state(record.running.empty() ? v1::IDLE : v1::BUSY);
        boards_.Reindex(&record);
        (void)SaveBoard(record);
      }
    }
  }
  for (const v1::HeldAttempt& h : held) {
    auto it = jobs_.find(h.job_id());
    if (it == jobs_.end()) continue;
    LiveJob& job = it->second;
    if (job.job.state() == v1::RUNNING && job.agent_id == agent_id &&
        job.job.attempts_size() == h.attempt()) {
      job.lease_deadline = deadline;
    }
  }
}

void JobQueue::Touch(const std::string& agent_id, const std::string& job_id, int attempt) {
  v1::HeldAttempt h;
  h.set_job_id(job_id);
  h.set_attempt(attempt);
  Touch(agent_id, {h});
}

std::vector<std::string> JobQueue::AgentsToPump(PumpCursor* cursor, size_t max_agents) {
  max_agents = std::max<size_t>(1, max_agents);
  absl::MutexLock lock(&mu_);
  std::vector<std::string> agents;
  size_t found = 0;
  auto name = [&](const std::string& agent) {
    if (agents.empty() || agents.back() != agent) {
      agents.push_back(agent);
      ++found;
    }
  };
  if (!cursor->more) {
    for (const auto& [agent_id, cancels] : pending_cancels_) {
      if (!cancels.empty()) agents.push_back(agent_id);
    }
    const absl::Time now = clock_->Now();
    for (const std::string& id : boards_.awaiting_health()) {
      const BoardRecord& record = boards_[id];
      if (now >= record.next_health_check) name(record.board.agent_id());
    }
    cursor->more = true;
    cursor->kind.clear();
    cursor->board_id.clear();
  }
  // Free boards of the kinds with jobs queued (as TakeOffers decides, pins and labels aside: a
  // board that cannot take the kind's jobs is pumped for nothing, which costs a lookup). No
  // offers while the store fails (TakeOffers); cancellations still go.
  const std::vector<std::string> kinds =
      commit_.failing() ? std::vector<std::string>() : queues_.KindsFrom(cursor->kind);
  for (auto kind = kinds.begin(); kind != kinds.end() && found < max_agents; ++kind) {
    auto free = boards_.free_by_kind().find(*kind);
    if (free == boards_.free_by_kind().end()) continue;
    auto board =
        *kind == cursor->kind ? free->second.upper_bound(cursor->board_id) : free->second.begin();
    for (; board != free->second.end() && found < max_agents; ++board) {
      name(boards_[*board].board.agent_id());
      cursor->kind = *kind;
      cursor->board_id = *board;
    }
  }
  // Stopped by max_agents, there may be more (a call that finds nothing ends it).
  cursor->more = found >= max_agents;
  return agents;
}

std::vector<Offer> JobQueue::TakeOffers(const std::string& agent_id,
                                        std::vector<std::string>* cancels) {
  absl::MutexLock lock(&mu_);
  if (cancels != nullptr) *cancels = TakeCancelsLocked(agent_id);
  std::vector<Offer> offers;
  if (connected_agents_.count(agent_id) == 0) return offers;
  // Work measured now could not be stored: none until the store works again.
  if (commit_.failing()) return offers;
  absl::Time now = clock_->Now();
  std::vector<BoardRecord*> candidates;
  for (const std::string& board_id : agent_boards_[agent_id]) {
    BoardRecord& record = boards_[board_id];
    v1::Board& board = record.board;
    if (board.agent_id() != agent_id) continue;
    if (BoardRegistry::HealthCheckDue(record, now)) {
      offers.push_back(OfferHealthCheck(&record, now));
      continue;
    }
    if (board.state() == v1::IDLE || board.state() == v1::BUSY) candidates.push_back(&record);
  }
  // Boards take turns, one job per round, until no board with a free slot finds work.
  const GroupCommit::Ticket durable = commit_.durable();
  for (bool progress = true; progress;) {
    progress = false;
    for (BoardRecord* record : candidates) {
      v1::Board& board = record->board;
      if (!BoardRegistry::HasFreeSlot(*record)) continue;
      // A job is offered once its submission is stored (soon: a commit away).
      LiveJob* job =
          queues_.Pick(board, [durable](const LiveJob& j) { return j.inserted <= durable; });
      if (job == nullptr) continue;
      // A user operator's files travel with the offer: read before anything changes, so a store
      // that cannot give them leaves the job queued (this board tries again next round).
      std::shared_ptr<const v1::Operator> op_files;
      const v1::TemplateOperator& tpl = job->job.trial().op().template_op();
      if (!tpl.op().empty()) {
        absl::StatusOr<std::shared_ptr<const v1::Operator>> entry =
            catalog_.WithFiles(tpl.op(), tpl.version());
        if (!entry.ok()) {
          spdlog::warn("job {}: operator {} version {}: {}: left queued", job->job.job_id(),
                       tpl.op(), tpl.version(), std::string(entry.status().message()));
          continue;
        }
        if (!(*entry)->builtin()) op_files = *std::move(entry);
      }
      progress = true;
      offers.push_back(OfferJob(job, record, agent_id, op_files.get(), now));
    }
  }
  return offers;
}

Offer JobQueue::OfferHealthCheck(BoardRecord* record, absl::Time now) {
  const v1::Board& board = record->board;
  Offer offer;
  offer.agent_id = board.agent_id();
  offer.offer.set_job_id(boards_.StartHealthCheck(record, now + options_.lease));
  offer.offer.set_board_id(board.board_id());
  *offer.offer.mutable_trial() =
      options_.health_check_trial.op().source_case() == v1::OperatorSpec::SOURCE_NOT_SET
          ? BuiltinHealthCheck()
          : options_.health_check_trial;
  offer.offer.mutable_trial()->set_board_kind(board.kind());
  offer.offer.mutable_trial()->set_board_id(board.board_id());
  offer.offer.set_attempt(1);
  offer.offer.set_health_check(true);
  *offer.offer.mutable_lease_deadline() = ToProto(record->health_deadline);
  (void)SaveBoard(*record);
  return offer;
}

Offer JobQueue::OfferJob(LiveJob* job, BoardRecord* record, const std::string& agent_id,
                         const v1::Operator* op_files, absl::Time now) {
  const std::string& board_id = record->board.board_id();
  queues_.Remove(*job);
  job->job.set_state(v1::RUNNING);
  job->job.set_board_id(board_id);
  NoteRunning(*job);
  job->agent_id = agent_id;
  job->lease_deadline = now + options_.lease;
  v1::Attempt* attempt = job->job.add_attempts();
  attempt->set_board_id(board_id);
  attempt->set_agent_id(agent_id);
  *attempt->mutable_started_at() = ToProto(now);
  boards_.Occupy(record, job->job.job_id());
  // Not written yet (defer_offer_writes): usually its result replaces it first. Lost in a crash,
  // the offer is as if not made (the job re-queues; the agent's measurement of it is acknowledged
  // as superseded).
  job->offer_unsaved = true;
  job->offered_at = now;
  Notify(job->job);
  Offer offer;
  offer.agent_id = agent_id;
  offer.offer.set_job_id(job->job.job_id());
  offer.offer.set_board_id(board_id);
  // The trial is not copied into the offer: serialized straight into its bytes as field `trial`
  // (the same wire format; see Offer).
  job->job.trial().SerializeToString(v1::JobOffer::GetReflection()
                                         ->MutableUnknownFields(&offer.offer)
                                         ->AddLengthDelimited(v1::JobOffer::kTrialFieldNumber));
  if (op_files != nullptr) *offer.offer.mutable_operator_() = *op_files;
  offer.offer.set_attempt(job->job.attempts_size());
  *offer.offer.mutable_lease_deadline() = ToProto(job->lease_deadline);
  return offer;
}

absl::Status JobQueue::ReportResult(const std::string& agent_id, const v1::JobResult& report,
                                    bool* superseded, GroupCommit::Ticket* ticket) {
  GroupCommit::Ticket stored = 0;
  // Valid UTF-8 without NUL and within its cap whatever the agent sent (PostgreSQL's text takes
  // nothing else), made so before the lock.
  std::string log = base::BoundedText(report.log(), catalog::kMaxAttemptLogBytes);
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(ReportResultLocked(agent_id, report, std::move(log), superseded, &stored));
  }
  if (ticket != nullptr) {
    *ticket = stored;
    return absl::OkStatus();
  }
  return commit_.Wait(stored);
}

absl::Status JobQueue::ReportResultLocked(const std::string& agent_id, const v1::JobResult& report,
                                          std::string log, bool* superseded,
                                          GroupCommit::Ticket* ticket) {
  if (superseded != nullptr) *superseded = false;
  if (BoardRecord* checked = boards_.HealthCheck(report.job_id())) {
    return ReportHealthCheck(checked, report, ticket);
  }
  auto it = jobs_.find(report.job_id());
  if (it == jobs_.end() || it->second.job.state() != v1::RUNNING ||
      it->second.job.attempts_size() != report.attempt() || it->second.agent_id != agent_id) {
    // Already recorded, cancelled, or from a lost attempt: ignored. A lost attempt's measurement
    // of a job still live may answer its next attempt. Recorded but perhaps not stored yet: the
    // acknowledgement waits for it.
    if (auto f = finishing_.find(report.job_id()); f != finishing_.end())
      *ticket = f->second.ticket;
    if (superseded != nullptr && it != jobs_.end() &&
        report.attempt() <
            it->second.job.attempts_size() + (it->second.job.state() == v1::QUEUED) &&
        !IsInfrastructureError(report.result().error_code())) {
      *superseded = true;
    }
    return absl::OkStatus();
  }
  LiveJob& job = it->second;
  // The attempt's log, in the batch before its result's write (whose ticket is waited for).
  if (!log.empty()) {
    v1::AttemptLog attempt_log;
    attempt_log.set_attempt(report.attempt());
    attempt_log.set_board_id(job.job.board_id());
    attempt_log.set_text(std::move(log));
    (void)commit_.PutLog(report.job_id(), std::move(attempt_log));
  }
  // A malformed result is the board's (or its agent's) failure, not the trial's: the attempt ends
  // as an infrastructure error and the job re-queues (or, out of attempts, ends BOARD_LOST).
  const v1::MeasureOptions& measure = job.job.trial().measure();
  const int max_costs = catalog::EffectiveMeasure(measure).max_costs();
  if (std::string problem = ResultProblem(report.result(), max_costs, TimeoutSeconds(measure));
      !problem.empty()) {
    const std::string refused = absl::StrCat("result refused: ", problem);
    const std::string which = absl::StrCat("job ", report.job_id(), " attempt ", report.attempt());
    NoteBoardOutcome(job.job.board_id(), true, refused);
    (void)EndAttemptWithoutResult(&job, v1::SESSION_ERROR, refused);  // `job` may dangle
    return absl::InvalidArgumentError(
        absl::StrCat(which, ": ", refused, " (the attempt counts as an infrastructure failure)"));
  }
  v1::ErrorCode code = report.result().error_code();
  bool infra = IsInfrastructureError(code);
  if (infra && job.job.attempts_size() < options_.retry_budget) {
    NoteBoardOutcome(job.job.board_id(), infra, report.result().message());
    *ticket = EndAttemptWithoutResult(&job, code, report.result().message());
    return absl::OkStatus();
  }
  v1::Attempt* attempt = job.job.mutable_attempts(job.job.attempts_size() - 1);
  *attempt->mutable_ended_at() = ToProto(clock_->Now());
  attempt->set_error_code(code);
  attempt->set_message(report.result().message());
  // The result's quality is the tracker's to compute: it agrees with the costs it describes.
  v1::Result result = report.result();
  *result.mutable_stats() = stats::CostStatsOfResult(result, options_.unstable_threshold);
  const std::string board_id = job.job.board_id();
  const std::string job_id = job.job.job_id();
  *ticket = Finish(&job, std::move(result), v1::DONE);
  FreeBoard(board_id, job_id);  // `job` dangles since Finish
  NoteBoardOutcome(board_id, infra, report.result().message());
  return absl::OkStatus();
}

absl::Status JobQueue::ReportHealthCheck(BoardRecord* record, const v1::JobResult& report,
                                         GroupCommit::Ticket* ticket) {
  // A malformed result fails the check.
  const std::string problem = ResultProblem(report.result(), catalog::kMaxCosts,
                                            TimeoutSeconds(options_.health_check_trial.measure()));
  const bool passed = problem.empty() && report.result().error_code() == v1::NO_ERROR;
  boards_.EndHealthCheck(
      record, passed,
      passed ? ""
             : absl::StrCat("health check failed: ",
                            !problem.empty()
                                ? problem
                                : absl::StrCat(v1::ErrorCode_Name(report.result().error_code()),
                                               ": ", report.result().message())),
      clock_->Now() + options_.health_check_backoff);
  *ticket = SaveBoard(*record);
  if (!problem.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("health check ", report.job_id(), ": result refused: ", problem));
  }
  return absl::OkStatus();
}

void JobQueue::RecordFlashes(const std::string& agent_id, const v1::BoardUpdate& update) {
  absl::MutexLock lock(&mu_);
  auto it = boards_.find(update.board_id());
  if (it == boards_.end() || it->second.board.agent_id() != agent_id) return;
  it->second.board.set_flashes(update.flashes());
  (void)SaveBoard(it->second);
}

std::vector<std::string> JobQueue::TakeCancels(const std::string& agent_id) {
  absl::MutexLock lock(&mu_);
  return TakeCancelsLocked(agent_id);
}

std::vector<std::string> JobQueue::TakeCancelsLocked(const std::string& agent_id) {
  std::vector<std::string> out;
  auto it = pending_cancels_.find(agent_id);
  if (it != pending_cancels_.end()) {
    out = std::move(it->second);
    pending_cancels_.erase(it);
  }
  return out;
}

void JobQueue::NoteRunning(const LiveJob& job) {
  running_[job.job.board_id()].insert(job.job.job_id());
}

std::vector<LiveJob*> JobQueue::RunningJobs(const std::set<std::string>* boards) {
  std::vector<LiveJob*> running;
  // Collects the running jobs of one board's entry. An entry of a job no longer running there
  // is dropped (the board's set stays, for its next jobs).
  auto collect = [&](decltype(running_)::iterator board) {
    absl::flat_hash_set<std::string>& ids = board->second;
    for (auto id = ids.begin(); id != ids.end();) {
      auto here = id++;
      auto live = jobs_.find(*here);
      if (live == jobs_.end() || live->second.job.state() != v1::RUNNING ||
          live->second.job.board_id() != board->first) {
        ids.erase(here);
        continue;
      }
      running.push_back(&live->second);
    }
  };
  if (boards == nullptr) {
    for (auto it = running_.begin(); it != running_.end(); ++it) collect(it);
  } else {
    for (const std::string& board_id : *boards) {
      auto it = running_.find(board_id);
      if (it != running_.end()) collect(it);
    }
  }
  return running;
}

void JobQueue::SortBySeq(std::vector<LiveJob*>* jobs) {
  std::sort(jobs->begin(), jobs->end(),
            [](const LiveJob* a, const LiveJob* b) { return a->seq < b->seq; });
}

int JobQueue::ExpireLeases() {
  std::vector<v1::Job> garbage;  // freed after the lock is released (declared before it)
  absl::MutexLock lock(&mu_);
  ForgetStored(&garbage);
  absl::Time now = clock_->Now();
  for (const auto& [agent_id, heard] : heard_) {
    if (now - heard < options_.lease || connected_agents_.erase(agent_id) == 0) continue;
    silent_agents_.insert(agent_id);
    counters_.silent_agents++;
    TakeAgentOffline(agent_id);
  }
  std::vector<LiveJob*> expired;
  for (LiveJob* job : RunningJobs()) {
    if (now >= job->lease_deadline) {
      expired.push_back(job);
    } else if (job->offer_unsaved && now - job->offered_at >= options_.defer_offer_writes) {
      SaveOffer(job);
    }
  }
  SortBySeq(&expired);
  for (LiveJob* job : expired) {
    counters_.lease_expiries++;
    // Not the board's failure (see Silent agents): its consecutive failures are left as they are.
    const bool silent = silent_agents_.count(job->agent_id) > 0;
    (void)EndAttemptWithoutResult(
        job, v1::BOARD_LOST,
        silent
            ? absl::StrCat(
                  "the lease expired: agent ", job->agent_id, " has said nothing for ",
                  absl::FormatDuration(absl::Trunc(now - heard_[job->agent_id], absl::Seconds(1))))
            : std::string("the lease expired: the agent's heartbeats did not name this attempt"));
  }
  std::vector<BoardRecord*> silent;  // health checks whose lease ended
  for (const std::string& board_id : boards_.checking_health()) {
    BoardRecord& record = boards_[board_id];
    if (now >= record.health_deadline) silent.push_back(&record);
  }
  for (BoardRecord* record : silent) {
    // Failed; a silent agent's board is checked as soon as the agent is heard from again.
    boards_.EndHealthCheck(record, false, "",
                           silent_agents_.count(record->board.agent_id()) > 0
                               ? now
                               : now + options_.health_check_backoff);
    counters_.lease_expiries++;
  }
  return static_cast<int>(expired.size());
}

}  // namespace benchfarm::tracker
