// The tracker under a flood, through gRPC against an in-process server: 500 WatchJobs streams
// (490 watch everything and never read; 10 watch one client and read), 50,000 jobs that cannot
// run (40,000 pinned to a registered board that is offline, 10,000 pinned to labels only that
// board has), and then another client's 300 trials, run by a fake agent on a serving board.
//
// What must hold: every one of the other client's trials completes (within generous deadlines:
// no speed is asserted here — benchmarks/tracker_bench --flood prints the figures); the watchers
// that keep up see every event of their client's jobs; each watcher that never reads is cut off
// with RESOURCE_EXHAUSTED saying how far behind it was (and counted in
// benchfarm_tracker_watchers_cut_total); QueueSummary answers throughout and groups the waiting
// jobs by pin; and once the streams end, none is left open.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tracker/job_queue.h"
#include "tracker/metrics.h"
#include "tracker/service.h"
#include "tracker/sqlite_store.h"

namespace benchfarm::tracker {
namespace {

constexpr int kSlowWatchers = 490;
constexpr int kFastWatchers = 10;
constexpr int kPinnedToBoard = 40000;
constexpr int kPinnedToLabels = 10000;
constexpr int kTrials = 300;

std::chrono::system_clock::time_point In(absl::Duration d) {
  return std::chrono::system_clock::now() + absl::ToChronoMilliseconds(d);
}

v1::Trial MakeTrial(const std::string& board_id = "",
                    const std::map<std::string, std::string>& labels = {}) {
  v1::Trial t;
  t.set_board_kind("host");
  t.set_board_id(board_id);
  for (const auto& [k, v] : labels) (*t.mutable_labels())[k] = v;
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  for (int i = 0; i < 3; ++i) {
    t.add_args()->add_shape(16);
    t.mutable_args(i)->add_shape(16);
  }
  return t;
}

// A channel with a TCP connection of its own (distinct arguments are not shared).
std::shared_ptr<grpc::Channel> Channel(const std::string& address, int index) {
  grpc::ChannelArguments args;
  args.SetInt("benchfarm.test_channel", index);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

// The value of a counter or gauge without labels in the registry (-1 if absent).
double Sample(Metrics* metrics, const std::string& name) {
  for (const prometheus::MetricFamily& family : metrics->registry()->Collect()) {
    if (family.name != name || family.metric.empty()) continue;
    const prometheus::ClientMetric& m = family.metric[0];
    return family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return -1;
}

class ServiceFloodTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/flood.db";
    std::remove(path.c_str());
    absl::StatusOr<std::unique_ptr<SqliteStore>> store = SqliteStore::Open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(*store);
    JobQueueOptions options;
    options.known_kinds = {"host"};
    queue_ = std::make_unique<JobQueue>(store_.get(), &clock_, options);
    ASSERT_TRUE(queue_->Recover().ok());
    ServiceOptions service_options;
    service_options.dispatch_period = absl::Milliseconds(20);
    // Small buffers, so the flood overflows the streams that never read; no cancellation of a
    // cut stream before the test reads its status.
    service_options.watch_buffer_events = 2000;
    service_options.watch_cut_grace = absl::Minutes(10);
    service_ = std::make_unique<TrackerService>(queue_.get(), &metrics_, service_options);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    service_->AddTo(&builder);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    address_ = absl::StrCat("127.0.0.1:", port);
    client_ = v1::Tracker::NewStub(Channel(address_, 0));
    agents_ = v1::TrackerAgent::NewStub(Channel(address_, 1));
  }

  void TearDown() override {
    if (service_) service_->Stop();
    if (server_) server_->Shutdown(In(absl::Seconds(1)));
    if (queue_) (void)queue_->Flush();  // answers waiting for the store use the server and service
  }

  grpc::Status Submit(const std::string& client, const std::string& request,
                      const std::vector<v1::Trial>& trials, std::vector<std::string>* ids) {
    v1::SubmitTrialsRequest r;
    r.set_client_id(client);
    r.set_request_id(request);
    for (const v1::Trial& t : trials) *r.add_trials() = t;
    v1::SubmitTrialsResponse response;
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(60)));
    grpc::Status s = client_->SubmitTrials(&context, r, &response);
    if (ids != nullptr) ids->assign(response.job_ids().begin(), response.job_ids().end());
    return s;
  }

  // QueueSummary's view of kind "host", which must answer within 10 s.
  v1::KindSummary HostSummary() {
    v1::QueueSummaryResponse response;
    grpc::ClientContext context;
    context.set_deadline(In(absl::Seconds(10)));
    grpc::Status s = client_->QueueSummary(&context, v1::QueueSummaryRequest(), &response);
    EXPECT_TRUE(s.ok()) << s.error_message();
    for (const v1::KindSummary& k : response.kinds()) {
      if (k.board_kind() == "host") return k;
    }
    return v1::KindSummary();
  }

