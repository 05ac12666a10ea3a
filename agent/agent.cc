#include "agent/agent.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "agent/board_core.h"
#include "base/files.h"
#include "catalog/trial.h"
#include "client/channel.h"
#include "device/board.h"
#include "device/qemu_flasher.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "proto/error_codes.h"
#include "spdlog/spdlog.h"

namespace benchfarm::agent {
namespace {

// How long a lost attempt's result is kept to answer the job's next attempt.
constexpr absl::Duration kKeepSuperseded = absl::Minutes(10);

bool IsFile(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// `path` as given if absolute or present from the working directory, else under the first root
// that has it; empty when nowhere.
// Where the cycle model's plugin is in the runfiles and in PREFIX/share/benchfarm.
constexpr char kCycleModelPlugin[] = "cyclemodel/libbenchfarm_cyclemodel.so";

std::string Find(const std::string& path, const std::vector<std::string>& roots,
                 const std::string& marker) {
  if (!path.empty() && path[0] == '/') return IsFile(path + marker) ? path : "";
  if (IsFile(path + marker)) return path;
  for (const std::string& root : roots) {
    std::string p = root + "/" + path;
    if (IsFile(p + marker)) return p;
  }
  return "";
}

class ErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, int column, const std::string& message) override {
    if (error.empty())
      error = absl::StrCat("line ", line + 1, " column ", column + 1, ": ", message);
  }
  std::string error;
};

}  // namespace

absl::StatusOr<v1::AgentConfig> LoadAgentConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("agent config ", path, ": cannot open"));
  std::stringstream text;
  text << in.rdbuf();
  v1::AgentConfig config;
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text.str(), &config)) {
    return absl::InvalidArgumentError(absl::StrCat("agent config ", path, ": ", errors.error));
  }
  return config;
}

Agent::Agent(AgentOptions options) : options_(std::move(options)) {}

