// tracker_bench: the tracker daemon's figures on this machine, driven over gRPC like production.
// Starts //tracker:tracker as a child process (tests/tracker_process.h; a fresh database per
// scenario) and prints a table:
//   - submission throughput (trials/s) with SubmitTrials batches of 100 and 1,000;
//   - dispatch throughput (trials/s through offer -> result -> ack) with 100 and 1,000
//     simulated agents (one board and one stream each, a thread per stream), and the dispatch
//     latency p50/p99: from SubmitTrials returning to the offer arriving at an agent, measured
//     one trial at a time with every board idle.
//
//   - with --flood instead: a flood beside a baseline in the same run — 500 WatchJobs streams of
//     every job (one in five reads, the rest never do) and 50,000 jobs pinned to a registered
//     board that is offline — and what a client sees without and with it: the latency of a
//     1,000-trial SubmitTrials, trials/s through one board, QueueSummary's latency, the tracker's
//     RSS before the flood, with it and after the watchers end, and how many never-reading
//     streams the tracker cut off (RESOURCE_EXHAUSTED).
//
//   tracker_bench [--quick] [--flood] [--tracker PATH]
//
// The tracker is found with --tracker, else in the runfiles ($RUNFILES_DIR, $TEST_SRCDIR or
// argv[0].runfiles). --quick uses tiny sizes (the smoke test).
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tests/tracker_process.h"

namespace benchfarm {
namespace {

bool g_tracker_hung = false;  // set when a tracker did not stop cleanly on SIGTERM

using Steady = std::chrono::steady_clock;

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

// The tracker of one scenario, stopped when the scenario ends. A tracker that does not exit
// cleanly within 5 s of SIGTERM is a bug (it once hung in grpc::Server::Shutdown on an unfinished
// agent stream): it is killed and the run fails.
class ScenarioTracker {
 public:
  explicit ScenarioTracker(const std::string& binary) : process_(binary) {}
  ~ScenarioTracker() {
    absl::StatusOr<base::ProcessExit> stopped = process_.Stop(absl::Seconds(5));
    if (absl::IsFailedPrecondition(stopped.status())) return;  // it never started
    if (stopped.ok() && stopped->exited() && stopped->exit_code == 0) return;
    std::fprintf(stderr, "tracker_bench: the tracker did not stop cleanly on SIGTERM: %s\n",
                 stopped.ok() ? stopped->ToString().c_str()
                              : std::string(stopped.status().message()).c_str());
    g_tracker_hung = true;
  }

  pid_t pid() const { return process_.pid(); }

  // Starts it on a fresh database; returns HOST:PORT, or "" after saying why not.
  std::string Start(const std::string& database) {
    unlink(database.c_str());
    absl::StatusOr<std::string> address = process_.Start(
        {"--database=" + database, "--listen=127.0.0.1:0", "--metrics=off", "--log_level=warn",
         "--insecure"});
    if (!address.ok()) {
      std::fprintf(stderr, "tracker_bench: %s\n", std::string(address.status().message()).c_str());
      return "";
    }
    return *address;
  }

 private:
  testing::TrackerProcess process_;
};

v1::Trial MakeTrial(uint64_t seed) {
  v1::Trial t;
  t.set_board_kind("host");
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) {  // 16x16 matmul
    t.add_args()->add_shape(16);
    t.mutable_args(i)->add_shape(16);
  }
  t.set_seed(seed);
  return t;
}

// Offer arrivals and acknowledged results, shared by every simulated agent.
struct Board {
  absl::Mutex mu;
  std::map<std::string, Steady::time_point> offered ABSL_GUARDED_BY(mu);
  int64_t acked ABSL_GUARDED_BY(mu) = 0;
  int registered ABSL_GUARDED_BY(mu) = 0;
};

// One simulated agent: one stream, one board; answers every offer at once.
class SimAgent {
 public:
  SimAgent(std::shared_ptr<grpc::Channel> channel, std::string id, Board* board)
      : stub_(v1::TrackerAgent::NewStub(channel)), id_(std::move(id)), board_(board) {}

