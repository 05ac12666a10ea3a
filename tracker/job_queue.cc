// JobQueue: see job_queue.h.
#include "tracker/job_queue.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/time_proto.h"
#include "google/protobuf/util/message_differencer.h"
#include "google/protobuf/util/time_util.h"
#include "proto/error_codes.h"
#include "spdlog/spdlog.h"
#include "stats/cost_stats.h"

namespace benchfarm::tracker {
namespace {

using google::protobuf::util::TimeUtil;
// The caps a trial shares with boards and results, and their checks (catalog/trial.h).
using catalog::kMaxBoardIdBytes;
using catalog::kMaxBoardKindBytes;
using catalog::LabelsProblem;
using catalog::Oversized;

using base::ToProto;

absl::Status Invalid(int index, const std::string& field, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("trials[", index, "].", field, ": ", problem));
}

// "j-" + 13 base-32 digits (0-9a-v): 15 characters, which std::string keeps inline (no allocation
// for each copy of an id, and a key compare in the queue's maps reads no other memory). The first
// 7 digits hold the job's sequence number (its low 34 bits: distinct for 17 billion jobs), the
// last 6 are 30 random bits. Ids thus sort in submission order, and the store's index of job ids
// grows at its end: with random ids each insert went to a random page of an index that outgrows
// the cache (a model in Python's sqlite3 at 1,000,000 jobs: 15.6 µs per insert against 7.6).
std::string NewJobId(int64_t seq) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  uint64_t random;
  {
    absl::MutexLock lock(&mu);
    random = absl::Uniform<uint64_t>(*gen);
  }
  const uint64_t bits = (static_cast<uint64_t>(seq) << 30) | (random & ((uint64_t{1} << 30) - 1));
  constexpr char kDigits[] = "0123456789abcdefghijklmnopqrstuv";
  std::string id = "j-0000000000000";
  uint64_t rest = bits;
  for (size_t i = id.size(); i > 2; --i, rest >>= 5) id[i - 1] = kDigits[rest & 31];
  return id;
}

}  // namespace

JobQueue::JobQueue(Store* store, const base::Clock* clock, JobQueueOptions options)
    : store_(store),
      clock_(clock),
      options_(std::move(options)),
      catalog_(store, options_.catalog),
      commit_(store, GroupCommitOptions{options_.store_probe}) {
  for (const std::string& kind : options_.known_kinds) kinds_.insert(kind);
}

JobQueue::~JobQueue() {
  absl::MutexLock lock(&mu_);
  SaveOffers(absl::InfiniteFuture());
}

absl::Status JobQueue::Flush() {
  GroupCommit::Ticket last;
  {
    absl::MutexLock lock(&mu_);
    SaveOffers(absl::InfiniteFuture());
    last = commit_.last();
  }
  return commit_.Wait(last);
}

absl::Status JobQueue::Recover() {
  RETURN_IF_ERROR(catalog_.Load());
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(std::vector<v1::Board> boards, store_->LoadBoards());
  for (v1::Board& board : boards) {
    BoardRecord& record = boards_[board.board_id()];
    if (board.state() != v1::QUARANTINED) board.set_state(v1::OFFLINE);
    board.clear_current_job_id();
    board.set_running_jobs(0);
    record.board = std::move(board);
    kinds_.insert(record.board.kind());
    agent_boards_[record.board.agent_id()].insert(record.board.board_id());
    boards_.CountMemory(record.board, 1);
    boards_.Reindex(&record);
  }
  ASSIGN_OR_RETURN(std::vector<StoredJob> jobs, store_->LoadUnfinishedJobs());
  ASSIGN_OR_RETURN(last_seq_, store_->LastSeq());
  absl::Time now = clock_->Now();
  for (StoredJob& stored : jobs) {
    LiveJob& live = jobs_[stored.job.job_id()];
    live.seq = stored.seq;
    live.job = std::move(stored.job);
    AddLoad(&live);
    kinds_.insert(live.job.trial().board_kind());
    if (live.job.state() == v1::RUNNING) {
      // Its agent may come back holding it: give it one lease period to do so.
      live.lease_deadline = now + options_.lease;
      NoteRunning(live);
      auto board = boards_.find(live.job.board_id());
      if (board != boards_.end()) {
        live.agent_id = board->second.board.agent_id();
        board->second.running.insert(live.job.job_id());
        board->second.board.set_current_job_id(*board->second.running.begin());
        board->second.board.set_running_jobs(static_cast<int>(board->second.running.size()));
        boards_.Reindex(&board->second);
      }
    } else {
      Enqueue(&live);
    }
  }
  return absl::OkStatus();
}