absl::StatusOr<std::unique_ptr<Agent>> Agent::Create(AgentOptions options) {
  v1::AgentConfig& c = options.config;
  if (c.agent_id().empty()) return absl::InvalidArgumentError("agent_id: required");
  if (c.tracker_address().empty()) return absl::InvalidArgumentError("tracker_address: required");
  if (c.boards().empty()) return absl::InvalidArgumentError("boards: at least one board");
  if (c.image_cache_max_bytes() < 0) {
    return absl::InvalidArgumentError("image_cache_max_bytes: must not be negative");
  }
  if (c.max_image_bytes() < 0) {
    return absl::InvalidArgumentError("max_image_bytes: must not be negative");
  }
  ImageBuilderOptions bo;
  if (c.image_cache_max_bytes() > 0) bo.image_cache_max_bytes = c.image_cache_max_bytes();
  if (c.max_image_bytes() > 0) bo.max_image_bytes = c.max_image_bytes();
  if (bo.max_image_bytes > bo.image_cache_max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_image_bytes: ", bo.max_image_bytes,
                     " is more than the image cache holds (image_cache_max_bytes ",
                     bo.image_cache_max_bytes, ")"));
  }
  const std::string base = absl::StrCat("/tmp/benchfarm-agent-", c.agent_id());
  if (c.scratch_dir().empty()) c.set_scratch_dir(base + "/scratch");
  if (c.cache_dir().empty()) c.set_cache_dir(base + "/cache");
  if (c.spool_dir().empty()) c.set_spool_dir(base + "/spool");
  std::vector<std::string> roots = options.search_roots;
  std::string crt = c.crt_dir().empty() ? Find("crt", roots, "/ops/knobs.json")
                                        : Find(c.crt_dir(), roots, "/ops/knobs.json");
  if (crt.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("crt_dir: no crt source tree (with ops/knobs.json) at \"",
                     c.crt_dir().empty() ? "crt" : c.crt_dir(), "\" or next to the agent"));
  }
  // Templates and the crt tree are used from build scripts in other directories.
  char cwd[4096];
  auto absolute = [&](const std::string& p) {
    if (!p.empty() && p[0] == '/') return p;
    return std::string(getcwd(cwd, sizeof(cwd)) ? cwd : ".") + "/" + p;
  };
  crt = absolute(crt);
  std::set<std::string> ids;
  std::vector<std::string> templates;
  std::vector<std::string> cores;           // each board's (BoardRegistration.cpu)
  std::map<std::string, int> core_of_kind;  // kind -> the first board naming a core
  for (int i = 0; i < c.boards_size(); ++i) {
    const v1::BoardConfig& b = c.boards(i);
    const std::string field = absl::StrCat("boards[", i, "]");
    if (b.id().empty()) return absl::InvalidArgumentError(field + ".id: required");
    if (!ids.insert(b.id()).second) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".id: \"", b.id(), "\" twice"));
    }
    if (b.kind().empty()) return absl::InvalidArgumentError(field + ".kind: required");
    if (absl::Status valid = device::Board::Validate(b); !valid.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".", valid.message()));
    }
    if (b.build_template().empty()) {
      return absl::InvalidArgumentError(field + ".build_template: required");
    }
    std::string dir = Find(b.build_template(), roots, "/build");
    if (dir.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".build_template: no template with a build script at \"",
                       b.build_template(), "\""));
    }
    templates.push_back(absolute(dir));
    // The board's core, from its package's data: the template's package, its board.conf.
    absl::StatusOr<std::string> core = BoardCore(templates.back(), crt);
    if (!core.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".build_template: ", core.status().message()));
    }
    cores.push_back(*core);
    if (!core->empty()) {
      auto [first, fresh] = core_of_kind.try_emplace(b.kind(), i);
      if (!fresh && cores[first->second] != *core) {
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".build_template: its package makes board ", b.id(), " a ", *core,
            ", but board ", c.boards(first->second).id(), " of the same kind ", b.kind(), " is a ",
            cores[first->second], "; a kind is one core (give one of them another kind)"));
      }
    }
  }
  // The cycle model's QEMU plugin, for emulated boards in CYCLES timing that name none themselves.
  std::string plugin = Find(kCycleModelPlugin, roots, "");
  if (!plugin.empty()) plugin = absolute(plugin);
  std::unique_ptr<Agent> agent(new Agent(options));
  absl::StatusOr<catalog::KnobSpace> space = catalog::KnobSpace::Load(crt + "/ops/knobs.json");
  if (!space.ok()) return space.status();
  agent->space_ = std::make_unique<catalog::KnobSpace>(*std::move(space));
  for (const std::string& dir : {c.scratch_dir(), c.cache_dir()}) {
    absl::Status made = base::MakeDirs(dir);
    if (!made.ok()) return made;
  }
  // User code (builds, host-process boards, QEMU) runs only sandboxed: no bwrap, no agent.
  if (absl::Status sandbox = process::CheckSandbox(); !sandbox.ok()) return sandbox;
  spdlog::info("user code runs in {}", process::DescribeSandbox());
  bo.cache_dir = c.cache_dir();
  bo.scratch_dir = c.scratch_dir();
  bo.crt_dir = crt;
  AgentMetrics* metrics = &agent->metrics_;
  bo.evicted = [metrics] { metrics->CacheEviction(); };
  agent->builder_ = std::make_unique<ImageBuilder>(bo);
  absl::StatusOr<std::unique_ptr<ResultSpool>> spool = ResultSpool::Open(c.spool_dir());
  if (!spool.ok()) return spool.status();
  agent->spool_ = *std::move(spool);
  if (!c.metrics_address().empty()) {
    absl::Status served = agent->metrics_.Serve(c.metrics_address());
    if (!served.ok()) return served;
  }
  Agent* self = agent.get();
  BoardWorker::Hooks hooks;
  hooks.result = [self](const v1::JobResult& r) { self->OnResult(r); };
  hooks.progress = [self](const std::string& job, int attempt, const std::string& stage) {
    v1::AgentMessage m;
    m.mutable_progress()->set_job_id(job);
    m.mutable_progress()->set_attempt(attempt);
    m.mutable_progress()->set_stage(stage);
    self->Write(m);
  };
  hooks.flashed = [self](const std::string& board, int64_t flashes) {
    v1::AgentMessage m;
    m.mutable_board()->set_board_id(board);
    m.mutable_board()->set_flashes(flashes);
    self->Write(m);
  };
  for (int i = 0; i < c.boards_size(); ++i) {
    BoardWorker::Options wo;
    wo.config = c.boards(i);
    wo.template_dir = templates[i];
    wo.cpu = cores[i];
    wo.scratch_dir = c.scratch_dir();
    wo.cycle_model_plugin = plugin;
    if (c.batch_linger_ms() > 0) wo.linger = absl::Milliseconds(c.batch_linger_ms());
    absl::StatusOr<std::unique_ptr<device::Board>> board =
        device::Board::Create(BoardWorker::BoardOptionsFor(wo));
    if (!board.ok()) return board.status();
    agent->workers_.push_back(
        std::make_unique<BoardWorker>(wo, *std::move(board), agent->space_.get(),
                                      agent->builder_.get(), &agent->metrics_, hooks));
  }
  // gRPC's own reconnect backoff grows to minutes by default; the agent wants its tracker back
  // within its own max_backoff.
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.min_backoff)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.min_backoff)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(options.max_backoff)));
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
      client::TrackerChannel(c.tracker_address(), c.credentials(), args);
  if (!channel.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("credentials: ", channel.status().message()));
  }
  agent->channel_ = *std::move(channel);
  agent->stub_ = v1::TrackerAgent::NewStub(agent->channel_);
  agent->metrics_.SetSpooled(static_cast<int64_t>(agent->spool_->size()));
  agent->metrics_.SetConnected(false);
  return agent;
}