  void Start() { thread_ = std::thread([this] { Run(); }); }
  void Stop() {
    context_.TryCancel();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Run() {
    context_.set_deadline(In(absl::Minutes(10)));
    auto stream = stub_->Connect(&context_);
    v1::AgentMessage hello;
    hello.mutable_register_()->set_agent_id(id_);
    v1::BoardRegistration* r = hello.mutable_register_()->add_boards();
    r->set_board_id(id_ + "-board");
    r->set_kind("host");
    if (!stream->Write(hello)) return;
    v1::TrackerMessage m;
    while (stream->Read(&m)) {
      if (m.has_registered()) {
        absl::MutexLock lock(&board_->mu);
        ++board_->registered;
      } else if (m.has_offer()) {
        Steady::time_point now = Steady::now();
        {
          absl::MutexLock lock(&board_->mu);
          board_->offered[m.offer().job_id()] = now;
        }
        v1::AgentMessage out;
        out.mutable_result()->set_job_id(m.offer().job_id());
        out.mutable_result()->set_attempt(m.offer().attempt());
        out.mutable_result()->mutable_result()->add_costs_s(1e-3);
        if (!stream->Write(out)) break;
      } else if (m.has_result_ack()) {
        absl::MutexLock lock(&board_->mu);
        ++board_->acked;
      }
    }
    stream->Finish().IgnoreError();
  }

  std::unique_ptr<v1::TrackerAgent::Stub> stub_;
  const std::string id_;
  Board* const board_;
  grpc::ClientContext context_;
  std::thread thread_;
};

// One channel (one TCP connection) per this many agent streams.
constexpr int kStreamsPerChannel = 50;

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address, int index) {
  grpc::ChannelArguments args;
  args.SetInt("benchfarm.bench_channel", index);  // distinct args: a connection of its own
  args.SetMaxReceiveMessageSize(64 << 20);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

bool Submit(v1::Tracker::Stub* stub, const std::string& client, const std::string& request_id,
            int n, uint64_t seed, std::vector<std::string>* ids) {
  v1::SubmitTrialsRequest request;
  request.set_client_id(client);
  request.set_request_id(request_id);
  for (int i = 0; i < n; ++i) *request.add_trials() = MakeTrial(seed + i);
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
  double p50_ms = -1, p99_ms = -1;
  int early = 0;  // offers that arrived before SubmitTrials returned (counted as 0 ms)
};

std::string Database(const std::string& dir, const std::string& name) {
  return absl::StrCat(dir, "/", name, ".db");
}

// Submission throughput: `threads` clients submit `total` trials in batches of `batch`. One
// agent registers the kind and leaves, so the trials stay queued (no dispatch work).
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
    auto done = [&board]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) { return board.registered == 1; };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&done), absl::Seconds(10))) return false;
    board.mu.Unlock();
    agent.Stop();
    board.mu.Lock();
  }
  constexpr int kThreads = 4;
  const int batches = std::max(1, total / batch);
  std::atomic<int> next{0};
  std::atomic<bool> failed{false};
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
  return !failed;
}

