// JobQueue: the tracker's gRPC-free core — per board-kind queues, scheduling, leases, retries,
// board health, cancellation — over a durable Store and an injected Clock. The locked façade
// over parts that hold no lock and no store (admission.h, pin_queues.h, board_registry.h); its
// client side is in job_queue.cc, its agent side in job_queue_agents.cc. How it schedules, what
// attempts and leases are, silent agents, durability and the checks at the door:
// tracker/README.md ("JobQueue"); each method below states its own contract.
//
// Thread-safety: every public method may be called from any thread (one mutex, plus the group
// commit's own thread).

#ifndef BENCHFARM_TRACKER_JOB_QUEUE_H_
#define BENCHFARM_TRACKER_JOB_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/clock.h"
#include "catalog/trial.h"
#include "proto/benchfarm.pb.h"
#include "tracker/admission.h"
#include "tracker/board_registry.h"
#include "tracker/catalog.h"
#include "tracker/group_commit.h"
#include "tracker/live_job.h"
#include "tracker/pin_queues.h"
#include "tracker/store.h"

namespace benchfarm::tracker {

struct JobQueueOptions {
  absl::Duration lease = absl::Seconds(60);
  int retry_budget = 3;
  int quarantine_threshold = 3;
  // Run on a quarantined board (board_kind and board_id are set to the board's). Empty op: the
  // built-in check, the `add` operator with its output checked against its reference.
  v1::Trial health_check_trial;
  absl::Duration health_check_backoff = absl::Seconds(30);
  int max_trials_per_submission = 10000;
  // Board kinds jobs may name; empty: any kind that has ever registered a board, plus any kind
  // named here. A trial for another kind is InvalidArgument.
  std::vector<std::string> known_kinds;
  // Per client: unfinished (queued or running) jobs, and the bytes of their serialized trials. A
  // submission that would take the client over either is ResourceExhausted; nothing is stored.
  int64_t max_queued_per_client = 100000;
  int64_t max_queued_bytes_per_client = int64_t{256} << 20;
  // A stored result whose median is known only to more than +- this is flagged unstable
  // (Result.stats, computed here from its costs).
  double unstable_threshold = 0.03;
  // While the store is failing: how often the pending changes are tried again.
  absl::Duration store_probe = absl::Seconds(1);
  // A job's change to RUNNING (its offer) is handed to the store only once this has passed
  // (ExpireLeases), unless a newer change (its result, usually) replaced it first: then only that
  // one is written — one serialization and one write per dispatch instead of two. Reads of the
  // store that must see it (List, Flush) and stopping write it first. Lost in a crash, an offer is
  // as if it had not been made.
  absl::Duration defer_offer_writes = absl::Seconds(2);
  // The operator catalog: per-client caps, and the files kept in memory (catalog.h).
  CatalogOptions catalog;
  // The most jobs one board may hold at once (BoardRegistration.slots).
  int max_slots_per_board = 256;
};

// What one free board should run now.
struct Offer {
  std::string agent_id;
  // A job's offer carries its trial already serialized, as an unknown field numbered as
  // JobOffer.trial: on the wire it is the same message, but here offer.trial() is empty (parse
  // the serialized offer to read it). A health check's offer sets trial as usual.
  v1::JobOffer offer;
};

// Counters and gauges for /metrics.
struct QueueStats {
  std::map<std::pair<std::string, int>, int64_t> queued_by_kind_priority;
  std::map<v1::JobState, int64_t>
      jobs_by_state;  // live jobs (QUEUED, RUNNING); finished counted below
  // Jobs that reached DONE or CANCELLED, by (board kind, their result's error code).
  std::map<std::pair<std::string, v1::ErrorCode>, int64_t> finished;
  int64_t lease_expiries = 0;
  int64_t requeues = 0;
  int64_t revoked_attempts = 0;    // attempts ended because their agent's credential was revoked
  int64_t silent_agents = 0;       // times a connected agent went silent for a whole lease
  int64_t unstable_results = 0;    // stored results flagged unstable (CostStats.unstable)
  int64_t store_failures = 0;      // transactions the store refused
  int64_t store_commits = 0;       // transactions stored (each holds one or more changes)
  int64_t store_writes = 0;        // changes they held
  int64_t store_writes_saved = 0;  // deferred changes (offers) replaced before being written
  std::string store_problem;       // why the store is failing now; empty while it works
  StoreUpkeep store_upkeep;        // the store's own housekeeping (Store::Upkeep)
  std::map<v1::BoardState, int64_t> boards_by_state;
  std::map<std::string, int64_t> trials_by_client;
};

class JobQueue {
 public:
  // store and clock are borrowed and outlive the queue.
  JobQueue(Store* store, const base::Clock* clock, JobQueueOptions options);
  // Hands the offers not written yet to the store, whose last commit then stores them.
  ~JobQueue();