// ---- validation -----------------------------------------------------------------------------

JobQueue::CatalogCheck JobQueue::CheckInCatalog(const v1::Trial& t) const {
  std::shared_ptr<const v1::Operator> entry;  // a template trial's, from the catalog
  auto find_spec = [&](const v1::TemplateOperator& tpl) -> absl::StatusOr<const v1::OpTemplate*> {
    ASSIGN_OR_RETURN(entry, catalog_.ForNewTrial(tpl.op(), tpl.version()));
    return &entry->spec();
  };
  CatalogCheck check{catalog::CheckTrial(t, find_spec), ""};
  if (check.args.ok() && entry != nullptr) check.version = entry->version();
  return check;
}

absl::Status JobQueue::ValidateTrial(v1::Trial* trial, int i, const CatalogCheck& check) const {
  const v1::Trial& t = *trial;
  const absl::StatusOr<catalog::TrialArgs>& args = check.args;
  if (!args.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("trials[", i, "].", args.status().message()));
  }
  if (!check.version.empty())
    trial->mutable_op()->mutable_template_op()->set_version(check.version);
  // What depends on boards: a kind that exists, arguments that fit some board of the kind (when
  // every board says what it holds), the pin.
  if (kinds_.count(t.board_kind()) == 0) {
    return Invalid(i, "board_kind", absl::StrCat("unknown board kind \"", t.board_kind(), "\""));
  }
  const int64_t bytes = args->Bytes(t.check_outputs());
  if (std::optional<int64_t> largest = boards_.LargestMemory(t.board_kind());
      largest && bytes > *largest) {
    return Invalid(i, "args",
                   absl::StrCat("the arguments take ", bytes, " bytes; the largest board of kind ",
                                t.board_kind(), " holds ", *largest));
  }
  return CheckPin(t, i);
}

absl::Status JobQueue::CheckPin(const v1::Trial& t, int i) const {
  if (t.board_id().empty() && t.labels().empty()) return absl::OkStatus();
  auto labels_text = [&t] {
    std::vector<std::string> parts;
    std::map<std::string, std::string> sorted(t.labels().begin(), t.labels().end());
    for (const auto& [k, v] : sorted) parts.push_back(absl::StrCat(k, "=", v));
    return absl::StrJoin(parts, ",");
  };
  if (!t.board_id().empty()) {
    auto it = boards_.find(t.board_id());
    if (it == boards_.end()) {
      return Invalid(i, "board_id",
                     absl::StrCat("no board \"", t.board_id().substr(0, 64), "\" is registered"));
    }
    if (it->second.board.kind() != t.board_kind()) {
      return Invalid(i, "board_id",
                     absl::StrCat("board ", t.board_id(), " is of kind ", it->second.board.kind(),
                                  ", not ", t.board_kind()));
    }
    if (!Eligible(t, it->second.board)) {
      return Invalid(i, "labels",
                     absl::StrCat("board ", t.board_id(), " does not have ", labels_text()));
    }
    return absl::OkStatus();
  }
  for (const auto& [id, record] : boards_) {
    if (record.board.kind() == t.board_kind() && Eligible(t, record.board)) return absl::OkStatus();
  }
  return Invalid(
      i, "labels",
      absl::StrCat("no registered board of kind ", t.board_kind(), " has ", labels_text()));
}

// ---- queues ---------------------------------------------------------------------------------

void JobQueue::Enqueue(LiveJob* job) {
  job->job.set_state(v1::QUEUED);
  job->job.clear_board_id();
  job->agent_id.clear();
  queues_.Add(job);
}

// ---- client side ----------------------------------------------------------------------------

absl::StatusOr<std::vector<std::string>> JobQueue::Submit(const std::string& client_id,
                                                          const std::string& request_id,
                                                          const std::vector<v1::Trial>& trials) {
  ASSIGN_OR_RETURN(Accepted accepted, SubmitAsync(client_id, request_id, trials));
  RETURN_IF_ERROR(commit_.Wait(accepted.ticket));
  return std::move(accepted.job_ids);
}

