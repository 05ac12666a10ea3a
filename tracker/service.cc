// TrackerService: see service.h.
#include "tracker/service.h"

#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/memory.h"
#include "base/time_proto.h"
#include "catalog/trial.h"
#include "spdlog/spdlog.h"
#include "tracker/agent_stream.h"
#include "tracker/metrics.h"
#include "tracker/watch_hub.h"

namespace benchfarm::tracker {

grpc::Status ToGrpc(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpc(status));
  return reactor;
}

// Who changes the catalog, as the catalog sees it.
CatalogCaller CatalogCallerOf(const Caller& caller) {
  CatalogCaller who;
  who.authenticated = caller.authenticated;
  who.client = caller.authenticated ? caller.identity.name : "";
  who.admin = caller.authenticated && caller.identity.role == Role::kAdmin;
  return who;
}

}  // namespace

// ---- the service ------------------------------------------------------------------------------

TrackerService::TrackerService(JobQueue* queue, Metrics* metrics, ServiceOptions options)
    : queue_(queue), metrics_(metrics), options_(options) {
  queue_->AddListener([this](const v1::Job& job) {
    if (job.state() == v1::DONE || job.state() == v1::CANCELLED_STATE) {
      if (metrics_ != nullptr) metrics_->JobFinished(job);
    }
    // A job queued again (an attempt ended without a result) can be offered at once. A submitted
    // one only once its submission is stored: SubmitTrials pokes then (a poke per job now would
    // have the dispatcher look at the farm for jobs it may not offer yet, once per chunk queued).
    if (job.state() == v1::QUEUED && job.attempts_size() > 0) Poke();
  });
  dispatcher_ = std::thread([this] { DispatchLoop(); });
  watch_hub_ = std::make_shared<WatchHub>(queue_, metrics_, options_);
}

TrackerService::~TrackerService() {
  Stop();
  watch_hub_->Stop();
}

void TrackerService::Stop() {
  {
    absl::MutexLock lock(&poke_mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (dispatcher_.joinable()) dispatcher_.join();
}

void TrackerService::Poke() {
  absl::MutexLock lock(&poke_mu_);
  poked_ = true;
}

void TrackerService::Poke(const std::string& agent_id) {
  absl::MutexLock lock(&poke_mu_);
  poked_agents_.push_back(agent_id);
}

absl::Status TrackerService::Granted(const Identity& id, const v1::BoardRegistration& b) {
  const std::string board = b.board_id().substr(0, 128);
  if (id.grants.empty() && !id.legacy_board_globs.empty()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "register.boards: agent ", id.name,
        "'s certificate names boards but not their kinds "
        "(issued before kinds were bound): issue it again with deploy/pki.sh agent DIR ",
        id.name, " 'GLOB=KIND[:SLOTS]'"));
  }
  bool id_matched = false;
  std::string kinds;
  for (const BoardGrant& g : id.grants) {
    if (!GlobMatch(g.glob, b.board_id())) continue;
    id_matched = true;
    if (g.kind != "*" && g.kind != b.kind()) {
      absl::StrAppend(&kinds, kinds.empty() ? "" : ", ", g.kind);
      continue;
    }
    if (g.max_slots > 0 && b.slots() > g.max_slots) {
      return absl::PermissionDeniedError(
          absl::StrCat("register.boards: agent ", id.name, "'s certificate lets it serve board \"",
                       board, "\" with at most ", g.max_slots, " slots, not ", b.slots()));
    }
    return absl::OkStatus();
  }
  if (id_matched) {
    return absl::PermissionDeniedError(
        absl::StrCat("register.boards: agent ", id.name, "'s certificate lets it serve board \"",
                     board, "\" only as kind ", kinds, ", not \"", b.kind().substr(0, 128), "\""));
  }
  return absl::PermissionDeniedError(absl::StrCat("register.boards: agent ", id.name,
                                                  "'s certificate does not let it serve board \"",
                                                  board, "\""));
}