  // Loads boards and unfinished jobs from the store (README.md, "Durability"). Call once, before
  // use.
  absl::Status Recover();

  // ---- client side ----
  // Validates and stores the trials as new jobs; returns their ids once stored. A repeated
  // (client_id, request_id) with the same trials returns the first submission's ids and stores
  // nothing; with other trials it is AlreadyExists naming the first trial that differs.
  absl::StatusOr<std::vector<std::string>> Submit(const std::string& client_id,
                                                  const std::string& request_id,
                                                  const std::vector<v1::Trial>& trials);
  // The same without waiting: the ids and the ticket to wait for (WhenDurable) before telling
  // the client.
  struct Accepted {
    std::vector<std::string> job_ids;
    GroupCommit::Ticket ticket = 0;
  };
  absl::StatusOr<Accepted> SubmitAsync(const std::string& client_id, const std::string& request_id,
                                       std::vector<v1::Trial> trials);
  // Returns once every change made so far is stored (or the store failed it: Unavailable naming
  // the cause, at once while it is failing), with every answer waiting for them given: call
  // before destroying what those answers use (server, service).
  absl::Status Flush();
  // done(OK) once the change of `ticket` is stored; done(Unavailable) if the store is failing.
  // Not `urgent`: see GroupCommit::WhenDurable.
  void WhenDurable(GroupCommit::Ticket ticket, GroupCommit::Done done, bool urgent = true) {
    commit_.WhenDurable(ticket, std::move(done), urgent);
  }
  // Every change up to this ticket is stored.
  GroupCommit::Ticket Durable() const { return commit_.durable(); }
  absl::StatusOr<v1::Job> GetJob(const std::string& job_id);
  // The logs of a job's attempts (attempt 0: every attempt that has one), read once every change
  // made so far is stored (a result just reported has its log there). NotFound "no job X"; for a
  // given attempt without a log, NotFound saying which attempts have one. Unavailable while the
  // store is failing. (Who may read them is the service's to check.)
  absl::StatusOr<std::vector<v1::AttemptLog>> AttemptLogs(const std::string& job_id, int attempt);
  // A queued job is cancelled at once; a running one is cancelled and its agent told to stop
  // (PendingCancels); a finished one is FailedPrecondition.
  absl::StatusOr<v1::Job> Cancel(const std::string& job_id);
  absl::StatusOr<std::vector<StoredJob>> List(const JobFilter& filter);
  std::vector<v1::KindSummary> Summary();
  std::vector<v1::Board> Boards(const std::string& kind);
  // An admin takes a board out of service (held: QUARANTINED, no health checks, no new work)
  // or releases it (back to IDLE, or OFFLINE if its agent is away; failures forgotten).
  // NotFound for an unknown board.
  absl::StatusOr<v1::Board> SetQuarantine(const std::string& board_id, bool quarantine,
                                          const std::string& reason);
  // An admin gives a board to another agent (see RegisterAgent's boards_bound): it goes OFFLINE
  // until that agent registers it. NotFound for an unknown board; FailedPrecondition while the
  // agent holding it is connected.
  absl::StatusOr<v1::Board> MoveBoard(const std::string& board_id, const std::string& agent_id);

