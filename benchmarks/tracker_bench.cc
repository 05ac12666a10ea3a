// tracker_bench: the tracker daemon's figures on this machine, driven over gRPC like production.
// Starts //tracker:tracker as a child process (tests/tracker_process.h; a fresh database per
// scenario) and prints a table:
//   - submission throughput (trials/s) with SubmitTrials batches of 100 and 1,000, and the
//     tracker's CPU per trial submitted;
//   - dispatch throughput (trials/s through offer -> result -> ack) with 100 and 1,000 boards in
//     named topologies: one connection per agent (as a farm connects: each agent host dials the
//     tracker) with 1, 4 and 16 boards per agent, and, kept and labelled as such, 50 agents
//     multiplexed on one connection (not how a farm connects; the bench's shape before issue 39),
//     and 100 and 1,000 boards again with lean agents (--lean-agents, below);
//     the tracker's CPU per dispatch without and with the submissions' share (the tracker's and
//     the submitting client's CPU over SubmitTrials, per trial); and the dispatch latency
//     p50/p99: from SubmitTrials returning to the offer arriving at an agent, measured one trial
//     at a time with every board idle.
//
//   - with --flood instead: a flood beside a baseline in the same run — 500 WatchJobs streams of
//     every job (one in five reads, the rest never do), 50,000 jobs pinned to a registered
//     board that is offline, and a dashboard listing results by an op no job has (each call a
//     walk of the whole jobs table) in a loop while trials run — and what a client sees without
//     and with it: the latency of a 1,000-trial SubmitTrials, trials/s through one board,
//     QueueSummary's latency, the latency of that listing, the tracker's RSS before the flood,
//     with it and after the watchers end, and how many never-reading streams the tracker cut off
//     (RESOURCE_EXHAUSTED).
//
//   - with --vs-tvm=DIR instead: benchfarm's tracker (its agents on gRPC's client, and lean)
//     beside Apache TVM v0.18's RPC tracker (DIR: the peer outside the project,
//     ../shared/peers/tvm-tracker: run_tvm_tracker.py and the C load generator tvmgen.c,
//     built here with gcc into a temporary directory) in one run, in
//     alternating repetitions, one connection per simulated board on both sides, with 100 and
//     1,000 boards: TVM's tracker with TCP_NODELAY and as shipped. Prints dispatches (TVM: matches)
//     per second, p99 and CPU per dispatch of each tracker process (/proc/PID/stat), the load
//     generators' CPU apart, and the machine's load at each start. Without DIR's files or Debian's
//     python3-tornado, it says so and runs benchfarm's rows alone.
//
//   tracker_bench [--quick] [--flood | --restart | --vs-tvm=DIR] [--tracker PATH]
//                 [--only=STORE:AGENTS:QUEUED[:BOARDS[:CLIENTS]]
//                  [--agents-per-connection=N | --lean-agents]]
//                 [--only=submit:BATCH] [--drain=DISPATCHES] [--repeat=N] [--unbatched-acks]
//                 [--unbatched-offers] [--submitting=N[:MS]]
//
// The tracker is found with --tracker, else in the runfiles ($RUNFILES_DIR, $TEST_SRCDIR or
// argv[0].runfiles). --quick uses tiny sizes (the smoke test). --only runs one dispatch row
// (e.g. disk:1000:1000), one connection per agent unless --agents-per-connection=N puts N agents'
// streams on each connection (50: the multiplexed rows), or one submission row (e.g. submit:100),
// and --drain sets the dispatch row's dispatches: for profiling and A/B runs, with --tracker
// naming a wrapper script (perf record, valgrind --tool=callgrind). --repeat=N: rounds over the
// dispatch rows (with --vs-tvm: repetitions). The simulated agents take acknowledgements with
// their next offer (Register.batched_acks, as benchfarm's agent does); --unbatched-acks has them
// sent alone, for A/B runs. They take the offers queued for them together (Register.batched_offers,
// as benchfarm's agent does) and answer a message's offers in one message of results
// (AgentMessage.results); --unbatched-offers has one offer and one result per message.
// --lean-agents: the --only row's agents on WireAgents (wire_agents.h: HTTP/2 framed by hand, one
// thread, as lean as TVM's tvmgen) rather than gRPC's client; the table has such rows too.
// --submitting=N[:MS]: while a dispatch row's latency samples run, another client submits batches
// of N trials in a loop, MS milliseconds apart (of a kind whose one board holds its offer), so the
// p99 offer shows what a tuner's submissions cost the dispatches meanwhile.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "benchmarks/sim_board.h"
#include "benchmarks/wire_agents.h"
#include "grpcpp/grpcpp.h"
#include "process/run_command.h"
#include "process/subprocess.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tests/postgres_server.h"
#include "tests/tracker_process.h"

namespace benchfarm {
namespace {

bool g_tracker_hung = false;  // set when a tracker did not stop cleanly on SIGTERM
// The simulated agents register with batched_acks, as benchfarm's agent does (--unbatched-acks:
// acknowledgements as messages of their own, for A/B runs).
bool g_batched_acks = true;
// And with batched offers and results (Register.batched_offers, AgentMessage.results): an agent
// of many boards takes a message's offers together and answers them in one message
// (--unbatched-offers: one offer and one result per message, for A/B runs).
bool g_batched_offers = true;
// --submitting=N[:MS]: while the latency samples run, another client submits batches of N trials
// in a loop, MS milliseconds apart (of a kind whose one board holds its offer: they queue, checked
// and stored like any).
int g_submitting = 0;
int g_submitting_ms = 0;

using bench::Board;
using bench::Steady;

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

// The tracker of one scenario, stopped when the scenario ends. A tracker that does not exit
// cleanly within 30 s of SIGTERM (systemd's TimeoutStopSec) is a bug (it once hung in
// grpc::Server::Shutdown on an unfinished agent stream): it is killed and the run fails.
class ScenarioTracker {
 public:
  explicit ScenarioTracker(const std::string& binary) : process_(binary) {}
  ~ScenarioTracker() {
    const absl::Time asked = absl::Now();
    absl::StatusOr<base::ProcessExit> stopped = process_.Stop(absl::Seconds(30));
    if (absl::IsFailedPrecondition(stopped.status())) return;  // it never started
    if (absl::Now() - asked > absl::Seconds(1)) {
      std::fprintf(stderr, "tracker_bench: the tracker took %s to stop\n",
                   absl::FormatDuration(absl::Now() - asked).c_str());
    }
    if (stopped.ok() && stopped->exited() && stopped->exit_code == 0) return;
    std::fprintf(stderr, "tracker_bench: the tracker did not stop cleanly on SIGTERM: %s\n",
                 stopped.ok() ? stopped->ToString().c_str()
                              : std::string(stopped.status().message()).c_str());
    g_tracker_hung = true;
  }

  pid_t pid() const { return process_.pid(); }

  // Starts it on a fresh database (or, `fresh` false, on what an earlier tracker left there);
  // returns HOST:PORT, or "" after saying why not.
  std::string Start(const std::string& database, bool fresh = true) {
    if (fresh && database.find("://") == std::string::npos) unlink(database.c_str());  // not a URI
    absl::StatusOr<std::string> address =
        process_.Start({"--database=" + database, "--listen=127.0.0.1:0", "--metrics=off",
                        "--log_level=warn", "--insecure"});
    if (!address.ok()) {
      std::fprintf(stderr, "tracker_bench: %s\n", std::string(address.status().message()).c_str());
      return "";
    }
    return *address;
  }

 private:
  testing::TrackerProcess process_;
};

v1::Trial MakeTrial(uint64_t seed, const std::string& kind = "host") {
  v1::Trial t;
  t.set_board_kind(kind);
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) {  // 16x16 matmul
    t.add_args()->add_shape(16);
    t.mutable_args(i)->add_shape(16);
  }
  t.set_seed(seed);
  return t;
}

// One simulated agent: one stream, `boards` boards; answers every offer at once (or, paused,
// holds it until resumed). On gRPC's callback API: no thread of its own, so 10,000 of them cost
// the load generator little.
class SimAgent final : public grpc::ClientBidiReactor<v1::AgentMessage, v1::TrackerMessage> {
 public:
  SimAgent(std::shared_ptr<grpc::Channel> channel, std::string id, Board* board, int boards = 1,
           std::string kind = "host")
      : stub_(v1::TrackerAgent::NewStub(channel)),
        id_(std::move(id)),
        board_(board),
        boards_(boards),
        kind_(std::move(kind)) {}
  ~SimAgent() override { Stop(); }

  // Connects and registers. `held`: offers an earlier connection of this agent took and did
  // not answer (a tracker restart came between): it registers holding them, as benchfarm's
  // agent does, and then sends their results.
  void Start(const std::vector<v1::JobOffer>& held = {}) {
    context_.set_deadline(In(absl::Minutes(30)));
    stub_->async()->Connect(&context_, this);
    v1::AgentMessage hello;
    hello.mutable_register_()->set_agent_id(id_);
    hello.mutable_register_()->set_batched_acks(g_batched_acks);
    hello.mutable_register_()->set_batched_offers(g_batched_offers);
    for (int b = 0; b < boards_; ++b) {
      v1::BoardRegistration* r = hello.mutable_register_()->add_boards();
      r->set_board_id(bench::BoardId(id_, b));
      r->set_kind(kind_);
    }
    for (const v1::JobOffer& offer : held) {
      v1::HeldAttempt* h = hello.mutable_register_()->add_held();
      h->set_job_id(offer.job_id());
      h->set_attempt(offer.attempt());
    }
    Send(std::move(hello));
    for (const v1::JobOffer& offer : held) Answer({&offer});
    StartRead(&in_);
    StartCall();
    started_ = true;
  }
  void Stop() {
    if (!started_) return;
    context_.TryCancel();
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    started_ = false;
  }
  // How many of its boards have been offered work.
  int BoardsOffered() {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(offered_boards_.size());
  }
  // The offers held while paused, unanswered (for a restart: they go to the next connection).
  std::vector<v1::JobOffer> TakeHeld() {
    absl::MutexLock lock(&mu_);
    return std::move(held_);
  }
  // Paused: offers are held, unanswered (their boards stay busy); Resume answers them.
  void Pause() {
    absl::MutexLock lock(&mu_);
    paused_ = true;
  }
  void Resume() {
    std::vector<v1::JobOffer> held;
    {
      absl::MutexLock lock(&mu_);
      paused_ = false;
      held.swap(held_);
    }
    std::vector<const v1::JobOffer*> offers;
    for (const v1::JobOffer& offer : held) offers.push_back(&offer);
    Answer(offers);
  }

