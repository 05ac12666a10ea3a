#include "agent/board_worker.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "agent/fault_names.h"
#include "agent/measure_request.h"
#include "base/bounded_text.h"
#include "base/time_proto.h"
#include "catalog/cflags.h"
#include "catalog/trial.h"
#include "google/protobuf/util/time_util.h"
#include "proto/error_codes.h"
#include "spdlog/spdlog.h"

namespace benchfarm::agent {
namespace {

using google::protobuf::util::TimeUtil;

constexpr int kDefaultBatchSize = 16;
constexpr int kFixedRounds = 4;    // a fixed-mode trial's repeats are split over this many rounds
constexpr int kAdaptiveChunk = 5;  // costs an adaptive trial adds per round

using base::ToProto;

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// Template trials of one op (and version) share an image; a C source trial has one of its own.
std::string BatchKey(const v1::JobOffer& offer) {
  const v1::OperatorSpec& op = offer.trial().op();
  if (op.source_case() == v1::OperatorSpec::kTemplateOp) {
    return absl::StrCat("template:", op.template_op().op(), "@", op.template_op().version());
  }
  return absl::StrCat("job:", offer.job_id());
}

}  // namespace

struct BoardWorker::Item {
  v1::JobOffer offer;
  device::MeasureRequest request;
  absl::Duration timeout;
};

struct BoardWorker::Prepared {
  std::vector<Item> items;
  std::future<absl::StatusOr<Image>> image;
  absl::Time build_started;
  std::string build_log;  // ImageBuilder::Build's, written by the build until image is ready
};

device::BoardOptions BoardWorker::BoardOptionsFor(const Options& options) {
  device::BoardOptions o;
  o.config = options.config;
  o.scratch_dir = options.scratch_dir;
  o.connect_timeout = options.connect_timeout;
  o.cycle_model_plugin = options.cycle_model_plugin;
  return o;
}

BoardWorker::BoardWorker(Options options, std::unique_ptr<device::Board> board,
                         const catalog::KnobSpace* space, ImageBuilder* builder,
                         AgentMetrics* metrics, Hooks hooks)
    : options_(std::move(options)),
      space_(space),
      builder_(builder),
      metrics_(metrics),
      hooks_(std::move(hooks)),
      batch_size_(options_.config.batch_size() > 0 ? options_.config.batch_size()
                                                   : kDefaultBatchSize),
      board_(std::move(board)) {}

BoardWorker::~BoardWorker() { Stop(); }

void BoardWorker::Start() {
  thread_ = std::thread([this] { Run(); });
}

void BoardWorker::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  board_->Stop();
}

void BoardWorker::Offer(const v1::JobOffer& offer) {
  absl::MutexLock lock(&mu_);
  auto [it, fresh] = held_.try_emplace(offer.job_id(), offer.attempt());
  if (!fresh) {
    // Offered again: the same attempt (a reconnect) or an older one is one run; a newer one
    // supersedes the attempt held (one run, reported under the newer attempt).
    if (offer.attempt() <= it->second) return;
    it->second = offer.attempt();
    cancelled_.erase(offer.job_id());
    bool waiting = false;
    for (v1::JobOffer& o : pending_) {
      if (o.job_id() == offer.job_id()) {
        o = offer;
        waiting = true;
      }
    }
    if (!waiting) superseding_[offer.job_id()] = offer;
    return;
  }
  cancelled_.erase(offer.job_id());
  pending_.push_back(offer);
}

void BoardWorker::Cancel(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  auto it = std::find_if(pending_.begin(), pending_.end(),
                         [&](const v1::JobOffer& o) { return o.job_id() == job_id; });
  if (it != pending_.end()) pending_.erase(it);
  if (held_.count(job_id) > 0) cancelled_.insert(job_id);
  if (!measuring_.empty() && measuring_ == job_id) board_->Interrupt();
}

bool BoardWorker::BeginCall(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.count(job_id) > 0) return false;
  measuring_ = job_id;
  board_->ClearInterrupt();
  return true;
}

void BoardWorker::EndCall() {
  absl::MutexLock lock(&mu_);
  measuring_.clear();
  board_->ClearInterrupt();
}

bool BoardWorker::IsCancelled(const std::string& job_id) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.count(job_id) == 0 && !stopping_) return false;
  if (cancelled_.erase(job_id) > 0) {
    held_.erase(job_id);
    superseding_.erase(job_id);
  }
  return true;
}