absl::Status TrackerService::Attach(const Caller& caller, const v1::Register& registration,
                                    AgentStream* stream) {
  if (options_.auth != nullptr && !caller.authenticated) {
    return absl::UnauthenticatedError("register: this stream has no accepted credential");
  }
  if (caller.authenticated) {
    const Identity& id = caller.identity;
    if (registration.agent_id() != id.name) {
      return absl::PermissionDeniedError(absl::StrCat(
          "register.agent_id: this stream is authenticated as agent \"", id.name,
          "\"; it may not register as \"", registration.agent_id().substr(0, 128), "\""));
    }
    for (const v1::BoardRegistration& b : registration.boards()) {
      if (absl::Status granted = Granted(id, b); !granted.ok()) {
        if (metrics_ != nullptr) metrics_->AuthRefused("Register", "NOT_GRANTED");
        return granted;
      }
    }
  }
  absl::MutexLock lock(&mu_);
  absl::Status s = queue_->RegisterAgent(registration, caller.authenticated);
  if (absl::IsPermissionDenied(s) && metrics_ != nullptr) {
    metrics_->AuthRefused("Register", "BOARD_HELD");
  }
  if (!s.ok()) return s;
  auto it = streams_.find(registration.agent_id());
  if (it != streams_.end() && it->second != stream) {
    // The agent connected again (say, after a network break its old stream has not noticed): the
    // newer stream wins and the old one is told, rather than left open and deaf.
    it->second->Replace(absl::StrCat("agent ", registration.agent_id(),
                                     " registered again on a newer stream; this one is closed"));
  }
  streams_[registration.agent_id()] = stream;
  return s;
}

absl::StatusOr<Caller> TrackerService::Authorize(const grpc::CallbackServerContext& context,
                                                 std::initializer_list<Role> roles,
                                                 const char* method) {
  Caller caller;
  if (options_.auth == nullptr) return caller;  // --insecure
  const char* reason = kRefusedUnauthenticated;
  absl::StatusOr<Identity> id = options_.auth->Identify(context, &reason);
  if (!id.ok()) {
    if (metrics_ != nullptr) metrics_->AuthRefused(method, reason);
    refusal_log_.Note(absl::StrCat("refused ", method, " from ", context.peer(), " (", reason,
                                   "): ", id.status().message()));
    return id.status();
  }
  for (Role role : roles) {
    if (id->role == role) {
      caller.authenticated = true;
      caller.identity = *std::move(id);
      return caller;
    }
  }
  if (metrics_ != nullptr) metrics_->AuthRefused(method, "PERMISSION_DENIED");
  return absl::PermissionDeniedError(
      absl::StrCat(method, ": not allowed to ", RoleName(id->role), " ", id->name));
}

namespace {

constexpr std::initializer_list<Role> kUsers = {Role::kUser, Role::kAdmin};

// A string a request names: at most `max` bytes, and not empty when `required`. Too long, it is
// not echoed back.
absl::Status CheckField(const char* field, const std::string& value, size_t max,
                        bool required = true) {
  if (required && value.empty())
    return absl::InvalidArgumentError(absl::StrCat(field, ": required"));
  if (value.size() > max) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": longer than ", max, " bytes"));
  }
  return absl::OkStatus();
}

// What a job id that does not exist, and another client's job, are answered alike: a user cannot
// tell whether someone else's job id exists (the job queue's own NotFound reads the same).
absl::Status NoSuchJob(const std::string& job_id) {
  return absl::NotFoundError(absl::StrCat("no job ", job_id));
}

}  // namespace

void TrackerService::Detach(const std::string& agent_id, AgentStream* stream) {
  // Under mu_, so a new stream of the same agent is attached either before (this one is no
  // longer the agent's: nothing to do) or after (its registration reconnects the agent).
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(agent_id);
  if (it == streams_.end() || it->second != stream) return;
  streams_.erase(it);
  queue_->DisconnectAgent(agent_id);
}