absl::StatusOr<JobQueue::Accepted> JobQueue::SubmitAsync(const std::string& client_id,
                                                         const std::string& request_id,
                                                         std::vector<v1::Trial> trials) {
  if (client_id.empty() || client_id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("client_id: required, at most ", kMaxIdBytes, " bytes"));
  }
  if (request_id.empty() || request_id.size() > kMaxIdBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("request_id: required, at most ", kMaxIdBytes, " bytes"));
  }
  if (trials.empty() || static_cast<int>(trials.size()) > options_.max_trials_per_submission) {
    return absl::InvalidArgumentError(
        absl::StrCat("trials: need 1..", options_.max_trials_per_submission, " per submission"));
  }
  // Before the lock (wasted on a retry, which is answered below without them).
  std::vector<CatalogCheck> checks;
  checks.reserve(trials.size());
  for (const v1::Trial& t : trials) checks.push_back(CheckInCatalog(t));
  // One submission at a time from here, so Accept may let go of mu_ between its steps.
  absl::MutexLock submitting(&submit_mu_);
  absl::ReleasableMutexLock lock(&mu_);
  std::optional<Accepted> earlier;
  RETURN_IF_ERROR(FindSubmission(client_id, request_id, &earlier));
  if (earlier.has_value()) {
    RETURN_IF_ERROR(CheckRetry(client_id, request_id, earlier->job_ids, trials));
    return *std::move(earlier);
  }
  if (commit_.failing()) {
    return absl::UnavailableError(absl::StrCat("the tracker's database is failing (",
                                               commit_.Stats().problem,
                                               "); nothing was taken: try again later"));
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    RETURN_IF_ERROR(ValidateTrial(&trials[i], static_cast<int>(i), checks[i]));
  }
  std::vector<int64_t> sizes;
  RETURN_IF_ERROR(CheckClientLoad(client_id, trials, &sizes));
  lock.Release();
  return Accept(client_id, request_id, std::move(trials), sizes);
}

absl::Status JobQueue::FindSubmission(const std::string& client_id, const std::string& request_id,
                                      std::optional<Accepted>* earlier) {
  // Not yet stored (submitted_), or in the store — read without the lock (the store may be busy
  // committing), unless it was forgotten from submitted_ meanwhile (then it is in the store: look
  // again).
  auto pending = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = submitted_.find({client_id, request_id});
    if (it == submitted_.end()) return false;
    *earlier = Accepted{it->second.job_ids, it->second.ticket};
    return true;
  };
  for (;;) {
    if (pending()) return absl::OkStatus();
    const int64_t forgotten = forgotten_submissions_;
    mu_.Unlock();
    absl::StatusOr<std::optional<std::vector<std::string>>> found =
        store_->FindSubmission(client_id, request_id);
    mu_.Lock();
    if (!found.ok()) return found.status();
    if (found->has_value()) {
      *earlier = Accepted{**std::move(found), 0};  // stored
      return absl::OkStatus();
    }
    if (forgotten != forgotten_submissions_) continue;
    // Not stored; perhaps accepted meanwhile by a concurrent call with the same id.
    pending();
    return absl::OkStatus();
  }
}

absl::Status JobQueue::CheckRetry(const std::string& client_id, const std::string& request_id,
                                  const std::vector<std::string>& earlier,
                                  const std::vector<v1::Trial>& trials) {
  // A retry must be the same submission: otherwise the client reused the id by mistake.
  auto conflict = [&](const std::string& what) {
    return absl::AlreadyExistsError(absl::StrCat("request_id \"", request_id, "\" of client ",
                                                 client_id,
                                                 " was already used for different trials (", what,
                                                 "); use a new request_id for a new submission"));
  };
  if (earlier.size() != trials.size()) {
    return conflict(absl::StrCat("it had ", earlier.size(), " trials, this one ", trials.size()));
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    ASSIGN_OR_RETURN(std::optional<v1::Job> stored, FindJobLocked(earlier[i]));
    if (!stored.has_value()) continue;
    v1::Trial was = stored->trial();
    if (trials[i].op().template_op().version().empty()) {
      was.mutable_op()->mutable_template_op()->clear_version();
    }
    if (!google::protobuf::util::MessageDifferencer::Equals(was, trials[i])) {
      return conflict(absl::StrCat("trials[", i, "] differs"));
    }
  }
  return absl::OkStatus();
}