  void OnReadDone(bool ok) override {
    if (!ok) return;
    if (in_.acks_size() > 0) {
      absl::MutexLock lock(&board_->mu);
      board_->acked += in_.acks_size();
    }
    if (in_.has_registered()) {
      {
        absl::MutexLock lock(&mu_);
        batched_results_ = g_batched_offers && in_.registered().batched_results();
      }
      absl::MutexLock lock(&board_->mu);
      ++board_->registered;
    } else if (in_.has_offer()) {
      const Steady::time_point now = Steady::now();
      std::vector<const v1::JobOffer*> offers = {&in_.offer()};
      for (const v1::JobOffer& offer : in_.offers()) offers.push_back(&offer);
      {
        absl::MutexLock lock(&board_->mu);
        if (board_->record_offers) {
          for (const v1::JobOffer* offer : offers) board_->offered[offer->job_id()] = now;
        }
      }
      bool hold;
      {
        absl::MutexLock lock(&mu_);
        hold = paused_;
        for (const v1::JobOffer* offer : offers) {
          if (hold) held_.push_back(*offer);
          if (static_cast<int>(offered_boards_.size()) < boards_) {
            offered_boards_.insert(offer->board_id());
          }
        }
      }
      if (!hold) Answer(offers);
    } else if (in_.has_result_ack()) {
      absl::MutexLock lock(&board_->mu);
      ++board_->acked;
    }
    StartRead(&in_);
  }
  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    if (ok) WriteNextLocked();
  }
  void OnDone(const grpc::Status&) override {
    absl::MutexLock lock(&mu_);
    done_ = true;
  }

 private:
  // Answers offers: one message of results where the tracker reads them batched, else one
  // message each.
  void Answer(const std::vector<const v1::JobOffer*>& offers) {
    bool batched;
    {
      absl::MutexLock lock(&mu_);
      batched = batched_results_;
    }
    v1::AgentMessage all;
    for (const v1::JobOffer* offer : offers) {
      v1::AgentMessage one;
      v1::JobResult* r = batched ? all.add_results() : one.mutable_result();
      r->set_job_id(offer->job_id());
      r->set_attempt(offer->attempt());
      r->mutable_result()->add_costs_s(1e-3);
      if (!batched) Send(std::move(one));
    }
    if (!all.results().empty()) Send(std::move(all));
  }
  void Send(v1::AgentMessage m) {
    absl::MutexLock lock(&mu_);
    outbox_.push_back(std::move(m));
    WriteNextLocked();
  }
  void WriteNextLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (writing_ || outbox_.empty()) return;
    current_ = std::move(outbox_.front());
    outbox_.pop_front();
    writing_ = true;
    StartWrite(&current_);
  }

  std::unique_ptr<v1::TrackerAgent::Stub> stub_;
  const std::string id_;
  Board* const board_;
  const int boards_;
  const std::string kind_;  // its boards'
  grpc::ClientContext context_;
  v1::TrackerMessage in_;
  bool started_ = false;
  absl::Mutex mu_;
  std::deque<v1::AgentMessage> outbox_ ABSL_GUARDED_BY(mu_);
  v1::AgentMessage current_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool paused_ ABSL_GUARDED_BY(mu_) = false;
  bool batched_results_ ABSL_GUARDED_BY(mu_) = false;  // the tracker reads AgentMessage.results
  std::vector<v1::JobOffer> held_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> offered_boards_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
};

// Streams on one channel (one TCP connection) in the multiplexed dispatch rows, for the --flood
// watchers and for the --restart agents. A farm's agents each dial the tracker: the dispatch rows
// that model one have one connection per agent.
constexpr int kMultiplexedStreams = 50;
// The most trials the bench gives one client: under the tracker's per-client cap
// (max_queued_per_client, 100,000 by default).
constexpr int kTrialsPerClient = 90000;

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int index) {
  grpc::ChannelArguments args;
  args.SetInt("benchfarm.bench_channel", index);  // distinct args: a connection of its own
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// Simulated agents "agent-0", "agent-1", ... of one tracker, `agents_per_connection` agents'
// streams to a connection (1: each agent on a connection of its own, as a farm's agents are).
class SimFarm {
 public:
  explicit SimFarm(int agents_per_connection) : agents_per_connection_(agents_per_connection) {}

  // The next agent, with `boards` boards, not started yet.
  SimAgent* Add(const std::string& address, Board* board, int boards = 1) {
    const int i = static_cast<int>(sims_.size());
    if (i % agents_per_connection_ == 0) channels_.push_back(NewChannel(address, i));
    sims_.push_back(
        std::make_unique<SimAgent>(channels_.back(), absl::StrCat("agent-", i), board, boards));
    return sims_.back().get();
  }
  std::vector<std::unique_ptr<SimAgent>>& agents() { return sims_; }

 private:
  const int agents_per_connection_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<SimAgent>> sims_;  // stopped before their connections go
};

bool Submit(v1::Tracker::Stub* stub, const std::string& client, const std::string& request_id,
            int n, uint64_t seed, std::vector<std::string>* ids, const std::string& kind = "host") {
  v1::SubmitTrialsRequest request;
  request.set_client_id(client);
  request.set_request_id(request_id);
  for (int i = 0; i < n; ++i) *request.add_trials() = MakeTrial(seed + i, kind);
  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(30)));
  v1::SubmitTrialsResponse response;
  grpc::Status s = stub->SubmitTrials(&context, request, &response);
  if (!s.ok()) {
    std::fprintf(stderr, "tracker_bench: SubmitTrials: %s\n", s.error_message().c_str());
    return false;
  }
  if (ids != nullptr) ids->assign(response.job_ids().begin(), response.job_ids().end());
  return true;
}

struct Row {
  std::string name;
  int64_t trials = 0;
  double seconds = 0;
  double tracker_cpu_s = -1;  // the tracker's CPU time over the submissions
  double p50_ms = -1, p99_ms = -1;
  int early = 0;  // offers that arrived before SubmitTrials returned (counted as 0 ms)
};

std::string Database(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name, ".db");
}

// Removes a SQLite database the bench made, with its WAL, shared memory and leadership files.
void RemoveDatabase(const std::string& database) {
  for (const char* suffix : {"", "-wal", "-shm", ".leader"}) {
    unlink(absl::StrCat(database, suffix).c_str());
  }
}

// CPU seconds (user + system) the process has used: `pid`'s from /proc, or -1.
double CpuSeconds(pid_t pid) {
  FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/stat").c_str(), "r");
  if (f == nullptr) return -1;
  char buffer[1024];
  const size_t n = std::fread(buffer, 1, sizeof(buffer) - 1, f);
  std::fclose(f);
  buffer[n] = '\0';
  // Fields after the command name (which may hold spaces): state is field 3, utime 14, stime 15.
  const char* p = std::strrchr(buffer, ')');
  if (p == nullptr) return -1;
  unsigned long long utime = 0, stime = 0;
  if (std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) !=
      2) {
    return -1;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Submission throughput: `threads` clients submit `total` trials in batches of `batch`. One
// agent registers the kind and leaves, so the trials stay queued (no dispatch work). The
// tracker's CPU per trial: validation, the queue, the store (not counted in the dispatch rows).
bool SubmitScenario(const std::string& tracker_path, const std::string& dir, int batch, int total,
                    Row* row) {
  ScenarioTracker tracker(tracker_path);
  std::string address = tracker.Start(Database(dir, absl::StrCat("submit", batch)));
  if (address.empty()) return false;
  Board board;
  {
    SimAgent agent(NewChannel(address, 0), "kind-registrar", &board);
    agent.Start();
    absl::MutexLock lock(&board.mu);
    auto done = [&board]()
                    ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) { return board.registered == 1; };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10))) return false;
    board.mu.Unlock();
    agent.Stop();
    board.mu.Lock();
  }
  constexpr int kThreads = 4;
  const int batches = std::max(1, total / batch);
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
  const double tracker_cpu0 = CpuSeconds(tracker.pid());
  Steady::time_point start = Steady::now();
  std::vector<std::thread> clients;
  for (int t = 0; t < kThreads; ++t) {
    clients.emplace_back([&, t] {
      auto stub = v1::Tracker::NewStub(NewChannel(address, 1000 + t));
      for (int b = next++; b < batches; b = next++) {
        if (!Submit(stub.get(), absl::StrCat("client-", t), absl::StrCat("r", b), batch,
                    static_cast<uint64_t>(b) * batch, nullptr)) {
          failed = true;
        }
      }
    });
  }
  for (std::thread& t : clients) t.join();
  row->name = absl::StrCat("submit, batches of ", batch);
  row->trials = static_cast<int64_t>(batches) * batch;
  row->seconds = std::chrono::duration<double>(Steady::now() - start).count();
  row->tracker_cpu_s = CpuSeconds(tracker.pid()) - tracker_cpu0;
  return !failed;
}

double SelfCpuSeconds() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double RssMiB(pid_t pid);

// One dispatch row's setup.
struct DispatchConfig {
  std::string store;  // where the database is: "disk", "tmpfs" or "pg"
  int agents = 0;
  int64_t backlog = 0;            // trials still queued when the run ends
  int boards = 1;                 // per agent
  int clients = 0;                // 0: as few as the per-client cap allows
  int agents_per_connection = 1;  // 1: each agent on its own connection, as a farm connects
  // The agents on WireAgents (HTTP/2 framed by hand, as lean as TVM's tvmgen) rather than on
  // gRPC's client (SimAgent, as benchfarm's agent talks); one connection per agent only.
  bool lean = false;
};

// The row's topology, as the table names it.
std::string Topology(const DispatchConfig& c) {
  const std::string boards = absl::StrCat(c.boards, c.boards == 1 ? " board" : " boards");
  if (c.agents_per_connection == 1) {
    return absl::StrCat("one connection per agent, ", boards, " per agent",
                        c.lean ? ", lean agents (HTTP/2 framed by hand, as lean as tvmgen)" : "");
  }
  return absl::StrCat("multiplexed: ", c.agents_per_connection,
                      " agents per connection (not how a farm connects)",
                      c.boards == 1 ? "" : absl::StrCat(", ", boards, " per agent"));
}

struct DispatchRow {
  DispatchConfig config;  // its clients as run
  int64_t trials = 0;     // dispatched in the run
  double seconds = 0;
  double tracker_cpu_s = -1, bench_cpu_s = -1;  // over the dispatches
  // Over the SubmitTrials calls that queued the run's trials: the tracker's CPU and this
  // process's (the submitting client; the paused agents only take their boards' first offers).
  int64_t submitted = 0;
  double submit_tracker_cpu_s = -1, submit_client_cpu_s = -1;
  double p50_ms = -1, p99_ms = -1;
  int early = 0;  // offers that arrived before SubmitTrials returned (counted as 0 ms)
  int64_t background_batches = 0;  // --submitting: batches submitted meanwhile
  double kib_per_agent = -1, kib_per_queued = -1;
};

// The tracker's CPU time per dispatch in microseconds (-1: nothing dispatched).
double CpuPerDispatchUs(const DispatchRow& row) {
  return row.trials > 0 ? row.tracker_cpu_s * 1e6 / static_cast<double>(row.trials) : -1;
}

// The submissions' CPU per trial in microseconds: the tracker's, and the submitting client's.
double SubmitTrackerUs(const DispatchRow& row) {
  return row.submitted > 0 ? row.submit_tracker_cpu_s * 1e6 / static_cast<double>(row.submitted)
                           : 0;
}
double SubmitClientUs(const DispatchRow& row) {
  return row.submitted > 0 ? row.submit_client_cpu_s * 1e6 / static_cast<double>(row.submitted) : 0;
}