void TrackerService::DispatchLoop() {
  absl::Time last_full = absl::InfinitePast();
  absl::Time last_heap_check = absl::Now();
  absl::Time last_credential_check = absl::Now();
  uint64_t credentials_generation = options_.auth != nullptr ? options_.auth->Generation() : 0;
  std::vector<std::string> agents;
  for (;;) {
    bool all = false;
    agents.clear();
    {
      absl::MutexLock lock(&poke_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(poke_mu_) {
        return poked_ || !poked_agents_.empty() || stopping_;
      };
      // Unpoked for a period: every agent is looked at (leases expired, health checks due).
      all = !poke_mu_.AwaitWithTimeout(absl::Condition(&ready), options_.dispatch_period) || poked_;
      if (stopping_) return;
      poked_ = false;
      agents.swap(poked_agents_);
    }
    DispatchOnce(all, agents);
    if (absl::Now() - last_full >= options_.dispatch_period) {
      queue_->ExpireLeases();
      if (metrics_ != nullptr) metrics_->Update(queue_->Stats());
      last_full = absl::Now();
    }
    if (absl::Now() - last_heap_check >= options_.heap_check_period) {
      base::ReleaseFreeHeapOver(options_.release_heap_over);
      last_heap_check = absl::Now();
    }
    if (options_.auth != nullptr &&
        absl::Now() - last_credential_check >= options_.credential_check_period) {
      const uint64_t generation = options_.auth->Generation();
      if (generation != credentials_generation) EndRevokedStreams();
      credentials_generation = generation;
      last_credential_check = absl::Now();
    }
  }
}

void TrackerService::EndRevokedStreams() {
  auto revoked = [this](const Caller& c) {
    return c.authenticated && options_.auth->Revoked(c.identity);
  };
  std::vector<std::string> agents;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [agent_id, stream] : streams_) {
      if (!revoked(stream->caller())) continue;
      agents.push_back(agent_id);
      stream->Refuse(absl::UnauthenticatedError(absl::StrCat(
          "agent ", agent_id, ": its certificate was revoked; this stream is closed")));
    }
  }
  for (const std::string& agent_id : agents) {
    // What it holds re-queues now: a revoked agent's measurements are not trusted.
    queue_->RevokeAgent(agent_id, "its agent's certificate was revoked: measured again elsewhere");
    if (metrics_ != nullptr) metrics_->AuthRefused("AgentStream", "REVOKED");
  }
  const int watchers = watch_hub_->EndRevoked(revoked);
  if (metrics_ != nullptr) {
    for (int i = 0; i < watchers; ++i) metrics_->AuthRefused("WatchJobs", "REVOKED");
  }
  if (!agents.empty() || watchers > 0) {
    spdlog::warn("revoked credentials: ended {} agent stream(s) and {} watch stream(s)",
                 agents.size(), watchers);
  }
}

// Agents pumped per look at the farm's boards (the queue's lock is released between chunks).
constexpr size_t kPumpChunk = 64;

void TrackerService::DispatchOnce(bool all, const std::vector<std::string>& agents) {
  // Streams cannot be deleted while mu_ is held (OnDone detaches under it first). Pumping an
  // agent twice is harmless.
  auto pump = [this](const std::vector<std::string>& agents) {
    absl::MutexLock lock(&mu_);
    for (const std::string& agent : agents) {
      if (auto it = streams_.find(agent); it != streams_.end()) it->second->Pump();
    }
  };
  pump(agents);
  if (!all) return;
  // Chunks: the first offers go out before the whole farm has been looked at.
  JobQueue::PumpCursor cursor;
  do {
    pump(queue_->AgentsToPump(&cursor, kPumpChunk));
  } while (cursor.more);
}

grpc::ServerUnaryReactor* TrackerService::SubmitTrials(grpc::CallbackServerContext* context,
                                                       const v1::SubmitTrialsRequest* request,
                                                       v1::SubmitTrialsResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "SubmitTrials");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("client_id", request->client_id(), kMaxIdBytes, false); !s.ok()) {
    return Done(context, s);
  }
  // The client is who the credential says: a request cannot claim someone else's id.
  std::string client = request->client_id();
  if (caller->authenticated) {
    if (!client.empty() && !caller->may_act_for(client)) {
      if (metrics_ != nullptr) metrics_->AuthRefused("SubmitTrials", "PERMISSION_DENIED");
      return Done(context, absl::PermissionDeniedError(absl::StrCat(
                               "client_id: this call is authenticated as ", caller->identity.name,
                               "; it may not submit as \"", client, "\"")));
    }
    if (client.empty()) client = caller->identity.name;
  }
  // Moved out, not copied: the request is gRPC's non-const message, read-only to a handler only
  // by the callback API's signature, and nothing reads it after this call.
  std::vector<v1::Trial> trials;
  trials.reserve(request->trials_size());
  for (v1::Trial& t : *const_cast<v1::SubmitTrialsRequest*>(request)->mutable_trials()) {
    trials.push_back(std::move(t));
  }
  absl::StatusOr<JobQueue::Accepted> accepted =
      queue_->SubmitAsync(client, request->request_id(), std::move(trials));
  if (!accepted.ok()) return Done(context, accepted.status());
  for (std::string& id : accepted->job_ids) response->add_job_ids(std::move(id));
  // Answered, and its jobs offered, once the submission is stored (on the commit thread).
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  queue_->WhenDurable(accepted->ticket, [this, reactor, response](absl::Status stored) {
    if (!stored.ok()) response->clear_job_ids();
    if (stored.ok()) Poke();
    reactor->Finish(ToGrpc(stored));
  });
  return reactor;
}