Agent::~Agent() { Stop(); }

void Agent::Start() {
  for (auto& w : workers_) w->Start();
  UpdateBoardMetrics();
  connection_ = std::thread([this] { ConnectionLoop(); });
  heartbeat_thread_ = std::thread([this] { HeartbeatLoop(); });
  retry_thread_ = std::thread([this] { RetryLoop(); });
}

void Agent::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_ && !connection_.joinable()) return;
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (connection_.joinable()) connection_.join();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (retry_thread_.joinable()) retry_thread_.join();
  for (auto& w : workers_) w->Stop();
}

bool Agent::connected() const {
  absl::MutexLock lock(&mu_);
  return connected_;
}

AgentCounters Agent::counters() const {
  AgentCounters c;
  c.builds = builder_->builds();
  c.cache_hits = builder_->cache_hits();
  for (const auto& w : workers_) {
    WorkerCounters wc = w->counters();
    c.boards.flashes += wc.flashes;
    c.boards.leftovers_killed += wc.leftovers_killed;
    c.boards.flash_skips += wc.flash_skips;
    c.boards.handshakes += wc.handshakes;
    c.boards.handshake_failures += wc.handshake_failures;
    c.boards.images += wc.images;
    c.boards.results += wc.results;
    c.boards.resets += wc.resets;
  }
  absl::MutexLock lock(&mu_);
  c.results_sent = results_sent_;
  c.result_messages = result_messages_;
  c.results_acked = results_acked_;
  c.connects = connects_;
  return c;
}

bool Agent::Write(const v1::AgentMessage& message) {
  absl::MutexLock write(&write_mu_);
  return WriteLocked(message);
}

bool Agent::WriteLocked(const v1::AgentMessage& message) {
  grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>* stream;
  {
    absl::MutexLock lock(&mu_);
    if (!connected_ && !message.has_register_()) return false;
    stream = stream_;
  }
  return stream != nullptr && stream->Write(message);
}

void Agent::OnResult(const v1::JobResult& result) {
  absl::Status stored = spool_->Add(result);
  if (!stored.ok()) {
    spdlog::error("{} (the result is sent, but not kept for a resend)",
                  std::string(stored.message()));
  }
  metrics_.SetSpooled(static_cast<int64_t>(spool_->size()));
  SendResults({result});
}

bool Agent::Superseded(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  return superseded_.count(job_id) > 0;
}

void Agent::DropStaleSuperseded() {
  std::vector<std::string> stale;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    for (auto it = superseded_.begin(); it != superseded_.end();) {
      if (it->second > now) {
        ++it;
        continue;
      }
      stale.push_back(it->first);
      it = superseded_.erase(it);
    }
  }
  for (const std::string& job : stale) {
    if (std::optional<v1::JobResult> r = spool_->Get(job)) spool_->Remove(job, r->attempt());
  }
  if (!stale.empty()) metrics_.SetSpooled(static_cast<int64_t>(spool_->size()));
}