// CPU per dispatch with the submissions' share: the tracker's per dispatch, plus the tracker's
// and the submitting client's per trial submitted (each dispatch is one trial submitted).
double CpuPerDispatchWithSubmitsUs(const DispatchRow& row) {
  return CpuPerDispatchUs(row) + SubmitTrackerUs(row) + SubmitClientUs(row);
}

// Dispatch on a fresh tracker with its database at `database`, set up as `c` says: `c.agents`
// simulated agents of `c.boards` boards each (one stream per agent, whatever its boards;
// `c.agents_per_connection` streams to a connection). Latency: `samples` single trials, one at a
// time, boards idle, each from SubmitTrials returning to its offer arriving. Throughput: with the
// agents not answering yet, one trial per board (its offer) and `drain + backlog` more are
// submitted (the submissions' CPU, the tracker's and this process's, is taken apart); then the
// agents answer, and the run lasts until `drain` results are acknowledged (offer -> result stored
// -> ack). Every board is busy throughout and `backlog` trials are still queued at the end (the
// trials held as offers are counted: without them, with more boards than `backlog`, the queue ran
// dry before the end and the last dispatches had no next trial to offer). The trials are
// `c.clients` clients' (at least as many as the per-client cap needs; 0: that many), in shares
// that differ by at most one trial, each submitted in turn, so each client's trials are
// consecutive in the database: the tracker's fair share takes turns between clients, and each
// client is one place in the jobs table and its indexes that dispatches update. The tracker's and
// this process's CPU time over the run, and the tracker's memory per agent and per queued trial
// (RSS growth) come with it.
bool DispatchScenario(const std::string& tracker_path, const std::string& database,
                      const DispatchConfig& c, int64_t drain, int samples, DispatchRow* row) {
  row->config = c;
  const int agents = c.agents, boards = c.boards;
  const int64_t backlog = c.backlog;
  const int64_t farm = static_cast<int64_t>(agents) * boards;  // boards in all
  const int64_t total = farm + drain + backlog;
  const int clients = static_cast<int>(
      std::max<int64_t>(c.clients, (total + kTrialsPerClient - 1) / kTrialsPerClient));
  if (clients > total) {
    std::fprintf(stderr, "tracker_bench: %d clients for %lld trials: some would have none\n",
                 clients, static_cast<long long>(total));
    return false;
  }
  row->config.clients = clients;
  // A connection is a descriptor here and one in the tracker (which inherits this limit).
  const int64_t connections = (agents + c.agents_per_connection - 1) / c.agents_per_connection;
  if (struct rlimit limit; getrlimit(RLIMIT_NOFILE, &limit) == 0 &&
                           static_cast<int64_t>(limit.rlim_cur) < connections + 100) {
    std::fprintf(stderr,
                 "tracker_bench: %lld connections want more open files than RLIMIT_NOFILE's %llu "
                 "(raise the hard limit: ulimit -Hn)\n",
                 static_cast<long long>(connections),
                 static_cast<unsigned long long>(limit.rlim_cur));
    return false;
  }
  ScenarioTracker tracker(tracker_path);
  std::string address = tracker.Start(database);
  if (address.empty()) return false;
  const pid_t pid = tracker.pid();
  absl::SleepFor(absl::Milliseconds(200));
  const double rss_empty = RssMiB(pid);
  Board board;
  // The agents: on gRPC's client (SimAgent), or with c.lean on WireAgents (one thread).
  SimFarm sim_farm(c.agents_per_connection);
  std::vector<std::unique_ptr<SimAgent>>& sims = sim_farm.agents();
  bench::WireAgents lean(&board, {g_batched_acks, g_batched_offers});
  bool ok = true;
  if (c.lean) {
    if (absl::Status s = lean.Start(address, agents, boards); !s.ok()) {
      std::fprintf(stderr, "tracker_bench: %s\n", std::string(s.message()).c_str());
      return false;
    }
  } else {
    for (int i = 0; i < agents; ++i) sim_farm.Add(address, &board, boards)->Start();
  }
  // An agent's connection that ends (WireAgents) ends every wait: the run has failed.
  auto failed = [&board]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
    if (board.failure.empty()) return false;
    std::fprintf(stderr, "tracker_bench: a simulated agent failed: %s\n", board.failure.c_str());
    return true;
  };
  {
    absl::MutexLock lock(&board.mu);
    auto all = [&board, agents]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.registered == agents || !board.failure.empty();
    };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(120)) || failed()) {
      std::fprintf(stderr, "tracker_bench: only %d of %d agents registered\n", board.registered,
                   agents);
      ok = false;
    }
  }
  absl::SleepFor(absl::Milliseconds(200));
  row->kib_per_agent = (RssMiB(pid) - rss_empty) * 1024 / agents;
  auto stub = v1::Tracker::NewStub(NewChannel(address, 1000000));

  // --submitting: a board of its own kind, holding its first offer, and a client submitting to it.
  std::unique_ptr<SimAgent> parked;
  std::atomic<bool> stop_background{false};
  std::atomic<int64_t> background_batches{0};
  std::thread background;
  if (ok && g_submitting > 0) {
    parked =
        std::make_unique<SimAgent>(NewChannel(address, 2000000), "parked", &board, 1, "parked");
    parked->Pause();
    parked->Start();
    absl::MutexLock lock(&board.mu);
    auto all = [&board, agents]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) { return board.registered > agents; };
    ok = board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30));
    if (!ok) std::fprintf(stderr, "tracker_bench: the parked agent did not register\n");
  }
  if (ok && g_submitting > 0) {
    background = std::thread([&, stub = v1::Tracker::NewStub(NewChannel(address, 2000001))] {
      const int per_client = std::max(1, kTrialsPerClient / g_submitting);
      for (int64_t r = 0; !stop_background.load(); ++r) {
        if (!Submit(stub.get(), absl::StrCat("background-", r / per_client), absl::StrCat("b", r),
                    g_submitting, 2000000000 + r * g_submitting, nullptr, "parked")) {
          return;
        }
        background_batches = r + 1;
        if (g_submitting_ms > 0) absl::SleepFor(absl::Milliseconds(g_submitting_ms));
      }
    });
  }
  // Latency, boards idle.
  std::vector<double> latencies_ms;
  for (int i = 0; ok && i < samples; ++i) {
    std::vector<std::string> ids;
    ok = Submit(stub.get(), "latency", absl::StrCat("l", i), 1, 1000000 + i, &ids);
    Steady::time_point returned = Steady::now();
    if (!ok || ids.size() != 1) break;
    absl::MutexLock lock(&board.mu);
    const std::string id = ids[0];
    auto arrived = [&board, &id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.offered.count(id) > 0 || !board.failure.empty();
    };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(10)) || failed()) {
      std::fprintf(stderr, "tracker_bench: no offer for %s within 10 s\n", id.c_str());
      ok = false;
      break;
    }
    double ms = std::chrono::duration<double, std::milli>(board.offered[id] - returned).count();
    if (ms < 0) {
      ++row->early;
      ms = 0;
    }
    latencies_ms.push_back(ms);
  }
  stop_background = true;
  if (background.joinable()) background.join();
  row->background_batches = background_batches;
  if (!latencies_ms.empty()) {
    std::sort(latencies_ms.begin(), latencies_ms.end());
    auto at = [&](double q) {
      size_t i = static_cast<size_t>(q * static_cast<double>(latencies_ms.size() - 1) + 0.5);
      return latencies_ms[std::min(i, latencies_ms.size() - 1)];
    };
    row->p50_ms = at(0.50);
    row->p99_ms = at(0.99);
  }
  int64_t acked_before = 0;
  {
    absl::MutexLock lock(&board.mu);
    const int64_t want = static_cast<int64_t>(latencies_ms.size());
    auto all = [&board, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.acked >= want || !board.failure.empty();
    };
    if (ok && (!board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(30)) || failed())) {
      ok = false;
    }
    board.record_offers = false;
    board.offered.clear();
    acked_before = board.acked;
  }

  // The backlog: every board holds an offer it does not answer yet; the rest queue.
  for (auto& sim : sims) sim->Pause();
  lean.Pause();
  const double rss_before_backlog = RssMiB(pid);
  const double submit_tracker_cpu0 = CpuSeconds(pid), submit_client_cpu0 = SelfCpuSeconds();
  int64_t submitted = 0;  // client k's trials end at (k + 1) * total / clients
  for (int64_t k = 0, r = 0; ok && k < clients; ++k) {
    for (const int64_t end = (k + 1) * total / clients; ok && submitted < end; ++r) {
      const int n = static_cast<int>(std::min<int64_t>(10000, end - submitted));
      ok = Submit(stub.get(), absl::StrCat("throughput-", k), absl::StrCat("t", r), n, submitted,
                  nullptr);
      submitted += n;
    }
  }
  row->submitted = submitted;
  row->submit_tracker_cpu_s = CpuSeconds(pid) - submit_tracker_cpu0;
  row->submit_client_cpu_s = SelfCpuSeconds() - submit_client_cpu0;
  absl::SleepFor(absl::Milliseconds(200));
  row->kib_per_queued = (RssMiB(pid) - rss_before_backlog) * 1024 / static_cast<double>(total);

  const double tracker_cpu0 = CpuSeconds(pid), bench_cpu0 = SelfCpuSeconds();
  const Steady::time_point start = Steady::now();
  for (auto& sim : sims) sim->Resume();
  lean.Resume();
  if (ok) {
    absl::MutexLock lock(&board.mu);
    const int64_t want = acked_before + drain;
    auto all = [&board, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.acked >= want || !board.failure.empty();
    };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Minutes(10)) || failed()) {
      std::fprintf(stderr, "tracker_bench: %lld of %lld results after 10 min\n",
                   static_cast<long long>(board.acked - acked_before),
                   static_cast<long long>(drain));
      ok = false;
    }
  }
  row->seconds = std::chrono::duration<double>(Steady::now() - start).count();
  row->tracker_cpu_s = CpuSeconds(pid) - tracker_cpu0;
  row->bench_cpu_s = SelfCpuSeconds() - bench_cpu0;
  row->trials = drain;
  // Every board of every agent was offered work.
  if (absl::MutexLock lock(&board.mu); ok && failed()) ok = false;  // a connection lost at the end
  int64_t offered = lean.BoardsOffered();
  for (auto& sim : sims) offered += sim->BoardsOffered();
  if (ok && offered != farm) {
    std::fprintf(stderr, "tracker_bench: %lld of %lld boards were offered work\n",
                 static_cast<long long>(offered), static_cast<long long>(farm));
    ok = false;
  }
  for (auto& sim : sims) sim->Stop();
  lean.Stop();
  if (parked != nullptr) parked->Stop();
  return ok;
}

// ---- --flood ------------------------------------------------------------------------------------