grpc::ServerUnaryReactor* TrackerService::GetJob(grpc::CallbackServerContext* context,
                                                 const v1::GetJobRequest* request,
                                                 v1::Job* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "GetJob");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("job_id", request->job_id(), kMaxIdBytes); !s.ok()) {
    return Done(context, s);
  }
  absl::StatusOr<v1::Job> job = queue_->GetJob(request->job_id());
  if (job.ok() && !caller->may_act_for(job->client_id())) {
    if (metrics_ != nullptr) metrics_->AuthRefused("GetJob", "PERMISSION_DENIED");
    return Done(context, NoSuchJob(request->job_id()));
  }
  if (job.ok()) *response = std::move(*job);
  return Done(context, job.status());
}

grpc::ServerUnaryReactor* TrackerService::GetJobLog(grpc::CallbackServerContext* context,
                                                    const v1::GetJobLogRequest* request,
                                                    v1::GetJobLogResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "GetJobLog");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("job_id", request->job_id(), kMaxIdBytes); !s.ok()) {
    return Done(context, s);
  }
  if (request->attempt() < 0) {
    return Done(context, absl::InvalidArgumentError("attempt: 0 (every attempt) or more"));
  }
  absl::StatusOr<v1::Job> job = queue_->GetJob(request->job_id());
  if (!job.ok()) return Done(context, job.status());
  // A log shows the owner's code and its compiler's output: the job's owner and admins only;
  // another client's job is answered as one that does not exist (as GetJob does).
  if (!caller->may_act_for(job->client_id())) {
    if (metrics_ != nullptr) metrics_->AuthRefused("GetJobLog", "PERMISSION_DENIED");
    return Done(context, NoSuchJob(request->job_id()));
  }
  absl::StatusOr<std::vector<v1::AttemptLog>> logs =
      queue_->AttemptLogs(request->job_id(), request->attempt());
  if (!logs.ok()) return Done(context, logs.status());
  response->set_job_id(request->job_id());
  for (v1::AttemptLog& log : *logs) *response->add_logs() = std::move(log);
  return Done(context, absl::OkStatus());
}

grpc::ServerWriteReactor<v1::JobEvent>* TrackerService::WatchJobs(
    grpc::CallbackServerContext* context, const v1::WatchJobsRequest* request) {
  v1::WatchJobsRequest watch = *request;
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "WatchJobs");
  absl::Status refused = caller.status();
  if (refused.ok()) refused = CheckField("client_id", watch.client_id(), kMaxIdBytes, false);
  for (const std::string& id : watch.job_ids()) {
    if (refused.ok()) refused = CheckField("job_ids", id, kMaxIdBytes);
  }
  // A user watches its own jobs only.
  const bool own_only =
      refused.ok() && caller->authenticated && caller->identity.role != Role::kAdmin;
  if (own_only) {
    if (!watch.client_id().empty() && watch.client_id() != caller->identity.name) {
      refused = absl::PermissionDeniedError(absl::StrCat(
          "client_id: you are ", caller->identity.name, "; you may watch only your own jobs"));
    }
    watch.set_client_id(caller->identity.name);
  }
  // A job that does not exist is never watched (job ids are the tracker's to give), and is
  // answered as another client's job is.
  for (const std::string& id : watch.job_ids()) {
    if (!refused.ok()) break;
    absl::StatusOr<v1::Job> job = queue_->GetJob(id);
    if (absl::IsNotFound(job.status()) ||
        (own_only && job.ok() && job->client_id() != caller->identity.name)) {
      refused = NoSuchJob(id);
    }
  }
  if (own_only && !refused.ok() && metrics_ != nullptr) {
    metrics_->AuthRefused("WatchJobs", "PERMISSION_DENIED");
  }
  if (!refused.ok()) {
    class Refusal final : public grpc::ServerWriteReactor<v1::JobEvent> {
     public:
      explicit Refusal(const absl::Status& status) { Finish(ToGrpc(status)); }
      void OnDone() override { delete this; }
    };
    return new Refusal(refused);
  }
  return new JobWatcher(context, watch_hub_, watch, *caller);
}