std::vector<v1::HeldAttempt> Agent::Held() const {
  std::map<std::string, int> held = spool_->Attempts();
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [job, until] : superseded_) held.erase(job);
  }
  for (const auto& w : workers_) {
    for (const v1::HeldAttempt& h : w->HeldJobs()) {
      int& attempt = held[h.job_id()];
      attempt = std::max(attempt, h.attempt());
    }
  }
  std::vector<v1::HeldAttempt> out;
  for (const auto& [id, attempt] : held) {
    v1::HeldAttempt& h = out.emplace_back();
    h.set_job_id(id);
    h.set_attempt(attempt);
  }
  return out;
}

void Agent::OnOffer(const v1::JobOffer& offer) {
  v1::AgentMessage ack;
  ack.mutable_ack()->set_job_id(offer.job_id());
  ack.mutable_ack()->set_attempt(offer.attempt());
  std::optional<v1::JobResult> spooled = spool_->Get(offer.job_id());
  // An infrastructure failure says nothing about the trial: a new attempt runs anew.
  if (spooled && IsInfrastructureError(spooled->result().error_code())) spooled.reset();
  if (spooled) {
    // Measured already (the tracker lost that attempt: a lease ran out while the agent was
    // paused, say): answered from the spool under the new attempt, not measured again.
    if (spooled->attempt() < offer.attempt()) {
      spooled->set_attempt(offer.attempt());
      {
        absl::MutexLock lock(&mu_);
        superseded_.erase(offer.job_id());
      }
      if (absl::Status s = spool_->Add(*spooled); !s.ok()) {
        spdlog::error("{} (the result is sent, but not kept for a resend)",
                      std::string(s.message()));
      }
      Write(ack);
      SendResults({*std::move(spooled)});
    }
    return;
  }
  bool taken = false;
  for (auto& w : workers_) {
    if (w->id() == offer.board_id()) {
      w->Offer(offer);
      taken = true;
    }
  }
  if (taken) Write(ack);
}

void Agent::OnRetry(const v1::ResultRetry& retry) {
  const absl::Duration after =
      std::max(absl::Milliseconds(retry.retry_after_ms()), options_.min_backoff);
  absl::MutexLock lock(&mu_);
  if (retries_.empty()) {
    spdlog::warn(
        "agent {}: the tracker could not store a result ({}); its results stay in the "
        "spool and are sent again, backing off up to {}",
        options_.config.agent_id(), retry.reason(),
        absl::FormatDuration(std::max(after, options_.max_backoff)));
  }
  auto [it, fresh] = retries_.try_emplace(retry.job_id(), Retry{absl::Now(), after});
  Retry& r = it->second;
  if (!fresh) r.backoff = std::max(after, std::min(r.backoff * 2, options_.max_backoff));
  r.due = absl::Now() + r.backoff;
}

void Agent::RetryLoop() {
  for (;;) {
    std::vector<std::string> due;
    {
      absl::MutexLock lock(&mu_);
      absl::Time next = absl::Now() + absl::Seconds(1);
      for (const auto& [job, r] : retries_) next = std::min(next, r.due);
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithDeadline(absl::Condition(&stop), next);
      if (stopping_) return;
      const absl::Time now = absl::Now();
      for (auto& [job, r] : retries_) {
        if (r.due > now) continue;
        due.push_back(job);
        r.due = now + r.backoff;  // until the tracker answers (ack or another retry)
      }
    }
    DropStaleSuperseded();
    std::vector<v1::JobResult> results;
    for (const std::string& job : due) {
      std::optional<v1::JobResult> r = spool_->Get(job);
      if (!r.has_value()) {
        absl::MutexLock lock(&mu_);
        retries_.erase(job);
        continue;
      }
      results.push_back(*std::move(r));
    }
    SendResults(std::move(results));
  }
}

