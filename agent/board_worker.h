// BoardWorker: one board of an agent and the thread that serves it: it takes the jobs the tracker
// leased to the board, groups trials of one operator into one image, builds it (the next group's
// image builds while the current one is measured), puts it on the board unless the board already
// runs it, and measures each trial. Every job ends in exactly one result through Hooks::result,
// with the ErrorCode agent/README.md ("BoardWorker") lists; batches are measured in interleaved
// rounds, and a newer attempt of a job supersedes the one held (same README). Each attempt's
// result carries its log (agent/attempt_log.h); the build, each flash, timeout, session error,
// reset and cancel is logged at info too, naming the board and the job(s).
//
// Thread-safety: Offer, Cancel, HeldJobs, State and counters may be called from any thread.

#ifndef BENCHFARM_AGENT_BOARD_WORKER_H_
#define BENCHFARM_AGENT_BOARD_WORKER_H_

#include <deque>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/attempt_log.h"
#include "agent/board_errors.h"
#include "agent/calibration.h"
#include "agent/firmware.h"
#include "agent/metrics.h"
#include "catalog/knob_space.h"
#include "device/board.h"
#include "device/measure.h"
#include "proto/benchfarm.pb.h"
#include "proto/config.pb.h"
#include "stats/round_interval.h"

namespace benchfarm::agent {

struct WorkerCounters {
  int64_t flashes = 0;
  int64_t flash_skips = 0;
  int64_t handshakes = 0;
  int64_t handshake_failures = 0;
  int64_t images = 0;            // images this board used (built or from the cache)
  int64_t results = 0;           // jobs finished
  int64_t resets = 0;            // restarts after a hang or crash
  int64_t leftovers_killed = 0;  // processes trials left running, killed after their calls
};

class BoardWorker {
 public:
  struct Hooks {
    std::function<void(const v1::JobResult&)> result;
    std::function<void(const std::string& job_id, int attempt, const std::string& stage)> progress;
    std::function<void(const std::string& board_id, int64_t flashes)> flashed;
  };
  struct Options {
    v1::BoardConfig config;
    std::string template_dir;  // resolved
    // The board's core as -mcpu names it, from its package's data (board_core.h); "" for a
    // host-process board. Registered with the tracker (BoardRegistration.cpu).
    std::string cpu;
    std::string scratch_dir;         // board logs
    std::string cycle_model_plugin;  // for an emulated board in CYCLES timing (BoardOptions)
    absl::Duration linger = absl::Milliseconds(200);
    absl::Duration connect_timeout = absl::Seconds(10);
  };

  // The board's Options (config, scratch dir) for device::Board::Create.
  static device::BoardOptions BoardOptionsFor(const Options& options);

  // `board` is the worker's board (device::Board::Create(BoardOptionsFor(options))). space,
  // builder and metrics (may be null) are borrowed and outlive the worker.
  BoardWorker(Options options, std::unique_ptr<device::Board> board,
              const catalog::KnobSpace* space, ImageBuilder* builder, AgentMetrics* metrics,
              Hooks hooks);
  ~BoardWorker();  // Stop()

  void Start();
  // Finishes the trial in progress (it is not reported if it ends after this), stops the thread
  // and the board.
  void Stop();

  // A job the tracker leased to this board (a newer attempt of a held job supersedes it; an
  // attempt already held, or older, is ignored).
  void Offer(const v1::JobOffer& offer);
  // The tracker cancelled the job: dropped if it waits; if its call is on the board, the call is
  // abandoned at once (device::Board::Interrupt: the board is stopped and restarted for the next
  // trial, which need not wait for the cancelled one's timeout). Nothing is reported for it.
  void Cancel(const std::string& job_id);

  const std::string& id() const { return options_.config.id(); }
  const v1::BoardConfig& config() const { return options_.config; }
  const std::string& cpu() const { return options_.cpu; }  // Options.cpu
  int batch_size() const { return batch_size_; }
  // Jobs it holds — queued here, being built or measured — each with its latest attempt.
  std::vector<v1::HeldAttempt> HeldJobs() const;
  // "IDLE", "BUSY", "RESETTING" or "OFFLINE" (the port is missing): /metrics' state label values.
  std::string State() const;
  WorkerCounters counters() const;

 private:
  struct Item;      // a job of a batch: its offer, measure request and timeout
  struct Prepared;  // a batch with its image build
  struct Live;      // a job of the batch being measured