// The tracker's resident memory in MiB (VmRSS), or -1.
double RssMiB(pid_t pid) {
  FILE* f = std::fopen(absl::StrCat("/proc/", pid, "/status").c_str(), "r");
  if (f == nullptr) return -1;
  char line[256];
  double kib = -1;
  while (std::fgets(line, sizeof(line), f) != nullptr) {
    if (std::strncmp(line, "VmRSS:", 6) == 0) kib = std::strtod(line + 6, nullptr);
  }
  std::fclose(f);
  return kib < 0 ? -1 : kib / 1024;
}

// One WatchJobs stream of every job; a reading one counts its events on a thread of its own.
class BenchWatcher {
 public:
  BenchWatcher(v1::Tracker::Stub* stub, bool read) {
    context_.set_deadline(In(absl::Minutes(30)));
    reader_ = stub->WatchJobs(&context_, v1::WatchJobsRequest());
    if (read) {
      thread_ = std::thread([this] {
        v1::JobEvent event;
        while (reader_->Read(&event)) ++events_;
      });
    }
  }
  // Ends the stream; returns its status (a reading stream's as it ended by itself).
  grpc::Status Stop() {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
    return reader_->Finish();
  }
  // Starts reading what is left (a stream that never read) on a thread of its own.
  void StartDrain() {
    thread_ = std::thread([this] {
      v1::JobEvent event;
      while (reader_->Read(&event)) ++events_;
      ended_ = true;
    });
  }
  bool ended() const { return ended_; }

 private:
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader_;
  std::thread thread_;
  std::atomic<int64_t> events_{0};
  std::atomic<bool> ended_{false};
};

struct FloodFigures {
  double submit_s = -1;      // one SubmitTrials of `probe` trials, median of 3
  double trials_per_s = -1;  // the measured client's trials through one board
  double summary_ms = -1;    // one QueueSummary, median of 5
  double walk_ms = -1;       // one ListResults walking the jobs table, median of 5
  int walks = 0;             // the dashboard's walks while the trials ran (flood only)
  double rss_before_mib = -1, rss_peak_mib = -1, rss_after_mib = -1;
  int cut = 0;  // never-reading watchers ended with RESOURCE_EXHAUSTED
  int slow = 0;
};

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// One ListResults by an op no job has: the tracker's store walks its whole jobs table (no index
// serves an op alone) and answers an empty page. Its latency in ms, -1 if it failed.
double WalkJobsTable(v1::Tracker::Stub* stub) {
  grpc::ClientContext context;
  context.set_deadline(In(absl::Seconds(60)));
  v1::ListResultsRequest request;
  request.set_op("no-such-op");
  request.set_limit(1);
  v1::ListResultsResponse response;
  Steady::time_point t0 = Steady::now();
  if (!stub->ListResults(&context, request, &response).ok()) return -1;
  return std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
}

// A fresh tracker; with `flood`: `watchers` WatchJobs streams of every job (one in five reads,
// the rest never do) and `unrunnable` jobs pinned to a registered board that is offline. Then
// one agent with one board serves, and a client's `trials` trials go through it, submitted in
// batches of 100 — with `flood`, while a dashboard walks the jobs table (WalkJobsTable) in a
// loop on a connection of its own — with the submit latency of `probe` trials, QueueSummary's
// and a table walk's latency measured before; the tracker's RSS is read before the flood, at its
// peak and after the watchers end.
bool FloodScenario(const std::string& tracker_path, const std::string& dir, bool flood,
                   int watchers, int unrunnable, int trials, int probe, absl::Duration drain,
                   FloodFigures* out) {
  ScenarioTracker tracker(tracker_path);
  std::string address = tracker.Start(Database(dir, flood ? "flood" : "flood-baseline"));
  if (address.empty()) return false;
  const pid_t pid = tracker.pid();
  Board board;
  {
    // Board "off": registered, then its agent leaves (OFFLINE).
    SimAgent off(NewChannel(address, 0), "off", &board);
    off.Start();
    absl::MutexLock lock(&board.mu);
    auto registered = [&board]()
                          ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) { return board.registered == 1; };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&registered), absl::Seconds(10))) return false;
    board.mu.Unlock();
    off.Stop();
    board.mu.Lock();
  }
  auto stub = v1::Tracker::NewStub(NewChannel(address, 1));
  absl::SleepFor(absl::Milliseconds(200));
  out->rss_before_mib = RssMiB(pid);
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<v1::Tracker::Stub>> stubs;
  std::vector<std::unique_ptr<BenchWatcher>> readers, slow;
  if (flood) {
    for (int i = 0; i < watchers; ++i) {
      if (i % kMultiplexedStreams == 0) {
        channels.push_back(NewChannel(address, 200 + i));
        stubs.push_back(v1::Tracker::NewStub(channels.back()));
      }
      const bool read = i % 5 == 0;
      (read ? readers : slow).push_back(std::make_unique<BenchWatcher>(stubs.back().get(), read));
    }
    for (int submitted = 0, r = 0; submitted < unrunnable; ++r) {
      v1::SubmitTrialsRequest request;
      request.set_client_id("flood");
      request.set_request_id(absl::StrCat("flood", r));
      const int n = std::min(10000, unrunnable - submitted);
      for (int i = 0; i < n; ++i) {
        v1::Trial t = MakeTrial(static_cast<uint64_t>(submitted + i));
        t.set_board_id("off-board");
        *request.add_trials() = t;
      }
      grpc::ClientContext context;
      context.set_deadline(In(absl::Minutes(5)));
      v1::SubmitTrialsResponse response;
      grpc::Status s = stub->SubmitTrials(&context, request, &response);
      if (!s.ok()) {
        std::fprintf(stderr, "tracker_bench: flood SubmitTrials: %s\n", s.error_message().c_str());
        return false;
      }
      submitted += n;
    }
  }
  out->rss_peak_mib = RssMiB(pid);
  // QueueSummary latency.
  std::vector<double> summary_ms;
  for (int i = 0; i < 5; ++i) {
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(60)));
    v1::QueueSummaryResponse response;
    Steady::time_point t0 = Steady::now();
    if (!stub->QueueSummary(&context, v1::QueueSummaryRequest(), &response).ok()) return false;
    summary_ms.push_back(std::chrono::duration<double, std::milli>(Steady::now() - t0).count());
  }
  out->summary_ms = Median(summary_ms);
  std::vector<double> walk_ms;
  for (int i = 0; i < 5; ++i) {
    walk_ms.push_back(WalkJobsTable(stub.get()));
    if (walk_ms.back() < 0) return false;
  }
  out->walk_ms = Median(walk_ms);
  // Submit latency of `probe` trials (no board serves yet: they stay queued until it does).
  std::vector<double> submit_s;
  int measured = 0;
  for (int i = 0; i < 3; ++i) {
    Steady::time_point t0 = Steady::now();
    if (!Submit(stub.get(), "probe", absl::StrCat("p", i), probe, 5000000 + i * probe, nullptr)) {
      return false;
    }
    submit_s.push_back(std::chrono::duration<double>(Steady::now() - t0).count());
    measured += probe;
  }
  out->submit_s = Median(submit_s);
  // Throughput: one serving board runs the probes and then the client's trials.
  SimAgent serving(NewChannel(address, 2), "serving", &board);
  serving.Start();
  std::atomic<bool> dashboard_stop{false};
  std::atomic<int> walks{0}, failed_walks{0};
  std::thread dashboard;
  if (flood) {
    dashboard = std::thread([&, stub = v1::Tracker::NewStub(NewChannel(address, 3))] {
      while (!dashboard_stop) {
        if (WalkJobsTable(stub.get()) < 0) {
          ++failed_walks;
        } else {
          ++walks;
        }
      }
    });
  }
  Steady::time_point start = Steady::now();
  bool ok = true;
  for (int submitted = 0, r = 0; ok && submitted < trials; ++r) {
    const int n = std::min(100, trials - submitted);
    ok = Submit(stub.get(), "measured", absl::StrCat("m", r), n, 9000000 + submitted, nullptr);
    submitted += n;
  }
  if (ok) {
    absl::MutexLock lock(&board.mu);
    const int64_t want = trials + measured;
    auto all = [&board, want]()
                   ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) { return board.acked >= want; };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Minutes(10))) {
      std::fprintf(stderr, "tracker_bench: %lld of %lld results after 10 min\n",
                   static_cast<long long>(board.acked), static_cast<long long>(want));
      ok = false;
    }
  }
  // Includes the probes queued before the board served: the measured client's trials queue
  // behind them (fair share between "probe" and "measured").
  const double seconds = std::chrono::duration<double>(Steady::now() - start).count();
  out->trials_per_s = ok ? (trials + measured) / seconds : -1;
  dashboard_stop = true;
  if (dashboard.joinable()) dashboard.join();
  out->walks = walks;
  if (failed_walks > 0) {
    std::fprintf(stderr, "tracker_bench: %d of the dashboard's ListResults failed\n",
                 failed_walks.load());
    ok = false;
  }
  serving.Stop();
  // How the tracker ended the never-reading streams: each is read now; a stream the tracker
  // cut off ends by itself (its buffered events, then RESOURCE_EXHAUSTED); after `drain` the
  // rest (never cut: they did not fall behind enough) are cancelled.
  for (auto& w : slow) w->StartDrain();
  const absl::Time drained_by = absl::Now() + drain;
  while (absl::Now() < drained_by &&
         !std::all_of(slow.begin(), slow.end(), [](const auto& w) { return w->ended(); })) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  for (auto& w : slow) {
    grpc::Status s = w->Stop();
    ++out->slow;
    if (s.error_code() == grpc::RESOURCE_EXHAUSTED) ++out->cut;
  }
  for (auto& w : readers) (void)w->Stop();
  slow.clear();
  readers.clear();
  absl::SleepFor(absl::Seconds(1));
  out->rss_after_mib = RssMiB(pid);
  return ok;
}