  // ---- agent side ----
  // The agent (re)connects with its boards and the jobs it still holds. Its other RUNNING jobs
  // lose their attempt (BOARD_LOST) and re-queue. A board another agent registered is refused:
  // with `boards_bound` (agents with verified identities) always — PermissionDenied until an
  // admin moves it (MoveBoard) —, else while that agent is connected (AlreadyExists).
  // InvalidArgument for a malformed registration (slots outside 0..max_slots_per_board, negative
  // counts, oversized strings, two of its boards of one kind naming different cores);
  // FailedPrecondition for a board naming another core (BoardRegistration.cpu) than a board of
  // its kind a connected agent serves (a kind is one core: AutoTVM records name it).
  absl::Status RegisterAgent(const v1::Register& registration, bool boards_bound = false);
  // The agent's stream ended: its boards go OFFLINE; its jobs keep their leases (it may return).
  void DisconnectAgent(const std::string& agent_id);
  // The agent's credential was revoked: as DisconnectAgent, and the attempts it holds end now
  // (BOARD_LOST, `why`; the jobs re-queue) — what it measures is not trusted, and a result it
  // sends for them later is ignored (the attempt is over).
  void RevokeAgent(const std::string& agent_id, const std::string& why);
  // Renews the leases of exactly these attempts, where each is the current attempt of a job
  // running on the agent's boards (README.md, "Attempts and leases"); the others are left to
  // expire.
  void Touch(const std::string& agent_id, const std::vector<v1::HeldAttempt>& held);
  void Touch(const std::string& agent_id, const std::string& job_id, int attempt);
  // Jobs for the agent's boards with free slots (a board holds at most its registered slots;
  // boards take turns, one job each per round), marked RUNNING and leased. None while the store
  // is failing. With `cancels`, the agent's cancellations to deliver too (TakeCancels), taken
  // in the same hold of the lock.
  std::vector<Offer> TakeOffers(const std::string& agent_id,
                                std::vector<std::string>* cancels = nullptr);
  // The agents TakeOffers or TakeCancels could give something now: a board with a free slot and
  // jobs queued for its kind, a quarantined board whose health check is due, or cancellations to
  // deliver (an agent may be named twice; disconnected ones are not filtered out), so a periodic
  // look at the farm does not pump every agent. Boards are found through indexes (free boards by
  // kind, quarantined boards), so a look costs what it finds, not the farm's size. In chunks,
  // lock released between them: from where `*cursor` says (a default cursor: the start, with the
  // agents owed cancellations and the health checks due), until `max_agents` are found;
  // `cursor->more` says whether to call again.
  struct PumpCursor {
    bool more = false;  // in: false = from the start; out: false = nothing left
    std::string kind;   // the last board named ("" none yet)
    std::string board_id;
  };
  std::vector<std::string> AgentsToPump(PumpCursor* cursor, size_t max_agents);
  // For tests: OK when the board indexes agree with the boards (else which board and how not).
  absl::Status CheckIndexes();
  // Records a result. Exactly once: a result for a job that is not running this attempt (e.g.
  // sent again after a reconnect) is accepted and ignored. A malformed result (README.md,
  // "Results") is InvalidArgument naming the field, after its attempt has ended as an
  // infrastructure failure (a health check's: the check failed). A result the store could not take
  // is Unavailable: nothing changed, send it again later. `superseded` (may be null) is set when
  // the result is of an attempt that was lost while the job still waits for or runs a newer one
  // (its measurement may answer that attempt: see ResultAck.superseded). With `ticket` null the
  // call returns once the result is stored (Unavailable if the store failed: it is kept and stored
  // later; send it again); else it returns at once with the ticket to wait for (WhenDurable) before
  // the result may be acknowledged.
  absl::Status ReportResult(const std::string& agent_id, const v1::JobResult& result,
                            bool* superseded = nullptr, GroupCommit::Ticket* ticket = nullptr);
  void RecordFlashes(const std::string& agent_id, const v1::BoardUpdate& update);
  // Cancellations to deliver to the agent (each returned once).
  std::vector<std::string> TakeCancels(const std::string& agent_id);
  // Marks agents silent for a whole lease as silent (README.md, "Silent agents"), then ends every
  // attempt whose lease has expired (README.md, "Attempts and leases"), and hands the offers
  // older than defer_offer_writes, not written yet, to the store. Returns how many attempts it
  // ended.
  int ExpireLeases();

  // Called with every job whose state or result changed.
  using Listener = std::function<void(const v1::Job&)>;
  int AddListener(Listener listener);
  void RemoveListener(int id);

  QueueStats Stats();

  OperatorCatalog* catalog() { return &catalog_; }