void Agent::SendResults(std::vector<v1::JobResult> results) {
  constexpr size_t kMessageBytes = size_t{1} << 20;
  {
    absl::MutexLock lock(&mu_);
    for (v1::JobResult& r : results) outgoing_results_.push_back(std::move(r));
  }
  // One writer at a time: whoever writes next takes every result waiting, its own or those
  // other boards' threads queued meanwhile (they find theirs gone and return).
  absl::MutexLock write(&write_mu_);
  bool batched;
  {
    absl::MutexLock lock(&mu_);
    results.clear();
    results.swap(outgoing_results_);
    batched = batched_results_;
  }
  for (size_t i = 0; i < results.size();) {
    v1::AgentMessage m;
    size_t bytes = 0, n = 0;
    // At least one result to a message; more while they fit.
    while (i < results.size() &&
           (n == 0 || (batched && bytes < kMessageBytes &&
                       n < static_cast<size_t>(catalog::kMaxResultsPerMessage)))) {
      bytes += results[i].ByteSizeLong();
      *(n == 0 ? m.mutable_result() : m.add_results()) = std::move(results[i]);
      ++i;
      ++n;
    }
    // Not connected: the rest stay in the spool and are sent again on registering.
    if (!WriteLocked(m)) return;
    absl::MutexLock lock(&mu_);
    results_sent_ += static_cast<int64_t>(n);
    result_messages_++;
  }
}

void Agent::SendSpooled() {
  std::vector<v1::JobResult> results;
  for (v1::JobResult& r : spool_->All()) {
    if (!Superseded(r.job_id())) results.push_back(std::move(r));
  }
  SendResults(std::move(results));
}

void Agent::ConnectionLoop() {
  absl::Duration backoff = options_.min_backoff;
  bool logged_down = false;
  for (;;) {
    grpc::ClientContext context;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      context_ = &context;
    }
    const bool registered = RunStream(&context);
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
      connected_ = false;
    }
    metrics_.SetConnected(false);
    if (registered) {
      backoff = options_.min_backoff;
      logged_down = false;
    }
    if (!logged_down) {
      spdlog::warn("agent {}: tracker {} unavailable; retrying with backoff up to {}",
                   options_.config.agent_id(), options_.config.tracker_address(),
                   absl::FormatDuration(options_.max_backoff));
      logged_down = true;
    }
    absl::MutexLock lock(&mu_);
    auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    mu_.AwaitWithTimeout(absl::Condition(&stop), backoff);
    if (stopping_) return;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

void Agent::OnResultAck(const v1::ResultAck& ack) {
  if (ack.superseded()) {
    // Kept to answer the job's next attempt (OnOffer), if it comes here soon.
    absl::MutexLock lock(&mu_);
    superseded_[ack.job_id()] = absl::Now() + kKeepSuperseded;
  } else {
    spool_->Remove(ack.job_id(), ack.attempt());
  }
  metrics_.SetSpooled(static_cast<int64_t>(spool_->size()));
  absl::MutexLock lock(&mu_);
  results_acked_++;
  if (retries_.erase(ack.job_id()) > 0 && retries_.empty()) {
    spdlog::info("agent {}: the tracker stores results again", options_.config.agent_id());
  }
}