absl::Status JobQueue::CheckClientLoad(const std::string& client_id,
                                       const std::vector<v1::Trial>& trials,
                                       std::vector<int64_t>* sizes) const {
  int64_t bytes = 0;
  for (const v1::Trial& t : trials) {
    sizes->push_back(static_cast<int64_t>(t.ByteSizeLong()));
    bytes += sizes->back();
  }
  ClientLoad load;
  if (auto it = load_by_client_.find(client_id); it != load_by_client_.end()) load = it->second;
  const int64_t n = static_cast<int64_t>(trials.size());
  if (load.jobs + n > options_.max_queued_per_client) {
    return absl::ResourceExhaustedError(
        absl::StrCat("client ", client_id, " has ", load.jobs, " unfinished jobs; ", n,
                     " more would exceed max_queued_per_client (", options_.max_queued_per_client,
                     "): wait for some to finish, or cancel some"));
  }
  if (load.bytes + bytes > options_.max_queued_bytes_per_client) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "client ", client_id, " has ", load.bytes, " bytes of unfinished trials; these ", n,
        " trials (", bytes, " bytes) would exceed max_queued_bytes_per_client (",
        options_.max_queued_bytes_per_client, " bytes): wait for some to finish, or cancel some"));
  }
  return absl::OkStatus();
}

JobQueue::Accepted JobQueue::Accept(const std::string& client_id, const std::string& request_id,
                                    std::vector<v1::Trial> checked,
                                    const std::vector<int64_t>& sizes) {
  const size_t n = checked.size();
  // 1. The submission's sequence numbers, in order (no other submission runs meanwhile).
  int64_t first_seq;
  {
    absl::MutexLock lock(&mu_);
    first_seq = last_seq_ + 1;
    last_seq_ += static_cast<int64_t>(n);
  }
  // 2. Its jobs and their writes, outside the lock: nothing else knows them yet.
  std::vector<v1::Job> jobs(n);
  std::vector<std::string> ids;
  ids.reserve(n);
  std::vector<WriteBatch::JobWrite> writes;  // with the submission: one transaction
  writes.reserve(n);
  const google::protobuf::Timestamp now = ToProto(clock_->Now());
  for (size_t i = 0; i < n; ++i) {
    const int64_t seq = first_seq + static_cast<int64_t>(i);
    jobs[i].set_job_id(NewJobId(seq));
    jobs[i].set_client_id(client_id);
    *jobs[i].mutable_trial() = std::move(checked[i]);
    jobs[i].set_state(v1::QUEUED);
    *jobs[i].mutable_submitted_at() = now;
    ids.push_back(jobs[i].job_id());
    writes.push_back(WriteBatch::JobWrite::Of(seq, /*insert=*/true, jobs[i]));
  }
  // 3. To the store, in the order of the sequence numbers.
  Accepted accepted;
  accepted.ticket = commit_.PutSubmission(client_id, request_id, std::move(writes));
  // 4. Live and queued, kAcceptChunk jobs per hold of the lock: offered once stored.
  for (size_t begin = 0; begin < n; begin += kAcceptChunk) {
    absl::MutexLock lock(&mu_);
    for (size_t i = begin; i < std::min(n, begin + kAcceptChunk); ++i) {
      LiveJob& live = jobs_[ids[i]];
      live.seq = first_seq + static_cast<int64_t>(i);
      live.job = std::move(jobs[i]);
      live.trial_bytes = sizes[i];
      live.inserted = accepted.ticket;
      AddLoad(&live);
      Enqueue(&live);
      Notify(live.job);
    }
    if (begin + kAcceptChunk >= n) {
      counters_.trials_by_client[client_id] += static_cast<int64_t>(n);
      submitted_[{client_id, request_id}] = {accepted.ticket, ids};
    }
  }
  accepted.job_ids = std::move(ids);
  return accepted;
}

absl::StatusOr<std::optional<v1::Job>> JobQueue::FindJobLocked(const std::string& job_id) {
  if (auto it = jobs_.find(job_id); it != jobs_.end()) return it->second.job;
  if (auto it = finishing_.find(job_id); it != finishing_.end()) return it->second.job;
  ASSIGN_OR_RETURN(std::optional<StoredJob> stored, store_->GetJob(job_id));
  if (!stored.has_value()) return std::nullopt;
  return std::move(stored->job);
}

absl::StatusOr<v1::Job> JobQueue::GetJob(const std::string& job_id) {
  {
    absl::MutexLock lock(&mu_);
    if (auto it = jobs_.find(job_id); it != jobs_.end()) return it->second.job;
    if (auto it = finishing_.find(job_id); it != finishing_.end()) return it->second.job;
  }
  ASSIGN_OR_RETURN(std::optional<StoredJob> stored, store_->GetJob(job_id));
  if (!stored.has_value()) return absl::NotFoundError(absl::StrCat("no job ", job_id));
  return stored->job;
}