  base::RealClock clock_;
  Metrics metrics_;
  std::unique_ptr<SqliteStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<TrackerService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::string address_;
  std::unique_ptr<v1::Tracker::Stub> client_;
  std::unique_ptr<v1::TrackerAgent::Stub> agents_;
};

// One watcher stream and the client call behind it.
struct Watcher {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader;
};

TEST_F(ServiceFloodTest, SlowWatchersAreCutAndUnrunnableJobsCostOtherClientsNothing) {
  // Board b-off: registered, then its agent goes away (OFFLINE); it has label rack=gone.
  {
    grpc::ClientContext context;
    auto stream = agents_->Connect(&context);
    v1::AgentMessage hello;
    hello.mutable_register_()->set_agent_id("gone");
    v1::BoardRegistration* b = hello.mutable_register_()->add_boards();
    b->set_board_id("b-off");
    b->set_kind("host");
    (*b->mutable_labels())["rack"] = "gone";
    ASSERT_TRUE(stream->Write(hello));
    v1::TrackerMessage reply;
    ASSERT_TRUE(stream->Read(&reply));
    ASSERT_TRUE(reply.has_registered());
    stream->WritesDone();
    while (stream->Read(&reply)) {
    }
    ASSERT_TRUE(stream->Finish().ok());
  }
  const absl::Time offline_by = absl::Now() + absl::Seconds(30);
  while (HostSummary().boards_free() != 0 && absl::Now() < offline_by) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(HostSummary().boards_free(), 0);

  // The watchers: slow ones watch everything and never read (a connection per 49 of them);
  // fast ones watch client "other" and read everything.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<Watcher>> slow;
  for (int i = 0; i < kSlowWatchers; ++i) {
    if (i % 49 == 0) channels.push_back(Channel(address_, 100 + i));
    auto stub = v1::Tracker::NewStub(channels.back());
    auto w = std::make_unique<Watcher>();
    w->context.set_deadline(In(absl::Minutes(10)));
    w->reader = stub->WatchJobs(&w->context, v1::WatchJobsRequest());
    slow.push_back(std::move(w));
  }
  absl::Mutex mu;
  std::map<int, std::set<std::string>> done_seen;  // fast watcher -> jobs it saw DONE
  std::vector<std::unique_ptr<Watcher>> fast;
  std::vector<std::thread> readers;
  for (int i = 0; i < kFastWatchers; ++i) {
    auto stub = v1::Tracker::NewStub(Channel(address_, 1000 + i));
    auto w = std::make_unique<Watcher>();
    w->context.set_deadline(In(absl::Minutes(10)));
    v1::WatchJobsRequest request;
    request.set_client_id("other");
    w->reader = stub->WatchJobs(&w->context, request);
    readers.emplace_back([&mu, &done_seen, i, reader = w->reader.get()] {
      v1::JobEvent event;
      while (reader->Read(&event)) {
        if (event.job().state() != v1::DONE) continue;
        absl::MutexLock lock(&mu);
        done_seen[i].insert(event.job().job_id());
      }
    });
    fast.push_back(std::move(w));
  }
  const absl::Time opened_by = absl::Now() + absl::Seconds(60);
  while (Sample(&metrics_, "benchfarm_tracker_watchers") < kSlowWatchers + kFastWatchers &&
         absl::Now() < opened_by) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  ASSERT_EQ(Sample(&metrics_, "benchfarm_tracker_watchers"), kSlowWatchers + kFastWatchers);

  // The flood: 50,000 jobs that cannot run.
  for (int r = 0; r < kPinnedToBoard / 10000; ++r) {
    ASSERT_TRUE(Submit("flood", absl::StrCat("board", r),
                       std::vector<v1::Trial>(10000, MakeTrial("b-off")), nullptr)
                    .ok());
  }
  ASSERT_TRUE(Submit("flood", "labels",
                     std::vector<v1::Trial>(kPinnedToLabels, MakeTrial("", {{"rack", "gone"}})),
                     nullptr)
                  .ok());
  v1::KindSummary summary = HostSummary();
  EXPECT_EQ(summary.queued_by_priority().at(0), kPinnedToBoard + kPinnedToLabels);
  EXPECT_EQ(std::vector<std::string>(summary.waiting().begin(), summary.waiting().end()),
            (std::vector<std::string>{
                "50000 queued: no board of kind host is serving (offline or quarantined)",
                "40000 jobs pinned to board b-off (b-off OFFLINE)",
                "10000 jobs pinned to labels rack=gone (b-off OFFLINE)"}));

  // Another client's trials, run by an agent on a serving board.
  std::atomic<int> acked{0};
  grpc::ClientContext agent_context;
  agent_context.set_deadline(In(absl::Minutes(5)));
  auto agent = agents_->Connect(&agent_context);
  {
    v1::AgentMessage hello;
    hello.mutable_register_()->set_agent_id("serving");
    v1::BoardRegistration* b = hello.mutable_register_()->add_boards();
    b->set_board_id("b1");
    b->set_kind("host");
    ASSERT_TRUE(agent->Write(hello));
  }
  std::set<std::string> offered_ids;
  std::thread agent_thread([&agent, &acked, &offered_ids, &mu] {
    v1::TrackerMessage m;
    while (agent->Read(&m)) {
      if (m.has_offer()) {
        {
          absl::MutexLock lock(&mu);
          offered_ids.insert(m.offer().job_id());
        }
        v1::AgentMessage out;
        out.mutable_result()->set_job_id(m.offer().job_id());
        out.mutable_result()->set_attempt(m.offer().attempt());
        out.mutable_result()->mutable_result()->add_costs_s(1e-4);
        if (!agent->Write(out)) break;
      } else if (m.has_result_ack()) {
        ++acked;
      }
    }
  });
  std::set<std::string> trial_ids;
  for (int r = 0; r < kTrials / 100; ++r) {
    std::vector<std::string> ids;
    ASSERT_TRUE(
        Submit("other", absl::StrCat("t", r), std::vector<v1::Trial>(100, MakeTrial()), &ids).ok());
    trial_ids.insert(ids.begin(), ids.end());
  }
  ASSERT_EQ(trial_ids.size(), static_cast<size_t>(kTrials));
  const absl::Time done_by = absl::Now() + absl::Minutes(3);
  while (acked < kTrials && absl::Now() < done_by) {
    HostSummary();  // the tracker answers while it works (each call: at most 10 s)
    absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(acked, kTrials);
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(offered_ids, trial_ids);  // b1 ran exactly the other client's trials
  }
  summary = HostSummary();
  EXPECT_EQ(summary.queued_by_priority().at(0), kPinnedToBoard + kPinnedToLabels);
  EXPECT_EQ(summary.running(), 0);
  EXPECT_EQ(std::vector<std::string>(summary.waiting().begin(), summary.waiting().end()),
            (std::vector<std::string>{"40000 jobs pinned to board b-off (b-off OFFLINE)",
                                      "10000 jobs pinned to labels rack=gone (b-off OFFLINE)"}));

  // The fast watchers saw every trial finish.
  const absl::Time seen_by = absl::Now() + absl::Minutes(1);
  auto all_seen = [&] {
    absl::MutexLock lock(&mu);
    for (int i = 0; i < kFastWatchers; ++i) {
      if (done_seen[i] != trial_ids) return false;
    }
    return true;
  };
  while (!all_seen() && absl::Now() < seen_by) absl::SleepFor(absl::Milliseconds(20));
  EXPECT_TRUE(all_seen());

  // Every slow watcher was cut off, with RESOURCE_EXHAUSTED saying how far behind it was.
  int exhausted = 0;
  for (auto& w : slow) {
    v1::JobEvent event;
    while (w->reader->Read(&event)) {
    }
    grpc::Status s = w->reader->Finish();
    if (s.error_code() == grpc::RESOURCE_EXHAUSTED &&
        absl::StrContains(s.error_message(), "fell too far behind: 2001 events")) {
      ++exhausted;
    } else {
      ADD_FAILURE() << s.error_code() << ": " << s.error_message();
    }
  }
  EXPECT_EQ(exhausted, kSlowWatchers);
  EXPECT_EQ(Sample(&metrics_, "benchfarm_tracker_watchers_cut_total"), kSlowWatchers);

  // The fast watchers end when their client goes; then no stream is left.
  for (auto& w : fast) w->context.TryCancel();
  for (std::thread& t : readers) t.join();
  for (auto& w : fast) (void)w->reader->Finish();
  agent_context.TryCancel();
  agent_thread.join();
  (void)agent->Finish();
  const absl::Time closed_by = absl::Now() + absl::Seconds(30);
  while (Sample(&metrics_, "benchfarm_tracker_watchers") != 0 && absl::Now() < closed_by) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_EQ(Sample(&metrics_, "benchfarm_tracker_watchers"), 0);
}

}  // namespace
}  // namespace benchfarm::tracker