grpc::ServerUnaryReactor* TrackerService::CancelJob(grpc::CallbackServerContext* context,
                                                    const v1::CancelJobRequest* request,
                                                    v1::CancelJobResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "CancelJob");
  if (!caller.ok()) return Done(context, caller.status());
  if (absl::Status s = CheckField("job_id", request->job_id(), kMaxIdBytes); !s.ok()) {
    return Done(context, s);
  }
  if (caller->authenticated) {
    absl::StatusOr<v1::Job> current = queue_->GetJob(request->job_id());
    if (current.ok() && !caller->may_act_for(current->client_id())) {
      if (metrics_ != nullptr) metrics_->AuthRefused("CancelJob", "PERMISSION_DENIED");
      return Done(context, NoSuchJob(request->job_id()));
    }
  }
  absl::StatusOr<v1::Job> job = queue_->Cancel(request->job_id());
  if (job.ok()) *response->mutable_job() = std::move(*job);
  Poke();
  return Done(context, job.status());
}

namespace {

// A ListResults page holds at most this many bytes (fewer when the request's max_bytes says so),
// so it fits gRPC's default 4 MiB receive limit with room to spare. It always holds at least one
// job: the caps at the door keep one job near 1.1 MiB at most.
constexpr int64_t kMaxResultsPageBytes = int64_t{3} << 20;
// Jobs read from the store at a time while a page fills (bounds what one call holds in memory).
constexpr int kResultsReadChunk = 32;

// The bytes a message of `size` bytes takes as an element of a repeated field numbered 1..15 of
// its parent: tag, length (a varint), payload.
int64_t ElementBytes(size_t size) {
  int64_t n = 1 + static_cast<int64_t>(size);
  do {
    ++n;
    size >>= 7;
  } while (size != 0);
  return n;
}

// Fills one ListResults page with filter's jobs from filter.after_seq on: at most filter.limit
// of them and, after the first, at most max_bytes of response in all. Sets next_page_token when
// more may follow (the page is full by count or by bytes).
absl::Status FillResultsPage(JobQueue* queue, JobFilter filter, int64_t max_bytes,
                             v1::ListResultsResponse* response) {
  constexpr int64_t kTokenBytes = 32;  // next_page_token: tag, length, at most 20 digits
  int64_t used = kTokenBytes;
  int left = filter.limit;
  int64_t last_seq = filter.after_seq;
  bool full = false;
  while (left > 0 && !full) {
    JobFilter chunk = filter;
    chunk.after_seq = last_seq;
    chunk.limit = left < kResultsReadChunk ? left : kResultsReadChunk;
    absl::StatusOr<std::vector<StoredJob>> jobs = queue->List(chunk);
    if (!jobs.ok()) return jobs.status();
    for (StoredJob& job : *jobs) {
      const int64_t bytes = ElementBytes(job.job.ByteSizeLong());
      if (response->jobs_size() > 0 && used + bytes > max_bytes) {
        full = true;
        break;
      }
      *response->add_jobs() = std::move(job.job);
      used += bytes;
      last_seq = job.seq;
      --left;
    }
    if (static_cast<int>(jobs->size()) < chunk.limit) break;  // the last of them
  }
  if (full || left == 0) response->set_next_page_token(absl::StrCat(last_seq));
  return absl::OkStatus();
}

}  // namespace