absl::StatusOr<std::vector<v1::AttemptLog>> JobQueue::AttemptLogs(const std::string& job_id,
                                                                  int attempt) {
  ASSIGN_OR_RETURN(v1::Job job, GetJob(job_id));
  RETURN_IF_ERROR(commit_.Wait(commit_.last()));
  ASSIGN_OR_RETURN(std::vector<v1::AttemptLog> logs, store_->GetAttemptLogs(job_id));
  if (attempt == 0) return logs;
  std::vector<std::string> have;
  for (v1::AttemptLog& log : logs) {
    if (log.attempt() == attempt) return std::vector<v1::AttemptLog>{std::move(log)};
    have.push_back(absl::StrCat(log.attempt()));
  }
  return absl::NotFoundError(
      absl::StrCat("job ", job_id, " has no log of attempt ", attempt, " (it has ",
                   job.attempts_size(), " attempt(s); ",
                   have.empty() ? std::string("none has a log yet")
                                : absl::StrCat("logs of attempt ", absl::StrJoin(have, ", ")),
                   ")"));
}

absl::StatusOr<v1::Job> JobQueue::Cancel(const std::string& job_id) {
  // Stored but not live: its submission is being accepted (Accept hands a submission's jobs to the
  // store before it makes them live, and a client paging the stored jobs may already see them).
  // Once the submission lock is free, Accept is done with it.
  bool accepting = false;
  {
    absl::MutexLock lock(&mu_);
    if (jobs_.count(job_id) == 0 && finishing_.count(job_id) == 0) {
      absl::StatusOr<std::optional<v1::Job>> stored = FindJobLocked(job_id);
      accepting = stored.ok() && stored->has_value() && (*stored)->state() == v1::QUEUED;
    }
  }
  if (accepting) {
    absl::MutexLock accepted(&submit_mu_);
  }
  GroupCommit::Ticket ticket = 0;
  v1::Job cancelled;
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job_id);
    if (it == jobs_.end()) {
      ASSIGN_OR_RETURN(std::optional<v1::Job> job, FindJobLocked(job_id));
      if (!job.has_value()) return absl::NotFoundError(absl::StrCat("no job ", job_id));
      return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has already finished"));
    }
    if (commit_.failing()) {
      return absl::UnavailableError(absl::StrCat("the tracker's database is failing (",
                                                 commit_.Stats().problem,
                                                 "); nothing was cancelled: try again later"));
    }
    LiveJob& job = it->second;
    v1::Result result;
    result.set_error_code(v1::CANCELLED);
    result.set_message("cancelled by the client");
    const bool running = job.job.state() == v1::RUNNING;
    const std::string agent_id = job.agent_id;
    const std::string board_id = job.job.board_id();
    if (!running) queues_.Remove(job);
    ticket = Finish(&job, std::move(result), v1::CANCELLED_STATE);  // `job` dangles from here
    cancelled = finishing_[job_id].job;
    if (running) {
      pending_cancels_[agent_id].push_back(job_id);
      FreeBoard(board_id, job_id);
    }
  }
  RETURN_IF_ERROR(commit_.Wait(ticket));
  return cancelled;
}

absl::StatusOr<std::vector<StoredJob>> JobQueue::List(const JobFilter& filter) {
  // What was changed before this call is in the store (unless it is failing: then as stored),
  // offers not written yet too.
  (void)Flush();
  return store_->ListJobs(filter);
}

std::vector<v1::KindSummary> JobQueue::Summary() {
  absl::MutexLock lock(&mu_);
  std::map<std::string, v1::KindSummary> kinds;
  for (const std::string& kind : kinds_) kinds[kind].set_board_kind(kind);
  for (const auto& [id, record] : boards_) {
    v1::KindSummary& k = kinds[record.board.kind()];
    k.set_board_kind(record.board.kind());
    k.set_boards_total(k.boards_total() + 1);
    if (record.board.state() == v1::IDLE) k.set_boards_free(k.boards_free() + 1);
    if (record.board.state() == v1::QUARANTINED || record.board.state() == v1::HEALTH_CHECK) {
      k.set_boards_quarantined(k.boards_quarantined() + 1);
    }
  }
  // From the counters and the queues' sizes: the cost does not grow with the backlog.
  for (const auto& [kind, live] : live_by_kind_) {
    v1::KindSummary& k = kinds[kind];
    k.set_board_kind(kind);
    int64_t queued = 0;
    for (const auto& [priority, n] : queues_.QueuedByPriority(kind)) {
      (*k.mutable_queued_by_priority())[priority] += n;
      queued += n;
    }
    k.set_running(live - queued);
  }
  std::vector<v1::KindSummary> out;
  for (auto& [kind, summary] : kinds) {
    for (std::string& why : WaitingReasons(kind)) summary.add_waiting(std::move(why));
    out.push_back(std::move(summary));
  }
  return out;
}