// --flood: the baseline (no watchers, no unrunnable jobs) and the flood side by side.
int FloodMain(const std::string& tracker, const std::string& dir, bool quick) {
  const int watchers = quick ? 50 : 500;
  const int unrunnable = quick ? 2000 : 50000;
  const int trials = quick ? 100 : 1000;
  const int probe = quick ? 100 : 1000;
  FloodFigures base, flooded;
  const absl::Duration drain = quick ? absl::Seconds(2) : absl::Seconds(20);
  bool ok = FloodScenario(tracker, dir, false, watchers, unrunnable, trials, probe, drain, &base);
  std::fprintf(stderr, "tracker_bench: flood baseline: done\n");
  ok =
      FloodScenario(tracker, dir, true, watchers, unrunnable, trials, probe, drain, &flooded) && ok;
  std::fprintf(stderr, "tracker_bench: flood: done\n");
  std::printf("tracker_bench --flood: %u CPUs, tracker %s\n", std::thread::hardware_concurrency(),
              tracker.c_str());
  std::printf(
      "flood: %d WatchJobs streams of every job (1 in 5 reads, the rest never do), %d "
      "jobs pinned to an offline board, and a dashboard walking the jobs table in a loop\n",
      watchers, unrunnable);
  std::printf("%-10s %14s %10s %13s %11s %10s %24s %10s\n", "scenario", "submit (s)", "trials/s",
              "QueueSummary", "table walk", "dashboard", "tracker RSS (MiB)", "cut off");
  std::printf("%-10s %14s %10s %13s %11s %10s %24s %10s\n", "",
              absl::StrCat(probe, " trials").c_str(), "1 board", "", "", "walks",
              "before/flooded/after", "");
  for (const auto& [name, f] :
       {std::pair<const char*, const FloodFigures*>{"baseline", &base}, {"flood", &flooded}}) {
    std::printf(
        "%-10s %14.3f %10.0f %10.2f ms %8.1f ms %10d %24s %10s\n", name, f->submit_s,
        f->trials_per_s, f->summary_ms, f->walk_ms, f->walks,
        absl::StrFormat("%.0f/%.0f/%.0f", f->rss_before_mib, f->rss_peak_mib, f->rss_after_mib)
            .c_str(),
        f->slow == 0 ? "-" : absl::StrCat(f->cut, " of ", f->slow).c_str());
  }
  std::printf(
      "trials/s: the %d probe trials (queued while no board served) and %d more in batches of "
      "100, through one simulated board that answers at once; table walk: one ListResults by an "
      "op no job has (the store reads every job row), median of 5 before the trials; dashboard "
      "walks: such calls made one after another while the trials ran (flood only); cut off: "
      "never-reading streams ended with RESOURCE_EXHAUSTED.\n",
      3 * probe, trials);
  if (!ok || g_tracker_hung) {
    std::fprintf(stderr, "tracker_bench: FAILED (see above)\n");
    return 1;
  }
  return 0;
}

// ---- --restart ----------------------------------------------------------------------------------

struct RestartFigures {
  int agents = 0;
  double first_s = -1;        // first start: every agent registered
  double again_s = -1;        // restart: every agent registered again, holding its trial
  double results_s = -1;      // restart: every held trial's result acknowledged
  double tracker_cpu_s = -1;  // the restarted tracker's CPU time until then
};

// A tracker restarted under a farm at work (an upgrade, a crash, a standby taking over):
// `agents` simulated agents of one board each connect and register (the baseline: how long
// until all have), every board is offered one trial and holds it unanswered, the agents' streams
// end and the tracker stops (SIGTERM), and a new tracker starts on the same database. The agents
// reconnect holding their trials and send their results. Timed from starting the new tracker:
// every agent registered again, and every result acknowledged.
bool RestartScenario(const std::string& tracker_path, const std::string& database, int agents,
                     RestartFigures* f) {
  f->agents = agents;
  Board board;
  board.record_offers = false;
  auto await = [&board](int registered, int64_t acked, absl::Duration timeout) {
    absl::MutexLock lock(&board.mu);
    auto done = [&board, registered, acked]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.registered >= registered && board.acked >= acked;
    };
    if (board.mu.AwaitWithTimeout(absl::Condition(&done), timeout)) return true;
    std::fprintf(stderr,
                 "tracker_bench: restart: %d of %d agents registered, %lld of %lld "
                 "results acknowledged after %s\n",
                 board.registered, registered, static_cast<long long>(board.acked),
                 static_cast<long long>(acked), absl::FormatDuration(timeout).c_str());
    return false;
  };
  auto seconds_since = [](Steady::time_point t) {
    return std::chrono::duration<double>(Steady::now() - t).count();
  };
  std::vector<std::vector<v1::JobOffer>> held(agents);
  {
    ScenarioTracker tracker(tracker_path);
    const std::string address = tracker.Start(database);
    if (address.empty()) return false;
    SimFarm sim_farm(kMultiplexedStreams);
    std::vector<std::unique_ptr<SimAgent>>& sims = sim_farm.agents();
    const Steady::time_point start = Steady::now();
    for (int i = 0; i < agents; ++i) {
      SimAgent* sim = sim_farm.Add(address, &board);
      sim->Pause();
      sim->Start();
    }
    if (!await(agents, 0, absl::Seconds(120))) return false;
    f->first_s = seconds_since(start);
    auto stub = v1::Tracker::NewStub(NewChannel(address, 1000000));
    for (int submitted = 0; submitted < agents; submitted += 10000) {
      if (!Submit(stub.get(), "restart", absl::StrCat("r", submitted),
                  std::min(10000, agents - submitted), submitted, nullptr)) {
        return false;
      }
    }
    for (const absl::Time deadline = absl::Now() + absl::Seconds(60);;) {
      int offered = 0;
      for (auto& sim : sims) offered += sim->BoardsOffered();
      if (offered == agents) break;
      if (absl::Now() > deadline) {
        std::fprintf(stderr, "tracker_bench: restart: %d of %d boards were offered a trial\n",
                     offered, agents);
        return false;
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
    for (int i = 0; i < agents; ++i) held[i] = sims[i]->TakeHeld();
    for (auto& sim : sims) sim->Stop();
  }  // the tracker stops here (SIGTERM; a clean exit is checked)
  {
    absl::MutexLock lock(&board.mu);
    board.registered = 0;
    board.acked = 0;
  }
  ScenarioTracker tracker(tracker_path);
  const Steady::time_point start = Steady::now();
  const std::string address = tracker.Start(database, /*fresh=*/false);
  if (address.empty()) return false;
  SimFarm sim_farm(kMultiplexedStreams);
  std::vector<std::unique_ptr<SimAgent>>& sims = sim_farm.agents();
  for (int i = 0; i < agents; ++i) sim_farm.Add(address, &board)->Start(held[i]);
  bool ok = await(agents, 0, absl::Seconds(300));
  f->again_s = seconds_since(start);
  ok = ok && await(agents, agents, absl::Seconds(300));
  f->results_s = seconds_since(start);
  f->tracker_cpu_s = CpuSeconds(tracker.pid());
  // Each agent kept its trial: none was offered again (which a lost attempt would be).
  int offered = 0;
  for (auto& sim : sims) offered += sim->BoardsOffered();
  if (offered > 0) {
    std::fprintf(stderr, "tracker_bench: restart: %d trials were offered again\n", offered);
    ok = false;
  }
  for (auto& sim : sims) sim->Stop();
  return ok;
}

int RestartMain(const std::string& tracker, const std::string& dir, bool quick) {
  std::vector<int> sizes = quick ? std::vector<int>{20, 50} : std::vector<int>{1000, 10000};
  std::vector<RestartFigures> figures;
  bool ok = true;
  for (int agents : sizes) {
    RestartFigures f;
    const std::string database = Database(dir, absl::StrCat("restart", agents));
    if (!RestartScenario(tracker, database, agents, &f)) ok = false;
    RemoveDatabase(database);
    std::fprintf(stderr, "tracker_bench: restart, %d agents: done\n", agents);
    figures.push_back(f);
  }
  std::printf("tracker_bench --restart: %u CPUs, tracker %s\n", std::thread::hardware_concurrency(),
              tracker.c_str());
  std::printf("%-8s %14s %16s %16s %14s\n", "agents", "first start", "restart: all", "restart: all",
              "tracker CPU");
  std::printf("%-8s %14s %16s %16s %14s\n", "", "registered", "registered", "results acked",
              "restarted");
  for (const RestartFigures& f : figures) {
    std::printf("%-8d %12.2f s %14.2f s %14.2f s %12.2f s\n", f.agents, f.first_s, f.again_s,
                f.results_s, f.tracker_cpu_s);
  }
  std::printf(
      "Agents of one board each, every board running a trial when the tracker stops (SIGTERM); a "
      "new tracker starts on the\nsame database and the agents reconnect holding their trials, "
      "then send their results. first start: from the\nagents connecting to a fresh tracker until "
      "all are registered (the baseline); restart: from starting the new\ntracker (it recovers "
      "the running jobs) until all are registered again, and until every result is acknowledged;\n"
      "tracker CPU: the restarted tracker's, until then.\n");
  if (!ok || g_tracker_hung) {
    std::fprintf(stderr, "tracker_bench: FAILED (see above)\n");
    return 1;
  }
  return 0;
}

// Where the dispatch rows' databases go: the bench's directory ("disk"), the tmpfs /dev/shm
// ("tmpfs": what durability, an fsync per group commit, costs) and the bench's own PostgreSQL
// server ("pg": tests/postgres_server.h, initdb in /tmp, fsync on, loopback; one fresh database per
// run).
struct Stores {
  std::string disk_dir;
  std::string shm_dir;                          // "" without /dev/shm
  testing::PostgresServer* postgres = nullptr;  // none: no "pg" rows
  bool Has(const std::string& store) const {
    return store == "disk" || (store == "tmpfs" && !shm_dir.empty()) ||
           (store == "pg" && postgres != nullptr);
  }
};

// One run of the dispatch row `c` on a database of its own named `run` (removed afterwards unless
// on PostgreSQL); false after saying why.
bool RunDispatchRow(const std::string& tracker, const Stores& stores, const DispatchConfig& c,
                    const std::string& run, int64_t drain, int samples, DispatchRow* row) {
  std::string database;
  if (c.store == "pg") {
    if (!stores.postgres->CreateDatabase(run).ok()) return false;
    database = absl::StrCat("postgresql://", testing::PostgresServer::kUser,
                            "@127.0.0.1:", stores.postgres->port(), "/", run);
  } else {
    database = Database(c.store == "tmpfs" ? stores.shm_dir : stores.disk_dir, run);
  }
  const bool ok = DispatchScenario(tracker, database, c, drain, samples, row);
  if (c.store != "pg") RemoveDatabase(database);  // a million trials take GBs (or memory)
  return ok;
}

// ---- --vs-tvm -----------------------------------------------------------------------------------

// Debian's Python, which runs TVM's tracker (with python3-tornado).
constexpr char kPython[] = "/usr/bin/python3";

// A start is "calm" below this 1-minute load average (2 CPUs: under one busy core besides).
constexpr double kCalmLoad = 1.5;

// The machine's 1-minute load average (/proc/loadavg), or -1.
double LoadAverage() {
  FILE* f = std::fopen("/proc/loadavg", "r");
  if (f == nullptr) return -1;
  double load = -1;
  if (std::fscanf(f, "%lf", &load) != 1) load = -1;
  std::fclose(f);
  return load;
}

// Waits up to `patience` for the load to fall below kCalmLoad; returns the load at the end.
double AwaitCalm(absl::Duration patience) {
  const absl::Time deadline = absl::Now() + patience;
  double load = LoadAverage();
  while (load >= kCalmLoad && absl::Now() < deadline) {
    absl::SleepFor(absl::Seconds(2));
    load = LoadAverage();
  }
  return load;
}

// Runs `argv` to completion within `limit` (process::RunCommand; `name` for its messages).
absl::StatusOr<process::CommandRun> RunFor(std::vector<std::string> argv, absl::Duration limit,
                                           const std::string& name) {
  process::RunCommandOptions options;
  options.argv = std::move(argv);
  options.time_limit = limit;
  return process::RunCommand(options, absl::Now() + limit, name);
}

// Apache TVM's tracker and its load generator, found outside the project.
struct TvmPeer {
  std::string dir;        // run_tvm_tracker.py and its tvm/ package
  std::string generator;  // tvmgen, built from dir/tvmgen.c
};

// Finds the peer in `dir`, checks that Debian's python3 has tornado, and builds tvmgen with gcc
// into `work_dir`. Errors say what is missing.
absl::StatusOr<TvmPeer> PrepareTvmPeer(const std::string& dir, const std::string& work_dir) {
  for (const char* file : {"run_tvm_tracker.py", "tvmgen.c", "tvm/rpc/tracker.py"}) {
    const std::string path = absl::StrCat(dir, "/", file);
    if (access(path.c_str(), R_OK) != 0) {
      return absl::NotFoundError(
          absl::StrCat("no TVM tracker at ", dir, " (", path,
                       " is missing; ./farm bench tvm-tracker looks in "
                       "../shared/peers/tvm-tracker or $BENCHFARM_TVM_TRACKER)"));
    }
  }
  absl::StatusOr<process::CommandRun> tornado =
      RunFor({kPython, "-c", "import tornado"}, absl::Minutes(1), "python3");
  if (!tornado.ok() || !tornado->succeeded()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kPython,
                     " cannot import tornado: install Debian's python3-tornado (./farm "
                     "bench tvm-tracker does)"));
  }
  TvmPeer peer{dir, absl::StrCat(work_dir, "/tvmgen")};
  absl::StatusOr<process::CommandRun> gcc =
      RunFor({"gcc", "-O2", "-o", peer.generator, absl::StrCat(dir, "/tvmgen.c")}, absl::Minutes(2),
             "gcc");
  if (!gcc.ok()) return gcc.status();
  if (!gcc->succeeded()) {
    return absl::InternalError(
        absl::StrCat("gcc could not build ", dir, "/tvmgen.c",
                     process::OutputForError(gcc->output, gcc->output_bytes)));
  }
  return peer;
}