// Dispatch: `agents` simulated agents, one board each. Throughput: `total` trials submitted in
// batches of 1,000 until every result is acknowledged. Latency: `samples` single trials, one at
// a time, each from SubmitTrials returning to its offer arriving.
bool DispatchScenario(const std::string& tracker_path, const std::string& dir, int agents, int total,
                      int samples, Row* row) {
  ScenarioTracker tracker(tracker_path);
  std::string address = tracker.Start(Database(dir, absl::StrCat("dispatch", agents)));
  if (address.empty()) return false;
  Board board;
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<SimAgent>> sims;
  for (int i = 0; i < agents; ++i) {
    if (i % kStreamsPerChannel == 0) channels.push_back(NewChannel(address, i));
    sims.push_back(std::make_unique<SimAgent>(channels.back(), absl::StrCat("agent-", i), &board));
    sims.back()->Start();
  }
  bool ok = true;
  {
    absl::MutexLock lock(&board.mu);
    auto all = [&board, agents]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.registered == agents;
    };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(60))) {
      std::fprintf(stderr, "tracker_bench: only %d of %d agents registered\n", board.registered,
                   agents);
      ok = false;
    }
  }
  auto stub = v1::Tracker::NewStub(NewChannel(address, 100000));
  Steady::time_point start = Steady::now();
  int submitted = 0;
  for (int b = 0; ok && submitted < total; ++b) {
    int n = std::min(1000, total - submitted);
    ok = Submit(stub.get(), "throughput", absl::StrCat("t", b), n, submitted, nullptr);
    submitted += n;
  }
  if (ok) {
    absl::MutexLock lock(&board.mu);
    auto all = [&board, total]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) { return board.acked >= total; };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&all), absl::Seconds(120))) {
      std::fprintf(stderr, "tracker_bench: %lld of %d results after 120 s\n",
                   static_cast<long long>(board.acked), total);
      ok = false;
    }
  }
  row->name = absl::StrCat("dispatch, ", agents, " agents");
  row->trials = total;
  row->seconds = std::chrono::duration<double>(Steady::now() - start).count();

  std::vector<double> latencies_ms;
  for (int i = 0; ok && i < samples; ++i) {
    std::vector<std::string> ids;
    ok = Submit(stub.get(), "latency", absl::StrCat("l", i), 1, 1000000 + i, &ids);
    Steady::time_point returned = Steady::now();
    if (!ok || ids.size() != 1) break;
    absl::MutexLock lock(&board.mu);
    const std::string id = ids[0];
    auto arrived = [&board, &id]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.offered.count(id) > 0;
    };
    if (!board.mu.AwaitWithTimeout(absl::Condition(&arrived), absl::Seconds(10))) {
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
  if (!latencies_ms.empty()) {
    std::sort(latencies_ms.begin(), latencies_ms.end());
    auto at = [&](double q) {
      size_t i = static_cast<size_t>(q * static_cast<double>(latencies_ms.size() - 1) + 0.5);
      return latencies_ms[std::min(i, latencies_ms.size() - 1)];
    };
    row->p50_ms = at(0.50);
    row->p99_ms = at(0.99);
  }
  for (auto& sim : sims) sim->Stop();
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
  double rss_before_mib = -1, rss_peak_mib = -1, rss_after_mib = -1;
  int cut = 0;               // never-reading watchers ended with RESOURCE_EXHAUSTED
  int slow = 0;
};

double Median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// A fresh tracker; with `flood`: `watchers` WatchJobs streams of every job (one in five reads,
// the rest never do) and `unrunnable` jobs pinned to a registered board that is offline. Then
// one agent with one board serves, and a client's `trials` trials go through it, submitted in
// batches of 100, with the submit latency of `probe` trials and QueueSummary's latency measured
// before; the tracker's RSS is read before the flood, at its peak and after the watchers end.
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
    auto registered = [&board]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.registered == 1;
    };
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
      if (i % kStreamsPerChannel == 0) {
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
    auto all = [&board, want]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(board.mu) {
      return board.acked >= want;
    };
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
  ok = FloodScenario(tracker, dir, true, watchers, unrunnable, trials, probe, drain, &flooded) &&
       ok;
  std::fprintf(stderr, "tracker_bench: flood: done\n");
  std::printf("tracker_bench --flood: %u CPUs, tracker %s\n", std::thread::hardware_concurrency(),
              tracker.c_str());
  std::printf("flood: %d WatchJobs streams of every job (1 in 5 reads, the rest never do) and %d "
              "jobs pinned to an offline board\n",
              watchers, unrunnable);
  std::printf("%-10s %14s %10s %13s %24s %10s\n", "scenario", "submit (s)", "trials/s",
              "QueueSummary", "tracker RSS (MiB)", "cut off");
  std::printf("%-10s %14s %10s %13s %24s %10s\n", "", absl::StrCat(probe, " trials").c_str(),
              "1 board", "", "before/flooded/after", "");
  for (const auto& [name, f] : {std::pair<const char*, const FloodFigures*>{"baseline", &base},
                                {"flood", &flooded}}) {
    std::printf("%-10s %14.3f %10.0f %10.2f ms %24s %10s\n", name, f->submit_s, f->trials_per_s,
                f->summary_ms,
                absl::StrFormat("%.0f/%.0f/%.0f", f->rss_before_mib, f->rss_peak_mib,
                                f->rss_after_mib)
                    .c_str(),
                f->slow == 0 ? "-" : absl::StrCat(f->cut, " of ", f->slow).c_str());
  }
  std::printf(
      "trials/s: the %d probe trials (queued while no board served) and %d more in batches of "
      "100, through one simulated board that answers at once; cut off: never-reading streams "
      "ended with RESOURCE_EXHAUSTED.\n",
      3 * probe, trials);
  if (!ok || g_tracker_hung) {
    std::fprintf(stderr, "tracker_bench: FAILED (see above)\n");
    return 1;
  }
  return 0;
}