std::vector<std::string> JobQueue::WaitingReasons(const std::string& kind) const {
  // Queued jobs no serving board may take, grouped by what they wait for. Read from the queues'
  // pins: boards x distinct pins, however many jobs wait.
  std::map<std::string, int64_t> waiting;
  auto serving = [](const v1::Board& b) { return b.state() == v1::IDLE || b.state() == v1::BUSY; };
  bool any_serving = false;
  for (const auto& [id, record] : boards_) {
    any_serving = any_serving || (record.board.kind() == kind && serving(record.board));
  }
  int64_t queued = 0;
  for (const auto& [priority, n] : queues_.QueuedByPriority(kind)) queued += n;
  for (const PinQueues::Pin& pin : queues_.Pinned(kind)) {
    bool can_run = false;
    std::vector<std::string> states;
    auto consider = [&](const std::string& bid, const BoardRecord& record) {
      if (record.board.kind() != kind || !HasLabels(record.board, pin.labels)) return;
      can_run = can_run || serving(record.board);
      states.push_back(absl::StrCat(bid, " ", v1::BoardState_Name(record.board.state())));
    };
    if (!pin.board_id.empty()) {
      if (auto it = boards_.find(pin.board_id); it != boards_.end())
        consider(it->first, it->second);
    } else {
      for (const auto& [bid, record] : boards_) consider(bid, record);
    }
    if (can_run) continue;
    std::sort(states.begin(), states.end());
    std::string what = absl::StrCat("board ", pin.board_id);
    if (pin.board_id.empty()) {
      std::vector<std::string> parts;
      for (const auto& [k, v] : pin.labels) parts.push_back(absl::StrCat(k, "=", v));
      what = absl::StrCat("labels ", absl::StrJoin(parts, ","));
    }
    waiting[absl::StrCat("pinned to ", what, " (", absl::StrJoin(states, ", "), ")")] += pin.jobs;
  }
  std::vector<std::string> out;
  if (queued > 0 && !any_serving) {
    out.push_back(absl::StrCat(queued, " queued: no board of kind ", kind,
                               " is serving (offline or quarantined)"));
  }
  for (const auto& [why, n] : waiting) {
    out.push_back(absl::StrCat(n, n == 1 ? " job " : " jobs ", why));
  }
  return out;
}

std::vector<v1::Board> JobQueue::Boards(const std::string& kind) {
  absl::MutexLock lock(&mu_);
  std::vector<v1::Board> out;
  for (const auto& [id, record] : boards_) {
    if (kind.empty() || record.board.kind() == kind) out.push_back(record.board);
  }
  std::sort(out.begin(), out.end(),
            [](const v1::Board& a, const v1::Board& b) { return a.board_id() < b.board_id(); });
  return out;
}

absl::StatusOr<v1::Board> JobQueue::SetQuarantine(const std::string& board_id, bool quarantine,
                                                  const std::string& reason) {
  GroupCommit::Ticket ticket = 0;
  v1::Board saved;
  {
    absl::MutexLock lock(&mu_);
    ASSIGN_OR_RETURN(saved, SetQuarantineLocked(board_id, quarantine, reason, &ticket));
  }
  RETURN_IF_ERROR(commit_.Wait(ticket));
  return saved;
}

absl::StatusOr<v1::Board> JobQueue::SetQuarantineLocked(const std::string& board_id,
                                                        bool quarantine, const std::string& reason,
                                                        GroupCommit::Ticket* ticket) {
  auto it = boards_.find(board_id);
  if (it == boards_.end())
    return absl::NotFoundError(absl::StrCat("no board ", board_id.substr(0, 128)));
  BoardRecord& record = it->second;
  v1::Board& board = record.board;
  if (quarantine) {
    board.set_held(true);
    board.set_held_reason(reason.substr(0, kMaxQuarantineReasonBytes));
    board.set_state(v1::QUARANTINED);
  } else {
    board.set_held(false);
    board.clear_held_reason();
    board.clear_quarantine_reason();
    boards_.ForgetHealthCheck(&record);
    board.set_consecutive_infra_failures(0);
    const bool online = connected_agents_.count(board.agent_id()) > 0;
    board.set_state(!online ? v1::OFFLINE : record.running.empty() ? v1::IDLE : v1::BUSY);
  }
  boards_.Reindex(&record);
  *ticket = SaveBoard(record);
  return board;
}