  void Run();
  // The next batch: waits for a job, lingers for more of the same operator. Empty when stopping.
  std::vector<v1::JobOffer> TakeBatch(bool wait) ABSL_LOCKS_EXCLUDED(mu_);
  // The batch's trials checked and made items (a trial that fails is reported
  // INSTANTIATION_ERROR), and the build of their image started.
  std::unique_ptr<Prepared> Prepare(std::vector<v1::JobOffer> batch);
  // One trial held to the trial contract (as the tracker checked it at submission) and made an
  // item (its offer left to the caller); what it builds joins the batch's: a template trial's
  // candidate, a C source trial's unit. The trial's error otherwise.
  absl::Status MakeItem(const v1::Trial& t, const catalog::KnobSpace& space, Item* item,
                        std::vector<Candidate>* candidates, BuildUnit* unit) const;
  // The image build of the prepared batch started (in the background, within the board's build
  // time limit).
  void StartBuild(Prepared& prepared, BuildUnit unit);
  void RunBatch(Prepared& batch);
  // One round of a trial's measurement, the image put on the board first; the trial is reported
  // when it ends (finished), with its outcome's batch_spread (the batch's spread between rounds so
  // far, which its adaptive stop also judges by). True when it takes another round.
  bool Round(const Image& image, bool interleave, Live& trial);
  // Flash economy: when the board's images may hold the tuning run's whole candidate pool
  // (first.image_pool, config.image_candidates), `candidates` becomes that pool plus the batch,
  // in a fixed order, so every batch of the run shares one image. Otherwise unchanged.
  void AddImagePool(const catalog::KnobSpace& space, const v1::TemplateOperator& first,
                    std::vector<Candidate>* candidates) const;
  // The image is on the board and the link is up (and its timer agrees with its clock), or the
  // error of `item` (the trial it is for) saying why not. What it did goes into `log` (a skipped
  // flash only at the trial's `first` round).
  std::optional<TrialError> EnsureImage(const Image& image, const Item& item,
                                        v1::StageTimes* stages, bool first, AttemptLog* log);
  std::optional<TrialError> CheckCalibration();
  // After each round of a trial's code (Board::MeasureRound): the link's counters, what the code
  // left running (ended by the board) and a reset the board applied are logged and counted.
  void AfterCall(const std::string& job_id, const device::Board::CallOutcome& call,
                 AttemptLog* log);
  // The board was reset (restarted, or reconnected after a reboot, before its next use).
  void CountReset();
  // The job's result, with its attempt's log (the result's line added to it), to Hooks::result.
  void Report(const v1::JobOffer& offer, v1::Result result, absl::Time started, AttemptLog* log);
  // An event of the job's attempt: into its log, and at info into the agent's (its first line,
  // naming the board and the job).
  void Event(const std::string& job_id, AttemptLog* log, absl::string_view event);
  bool IsCancelled(const std::string& job_id);
  // A trial's call is about to go to the board (Cancel interrupts it from now on): false when the
  // job was cancelled already. EndCall: the call is over (no interrupt reaches the board after).
  bool BeginCall(const std::string& job_id);
  void EndCall();
  void Progress(const std::string& job_id, const std::string& stage);
  void SetState(const std::string& state);

  const Options options_;
  const catalog::KnobSpace* const space_;
  ImageBuilder* const builder_;
  AgentMetrics* const metrics_;
  const Hooks hooks_;
  const int batch_size_;

  // The board. Only the worker thread touches it after Start().
  const std::unique_ptr<device::Board> board_;
  double timer_resolution_s_ = 0;  // from the last DeviceInfo (kept across resets)
  std::string timer_;              // DeviceInfo's timer, likewise
  bool reset_pending_ = false;     // for State(): a reset waits for the next job
  // Calibration (agent/calibration.h): the board's clock for results, and whether the last one
  // failed (then every trial calibrates again first, so a quarantined board's health check fails
  // until it is fixed).
  double cpu_hz_ = 0;
  bool calibration_failed_ = false;

  mutable absl::Mutex mu_;
  std::deque<v1::JobOffer> pending_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int> held_ ABSL_GUARDED_BY(mu_);  // job -> latest attempt
  // Newer offers of jobs being built or measured (run only if the old attempt fails).
  std::map<std::string, v1::JobOffer> superseding_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> cancelled_ ABSL_GUARDED_BY(mu_);
  std::string measuring_ ABSL_GUARDED_BY(mu_);  // the job whose call is on the board
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::string state_ ABSL_GUARDED_BY(mu_) = "IDLE";
  WorkerCounters counters_ ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace benchfarm::agent

#endif  // BENCHFARM_AGENT_BOARD_WORKER_H_