 private:
  struct ClientLoad {  // a client's unfinished jobs
    int64_t jobs = 0;
    int64_t bytes = 0;
  };
  // The RUNNING jobs on the boards in `boards`, or on every board if null, in no particular
  // order; running_'s entries of jobs no longer running on their board are dropped on the way.
  std::vector<LiveJob*> RunningJobs(const std::set<std::string>* boards = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // In submission order: what a lease expiry or a registration ends is re-queued in that order.
  static void SortBySeq(std::vector<LiveJob*>* jobs);
  // Notes in running_ that `job` went RUNNING on its board.
  void NoteRunning(const LiveJob& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // OK unless a board of the registration names another core than a board of its kind that
  // another connected agent serves (RegisterAgent's FailedPrecondition).
  absl::Status CoresAgree(const v1::Register& reg) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What a trial's check finds in the operator catalog (catalog::CheckTrial): no queue state, so
  // made before the queue's lock — a large submission's checks do not hold up dispatch.
  struct CatalogCheck {
    absl::StatusOr<catalog::TrialArgs> args;
    std::string version;  // a template trial's operator version as resolved ("" otherwise)
  };
  CatalogCheck CheckInCatalog(const v1::Trial& trial) const;
  // Checks what depends on the queue (tracker/README.md, "Validation at the door": the board kind,
  // the boards' memory, the pin) after `check`, and resolves the trial's operator version in place.
  absl::Status ValidateTrial(v1::Trial* trial, int index, const CatalogCheck& check) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  absl::Status CheckPin(const v1::Trial& trial, int index) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Why the queued jobs of a kind wait ("2 jobs pinned to board b7 (OFFLINE)").
  std::vector<std::string> WaitingReasons(const std::string& kind) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // ---- TakeOffers' steps ----
  // TakeCancels' work, for TakeOffers' hold of the lock too.
  std::vector<std::string> TakeCancelsLocked(const std::string& agent_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The board's due health check, started and offered.
  Offer OfferHealthCheck(BoardRecord* record, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job, RUNNING on the board (a new attempt, leased), offered with its operator's files
  // (user operators').
  Offer OfferJob(LiveJob* job, BoardRecord* record, const std::string& agent_id,
                 const v1::Operator* op_files, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ---- SubmitAsync's steps ----
  // The client's submission with this request id, if any (accepted: pending or stored).
  absl::Status FindSubmission(const std::string& client_id, const std::string& request_id,
                              std::optional<Accepted>* earlier) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A retry must be the same submission: AlreadyExists naming how it differs.
  absl::Status CheckRetry(const std::string& client_id, const std::string& request_id,
                          const std::vector<std::string>& earlier,
                          const std::vector<v1::Trial>& trials) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The client's caps (max_queued_per_client, max_queued_bytes_per_client): ResourceExhausted;
  // each trial's serialized size in `sizes`.
  absl::Status CheckClientLoad(const std::string& client_id, const std::vector<v1::Trial>& trials,
                               std::vector<int64_t>* sizes) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Takes the checked trials: new jobs, handed to the store with their submission, then live and
  // queued. Takes mu_ briefly for their sequence numbers, then for kAcceptChunk jobs at a time,
  // so dispatches do not wait behind a large submission; submit_mu_ keeps other submissions out
  // meanwhile (a submission's sequence numbers are consecutive, and stored in the order they are
  // given: clients page by them). Until step 4 nothing but this call knows the new jobs.
  Accepted Accept(const std::string& client_id, const std::string& request_id,
                  std::vector<v1::Trial> checked, const std::vector<int64_t>& sizes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(submit_mu_) ABSL_LOCKS_EXCLUDED(mu_);
  static constexpr size_t kAcceptChunk = 64;
  // QUEUED, off any board, filed in queues_.
  void Enqueue(LiveJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the current attempt of a running job that produced no result: re-queue or fail.
  GroupCommit::Ticket EndAttemptWithoutResult(LiveJob* job, v1::ErrorCode code,
                                              const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Finishes the job (in finishing_ until stored) and drops it from the live jobs; the ticket of
  // its write.
  GroupCommit::Ticket Finish(LiveJob* job, v1::Result result, v1::JobState state)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `log`: the report's log made fit to store (ReportResult makes it so outside the lock).
  absl::Status ReportResultLocked(const std::string& agent_id, const v1::JobResult& report,
                                  std::string log, bool* superseded, GroupCommit::Ticket* ticket)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The result of the board's health check: the board serves again or stays quarantined.
  absl::Status ReportHealthCheck(BoardRecord* record, const v1::JobResult& report,
                                 GroupCommit::Ticket* ticket) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<v1::Board> SetQuarantineLocked(const std::string& board_id, bool quarantine,
                                                const std::string& reason,
                                                GroupCommit::Ticket* ticket)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An attempt on the board ended (BoardRegistry::NoteOutcome), stored if it changed the board.
  void NoteBoardOutcome(const std::string& board_id, bool infra_error, absl::string_view why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The board no longer holds the job (BoardRegistry::Free).
  void FreeBoard(const std::string& board_id, const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Notify(const v1::Job& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The agent's boards go OFFLINE (quarantined ones and health checks stay as they are) and it
  // is offered nothing: its stream ended, or it went silent.
  void TakeAgentOffline(const std::string& agent_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job is live / no longer live: its client's load.
  void AddLoad(LiveJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RemoveLoad(const LiveJob& job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the change to the commit thread; the ticket to wait for it. (New jobs go with their
  // submission: GroupCommit::PutSubmission.)
  GroupCommit::Ticket SaveBoard(const BoardRecord& record) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // (An offer not written yet rides on it: counted as a write saved.)
  GroupCommit::Ticket SaveJob(LiveJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands the RUNNING jobs' offers not written yet, made at or before `offered_by`, to the store.
  void SaveOffers(absl::Time offered_by) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SaveOffer(LiveJob* job) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The job as it is now: live, finished but not yet known stored, or from the store.
  absl::StatusOr<std::optional<v1::Job>> FindJobLocked(const std::string& job_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets finished jobs and submissions whose changes are stored. The jobs are moved to
  // `garbage`, for the caller to free once it has released the lock (freeing thousands of jobs
  // takes milliseconds no dispatch should wait for).
  void ForgetStored(std::vector<v1::Job>* garbage) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Store* const store_;
  const base::Clock* const clock_;
  const JobQueueOptions options_;
  OperatorCatalog catalog_;
  GroupCommit commit_;

  // Held by SubmitAsync from its checks to the end of Accept: one submission at a time (before
  // mu_ in the lock order).
  absl::Mutex submit_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  // QUEUED and RUNNING. A node map: the queues point into it (QueuedJob), and with a million
  // queued jobs its slots stay small (a flat map would hold two million LiveJobs' room).
  absl::node_hash_map<std::string, LiveJob> jobs_ ABSL_GUARDED_BY(mu_);
  PinQueues queues_ ABSL_GUARDED_BY(mu_);  // the QUEUED ones
  BoardRegistry boards_ ABSL_GUARDED_BY(mu_);
  absl::node_hash_map<std::string, std::set<std::string>> agent_boards_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> connected_agents_ ABSL_GUARDED_BY(mu_);
  // When each connected or silent agent was last heard from (its registration, a heartbeat, an
  // ack or progress: Touch).
  absl::flat_hash_map<std::string, absl::Time> heard_ ABSL_GUARDED_BY(mu_);
  // Agents whose stream is open but who said nothing for a whole lease (README.md, "Silent
  // agents"): out of connected_agents_ until heard from again.
  absl::flat_hash_set<std::string> silent_agents_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> pending_cancels_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> kinds_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, ClientLoad> load_by_client_ ABSL_GUARDED_BY(mu_);
  std::map<int, Listener> listeners_ ABSL_GUARDED_BY(mu_);
  int next_listener_ ABSL_GUARDED_BY(mu_) = 1;
  QueueStats counters_ ABSL_GUARDED_BY(mu_);
  // Kept up to date by AddLoad/RemoveLoad so Summary and Stats never walk the jobs: live jobs by
  // kind (running = live - queued).
  absl::flat_hash_map<std::string, int64_t> live_by_kind_ ABSL_GUARDED_BY(mu_);
  int64_t last_seq_ ABSL_GUARDED_BY(mu_) = 0;  // the newest job's sequence number
  // Finished jobs (by id) and submissions (by client and request id) whose change may not be
  // stored yet, with its ticket: a result sent again, GetJob and a retried submission see them.
  struct Finishing {
    GroupCommit::Ticket ticket = 0;
    v1::Job job;
  };
  absl::flat_hash_map<std::string, Finishing> finishing_ ABSL_GUARDED_BY(mu_);
  struct Submitted {
    GroupCommit::Ticket ticket = 0;
    std::vector<std::string> job_ids;
  };
  std::map<std::pair<std::string, std::string>, Submitted> submitted_ ABSL_GUARDED_BY(mu_);
  int64_t forgotten_submissions_ ABSL_GUARDED_BY(mu_) = 0;  // dropped from submitted_ so far
  // Board id -> ids of jobs that went RUNNING on that board: ExpireLeases looks at these, not
  // at every live job, and an agent that registers only at its own boards' (a scan of every
  // running job per registration made 10,000 agents coming back to a restarted tracker take 6 s
  // instead of 0.8: `tracker_bench --restart`). Entries of jobs no longer running on that board
  // are dropped as they are met.
  absl::flat_hash_map<std::string, absl::flat_hash_set<std::string>> running_ ABSL_GUARDED_BY(mu_);
};

}  // namespace benchfarm::tracker

#endif  // BENCHFARM_TRACKER_JOB_QUEUE_H_