absl::StatusOr<v1::Board> JobQueue::MoveBoard(const std::string& board_id,
                                              const std::string& agent_id) {
  GroupCommit::Ticket ticket = 0;
  v1::Board saved;
  {
    absl::MutexLock lock(&mu_);
    auto it = boards_.find(board_id);
    if (it == boards_.end()) {
      return absl::NotFoundError(absl::StrCat("no board ", board_id.substr(0, 128)));
    }
    BoardRecord& record = it->second;
    v1::Board& board = record.board;
    const std::string from = board.agent_id();
    if (from == agent_id) return board;
    if (connected_agents_.count(from) > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("board ", board_id, " is served by connected agent ", from,
                       ": stop that agent (or revoke its certificate) first"));
    }
    agent_boards_[from].erase(board_id);
    board.set_agent_id(agent_id);
    if (board.state() != v1::QUARANTINED) board.set_state(v1::OFFLINE);
    boards_.Reindex(&record);
    ticket = SaveBoard(record);
    saved = board;
  }
  RETURN_IF_ERROR(commit_.Wait(ticket));
  return saved;
}

// ---- attempts and results -------------------------------------------------------------------

GroupCommit::Ticket JobQueue::EndAttemptWithoutResult(LiveJob* job, v1::ErrorCode code,
                                                      const std::string& why) {
  v1::Attempt* attempt = job->job.mutable_attempts(job->job.attempts_size() - 1);
  *attempt->mutable_ended_at() = ToProto(clock_->Now());
  attempt->set_error_code(code);
  attempt->set_message(why);
  FreeBoard(job->job.board_id(), job->job.job_id());
  if (job->job.attempts_size() < options_.retry_budget) {
    counters_.requeues++;
    Enqueue(job);
    Notify(job->job);
    return SaveJob(job);
  }
  v1::Result result;
  result.set_error_code(v1::BOARD_LOST);
  result.set_message(
      absl::StrCat("no result after ", job->job.attempts_size(), " attempts; last: ", why));
  result.set_board_id(job->job.board_id());
  return Finish(job, std::move(result), v1::DONE);
}

GroupCommit::Ticket JobQueue::Finish(LiveJob* job, v1::Result result, v1::JobState state) {
  RemoveLoad(*job);
  if (job->offer_unsaved) counters_.store_writes_saved++;  // this write stores it too
  const int64_t seq = job->seq;
  v1::Job j = std::move(job->job);  // the live entry goes below
  j.set_state(state);
  *j.mutable_result() = std::move(result);
  j.mutable_result()->set_attempts(j.attempts_size());
  *j.mutable_result()->mutable_submitted_at() = j.submitted_at();
  j.mutable_result()->set_autotvm_error_no(ToAutoTvmErrorNo(j.result().error_code()));
  const GroupCommit::Ticket ticket = commit_.PutJob(seq, /*insert=*/false, j);
  Notify(j);
  counters_.finished[{j.trial().board_kind(), j.result().error_code()}]++;
  if (state != v1::CANCELLED_STATE && j.result().stats().unstable()) counters_.unstable_results++;
  const std::string job_id = j.job_id();
  finishing_[job_id] = {ticket, std::move(j)};
  jobs_.erase(job_id);  // `job` dangles from here
  return ticket;
}

void JobQueue::NoteBoardOutcome(const std::string& board_id, bool infra_error,
                                absl::string_view why) {
  auto it = boards_.find(board_id);
  if (it == boards_.end()) return;
  if (boards_.NoteOutcome(&it->second, infra_error, why, options_.quarantine_threshold,
                          clock_->Now())) {
    (void)SaveBoard(it->second);
  }
}

void JobQueue::FreeBoard(const std::string& board_id, const std::string& job_id) {
  auto it = boards_.find(board_id);
  if (it == boards_.end()) return;
  boards_.Free(&it->second, job_id, connected_agents_.count(it->second.board.agent_id()) > 0);
}