grpc::ServerUnaryReactor* TrackerService::ListResults(grpc::CallbackServerContext* context,
                                                      const v1::ListResultsRequest* request,
                                                      v1::ListResultsResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "ListResults");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s :
       {CheckField("client_id", request->client_id(), kMaxIdBytes, false),
        CheckField("board_kind", request->board_kind(), catalog::kMaxBoardKindBytes, false),
        CheckField("op", request->op(), catalog::kMaxOpNameBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  // A user lists its own jobs (an empty client_id means: mine).
  if (caller->authenticated && caller->identity.role != Role::kAdmin &&
      !request->client_id().empty() && request->client_id() != caller->identity.name) {
    if (metrics_ != nullptr) metrics_->AuthRefused("ListResults", "PERMISSION_DENIED");
    return Done(context, absl::PermissionDeniedError(
                             absl::StrCat("client_id: you are ", caller->identity.name,
                                          "; you may list only your own jobs")));
  }
  JobFilter filter;
  filter.client_id = caller->authenticated && caller->identity.role != Role::kAdmin
                         ? caller->identity.name
                         : request->client_id();
  filter.board_kind = request->board_kind();
  filter.op = request->op();
  filter.state = request->state();
  if (request->limit() < 0 || request->limit() > 10000) {
    return Done(context, absl::InvalidArgumentError("limit: must be in 0..10000"));
  }
  filter.limit = request->limit() == 0 ? 1000 : request->limit();
  if (!request->page_token().empty() &&
      !absl::SimpleAtoi(request->page_token(), &filter.after_seq)) {
    return Done(context, absl::InvalidArgumentError("page_token: not a token from this tracker"));
  }
  if (request->max_bytes() < 0) {
    return Done(context, absl::InvalidArgumentError("max_bytes: must be 0 (3 MiB) or more"));
  }
  const int64_t max_bytes = request->max_bytes() == 0 || request->max_bytes() > kMaxResultsPageBytes
                                ? kMaxResultsPageBytes
                                : request->max_bytes();
  return Done(context, FillResultsPage(queue_, filter, max_bytes, response));
}

grpc::ServerUnaryReactor* TrackerService::QueueSummary(grpc::CallbackServerContext* context,
                                                       const v1::QueueSummaryRequest*,
                                                       v1::QueueSummaryResponse* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "QueueSummary"); !c.ok()) {
    return Done(context, c.status());
  }
  for (v1::KindSummary& kind : queue_->Summary()) *response->add_kinds() = std::move(kind);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::ListBoards(grpc::CallbackServerContext* context,
                                                     const v1::ListBoardsRequest* request,
                                                     v1::ListBoardsResponse* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "ListBoards"); !c.ok()) {
    return Done(context, c.status());
  }
  if (absl::Status s =
          CheckField("board_kind", request->board_kind(), catalog::kMaxBoardKindBytes, false);
      !s.ok()) {
    return Done(context, s);
  }
  for (v1::Board& board : queue_->Boards(request->board_kind())) {
    *response->add_boards() = std::move(board);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::WhoAmI(grpc::CallbackServerContext* context,
                                                 const v1::WhoAmIRequest* request,
                                                 v1::WhoAmIResponse* response) {
  absl::StatusOr<Caller> caller =
      Authorize(*context, {Role::kUser, Role::kAdmin, Role::kAgent}, "WhoAmI");
  if (!caller.ok()) return Done(context, caller.status());
  if (!caller->authenticated) {
    if (absl::Status s = CheckField("client_id", request->client_id(), kMaxIdBytes, false);
        !s.ok()) {
      return Done(context, s);
    }
    response->set_client_id(request->client_id());
    response->set_role(RoleName(Role::kAdmin));
    response->set_how("insecure");
    return Done(context, absl::OkStatus());
  }
  const Identity& id = caller->identity;
  response->set_client_id(id.name);
  response->set_role(RoleName(id.role));
  response->set_how(id.how);
  if (id.expires != absl::InfiniteFuture()) {
    *response->mutable_expires_at() = base::ToProto(id.expires);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::AddOperator(grpc::CallbackServerContext* context,
                                                      const v1::AddOperatorRequest* request,
                                                      v1::AddOperatorResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "AddOperator");
  if (!caller.ok()) return Done(context, caller.status());
  absl::StatusOr<OperatorCatalog::Added> added =
      queue_->catalog()->Add(request->op(), CatalogCallerOf(*caller), absl::Now());
  if (added.ok()) {
    *response->mutable_op() = std::move(added->op);
    response->set_created(added->created);
    response->set_made_latest(added->made_latest);
  }
  return Done(context, added.status());
}

grpc::ServerUnaryReactor* TrackerService::RetireOperator(grpc::CallbackServerContext* context,
                                                         const v1::RetireOperatorRequest* request,
                                                         v1::RetireOperatorResponse* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, kUsers, "RetireOperator");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s :
       {CheckField("name", request->name(), catalog::kMaxOpNameBytes),
        CheckField("version", request->version(), catalog::kMaxVersionBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<OperatorCatalog::Retired> retired =
      queue_->catalog()->Retire(request->name(), request->version(), CatalogCallerOf(*caller));
  if (retired.ok()) {
    *response->mutable_op() = std::move(retired->op);
    if (retired->latest) *response->mutable_latest() = *std::move(retired->latest);
    response->set_already(retired->already);
  }
  return Done(context, retired.status());
}

grpc::ServerUnaryReactor* TrackerService::ListOperators(grpc::CallbackServerContext* context,
                                                        const v1::ListOperatorsRequest* request,
                                                        v1::ListOperatorsResponse* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "ListOperators"); !c.ok()) {
    return Done(context, c.status());
  }
  if (absl::Status s = CheckField("name", request->name(), catalog::kMaxOpNameBytes, false);
      !s.ok()) {
    return Done(context, s);
  }
  for (v1::Operator& op : queue_->catalog()->List(request->name(), request->all_versions())) {
    *response->add_ops() = std::move(op);
  }
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* TrackerService::GetOperator(grpc::CallbackServerContext* context,
                                                      const v1::GetOperatorRequest* request,
                                                      v1::Operator* response) {
  if (absl::StatusOr<Caller> c = Authorize(*context, kUsers, "GetOperator"); !c.ok()) {
    return Done(context, c.status());
  }
  for (absl::Status s :
       {CheckField("name", request->name(), catalog::kMaxOpNameBytes),
        CheckField("version", request->version(), catalog::kMaxVersionBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Operator> op = queue_->catalog()->Get(request->name(), request->version());
  if (op.ok()) *response = *std::move(op);
  return Done(context, op.status());
}

grpc::ServerUnaryReactor* TrackerService::SetOperatorOwner(
    grpc::CallbackServerContext* context, const v1::SetOperatorOwnerRequest* request,
    v1::Operator* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAdmin}, "SetOperatorOwner");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s : {CheckField("name", request->name(), catalog::kMaxOpNameBytes),
                         CheckField("owner", request->owner(), kMaxIdBytes)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Operator> op = queue_->catalog()->SetOwner(request->name(), request->owner());
  if (op.ok()) *response = *std::move(op);
  return Done(context, op.status());
}

grpc::ServerUnaryReactor* TrackerService::MoveBoard(grpc::CallbackServerContext* context,
                                                    const v1::MoveBoardRequest* request,
                                                    v1::Board* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAdmin}, "MoveBoard");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s : {CheckField("board_id", request->board_id(), catalog::kMaxBoardIdBytes),
                         CheckField("agent_id", request->agent_id(), kMaxIdBytes)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Board> board = queue_->MoveBoard(request->board_id(), request->agent_id());
  if (board.ok()) *response = *std::move(board);
  return Done(context, board.status());
}

grpc::ServerUnaryReactor* TrackerService::SetBoardQuarantine(
    grpc::CallbackServerContext* context, const v1::SetBoardQuarantineRequest* request,
    v1::Board* response) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAdmin}, "SetBoardQuarantine");
  if (!caller.ok()) return Done(context, caller.status());
  for (absl::Status s :
       {CheckField("board_id", request->board_id(), catalog::kMaxBoardIdBytes),
        CheckField("reason", request->reason(), kMaxQuarantineReasonBytes, false)}) {
    if (!s.ok()) return Done(context, s);
  }
  absl::StatusOr<v1::Board> board =
      queue_->SetQuarantine(request->board_id(), request->quarantine(), request->reason());
  if (board.ok()) *response = *std::move(board);
  Poke();
  return Done(context, board.status());
}

grpc::ServerBidiReactor<v1::AgentMessage, v1::TrackerMessage>* TrackerService::Connect(
    grpc::CallbackServerContext* context) {
  absl::StatusOr<Caller> caller = Authorize(*context, {Role::kAgent}, "Connect");
  auto* stream = new AgentStream(this, caller.ok() ? *caller : Caller());
  if (!caller.ok()) stream->Refuse(caller.status());
  return stream;
}

}  // namespace benchfarm::tracker