bool Agent::RunStream(grpc::ClientContext* context) {
  // Wait for the tracker rather than fail at once while the channel reconnects: a waiting call
  // keeps gRPC polling the connection under way. Without it a TLS handshake to a restarted tracker
  // advanced only at gRPC's 5 s backup poll, one round trip at a time, and never finished within
  // its connect deadline (the agent stayed away until restarted). Stop() cancels the wait.
  context->set_wait_for_ready(true);
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::TrackerMessage>> stream =
      stub_->Connect(context);
  v1::AgentMessage reg;
  v1::Register* r = reg.mutable_register_();
  r->set_agent_id(options_.config.agent_id());
  r->set_batched_acks(true);    // acknowledgements ride on offers (TrackerMessage.acks)
  r->set_batched_offers(true);  // offers queued together come in one message (.offers)
  for (const auto& w : workers_) {
    v1::BoardRegistration* b = r->add_boards();
    b->set_board_id(w->id());
    b->set_kind(w->config().kind());
    b->set_cpu(w->cpu());
    *b->mutable_labels() = w->config().labels();
    b->add_capabilities(w->config().has_host_process() ? "host-process" : "serial");
    if (w->config().has_qemu()) {
      b->add_capabilities("emulated");
      b->set_timing(device::QemuTimingName(device::QemuTimingOf(w->config().qemu())));
    }
    b->add_capabilities("batch");
    b->set_flashes(w->counters().flashes);
    // Room for the batch being measured and the next one being built.
    b->set_slots(2 * w->batch_size());
    // What one trial may allocate on it: the tracker refuses larger trials at submission.
    int64_t memory = w->config().memory_bytes();
    if (memory <= 0 && w->config().has_host_process()) memory = int64_t{30} << 20;
    b->set_memory_bytes(memory);
  }
  for (v1::HeldAttempt& h : Held()) {
    r->add_held_job_ids(h.job_id());
    *r->add_held() = std::move(h);
  }
  {
    absl::MutexLock write(&write_mu_);
    absl::MutexLock lock(&mu_);
    stream_ = stream.get();
    retries_.clear();  // every spooled result is sent again once registered
  }
  // Written without write_mu_: it may wait for the tracker a long time, and no one else writes
  // before the registration is answered (Write refuses while not connected).
  bool ok = stream->Write(reg);
  bool registered = false;
  v1::TrackerMessage m;
  while (ok && stream->Read(&m)) {
    // Before the message's own content: a superseded result is noted before an offer of its job.
    for (const v1::ResultAck& ack : m.acks()) OnResultAck(ack);
    switch (m.msg_case()) {
      case v1::TrackerMessage::kRegistered: {
        registered = true;
        {
          absl::MutexLock lock(&mu_);
          connected_ = true;
          connects_++;
          if (m.registered().heartbeat_period_ms() > 0) {
            heartbeat_ = absl::Milliseconds(m.registered().heartbeat_period_ms());
          }
          batched_results_ = m.registered().batched_results();
        }
        metrics_.SetConnected(true);
        spdlog::info("agent {}: registered {} boards with {}", options_.config.agent_id(),
                     workers_.size(), options_.config.tracker_address());
        SendSpooled();
        break;
      }
      case v1::TrackerMessage::kOffer:
        OnOffer(m.offer());
        break;
      case v1::TrackerMessage::kCancel:
        for (auto& w : workers_) w->Cancel(m.cancel().job_id());
        break;
      case v1::TrackerMessage::kResultAck:
        OnResultAck(m.result_ack());
        break;
      case v1::TrackerMessage::kResultRetry:
        OnRetry(m.result_retry());
        break;
      default:
        break;
    }
    // After the message's own offer, in order.
    for (const v1::JobOffer& offer : m.offers()) OnOffer(offer);
  }
  {
    absl::MutexLock write(&write_mu_);
    absl::MutexLock lock(&mu_);
    stream_ = nullptr;
    connected_ = false;
    batched_results_ = false;  // until the next tracker says so
  }
  bool stopping;
  {
    absl::MutexLock lock(&mu_);
    stopping = stopping_;
  }
  // The reads ended: the tracker finished the call (its status is waiting) or the link broke.
  // Only when stopping is there anything left to cancel.
  if (stopping) context->TryCancel();
  const grpc::Status end = stream->Finish();
  // The tracker's reason when it ended the stream (a refused credential, a newer stream of this
  // agent): said once per end, so an operator sees why the agent is not serving.
  if (!end.ok() && end.error_code() != grpc::CANCELLED) {
    spdlog::warn("agent {}: the tracker ended the stream: {} (code {})", options_.config.agent_id(),
                 end.error_message(), static_cast<int>(end.error_code()));
  }
  return registered;
}

void Agent::HeartbeatLoop() {
  for (;;) {
    absl::Duration period;
    {
      absl::MutexLock lock(&mu_);
      period = heartbeat_;
      auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
      mu_.AwaitWithTimeout(absl::Condition(&stop), period);
      if (stopping_) return;
    }
    v1::AgentMessage m;
    v1::Heartbeat* beat = m.mutable_heartbeat();
    for (v1::HeldAttempt& h : Held()) *beat->add_held() = std::move(h);
    Write(m);
    UpdateBoardMetrics();
  }
}

void Agent::UpdateBoardMetrics() {
  std::map<std::string, int> states;
  for (const auto& w : workers_) states[w->State()]++;
  metrics_.SetBoards(states);
}

}  // namespace benchfarm::agent