// A TCP port on the loopback that nothing listens on now, or 0.
int FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// One line from `fd` (without its newline), waiting at most until `deadline`; false at EOF or
// then.
bool ReadLine(int fd, absl::Time deadline, std::string* line) {
  line->clear();
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (ms <= 0 || poll(&p, 1, static_cast<int>(ms)) <= 0) return false;
    char c;
    if (read(fd, &c, 1) != 1) return false;
    if (c == '\n') return true;
    line->push_back(c);
  }
}

// What one side measured in one run.
struct SideFigures {
  double load = -1;  // the 1-minute load at its start
  double per_s = -1, p99_ms = -1;
  double tracker_us = -1;    // the tracker process's CPU per dispatch (benchfarm: with its share of
                             // SubmitTrials, as TVM's tracker's CPU includes the REQUESTs)
  double generator_us = -1;  // the load generator's CPU per dispatch
};

// One run of TVM's tracker (`nodelay`: with TCP_NODELAY on its sockets) with `boards` servers and
// as many clients, each on a connection of its own (tvmgen): matches/s over `window_s`, p99 of
// `samples` single requests, CPU per match of the tracker process (/proc/PID/stat, read by
// tvmgen) and of tvmgen. False after saying why.
bool TvmRun(const TvmPeer& peer, bool nodelay, int boards, double window_s, int samples,
            SideFigures* out) {
  const int port = FreePort();
  process::SubprocessOptions options;
  options.argv = {"/usr/bin/env", absl::StrCat("PYTHONPATH=", peer.dir),
                  kPython,        absl::StrCat(peer.dir, "/run_tvm_tracker.py"),
                  "--port",       absl::StrCat(port)};
  if (nodelay) options.argv.push_back("--nodelay");
  absl::StatusOr<std::unique_ptr<process::Subprocess>> tracker =
      process::Subprocess::Start(options);
  if (!tracker.ok()) {
    std::fprintf(stderr, "tracker_bench: TVM's tracker: %s\n",
                 std::string(tracker.status().message()).c_str());
    return false;
  }
  const int stdout_fd = (*tracker)->TakeStdout();
  std::string line;
  const bool listening = ReadLine(stdout_fd, absl::Now() + absl::Seconds(30), &line);
  close(stdout_fd);
  int actual_port = 0;
  const size_t colon = line.rfind(':');
  if (!listening || !absl::StartsWith(line, "tvm-tracker: listening on ") ||
      colon == std::string::npos || !absl::SimpleAtoi(line.substr(colon + 1), &actual_port)) {
    std::fprintf(stderr, "tracker_bench: TVM's tracker did not say it listens (said '%s')\n",
                 line.c_str());
    return false;
  }
  absl::StatusOr<process::CommandRun> run =
      RunFor({peer.generator, "--port", absl::StrCat(actual_port), "--pid",
              absl::StrCat((*tracker)->pid()), "--servers", absl::StrCat(boards), "--warmup-s", "1",
              "--window-s", absl::StrCat(window_s), "--samples", absl::StrCat(samples)},
             absl::Minutes(10), "tvmgen");
  (void)(*tracker)->Stop(absl::Seconds(1), absl::Now() + absl::Seconds(10));
  if (!run.ok() || !run->succeeded()) {
    std::fprintf(stderr, "tracker_bench: tvmgen failed: %s\n",
                 run.ok() ? process::OutputForError(run->output, run->output_bytes).c_str()
                          : std::string(run.status().message()).c_str());
    return false;
  }
  // One line of key=value pairs.
  std::map<std::string, double> kv;
  for (absl::string_view pair : absl::StrSplit(run->output, absl::ByAnyChar(" \n"))) {
    std::vector<std::string> f = absl::StrSplit(pair, absl::MaxSplits('=', 1));
    double v;
    if (f.size() == 2 && absl::SimpleAtod(f[1], &v)) kv[f[0]] = v;
  }
  for (const char* key :
       {"rate", "lat_p99_ms", "tracker_cpu_us_per_match", "gen_cpu_s", "matches"}) {
    if (kv.count(key) == 0) {
      std::fprintf(stderr, "tracker_bench: tvmgen printed no %s: %s\n", key, run->output.c_str());
      return false;
    }
  }
  out->per_s = kv["rate"];
  out->p99_ms = kv["lat_p99_ms"];
  out->tracker_us = kv["tracker_cpu_us_per_match"];
  out->generator_us = kv["matches"] > 0 ? kv["gen_cpu_s"] * 1e6 / kv["matches"] : -1;
  return true;
}

// benchfarm's figures for the side-by-side table, from a dispatch row.
SideFigures BenchfarmSide(const DispatchRow& r) {
  SideFigures f;
  f.per_s = r.seconds > 0 ? static_cast<double>(r.trials) / r.seconds : -1;
  f.p99_ms = r.p99_ms;
  f.tracker_us = CpuPerDispatchUs(r) + SubmitTrackerUs(r);
  f.generator_us =
      r.trials > 0 ? r.bench_cpu_s * 1e6 / static_cast<double>(r.trials) + SubmitClientUs(r) : -1;
  return f;
}

// The median of each figure over runs (a figure's own median: the rows mix runs).
SideFigures MedianSide(const std::vector<SideFigures>& runs) {
  auto median = [&runs](double SideFigures::*field) {
    std::vector<double> v;
    for (const SideFigures& r : runs) v.push_back(r.*field);
    return Median(v);
  };
  SideFigures m;
  m.load = median(&SideFigures::load);
  m.per_s = median(&SideFigures::per_s);
  m.p99_ms = median(&SideFigures::p99_ms);
  m.tracker_us = median(&SideFigures::tracker_us);
  m.generator_us = median(&SideFigures::generator_us);
  return m;
}