absl::Status JobQueue::CheckIndexes() {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(boards_.CheckIndexes());
  for (const auto& [id, live] : jobs_) {
    auto board = running_.find(live.job.board_id());
    if (live.job.state() == v1::RUNNING &&
        (board == running_.end() || board->second.count(id) == 0)) {
      return absl::InternalError(absl::StrCat("job ", id, " runs on board ", live.job.board_id(),
                                              " but running_ lacks it"));
    }
  }
  return absl::OkStatus();
}

void JobQueue::AddLoad(LiveJob* job) {
  if (job->trial_bytes == 0) {
    job->trial_bytes = static_cast<int64_t>(job->job.trial().ByteSizeLong());
  }
  ClientLoad& load = load_by_client_[job->job.client_id()];
  load.jobs++;
  load.bytes += job->trial_bytes;
  live_by_kind_[job->job.trial().board_kind()]++;
}

void JobQueue::RemoveLoad(const LiveJob& job) {
  if (auto kind = live_by_kind_.find(job.job.trial().board_kind()); kind != live_by_kind_.end()) {
    if (--kind->second <= 0) live_by_kind_.erase(kind);
  }
  auto it = load_by_client_.find(job.job.client_id());
  if (it == load_by_client_.end()) return;
  it->second.jobs--;
  it->second.bytes -= job.trial_bytes;
  if (it->second.jobs <= 0) load_by_client_.erase(it);
}

void JobQueue::Notify(const v1::Job& job) {
  for (auto& [id, listener] : listeners_) listener(job);
}

GroupCommit::Ticket JobQueue::SaveBoard(const BoardRecord& record) {
  return commit_.PutBoard(record.board);
}

GroupCommit::Ticket JobQueue::SaveJob(LiveJob* job) {
  if (job->offer_unsaved) {
    job->offer_unsaved = false;
    counters_.store_writes_saved++;
  }
  return commit_.PutJob(job->seq, /*insert=*/false, job->job);
}

void JobQueue::SaveOffer(LiveJob* job) {
  job->offer_unsaved = false;
  (void)commit_.PutJob(job->seq, /*insert=*/false, job->job);
}

void JobQueue::SaveOffers(absl::Time offered_by) {
  for (LiveJob* job : RunningJobs()) {
    if (job->offer_unsaved && job->offered_at <= offered_by) SaveOffer(job);
  }
}

void JobQueue::ForgetStored(std::vector<v1::Job>* garbage) {
  const GroupCommit::Ticket durable = commit_.durable();
  for (auto it = finishing_.begin(); it != finishing_.end();) {
    auto here = it++;
    if (here->second.ticket <= durable) {
      garbage->push_back(std::move(here->second.job));
      finishing_.erase(here);
    }
  }
  for (auto it = submitted_.begin(); it != submitted_.end();) {
    if (it->second.ticket <= durable) {
      ++forgotten_submissions_;
      it = submitted_.erase(it);
    } else {
      ++it;
    }
  }
}

int JobQueue::AddListener(Listener listener) {
  absl::MutexLock lock(&mu_);
  int id = next_listener_++;
  listeners_[id] = std::move(listener);
  return id;
}

void JobQueue::RemoveListener(int id) {
  absl::MutexLock lock(&mu_);
  listeners_.erase(id);
}

QueueStats JobQueue::Stats() {
  absl::MutexLock lock(&mu_);
  QueueStats stats = counters_;
  const CommitStats commits = commit_.Stats();
  stats.store_failures = commits.failures;
  stats.store_problem = commits.problem;
  stats.store_commits = commits.commits;
  stats.store_writes = commits.writes;
  stats.store_upkeep = store_->Upkeep();
  // From the counters and the queues' sizes: the cost does not grow with the backlog.
  const int64_t running = static_cast<int64_t>(jobs_.size()) - queues_.size();
  if (queues_.size() > 0) stats.jobs_by_state[v1::QUEUED] = queues_.size();
  if (running > 0) stats.jobs_by_state[v1::RUNNING] = running;
  for (const std::string& kind : queues_.KindsFrom("")) {
    for (const auto& [priority, n] : queues_.QueuedByPriority(kind)) {
      stats.queued_by_kind_priority[{kind, priority}] = n;
    }
  }
  for (const auto& [id, record] : boards_) stats.boards_by_state[record.board.state()]++;
  return stats;
}

}  // namespace benchfarm::tracker