int Main(int argc, char** argv) {
  bool quick = false;
  bool flood = false;
  std::string tracker_flag;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0) {
      quick = true;
    } else if (std::strcmp(argv[i], "--flood") == 0) {
      flood = true;
    } else if (std::strcmp(argv[i], "--tracker") == 0 && i + 1 < argc) {
      tracker_flag = argv[++i];
    } else if (std::strncmp(argv[i], "--tracker=", 10) == 0) {
      tracker_flag = argv[i] + 10;
    } else {
      std::fprintf(stderr, "usage: tracker_bench [--quick] [--flood] [--tracker PATH]\n");
      return 2;
    }
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
  std::string dir = buffer.data();

  if (flood) return FloodMain(tracker, dir, quick);

  const int submit_total = quick ? 2000 : 50000;
  const int dispatch_total = quick ? 200 : 5000;
  const int samples = quick ? 20 : 200;
  const std::vector<int> agent_counts = quick ? std::vector<int>{10, 20} : std::vector<int>{100, 1000};

  std::vector<Row> rows;
  bool ok = true;
  for (int batch : {100, 1000}) {
    Row row;
    if (!SubmitScenario(tracker, dir, batch, submit_total, &row)) ok = false;
    std::fprintf(stderr, "tracker_bench: %s: done\n", row.name.c_str());
    rows.push_back(row);
  }
  for (int agents : agent_counts) {
    Row row;
    if (!DispatchScenario(tracker, dir, agents, dispatch_total, samples, &row)) ok = false;
    std::fprintf(stderr, "tracker_bench: %s: done\n", row.name.c_str());
    rows.push_back(row);
  }

  std::printf("tracker_bench: %u CPUs, tracker %s\n", std::thread::hardware_concurrency(),
              tracker.c_str());
  std::printf("%-26s %8s %9s %11s %12s %12s\n", "scenario", "trials", "seconds", "trials/s",
              "dispatch p50", "dispatch p99");
  for (const Row& r : rows) {
    std::string p50 = r.p50_ms < 0 ? "-" : absl::StrFormat("%.2f ms", r.p50_ms);
    std::string p99 = r.p99_ms < 0 ? "-" : absl::StrFormat("%.2f ms", r.p99_ms);
    std::printf("%-26s %8lld %9.2f %11.0f %12s %12s\n", r.name.c_str(),
                static_cast<long long>(r.trials), r.seconds,
                r.seconds > 0 ? static_cast<double>(r.trials) / r.seconds : 0.0, p50.c_str(),
                p99.c_str());
  }
  std::printf(
      "dispatch rows: trials/s is offer -> result -> ack with every board busy (batches of 1,000);\n"
      "latency is SubmitTrials returning -> offer at the agent, one trial at a time, boards idle\n"
      "(%d samples; offers that beat the response count as 0 ms: ",
      samples);
  for (size_t i = 2; i < rows.size(); ++i) std::printf("%s%d", i > 2 ? ", " : "", rows[i].early);
  std::printf(").\n");
  if (!ok || g_tracker_hung) {
    std::fprintf(stderr, "tracker_bench: FAILED (see above)\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace benchfarm

int main(int argc, char** argv) { return benchfarm::Main(argc, argv); }