// benchfarm's tracker (one connection per board, database on disk) against TVM's tracker with and
// without TCP_NODELAY, in `repeat` repetitions, each running every side at every size, in
// alternate order from one repetition to the next.
int VsTvmMain(const std::string& tracker, const Stores& stores, const std::string& tvm_dir,
              bool quick, int repeat, int64_t drain_flag) {
  const std::vector<int> sizes = quick ? std::vector<int>{10, 50} : std::vector<int>{100, 1000};
  const int64_t drain = drain_flag > 0 ? drain_flag : quick ? 1000 : 100000;
  const int samples = quick ? 20 : 2000;
  // As shipped, each of TVM's replies waits ~44 ms for Nagle: fewer samples, or a run takes
  // minutes.
  const int stock_samples = quick ? 10 : 200;
  const double window_s = quick ? 1 : 8;
  const absl::Duration patience = quick ? absl::ZeroDuration() : absl::Seconds(30);
  absl::StatusOr<TvmPeer> peer = PrepareTvmPeer(tvm_dir, stores.disk_dir);
  if (!peer.ok()) {
    std::printf("tracker_bench --vs-tvm: %s: TVM's columns are skipped\n",
                std::string(peer.status().message()).c_str());
  }
  // benchfarm three times: one board per agent (each board on a connection of its own, as TVM's
  // servers connect), with the agents on gRPC's client (as benchfarm's agent talks) and on
  // WireAgents (HTTP/2 framed by hand, as lean as tvmgen: on this machine the load generator's
  // CPU is the tracker's to lose); and 16 boards per agent (an agent host's boards on its one
  // connection, as a farm connects; the size rounded up to whole agents).
  enum Side { kBenchfarm, kBenchfarmLean, kBenchfarm16, kTvmNodelay, kTvmStock, kSides };
  const char* names[kSides] = {"benchfarm", "benchfarm, lean agents", "benchfarm, 16/agent",
                               "TVM + TCP_NODELAY", "TVM as shipped"};
  constexpr int kBoardsPerAgent = 16;
  // runs[size][side]: that side's runs at that size.
  std::vector<std::vector<std::vector<SideFigures>>> runs(
      sizes.size(), std::vector<std::vector<SideFigures>>(kSides));
  bool ok = true;
  for (int rep = 0; rep < repeat; ++rep) {
    std::vector<int> order = {kBenchfarm, kBenchfarmLean, kTvmNodelay, kBenchfarm16, kTvmStock};
    if (rep % 2 == 1) std::reverse(order.begin(), order.end());
    for (size_t s = 0; s < sizes.size(); ++s) {
      for (int side : order) {
        const bool ours = side == kBenchfarm || side == kBenchfarmLean || side == kBenchfarm16;
        if (!ours && !peer.ok()) continue;
        SideFigures f;
        const double load = AwaitCalm(patience);
        bool ran;
        if (ours) {
          DispatchConfig c{"disk", sizes[s], 1000};
          c.lean = side == kBenchfarmLean;
          if (side == kBenchfarm16) {
            c.agents = (sizes[s] + kBoardsPerAgent - 1) / kBoardsPerAgent;
            c.boards = kBoardsPerAgent;
          }
          DispatchRow row;
          ran = RunDispatchRow(tracker, stores, c,
                               absl::StrCat("vs_tvm", sizes[s], "_", side, "_", rep), drain,
                               samples, &row);
          f = BenchfarmSide(row);
        } else {
          ran = TvmRun(*peer, side == kTvmNodelay, sizes[s], window_s,
                       side == kTvmNodelay ? samples : stock_samples, &f);
        }
        f.load = load;
        std::printf(
            "repetition %d/%d, %d boards, %s: load %.2f at the start; %.0f/s, p99 %.2f ms, "
            "tracker %.1f us, generator %.1f us per dispatch%s\n",
            rep + 1, repeat, sizes[s], names[side], f.load, f.per_s, f.p99_ms, f.tracker_us,
            f.generator_us, ran ? "" : " (FAILED)");
        std::fflush(stdout);
        if (!ran) {
          ok = false;
          continue;
        }
        runs[s][side].push_back(f);
      }
    }
  }
  std::printf(
      "\ntracker_bench --vs-tvm: %u CPUs, tracker %s, TVM %s; each figure its median "
      "over %d repetition(s)\n",
      std::thread::hardware_concurrency(), tracker.c_str(), tvm_dir.c_str(), repeat);
  std::printf("%-7s %-22s %10s %9s %13s %13s %11s\n", "boards", "tracker", "dispatch/s", "p99",
              "tracker CPU", "generator CPU", "load at");
  std::printf("%-7s %-22s %10s %9s %13s %13s %11s\n", "", "", "", "", "per dispatch",
              "per dispatch", "starts");
  for (size_t s = 0; s < sizes.size(); ++s) {
    for (int side = 0; side < kSides; ++side) {
      if (runs[s][side].empty()) continue;
      const SideFigures m = MedianSide(runs[s][side]);
      double least = m.load, most = m.load;
      for (const SideFigures& r : runs[s][side]) {
        least = std::min(least, r.load);
        most = std::max(most, r.load);
      }
      const int boards = side == kBenchfarm16
                             ? (sizes[s] + kBoardsPerAgent - 1) / kBoardsPerAgent * kBoardsPerAgent
                             : sizes[s];
      std::printf("%-7d %-22s %10.0f %6.2f ms %10.1f us %10.1f us %5.2f-%.2f\n", boards,
                  names[side], m.per_s, m.p99_ms, m.tracker_us, m.generator_us, least, most);
    }
  }
  std::printf(
      "benchfarm: its tracker (the database on disk, fsync'd before every acknowledgement) and "
      "one connection per\nsimulated agent of one board; a dispatch is offer -> result stored -> "
      "ack; its tracker CPU includes its\nshare of the SubmitTrials that queued the trials; p99: "
      "SubmitTrials returning -> the offer at an agent,\nboards idle (%d samples). 16/agent: "
      "the same with 16 boards per agent on its connection (the\nboards rounded up to whole "
      "agents), taking a message's offers together and answering them in one message.\nLean "
      "agents: the same agents of one board on HTTP/2 framed by hand (WireAgents: one thread, no "
      "gRPC\nclient; window updates per message read, as gRPC's client sends), as lean as tvmgen, "
      "so the tracker\nhas the CPU gRPC's client would take.\n"
      "TVM: v0.18's RPC tracker (Python, one thread; stores nothing) and tvmgen: a server per "
      "board "
      "and as many\nclients, each on a connection of its own; a dispatch is one REQUEST matched to "
      "a free "
      "server; p99: the REQUEST\nwritten -> its match read, servers free (%d samples; %d as "
      "shipped, where Nagle holds each reply).\nCPU: each tracker process's utime+stime "
      "(/proc/PID/stat) over the window; the load generators' apart.\nload: the 1-minute load "
      "average at each run's start (%s).\n",
      samples, samples, stock_samples,
      patience > absl::ZeroDuration()
          ? absl::StrFormat("each waited up to %s for it to fall below %.1f",
                            absl::FormatDuration(patience), kCalmLoad)
                .c_str()
          : "--quick: none waited for a calm machine");
  if (!ok || g_tracker_hung) {
    std::fprintf(stderr, "tracker_bench: FAILED (see above)\n");
    return 1;
  }
  return 0;
}

// --submitting's value: "N" or "N:MS" (1..10,000 trials, 0..60,000 ms apart).
bool ParseSubmitting(absl::string_view value) {
  std::vector<absl::string_view> parts = absl::StrSplit(value, ':');
  if (parts.size() > 2 || !absl::SimpleAtoi(parts[0], &g_submitting) || g_submitting < 1 ||
      g_submitting > 10000) {
    return false;
  }
  g_submitting_ms = 0;
  return parts.size() == 1 || (absl::SimpleAtoi(parts[1], &g_submitting_ms) &&
                               g_submitting_ms >= 0 && g_submitting_ms <= 60000);
}