std::vector<v1::HeldAttempt> BoardWorker::HeldJobs() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::HeldAttempt> out;
  for (const auto& [id, attempt] : held_) {
    if (cancelled_.count(id) > 0) continue;
    v1::HeldAttempt& h = out.emplace_back();
    h.set_job_id(id);
    h.set_attempt(attempt);
  }
  return out;
}

void BoardWorker::Progress(const std::string& job_id, const std::string& stage) {
  if (!hooks_.progress) return;
  int attempt;
  {
    absl::MutexLock lock(&mu_);
    auto it = held_.find(job_id);
    if (it == held_.end()) return;
    attempt = it->second;
  }
  hooks_.progress(job_id, attempt, stage);
}

std::string BoardWorker::State() const {
  absl::MutexLock lock(&mu_);
  return state_;
}

WorkerCounters BoardWorker::counters() const {
  absl::MutexLock lock(&mu_);
  return counters_;
}

void BoardWorker::SetState(const std::string& state) {
  absl::MutexLock lock(&mu_);
  state_ = state;
}

// ---- the worker thread --------------------------------------------------------------------

std::vector<v1::JobOffer> BoardWorker::TakeBatch(bool wait) {
  absl::MutexLock lock(&mu_);
  auto ready = [this]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !pending_.empty(); };
  if (wait) mu_.Await(absl::Condition(&ready));
  if (stopping_ || pending_.empty()) return {};
  const std::string key = BatchKey(pending_.front());
  auto full = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (stopping_) return true;
    int n = 0;
    for (const v1::JobOffer& o : pending_) n += BatchKey(o) == key;
    return n >= batch_size_;
  };
  // Trials of a tuning batch arrive one message after another: wait a moment for the rest.
  if (wait && absl::StartsWith(key, "template:")) {
    mu_.AwaitWithTimeout(absl::Condition(&full), options_.linger);
  }
  std::vector<v1::JobOffer> batch;
  for (auto it = pending_.begin();
       it != pending_.end() && static_cast<int>(batch.size()) < batch_size_;) {
    if (BatchKey(*it) == key) {
      batch.push_back(std::move(*it));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return batch;
}

std::unique_ptr<BoardWorker::Prepared> BoardWorker::Prepare(std::vector<v1::JobOffer> batch) {
  auto prepared = std::make_unique<Prepared>();
  std::vector<Candidate> candidates;
  BuildUnit unit;
  // A batch is of one operator version (BatchKey): a user operator's space lives here.
  std::optional<v1::Operator> user_op;
  std::optional<catalog::KnobSpace> user_space;
  for (v1::JobOffer& offer : batch) {
    const absl::Time started = absl::Now();
    // A user operator's definition travels with its offer; built-ins are in every firmware.
    if (offer.has_operator_() && !user_space.has_value()) {
      user_op = offer.operator_();
      user_space = catalog::KnobSpace({*user_op});
    }
    const catalog::KnobSpace& space = offer.has_operator_() ? *user_space : *space_;
    Item item;
    if (absl::Status s = MakeItem(offer.trial(), space, &item, &candidates, &unit); !s.ok()) {
      v1::Result r;
      r.set_error_code(v1::INSTANTIATION_ERROR);
      r.set_message(std::string(s.message()));
      AttemptLog log;
      Report(offer, r, started, &log);
      continue;
    }
    item.offer = std::move(offer);
    prepared->items.push_back(std::move(item));
  }
  if (prepared->items.empty()) return prepared;
  if (!candidates.empty()) {
    const catalog::KnobSpace& space = user_space.has_value() ? *user_space : *space_;
    AddImagePool(space, prepared->items.front().offer.trial().op().template_op(), &candidates);
    unit = user_op.has_value() ? UserOperatorUnit(*user_op, candidates)
                               : CandidatesUnit(*space_, candidates);
  }
  StartBuild(*prepared, std::move(unit));
  return prepared;
}

absl::Status BoardWorker::MakeItem(const v1::Trial& t, const catalog::KnobSpace& space, Item* item,
                                   std::vector<Candidate>* candidates, BuildUnit* unit) const {
  const v1::OperatorSpec& op = t.op();
  // The tracker checked the trial at submission; the agent holds it to the same contract.
  absl::StatusOr<Candidate> candidate;
  auto find_spec = [&](const v1::TemplateOperator& tpl) -> absl::StatusOr<const v1::OpTemplate*> {
    candidate = ResolveCandidate(space, tpl);
    if (!candidate.ok()) return candidate.status();
    return candidate->op;
  };
  absl::StatusOr<catalog::TrialArgs> args = catalog::CheckTrial(t, find_spec);
  if (!args.ok()) return args.status();
  item->request = MeasureRequestFor(t, *args);
  item->timeout = catalog::EffectiveMeasure(t.measure()).timeout;
  if (op.source_case() == v1::OperatorSpec::kTemplateOp) {
    // Its operator's compile options, as the tracker checked them when the operator was added.
    if (absl::Status s = catalog::CheckOperatorCflags(*candidate->op); !s.ok()) return s;
    item->request.function = candidate->function;
    item->request.reference = op.reference_function().empty() ? candidate->op->reference_entry()
                                                              : op.reference_function();
    candidates->push_back(*std::move(candidate));
    return absl::OkStatus();
  }
  absl::StatusOr<BuildUnit> u = CSourceUnit(*space_, op);
  if (!u.ok()) return u.status();
  item->request.function = op.entry_function();
  item->request.reference = op.reference_function();
  *unit = *std::move(u);
  return absl::OkStatus();
}

void BoardWorker::StartBuild(Prepared& prepared, BuildUnit unit) {
  prepared.build_started = absl::Now();
  int64_t limit_s = options_.config.build_time_limit_seconds() > 0
                        ? options_.config.build_time_limit_seconds()
                        : 120;
  // Prepared lives on the heap and outlives its build (RunBatch, Run wait for it).
  prepared.image = std::async(std::launch::async, [this, unit = std::move(unit), limit_s,
                                                   log = &prepared.build_log]() {
    return builder_->Build(options_.template_dir, unit, absl::Now() + absl::Seconds(limit_s), log);
  });
}

void BoardWorker::AddImagePool(const catalog::KnobSpace& space, const v1::TemplateOperator& first,
                               std::vector<Candidate>* candidates) const {
  const int capacity = options_.config.image_candidates();
  if (first.image_pool().empty() || capacity <= static_cast<int>(candidates->size())) return;
  std::vector<Candidate> all = *candidates;
  std::set<std::string> seen;
  for (const Candidate& c : all) seen.insert(c.function);
  for (const std::string& config : first.image_pool()) {
    v1::TemplateOperator op;
    op.set_op(first.op());
    for (absl::string_view pair : absl::StrSplit(config, ',', absl::SkipEmpty())) {
      std::pair<std::string, std::string> kv = absl::StrSplit(pair, absl::MaxSplits('=', 1));
      (*op.mutable_knobs())[kv.first] = kv.second;
    }
    absl::StatusOr<Candidate> c = ResolveCandidate(space, op);
    if (!c.ok()) return;  // a pool this agent cannot build: the batch alone
    if (seen.insert(c->function).second) all.push_back(*std::move(c));
  }
  if (static_cast<int>(all.size()) > capacity) return;
  // The same pool gives the same image whatever the batch: one build, one flash per board.
  std::sort(all.begin(), all.end(),
            [](const Candidate& a, const Candidate& b) { return a.function < b.function; });
  *candidates = std::move(all);
}

void BoardWorker::Run() {
  std::unique_ptr<Prepared> next;
  for (;;) {
    std::unique_ptr<Prepared> current = std::move(next);
    if (current == nullptr) {
      std::vector<v1::JobOffer> batch = TakeBatch(/*wait=*/true);
      if (batch.empty()) break;  // stopping
      current = Prepare(std::move(batch));
    }
    if (current->items.empty()) continue;
    SetState("BUSY");
    // The next image builds while this one is measured.
    std::vector<v1::JobOffer> following = TakeBatch(/*wait=*/false);
    if (!following.empty()) next = Prepare(std::move(following));
    RunBatch(*current);
    SetState(reset_pending_ ? "RESETTING" : "IDLE");
  }
  if (next != nullptr && next->image.valid()) next->image.wait();
}

// Each trial's measurement in progress; the trials of a batch take turns, one round each.
struct BoardWorker::Live {
  const Item* item;
  v1::Result result;
  absl::Time started;
  device::MeasureOutcome outcome;
  bool finished = false;
  AttemptLog log;
};

void BoardWorker::RunBatch(Prepared& batch) {
  for (const Item& item : batch.items) Progress(item.offer.job_id(), "build");
  absl::StatusOr<Image> image = batch.image.get();
  const absl::Duration build_time = absl::Now() - batch.build_started;
  if (metrics_ != nullptr) {
    if (image.ok()) {
      if (image->cached) {
        metrics_->CacheHit();
      } else {
        metrics_->Build("OK");
      }
    } else {
      metrics_->Build(absl::IsDeadlineExceeded(image.status()) ? "TIMEOUT" : "FAILED");
    }
    metrics_->Stage("BUILD", Seconds(build_time));
  }
  const double build_share = Seconds(build_time) / batch.items.size();
  // One image for the batch: its build is an event of every trial's attempt.
  std::vector<std::string> job_ids;
  for (const Item& item : batch.items) job_ids.push_back(item.offer.job_id());
  const std::string built =
      !image.ok() ? absl::StrCat("failed after ", absl::FormatDuration(build_time))
      : image->cached
          ? absl::StrCat("image ", image->hash, " from the cache")
          : absl::StrCat("image ", image->hash, " built in ", absl::FormatDuration(build_time));
  spdlog::info("board {}: job(s) {}: build of {} trial(s): {}", id(), absl::StrJoin(job_ids, ", "),
               batch.items.size(), built);
  const std::string build_event =
      absl::StrCat("build: ", batch.items.size(), " trial(s) in one image with template ",
                   options_.template_dir, ": ", built, "\n", batch.build_log);
  if (!image.ok()) {
    for (const Item& item : batch.items) {
      if (IsCancelled(item.offer.job_id())) continue;
      AttemptLog log;
      log.Add(build_event);
      v1::Result r;
      const absl::Status& s = image.status();
      r.set_error_code(absl::IsDeadlineExceeded(s) ? v1::BUILD_TIMEOUT
                       : absl::IsUnknown(s)        ? v1::COMPILE_DEVICE
                                                   : v1::COMPILE_HOST);
      r.set_message(std::string(s.message()));
      r.mutable_stages()->set_build_s(build_share);
      Report(item.offer, r, batch.build_started, &log);
    }
    return;
  }
  {
    absl::MutexLock lock(&mu_);
    counters_.images++;
  }
  std::vector<Live> live;
  int timing = 0;  // trials that take more than one cost: only they interleave
  for (const Item& item : batch.items) {
    Live l{&item, v1::Result(), absl::Now(), device::MeasureOutcome(), false, AttemptLog()};
    l.result.mutable_stages()->set_build_s(build_share);
    l.log.Add(build_event);
    live.push_back(std::move(l));
    timing += item.request.target_rel_ci > 0 || item.request.options.repeat > 1;
  }
  const bool interleave = timing > 1;
  for (bool any = true; any;) {
    any = false;
    for (Live& l : live) {
      if (l.finished) continue;
      // The spread between rounds so far, pooled over the batch: its candidates took the same
      // turns, so they saw the same drift (reported with each result; the tracker widens by it).
      std::vector<stats::RoundSpread> spreads;
      if (interleave) {
        for (const Live& other : live) {
          spreads.push_back(
              stats::IntervalOf(other.outcome.costs, other.outcome.round_sizes).spread);
        }
      }
      l.outcome.batch_spread = stats::PoolSpreads(spreads);
      if (Round(*image, interleave, l)) any = true;
    }
  }
  board_->ReleaseArgs(absl::Now() + options_.connect_timeout);
}

bool BoardWorker::Round(const Image& image, bool interleave, Live& l) {
  const Item& item = *l.item;
  l.finished = true;  // unless it takes another round
  if (IsCancelled(item.offer.job_id())) return false;
  v1::Result& r = l.result;
  const bool first = l.outcome.number == 0;  // set by the first round
  if (first) {
    l.started = absl::Now();
    Progress(item.offer.job_id(), "flash");
  }
  // Every round: a trial before this one may have crashed or reset the board.
  if (std::optional<TrialError> e = EnsureImage(image, item, r.mutable_stages(), first, &l.log)) {
    r.set_error_code(e->code);
    r.set_message(e->message);
    Report(item.offer, r, l.started, &l.log);
    return false;
  }
  if (first) Progress(item.offer.job_id(), "measure");
  const device::MeasureRequest& q = item.request;
  int chunk;
  if (q.target_rel_ci > 0) {
    chunk = interleave ? kAdaptiveChunk : device::kAdaptiveRoundSize;
  } else {
    const int repeat = static_cast<int>(q.options.repeat);
    chunk = interleave ? (repeat + kFixedRounds - 1) / kFixedRounds : repeat;
  }
  if (!BeginCall(item.offer.job_id())) {
    (void)IsCancelled(item.offer.job_id());  // cancelled while the board was made ready
    return false;
  }
  const absl::Time measure_start = absl::Now();
  const device::Board::CallOutcome call =
      board_->MeasureRound(q, chunk, &l.outcome, measure_start + item.timeout);
  EndCall();
  r.mutable_stages()->set_measure_s(r.stages().measure_s() + Seconds(absl::Now() - measure_start));
  AfterCall(item.offer.job_id(), call, &l.log);
  if (call.failure && call.failure->kind == device::BoardFailure::kCancelled) {
    Event(item.offer.job_id(), &l.log,
          absl::StrCat("cancelled: its call was abandoned after ",
                       absl::FormatDuration(absl::Now() - measure_start), " and the board ",
                       call.reset ? "reset" : "kept"));
    (void)IsCancelled(item.offer.job_id());  // forgotten: the tracker has it cancelled
    return false;
  }
  if (!call.failure) {
    l.log.Add(absl::StrCat("measure: round ", l.outcome.rounds, ": ", l.outcome.costs.size(),
                           " cost(s) so far, ", l.outcome.number, " call(s) each"));
  }
  if (!call.failure && !l.outcome.done) {
    l.finished = false;
    return true;
  }
  if (metrics_ != nullptr) metrics_->Stage("MEASURE", r.stages().measure_s());
  if (call.failure) {
    device::BoardFailure failure = *call.failure;
    if (failure.kind == device::BoardFailure::kRebooted ||
        failure.kind == device::BoardFailure::kCrashed) {
      // A fault line's addresses, named from the image's debug information.
      failure.message = NameFaultAddresses(failure.message, image.debug_path);
    }
    const TrialError e = ErrorFor(failure, q.function, item.timeout);
    Event(item.offer.job_id(), &l.log,
          absl::StrCat("the call failed: ", v1::ErrorCode_Name(e.code), ": ", e.message));
    r.set_error_code(e.code);
    r.set_message(e.message);
  } else if (const device::MeasureOutcome& o = l.outcome; o.matches) {
    r.set_error_code(v1::NO_ERROR);
    for (double c : o.costs) r.add_costs_s(c);
    for (double c : o.cycles) r.add_model_cycles(c);
    for (double i : o.instructions) r.add_model_instructions(i);
    v1::MeasureReport* m = r.mutable_measured();
    m->set_number(o.number);
    m->set_repeats(static_cast<int>(o.costs.size()));
    m->set_rounds(o.rounds);
    m->set_stop(o.stop);
    m->set_target_rel_ci(q.target_rel_ci);
    m->set_interleaved(interleave && o.rounds > 1);
    for (int size : o.round_sizes) m->add_round_sizes(size);
    m->set_batch_round_log_sd(o.batch_spread.log_sd);
    m->set_batch_round_df(o.batch_spread.df);
    r.set_wall_over_cpu(o.WallOverCpu());
  } else {
    r.set_error_code(v1::WRONG_ANSWER);
    r.set_message(
        absl::StrCat(q.function, ": ", o.mismatch, " (max abs error ", o.max_abs_error, ")"));
  }
  Report(item.offer, r, l.started, &l.log);
  return false;
}

std::optional<TrialError> BoardWorker::EnsureImage(const Image& image, const Item& item,
                                                   v1::StageTimes* stages, bool first,
                                                   AttemptLog* log) {
  device::FirmwareImage fw{image.path, image.hash};
  // A flash after a reset (a hang, a fault, a failed flash or calibration) says so.
  const bool after_reset = reset_pending_;
  device::EnsureOutcome out = board_->EnsureImage(fw, absl::Now() + options_.connect_timeout);
  const std::string& job_id = item.offer.job_id();
  if (out.flashed) {
    Event(job_id, log,
          absl::StrCat("flash: image ", image.hash, " put on ", board_->Description(), " in ",
                       absl::FormatDuration(out.flash_time),
                       after_reset ? " (after the board's reset)" : ""));
  }
  if (!out.flash_output.empty()) log->Add(out.flash_output);
  if (out.skipped && first) {
    log->Add(absl::StrCat("flash: skipped: the board already runs image ", image.hash));
  }
  if (out.handshake_time > absl::ZeroDuration()) {
    log->Add(absl::StrCat("handshake: ", board_->connected() ? "the link is up" : "failed",
                          " after ", absl::FormatDuration(out.handshake_time)));
  }
  // A link opened here counts as one handshake, failed or not.
  if (out.handshake_time > absl::ZeroDuration()) {
    stages->set_handshake_s(Seconds(out.handshake_time));
    const bool ok = board_->connected() ||
                    (out.failure && out.failure->kind == device::BoardFailure::kFirmwareMismatch);
    if (metrics_ != nullptr) {
      metrics_->Stage("HANDSHAKE", Seconds(out.handshake_time));
      metrics_->Handshake(id(), ok);
    }
    absl::MutexLock lock(&mu_);
    (ok ? counters_.handshakes : counters_.handshake_failures)++;
  }
  if (out.flashed) {
    stages->set_flash_s(Seconds(out.flash_time));
    int64_t flashes;
    {
      absl::MutexLock lock(&mu_);
      flashes = ++counters_.flashes;
    }
    if (metrics_ != nullptr) {
      metrics_->Stage("FLASH", stages->flash_s());
      metrics_->Flash(id());
    }
    if (hooks_.flashed) hooks_.flashed(id(), flashes);
  } else if (out.failure && out.failure->kind == device::BoardFailure::kFlash) {
    stages->set_flash_s(Seconds(out.flash_time));
    if (metrics_ != nullptr) metrics_->Stage("FLASH", stages->flash_s());
  }
  if (out.skipped) {
    absl::MutexLock lock(&mu_);
    counters_.flash_skips++;
    if (metrics_ != nullptr) metrics_->FlashSkip(id());
  }
  if (board_->port_missing()) SetState("OFFLINE");
  if (const std::optional<device::DeviceInfo>& info = board_->info()) {
    timer_resolution_s_ = info->timer_resolution_s;
    auto timer = info->fields.find("timer");
    timer_ = timer != info->fields.end() ? timer->second : "";
  }
  if (out.failure) {
    reset_pending_ = true;
    TrialError e = ErrorFor(*out.failure, item.request.function, item.timeout);
    Event(job_id, log,
          absl::StrCat("the board is not ready: ", v1::ErrorCode_Name(e.code), ": ", e.message));
    return e;
  }
  reset_pending_ = false;
  // A new link (a new image, a restart, a reconnect) and after a failed calibration: check the
  // timer against the clock before trusting its costs.
  if (out.handshake_time > absl::ZeroDuration() || calibration_failed_) {
    std::optional<TrialError> e = CheckCalibration();
    if (e) {
      Event(job_id, log,
            absl::StrCat("calibration: ", v1::ErrorCode_Name(e->code), ": ", e->message));
    }
    return e;
  }
  return std::nullopt;
}

std::optional<TrialError> BoardWorker::CheckCalibration() {
  const std::optional<device::DeviceInfo>& info = board_->info();
  if (!info) return std::nullopt;
  CalibrationInput input;
  input.info = &*info;
  input.config = &options_.config;
  input.emulation = board_->emulation();
  absl::StatusOr<Calibration> c = CalibrateBoard(*board_->rpc(), board_->timer(), input,
                                                 absl::Now() + options_.connect_timeout);
  if (absl::IsNotFound(c.status())) {
    calibration_failed_ = false;  // firmware without the kernel: nothing to check
    return std::nullopt;
  }
  if (!c.ok()) {
    calibration_failed_ = true;
    board_->Reset(device::Board::ResetReason::kHung);
    CountReset();
    return TrialError{v1::SESSION_ERROR,
                      absl::StrCat("board ", id(), ": calibration failed: ", c.status().message())};
  }
  if (metrics_ != nullptr && c->measured_hz > 0) metrics_->SetBoardClock(id(), c->measured_hz);
  if (!c->problem.empty()) {
    calibration_failed_ = true;
    return TrialError{v1::CALIBRATION_ERROR, absl::StrCat("board ", id(), ": ", c->problem)};
  }
  calibration_failed_ = false;
  cpu_hz_ = c->ResultHz();
  return std::nullopt;
}

void BoardWorker::AfterCall(const std::string& job_id, const device::Board::CallOutcome& call,
                            AttemptLog* log) {
  if (metrics_ != nullptr) metrics_->Link(id(), call.link.crc_failures, call.link.packets_dropped);
  const device::Board::Leftovers& left = call.leftovers;
  if (left.killed > 0 || left.threads > 0) {
    spdlog::warn("board {}: job {}: {}", id(), job_id, left.ToString());
    log->Add(left.ToString());
    {
      absl::MutexLock lock(&mu_);
      counters_.leftovers_killed += left.killed;
    }
    if (metrics_ != nullptr) metrics_->LeftoversKilled(id(), left.killed);
  }
  if (call.reset) {
    Event(job_id, log, "reset: the board is restarted, or reconnected, before its next use");
    CountReset();
  }
}

void BoardWorker::Event(const std::string& job_id, AttemptLog* log, absl::string_view event) {
  spdlog::info("board {}: job {}: {}", id(), job_id,
               std::string(event.substr(0, event.find('\n'))));
  log->Add(event);
}

void BoardWorker::CountReset() {
  reset_pending_ = true;
  absl::MutexLock lock(&mu_);
  counters_.resets++;
}

void BoardWorker::Report(const v1::JobOffer& offer, v1::Result result, absl::Time started,
                         AttemptLog* log) {
  // A trial's own outcome answers the latest attempt (a newer one superseded the offer's); an
  // infrastructure failure answers only the attempt that met it.
  const bool infra = IsInfrastructureError(result.error_code());
  int attempt;
  {
    absl::MutexLock lock(&mu_);
    auto it = held_.find(offer.job_id());
    if (it == held_.end()) return;  // cancelled meanwhile
    attempt = infra ? offer.attempt() : it->second;
  }
  result.set_board_id(id());
  // A tool's output in the message is valid UTF-8 from here on (protobuf sends nothing else).
  result.set_message(base::ValidUtf8(result.message()));
  // The result closes the log: its costs, or its message's first line (unless an event of the
  // log carried the message already; a tool's output in it is in the log above).
  const absl::string_view first_line =
      absl::string_view(result.message()).substr(0, result.message().find('\n'));
  log->Add(absl::StrCat("result: ", v1::ErrorCode_Name(result.error_code()),
                        result.error_code() == v1::NO_ERROR
                            ? absl::StrCat(": ", result.costs_s_size(), " cost(s)")
                        : first_line.empty() || absl::StrContains(log->Text(), result.message())
                            ? std::string()
                            : absl::StrCat(": ", first_line)));
  // The image the board reported on the current link; none after a reset or a failed link.
  if (board_->info()) result.set_firmware_hash(board_->info()->firmware_hash);
  result.set_timer_resolution_s(timer_resolution_s_);
  result.set_timer(board_->timer().name().empty() ? timer_ : board_->timer().name());
  if (result.error_code() == v1::NO_ERROR) result.set_cpu_hz(cpu_hz_);
  result.set_emulation(board_->emulation());
  *result.mutable_started_at() = ToProto(started);
  *result.mutable_finished_at() = ToProto(absl::Now());
  if (metrics_ != nullptr) metrics_->Trial(v1::ErrorCode_Name(result.error_code()));
  v1::JobResult jr;
  jr.set_job_id(offer.job_id());
  jr.set_attempt(attempt);
  *jr.mutable_result() = std::move(result);
  jr.set_log(log->Text());
  // Spooled and sent (the hook) before the job leaves held_: a heartbeat in between still names
  // it, so its lease holds until the tracker has the result. An attempt that superseded this one
  // meanwhile gets the same result.
  for (;;) {
    if (hooks_.result) hooks_.result(jr);
    absl::MutexLock lock(&mu_);
    auto it = held_.find(offer.job_id());
    if (it != held_.end() && it->second != jr.attempt() && !infra) {
      jr.set_attempt(it->second);
      continue;
    }
    counters_.results++;
    if (it == held_.end() || it->second == jr.attempt()) {
      if (it != held_.end()) held_.erase(it);
      superseding_.erase(offer.job_id());
      return;
    }
    // A newer attempt came while this one failed: it runs now.
    auto newer = superseding_.find(offer.job_id());
    if (newer != superseding_.end()) {
      pending_.push_back(std::move(newer->second));
      superseding_.erase(newer);
      return;
    }
    const bool waiting = std::any_of(pending_.begin(), pending_.end(), [&](const v1::JobOffer& o) {
      return o.job_id() == offer.job_id();
    });
    if (!waiting) held_.erase(it);
    return;
  }
}

}  // namespace benchfarm::agent