int Main(int argc, char** argv) {
  bool quick = false;
  bool flood = false;
  bool restart = false;
  std::string tracker_flag;
  std::string vs_tvm;  // the peer's directory (--vs-tvm)
  // STORE:AGENTS:QUEUED[:BOARDS_PER_AGENT[:CLIENTS]]: that one dispatch row; submit:BATCH: that
  // one submission row (profiling, A/B runs)
  std::string only;
  int agents_per_connection = 0;  // of the --only dispatch row; 0: not given (1)
  int64_t drain_flag = 0;
  // Rounds over the dispatch rows; each row printed is its median round (of an even number, the
  // upper middle one). 0: not given (1; with --vs-tvm 5 repetitions, 1 with --quick).
  int repeat = 0;
  bool lean = false;  // --lean-agents
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--flood") == 0) {
      flood = true;
    } else if (std::strcmp(argv[i], "--restart") == 0) {
      restart = true;
    } else if (std::strncmp(argv[i], "--vs-tvm=", 9) == 0 && argv[i][9] != '\0') {
      vs_tvm = argv[i] + 9;
    } else if (std::strcmp(argv[i], "--unbatched-offers") == 0) {
      g_batched_offers = false;
    } else if (std::strncmp(argv[i], "--submitting=", 13) == 0 && ParseSubmitting(argv[i] + 13)) {
    } else if (std::strcmp(argv[i], "--unbatched-acks") == 0) {
      g_batched_acks = false;
    } else if (std::strcmp(argv[i], "--lean-agents") == 0) {
      lean = true;
    } else if (std::strcmp(argv[i], "--tracker") == 0 && i + 1 < argc) {
      tracker_flag = argv[++i];
    } else if (std::strncmp(argv[i], "--tracker=", 10) == 0) {
      tracker_flag = argv[i] + 10;
    } else if (std::strncmp(argv[i], "--only=", 7) == 0) {
      only = argv[i] + 7;
    } else if (std::strncmp(argv[i], "--agents-per-connection=", 24) == 0 &&
               absl::SimpleAtoi(argv[i] + 24, &agents_per_connection) &&
               agents_per_connection >= 1) {
    } else if (std::strncmp(argv[i], "--drain=", 8) == 0 &&
               absl::SimpleAtoi(argv[i] + 8, &drain_flag) && drain_flag > 0) {
    } else if (std::strncmp(argv[i], "--repeat=", 9) == 0 &&
               absl::SimpleAtoi(argv[i] + 9, &repeat) && repeat >= 1 && repeat <= 99) {
    } else {
      std::fprintf(stderr,
                   "usage: tracker_bench [--quick] [--flood | --restart | --vs-tvm=DIR] "
                   "[--tracker PATH] [--only=STORE:AGENTS:QUEUED[:BOARDS[:CLIENTS]] "
                   "[--agents-per-connection=N | --lean-agents] | --only=submit:BATCH] "
                   "[--drain=DISPATCHES] "
                   "[--repeat=N] [--unbatched-acks] [--unbatched-offers] [--submitting=N[:MS]]\n");
      return 2;
    }
  }
  if (agents_per_connection > 0 && (only.empty() || absl::StartsWith(only, "submit:"))) {
    std::fprintf(stderr,
                 "tracker_bench: --agents-per-connection applies to one dispatch row: give it "
                 "with --only=STORE:AGENTS:QUEUED[...]\n");
    return 2;
  }
  if (lean && (only.empty() || absl::StartsWith(only, "submit:") || agents_per_connection > 1)) {
    std::fprintf(stderr,
                 "tracker_bench: --lean-agents applies to one dispatch row of one connection per "
                 "agent: give it with --only=STORE:AGENTS:QUEUED[...] and no "
                 "--agents-per-connection above 1\n");
    return 2;
  }
  // One connection per agent: as many descriptors as agents, here and in the tracker (a child,
  // which inherits the limit). The soft limit goes as high as the hard one allows.
  if (struct rlimit limit;
      getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    setrlimit(RLIMIT_NOFILE, &limit);
  }
  std::string tracker = testing::FindTrackerBinary(tracker_flag, argv[0]);
  if (tracker.empty()) {
    std::fprintf(stderr, "tracker_bench: cannot find the tracker binary (use --tracker PATH)\n");
    return 1;
  }
  const char* tmp = std::getenv("TEST_TMPDIR");
  if (tmp == nullptr) tmp = std::getenv("TMPDIR");
  std::string pattern = absl::StrCat(tmp ? tmp : "/tmp", "/tracker_bench.XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    std::perror("tracker_bench: mkdtemp");
    return 1;
  }
  Stores stores;
  stores.disk_dir = buffer.data();
  // Its databases (GBs with a million trials) go with it when the bench ends.
  struct RemoveDir {
    std::string dir;
    ~RemoveDir() {
      if (dir.empty()) return;
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } remove_dir{stores.disk_dir};

  if (flood) return FloodMain(tracker, stores.disk_dir, quick);
  if (restart) return RestartMain(tracker, stores.disk_dir, quick);
  if (!vs_tvm.empty()) {
    return VsTvmMain(tracker, stores, vs_tvm, quick,
                     repeat > 0 ? repeat
                     : quick    ? 1
                                : 5,
                     drain_flag);
  }
  repeat = std::max(repeat, 1);

  std::vector<Row> rows;
  bool ok = true;
  const int submit_total = quick ? 2000 : 50000;
  const int64_t drain = drain_flag > 0 ? drain_flag : quick ? 500 : 50000;
  // 2,000: the p99 is the 20th slowest, not one of the few stalls of this VM's scheduler (a
  // millisecond or more, a few times in a thousand) that decide the p99 of 200.
  const int samples = quick ? 20 : 2000;
  if (struct stat st; stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode)) {
    std::string pattern = "/dev/shm/tracker_bench.XXXXXX";
    std::vector<char> shm(pattern.begin(), pattern.end());
    shm.push_back('\0');
    if (mkdtemp(shm.data()) != nullptr) stores.shm_dir = shm.data();
  }
  RemoveDir remove_shm{stores.shm_dir};
  // In the order printed: rows of one topology together (Topology() names each group).
  std::vector<DispatchConfig> configs;
  if (quick) {
    configs = {
        {"disk", 10, 100},   {"disk", 20, 1000},   {"disk", 20, 1000, 1, 3},
        {"tmpfs", 10, 100},  {"pg", 10, 100},      {"disk", 10, 100, 1, 0, 1, true},
        {"disk", 5, 100, 4}, {"disk", 2, 100, 16}, {"disk", 60, 100, 1, 0, kMultiplexedStreams}};
  } else {
    // 100 and 1,000 boards as a farm connects: each agent on a connection of its own, with 1, 4
    // and 16 boards per agent (16: 96 and 1,008 boards, whole agents). A million queued trials
    // are 12 clients' (the per-client cap), so the rows from 1,000 to 1,000,000 queued have 12
    // clients each: the queue's depth apart from the clients' number. The multiplexed rows (50
    // agents' streams on one connection, the bench's shape before issue 39) are kept, labelled:
    // 10,000 agents, and 10,000 boards on 1,000 agents, only there (10,000 connections would be
    // the load generator's more than the tracker's). The lean rows: 100 and 1,000 boards again,
    // their agents on WireAgents (HTTP/2 framed by hand, as lean as TVM's tvmgen) rather than on
    // gRPC's client, so the tracker has the CPU gRPC's client would take on this machine.
    const int mux = kMultiplexedStreams;
    configs = {{"disk", 100, 1000},
               {"disk", 1000, 1000},
               {"disk", 1000, 1000, 1, 12},
               {"disk", 1000, 100000, 1, 12},
               {"disk", 1000, 1000000, 1, 12},
               {"tmpfs", 100, 1000},
               {"tmpfs", 1000, 1000},
               {"pg", 100, 1000},
               {"pg", 1000, 1000},
               {"disk", 100, 1000, 1, 0, 1, true},
               {"disk", 1000, 1000, 1, 0, 1, true},
               {"disk", 25, 1000, 4},
               {"disk", 250, 1000, 4},
               {"disk", 6, 1000, 16},
               {"disk", 63, 1000, 16},
               {"disk", 100, 1000, 1, 0, mux},
               {"disk", 1000, 1000, 1, 0, mux},
               {"disk", 10000, 1000, 1, 0, mux},
               {"disk", 1000, 1000, 10, 0, mux}};
  }
  std::vector<int> submit_batches = {100, 1000};
  if (absl::StartsWith(only, "submit:")) {
    int batch = 0;
    if (!absl::SimpleAtoi(only.substr(7), &batch) || batch <= 0 || batch > 10000) {
      std::fprintf(stderr, "tracker_bench: --only=submit:BATCH wants a batch of 1..10000, not %s\n",
                   only.c_str());
      return 2;
    }
    submit_batches = {batch};
    configs.clear();
  } else if (!only.empty()) {
    std::vector<std::string> parts = absl::StrSplit(only, ':');
    submit_batches.clear();
    DispatchConfig c;
    if (parts.size() < 3 || parts.size() > 5 ||
        (parts[0] != "disk" && parts[0] != "tmpfs" && parts[0] != "pg") ||
        !absl::SimpleAtoi(parts[1], &c.agents) || !absl::SimpleAtoi(parts[2], &c.backlog) ||
        (parts.size() >= 4 && !absl::SimpleAtoi(parts[3], &c.boards)) ||
        (parts.size() == 5 && !absl::SimpleAtoi(parts[4], &c.clients)) || c.agents <= 0 ||
        c.backlog < 0 || c.boards <= 0 || c.clients < 0) {
      std::fprintf(stderr,
                   "tracker_bench: --only wants STORE:AGENTS:QUEUED[:BOARDS_PER_AGENT[:CLIENTS]] "
                   "(disk, tmpfs or pg), not %s\n",
                   only.c_str());
      return 2;
    }
    c.store = parts[0];
    c.agents_per_connection = std::max(agents_per_connection, 1);
    c.lean = lean;
    configs = {c};
  }
  std::unique_ptr<testing::PostgresServer> postgres;
  if (std::any_of(configs.begin(), configs.end(),
                  [](const DispatchConfig& c) { return c.store == "pg"; })) {
    absl::StatusOr<std::unique_ptr<testing::PostgresServer>> started =
        testing::PostgresServer::Start();
    if (started.ok()) {
      postgres = *std::move(started);
      stores.postgres = postgres.get();
    } else {
      std::fprintf(stderr, "tracker_bench: no PostgreSQL rows: %s\n",
                   std::string(started.status().message()).c_str());
      ok = false;
    }
  }

  for (int batch : submit_batches) {
    Row row;
    if (!SubmitScenario(tracker, stores.disk_dir, batch, submit_total, &row)) ok = false;
    std::fprintf(stderr, "tracker_bench: %s: done\n", row.name.c_str());
    rows.push_back(row);
  }
  // rounds[i]: config i's runs. Rounds go over every row in turn, so a drift of this machine's
  // speed (a VM's neighbours) spreads over all rows instead of landing on one.
  std::vector<std::vector<DispatchRow>> rounds(configs.size());
  for (int round = 0; round < repeat; ++round) {
    for (size_t i = 0; i < configs.size(); ++i) {
      const DispatchConfig& c = configs[i];
      if (!stores.Has(c.store)) continue;
      DispatchRow row;
      if (!RunDispatchRow(
              tracker, stores, c,
              absl::StrCat("dispatch", c.agents, "x", c.boards, "_", c.backlog, "_", c.clients, "_",
                           c.agents_per_connection, c.lean ? "_lean_" : "_", round),
              drain, samples, &row)) {
        ok = false;
      }
      std::fprintf(stderr,
                   "tracker_bench: dispatch, %s, %d agents x %d boards, %d agents per connection, "
                   "%lld queued, %d clients, round %d/%d: done\n",
                   c.store.c_str(), c.agents, c.boards, c.agents_per_connection,
                   static_cast<long long>(c.backlog), row.config.clients, round + 1, repeat);
      rounds[i].push_back(row);
    }
  }
  std::vector<DispatchRow> dispatch;  // each config's median round (by CPU per dispatch)
  std::vector<std::pair<double, double>> cpu_range;  // and its rounds' least and most
  for (std::vector<DispatchRow>& runs : rounds) {
    if (runs.empty()) continue;
    std::sort(runs.begin(), runs.end(), [](const DispatchRow& a, const DispatchRow& b) {
      return CpuPerDispatchUs(a) < CpuPerDispatchUs(b);
    });
    dispatch.push_back(runs[runs.size() / 2]);
    cpu_range.emplace_back(CpuPerDispatchUs(runs.front()), CpuPerDispatchUs(runs.back()));
  }

  const unsigned cpus = std::thread::hardware_concurrency();
  std::printf("tracker_bench: %u CPUs, tracker %s, load %.2f\n", cpus, tracker.c_str(),
              LoadAverage());
  std::printf("%-26s %8s %9s %11s %12s\n", "submit", "trials", "seconds", "trials/s",
              "tracker CPU");
  std::printf("%-26s %8s %9s %11s %12s\n", "", "", "", "", "per trial");
  for (const Row& r : rows) {
    std::printf("%-26s %8lld %9.2f %11.0f %9.1f us\n", r.name.c_str(),
                static_cast<long long>(r.trials), r.seconds,
                r.seconds > 0 ? static_cast<double>(r.trials) / r.seconds : 0.0,
                r.trials > 0 ? r.tracker_cpu_s * 1e6 / static_cast<double>(r.trials) : 0.0);
  }
  if (!dispatch.empty()) {
    std::printf("\n%-6s %7s %6s %8s %7s %10s %9s %12s %12s %9s %9s %9s %9s %10s %10s %13s\n",
                "store", "agents", "boards", "queued", "clients", "dispatches", "per s",
                "tracker CPU", "with", "tracker", "bench", "p50", "p99", "KiB/agent", "KiB/trial",
                "CPU, rounds");
    std::printf("%-6s %7s %6s %8s %7s %10s %9s %12s %12s %9s %9s %9s %9s %10s %10s %13s\n", "", "",
                "/agent", "", "", "", "", "per dispatch", "submits", "CPU share", "CPU share",
                "offer", "offer", "", "queued", "least-most");
  }
  std::string topology;
  for (size_t i = 0; i < dispatch.size(); ++i) {
    const DispatchRow& r = dispatch[i];
    const DispatchConfig& c = r.config;
    if (Topology(c) != topology) {
      topology = Topology(c);
      std::printf("%s:\n", topology.c_str());
    }
    const double share = r.seconds > 0 ? 100.0 / (r.seconds * cpus) : 0;
    std::printf(
        "%-6s %7d %6d %8lld %7d %10lld %9.0f %9.1f us %9.1f us %8.0f%% %8.0f%% %6.2f ms %6.2f ms "
        "%10.1f %10.2f %6.1f-%.1f us\n",
        c.store.c_str(), c.agents, c.boards, static_cast<long long>(c.backlog), c.clients,
        static_cast<long long>(r.trials), r.seconds > 0 ? r.trials / r.seconds : 0.0,
        CpuPerDispatchUs(r), CpuPerDispatchWithSubmitsUs(r), r.tracker_cpu_s * share,
        r.bench_cpu_s * share, r.p50_ms, r.p99_ms, r.kib_per_agent, r.kib_per_queued,
        cpu_range[i].first, cpu_range[i].second);
  }
  std::printf(
      "submit: 4 clients at once; the tracker's CPU per trial over the submissions (checks, "
      "queue, store).\n"
      "dispatch: offer -> result stored -> ack, every board busy, `queued` trials waiting "
      "throughout; the database\nfsync'd (synchronous=FULL, group commit) on disk, or on tmpfs "
      "(/dev/shm: the same without the disk's cost), or\nPostgreSQL 15 on this machine (pg: "
      "fsync on, over loopback TCP).\nOne connection per agent: each simulated agent dials the "
      "tracker, as a farm's agents do; multiplexed: that\nmany agents' streams share one "
      "connection (fewer, fuller TCP reads and writes: not how a farm connects).\nclients: whose "
      "trials they are, each client's stored together; the tracker takes turns between\nclients, "
      "so each is one more place in the database that dispatches write to.\ntracker CPU per "
      "dispatch: the tracker's over the dispatches alone; with submits: plus the tracker's and "
      "the\nsubmitting client's CPU over the SubmitTrials (batches of 10,000) that queued the "
      "trials, per trial.\nCPU share: of all %u CPUs over the dispatches "
      "(bench = the load generator: simulated agents).\np50/p99 offer: SubmitTrials "
      "returning -> the offer at an agent, one trial at a time, boards idle (%d samples;\nan "
      "offer that beats the response counts as 0 ms).\nRounds: %d over all rows in turn; each "
      "row is its median round by tracker CPU per dispatch (--repeat=N).\n",
      cpus, samples, repeat);
  if (g_submitting > 0) {
    std::printf(
        "--submitting=%d:%d: meanwhile another client submitted batches of %d trials in a "
        "loop, %d ms apart (of a kind\nwhose one board holds its offer); batches per row:",
        g_submitting, g_submitting_ms, g_submitting, g_submitting_ms);
    for (const DispatchRow& r : dispatch) {
      std::printf(" %lld", static_cast<long long>(r.background_batches));
    }
    std::printf("\n");
  }
  if (!ok || g_tracker_hung) {
    std::fprintf(stderr, "tracker_bench: FAILED (see above)\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace benchfarm

int main(int argc, char** argv) { return benchfarm::Main(argc, argv); }
