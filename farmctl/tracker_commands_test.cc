// farmctl's tracker commands against an in-process tracker (tests/in_process_tracker.h: a real
// tracker with its SQLite file in TEST_TMPDIR, served on 127.0.0.1:0) and a
// fake agent on its Connect stream that returns results: submit, watch, results (table, JSON,
// AutoTVM records), cancel, boards and queue, as a user reads them; a tracker that is down; and
// the pure flag and file parsing. Waiting is on conditions with a deadline.
#include "farmctl/tracker_commands.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "catalog/operator.h"
#include "farmctl/autotvm_record.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "google/protobuf/util/time_util.h"
#include "grpcpp/grpcpp.h"
#include "proto/benchfarm.grpc.pb.h"
#include "tests/in_process_tracker.h"

namespace benchfarm::farmctl {
namespace {

using google::protobuf::util::TimeUtil;

constexpr uint64_t kFailingSeed = 666;  // the fake agent reports WRONG_ANSWER for this seed
// For this seed the fake agent's costs agree within 0.2 % and it reports the board's clock:
// 1e-4 * (1 + 0.001 i) s at 100 MHz, so the median 100.1 us is 10,010 cycles.
constexpr uint64_t kStableSeed = 7;

std::chrono::system_clock::time_point Soon() {
  return std::chrono::system_clock::now() + std::chrono::seconds(20);
}

std::vector<std::string> Lines(const std::string& text) {
  return absl::StrSplit(text, '\n', absl::SkipEmpty());
}

// A fake agent: registers its boards, then answers every offer for a board not in `hold` with a
// result (WRONG_ANSWER for kFailingSeed, else one cost per repeat), and keeps offers for held
// boards running (acknowledged, never finished). Records cancellations it is sent.
class FakeAgent {
 public:
  FakeAgent(v1::TrackerAgent::StubInterface* stub, const std::string& agent_id,
            std::vector<v1::BoardRegistration> boards, std::set<std::string> hold = {})
      : hold_(std::move(hold)) {
    context_.set_deadline(Soon() + std::chrono::seconds(40));
    stream_ = stub->Connect(&context_);
    v1::AgentMessage m;
    m.mutable_register_()->set_agent_id(agent_id);
    for (v1::BoardRegistration& b : boards) *m.mutable_register_()->add_boards() = std::move(b);
    EXPECT_TRUE(stream_->Write(m));
    v1::TrackerMessage reply;
    EXPECT_TRUE(stream_->Read(&reply));
    EXPECT_TRUE(reply.has_registered()) << reply.DebugString();
    thread_ = std::thread([this] { Run(); });
  }

  ~FakeAgent() {
    context_.TryCancel();
    thread_.join();
  }

  std::vector<std::string> cancels() {
    absl::MutexLock lock(&mu_);
    return cancels_;
  }

  static v1::BoardRegistration Board(const std::string& id, const std::string& kind) {
    v1::BoardRegistration b;
    b.set_board_id(id);
    b.set_kind(kind);
    return b;
  }

 private:
  void Run() {
    v1::TrackerMessage m;
    while (stream_->Read(&m)) {
      if (m.has_cancel()) {
        absl::MutexLock lock(&mu_);
        cancels_.push_back(m.cancel().job_id());
        continue;
      }
      if (!m.has_offer()) continue;
      const v1::JobOffer& offer = m.offer();
      v1::AgentMessage reply;
      if (hold_.count(offer.board_id()) != 0) {
        reply.mutable_ack()->set_job_id(offer.job_id());
        if (!stream_->Write(reply)) return;
        continue;
      }
      v1::JobResult* result = reply.mutable_result();
      result->set_job_id(offer.job_id());
      result->set_attempt(offer.attempt());
      v1::Result* r = result->mutable_result();
      r->set_board_id(offer.board_id());
      r->set_firmware_hash("00112233445566ff");
      if (offer.trial().seed() == kFailingSeed) {
        r->set_error_code(v1::WRONG_ANSWER);
        r->set_message("output differs from matmul_reference");
      } else if (offer.trial().seed() == kStableSeed) {
        int repeat = std::max(offer.trial().measure().repeat(), 1);
        for (int i = 0; i < repeat; ++i) r->add_costs_s(1e-4 * (1 + 0.001 * i));
        r->set_cpu_hz(1e8);
        r->set_wall_over_cpu(1.02);
        r->mutable_measured()->set_number(offer.trial().measure().number());
        r->mutable_measured()->set_repeats(repeat);
        r->mutable_measured()->set_rounds(1);
        r->mutable_measured()->set_stop("fixed");
      } else {
        int repeat = std::max(offer.trial().measure().repeat(), 1);
        for (int i = 0; i < repeat; ++i) r->add_costs_s(1e-4 * (i + 1));
      }
      r->mutable_stages()->set_build_s(1.5);
      r->mutable_stages()->set_flash_s(0.25);
      r->mutable_stages()->set_handshake_s(0.125);
      r->mutable_stages()->set_measure_s(0.125);
      *r->mutable_finished_at() = TimeUtil::GetCurrentTime();
      if (!stream_->Write(reply)) return;
    }
  }

  const std::set<std::string> hold_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriterInterface<v1::AgentMessage, v1::TrackerMessage>> stream_;
  std::thread thread_;
  absl::Mutex mu_;
  std::vector<std::string> cancels_ ABSL_GUARDED_BY(mu_);
};

class TrackerCommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tracker::ServiceOptions service_options;
    service_options.dispatch_period = absl::Milliseconds(20);
    // Board kinds: those agents register.
    server_ = std::make_unique<testing::InProcessTracker>(
        absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                     ::testing::UnitTest::GetInstance()->current_test_info()->name(), ".db"),
        tracker::JobQueueOptions(), service_options);
    ASSERT_TRUE(server_->Start().ok());
    channel_ = grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials());
    agents_ = v1::TrackerAgent::NewStub(channel_);
    stub_ = server_->client();
    tracker_.stub = stub_;
    tracker_.address = server_->address();
    tracker_.timeout = absl::Seconds(20);
  }

  void TearDown() override { server_->Stop(); }

  v1::Trial Matmul(const std::vector<std::string>& knobs, uint64_t seed = 1,
                   const std::string& kind = "host-process") {
    TrialFlags flags;
    flags.kind = kind;
    flags.op = "matmul";
    flags.knobs = knobs;
    flags.seed = seed;
    flags.repeat = 3;
    absl::StatusOr<v1::Trial> trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
    EXPECT_TRUE(trial.ok()) << trial.status();
    return *trial;
  }

  std::vector<std::string> SubmitTrials(const std::vector<v1::Trial>& trials,
                                        const std::string& client = "alice") {
    v1::SubmitTrialsRequest request;
    request.set_client_id(client);
    request.set_request_id(NewRequestId());
    for (const v1::Trial& t : trials) *request.add_trials() = t;
    std::ostringstream out;
    absl::StatusOr<std::vector<std::string>> ids = Submit(tracker_, request, out);
    EXPECT_TRUE(ids.ok()) << ids.status();
    if (!ids.ok()) return {};
    EXPECT_EQ(out.str(), absl::StrCat(absl::StrJoin(*ids, "\n"), "\n"));
    return *ids;
  }

  v1::Job GetJob(const std::string& id) {
    v1::GetJobRequest request;
    request.set_job_id(id);
    v1::Job job;
    grpc::ClientContext context;
    context.set_deadline(Soon());
    EXPECT_TRUE(stub_->GetJob(&context, request, &job).ok());
    return job;
  }

  // Waits (with a deadline, no fixed sleeps) until the job reaches `state`.
  bool WaitForState(const std::string& id, v1::JobState state) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (absl::Now() < deadline) {
      if (GetJob(id).state() == state) return true;
      absl::SleepFor(absl::Milliseconds(10));
    }
    return false;
  }

  std::unique_ptr<testing::InProcessTracker> server_;
  std::shared_ptr<grpc::Channel> channel_;
  v1::Tracker::Stub* stub_ = nullptr;
  std::unique_ptr<v1::TrackerAgent::Stub> agents_;
  TrackerClient tracker_;
};

TEST_F(TrackerCommandsTest, SubmitWatchAndResultsInEveryFormat) {
  FakeAgent agent(agents_.get(), "agent-1", {FakeAgent::Board("hp0", "host-process")});
  std::vector<std::string> ids =
      SubmitTrials({Matmul({"tile_m=4", "order=ijk"}), Matmul({"tile_n=16"}, kFailingSeed),
                    Matmul({"tile_m=8"}, kStableSeed)});
  ASSERT_EQ(ids.size(), 3u);

  std::ostringstream watch;
  WatchOptions options;
  options.job_ids = ids;
  ASSERT_TRUE(Watch(tracker_, options, watch).ok());
  std::set<std::string> done;
  for (const std::string& line : Lines(watch.str())) {
    EXPECT_TRUE(absl::StrContains(line, " host-process/matmul")) << line;
    if (absl::StrContains(line, " DONE ")) done.insert(line);
  }
  ASSERT_EQ(done.size(), 3u) << watch.str();
  bool saw_cost = false, saw_error = false, saw_stable = false;
  for (const std::string& line : done) {
    if (absl::StrContains(line, ids[0])) {
      // The median and its interval: 100, 200, 300 us is known only to +-50 %.
      saw_cost = absl::StrContains(
          line, "DONE host-process/matmul on hp0 attempt 1 200 us +-50 % UNSTABLE");
    } else if (absl::StrContains(line, ids[1])) {
      saw_error = absl::StrContains(line, "WRONG_ANSWER: output differs from matmul_reference");
    } else {
      saw_stable = absl::EndsWith(line, " 100.1 us +-0.1 % = 10,010 cycles");
    }
  }
  EXPECT_TRUE(saw_cost && saw_error && saw_stable) << watch.str();

  // Table.
  std::ostringstream table;
  ResultsOptions results;
  ASSERT_TRUE(PrintResults(tracker_, results, table).ok());
  std::vector<std::string> rows = Lines(table.str());
  ASSERT_EQ(rows.size(), 4u) << table.str();
  EXPECT_TRUE(absl::StartsWith(rows[0], "JOB ")) << rows[0];
  EXPECT_TRUE(absl::StrContains(rows[0], "RESULT")) << rows[0];
  EXPECT_TRUE(absl::StartsWith(rows[1], ids[0])) << table.str();
  EXPECT_TRUE(absl::StrContains(rows[1], "tile_m=4,order=ijk")) << rows[1];
  EXPECT_TRUE(absl::EndsWith(rows[1], "200 us +-50 % UNSTABLE")) << rows[1];
  EXPECT_TRUE(absl::StrContains(rows[2], "tile_n=16")) << rows[2];
  EXPECT_TRUE(absl::StrContains(rows[2], "WRONG_ANSWER")) << rows[2];
  EXPECT_TRUE(absl::EndsWith(rows[3], "100.1 us +-0.1 % = 10,010 cycles")) << rows[3];
  EXPECT_FALSE(absl::StrContains(rows[3], "UNSTABLE")) << rows[3];

  // Filters and --limit.
  std::ostringstream filtered;
  results.op = "conv2d";
  ASSERT_TRUE(PrintResults(tracker_, results, filtered).ok());
  EXPECT_EQ(Lines(filtered.str()).size(), 1u) << filtered.str();  // the header only
  results.op.clear();
  results.limit = 1;
  std::ostringstream limited;
  ASSERT_TRUE(PrintResults(tracker_, results, limited).ok());
  EXPECT_EQ(Lines(limited.str()).size(), 2u) << limited.str();
  results.limit = 0;

  // get: one job in full.
  std::ostringstream shown;
  ASSERT_TRUE(ShowJobs(tracker_, {ids[2], ids[0]}, false, shown).ok());
  for (const char* want :
       {"result     100.1 us +-0.1 % = 10,010 cycles\n",
        "costs      3: mean 100.1 us, median 100.1 us, min 100 us, max 100.2 us, stddev 100 ns, CV "
        "0.1 %\n",
        "interval   [100 us, 100.2 us] at 75.0 % (+-0.1 %; unstable past +-3.0 %)\n",
        "measured   number 10, 3 repeats in 1 round, stopped: fixed\n",
        "clock      100 MHz, median 10,010 cycles, wall/CPU 1.020\n",
        "measure    fixed: number 10, repeat 3\n", "knobs      tile_m=8\n",
        "result     200 us +-50 % UNSTABLE\n",
        "interval   [100 us, 300 us] at 75.0 % (+-50 %; UNSTABLE: unstable past +-3.0 %)\n"}) {
    EXPECT_TRUE(absl::StrContains(shown.str(), want)) << want << "\n" << shown.str();
  }
  std::ostringstream shown_json;
  ASSERT_TRUE(ShowJobs(tracker_, {ids[2]}, true, shown_json).ok());
  v1::ListResultsResponse one;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(shown_json.str(), &one).ok());
  ASSERT_EQ(one.jobs_size(), 1);
  EXPECT_EQ(one.jobs(0).result().stats().count(), 3);
  absl::Status unknown = ShowJobs(tracker_, {"j-no-such-job"}, false, shown);
  EXPECT_TRUE(absl::IsNotFound(unknown)) << unknown;
  EXPECT_TRUE(absl::StrContains(unknown.message(), "GetJob j-no-such-job")) << unknown;

  // JSON: one ListResultsResponse.
  std::ostringstream json;
  results.format = ResultsFormat::kJson;
  ASSERT_TRUE(PrintResults(tracker_, results, json).ok());
  v1::ListResultsResponse parsed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &parsed).ok()) << json.str();
  ASSERT_EQ(parsed.jobs_size(), 3);
  EXPECT_EQ(parsed.jobs(0).job_id(), ids[0]);
  EXPECT_EQ(parsed.jobs(1).result().autotvm_error_no(), 5);
  EXPECT_TRUE(absl::StrContains(json.str(), "\"autotvm_error_no\": 5")) << json.str();
  // Each result's quality (the tracker's stats of its costs) and how it was measured.
  const v1::CostStats& wide = parsed.jobs(0).result().stats();
  EXPECT_EQ(wide.count(), 3);
  EXPECT_DOUBLE_EQ(wide.median_s(), 2e-4);
  EXPECT_DOUBLE_EQ(wide.min_s(), 1e-4);
  EXPECT_DOUBLE_EQ(wide.max_s(), 3e-4);
  EXPECT_NEAR(wide.rel_half_width(), 0.5, 1e-9);
  EXPECT_TRUE(wide.unstable());
  const v1::Result& stable = parsed.jobs(2).result();
  EXPECT_FALSE(stable.stats().unstable());
  EXPECT_EQ(stable.cpu_hz(), 1e8);
  EXPECT_EQ(stable.wall_over_cpu(), 1.02);
  EXPECT_EQ(stable.measured().stop(), "fixed");
  EXPECT_EQ(stable.measured().repeats(), 3);
  for (const char* field :
       {"\"stats\": {", "\"median_s\": ", "\"rel_half_width\": ", "\"unstable\": true",
        "\"ci_level\": ", "\"measured\": {", "\"cpu_hz\": 100000000", "\"wall_over_cpu\": 1.02"}) {
    EXPECT_TRUE(absl::StrContains(json.str(), field)) << field << "\n" << json.str();
  }

  // AutoTVM records: one JSON object per line, exactly record.encode's keys.
  std::ostringstream autotvm;
  results.format = ResultsFormat::kAutoTvm;
  ASSERT_TRUE(PrintResults(tracker_, results, autotvm).ok());
  std::vector<std::string> records = Lines(autotvm.str());
  ASSERT_EQ(records.size(), 3u) << autotvm.str();
  std::vector<google::protobuf::Struct> parsed_records(2);
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(records[i], &parsed_records[i]).ok())
        << records[i];
    std::set<std::string> keys;
    for (const auto& [k, v] : parsed_records[i].fields()) keys.insert(k);
    EXPECT_EQ(keys, (std::set<std::string>{"input", "config", "result", "version", "tvm_version"}));
    EXPECT_EQ(parsed_records[i].fields().at("version").number_value(), 0.2);
    const auto& input = parsed_records[i].fields().at("input").list_value();
    EXPECT_EQ(input.values(0).string_value(), "c -keys=cpu -model=host-process");
    EXPECT_EQ(input.values(1).string_value(),
              "benchfarm/matmul@" +
                  catalog::BuiltinKnobSpace().Find("matmul")->version());  // the version it ran
  }
  const auto& ok_result = parsed_records[0].fields().at("result").list_value();
  ASSERT_EQ(ok_result.values(0).list_value().values_size(), 3);
  EXPECT_DOUBLE_EQ(ok_result.values(0).list_value().values(2).number_value(), 3e-4);
  EXPECT_EQ(ok_result.values(1).number_value(), 0);
  EXPECT_DOUBLE_EQ(ok_result.values(2).number_value(), 2.0);  // build + flash + handshake + measure
  EXPECT_GT(ok_result.values(3).number_value(), 1.6e9);
  const auto& entity =
      parsed_records[0].fields().at("config").struct_value().fields().at("entity").list_value();
  ASSERT_EQ(entity.values_size(), 5);
  EXPECT_EQ(entity.values(0).list_value().values(0).string_value(), "tile_m");
  EXPECT_EQ(entity.values(0).list_value().values(1).string_value(), "ot");
  EXPECT_EQ(entity.values(0).list_value().values(2).number_value(), 4);
  EXPECT_EQ(entity.values(4).list_value().values(2).string_value(), "ijk");
  EXPECT_EQ(
      parsed_records[0].fields().at("config").struct_value().fields().at("index").number_value(),
      2 + 3 * 6 + 4 * 36 + 2 * 216);

  const auto& failed = parsed_records[1].fields().at("result").list_value();
  ASSERT_EQ(failed.values(0).list_value().values_size(), 1);
  EXPECT_EQ(failed.values(0).list_value().values(0).number_value(), 1e9);
  EXPECT_EQ(failed.values(1).number_value(), 5);  // WRONG_ANSWER
}

// AutoTVM target per core: each record's target names the core its kind's boards registered
// (BoardRegistration.cpu, from their package's data), a host-process board's none.
TEST_F(TrackerCommandsTest, AutoTvmRecordsNameTheirKindsCore) {
  v1::BoardRegistration m3 = FakeAgent::Board("m3-0", "qemu-mps2-an385");
  m3.set_cpu("cortex-m3");
  v1::BoardRegistration m4 = FakeAgent::Board("m4-0", "qemu-netduinoplus2");
  m4.set_cpu("cortex-m4");
  FakeAgent agent(agents_.get(), "agent-1", {FakeAgent::Board("hp0", "host-process"), m3, m4});
  std::vector<std::string> ids = SubmitTrials({Matmul({"tile_m=4"}, 1, "host-process"),
                                               Matmul({"tile_m=4"}, 1, "qemu-mps2-an385"),
                                               Matmul({"tile_m=4"}, 1, "qemu-netduinoplus2")});
  ASSERT_EQ(ids.size(), 3u);
  for (const std::string& id : ids) ASSERT_TRUE(WaitForState(id, v1::DONE)) << id;

  absl::StatusOr<BoardCores> cores = FetchBoardCores(tracker_);
  ASSERT_TRUE(cores.ok()) << cores.status();
  EXPECT_EQ(*cores, (BoardCores{{"host-process", ""},
                                {"qemu-mps2-an385", "cortex-m3"},
                                {"qemu-netduinoplus2", "cortex-m4"}}));

  std::ostringstream autotvm, notes;
  ResultsOptions results;
  results.format = ResultsFormat::kAutoTvm;
  results.notes = &notes;
  ASSERT_TRUE(PrintResults(tracker_, results, autotvm).ok());
  std::map<std::string, std::string> target_of_kind;
  for (const std::string& line : Lines(autotvm.str())) {
    google::protobuf::Struct record;
    ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(line, &record).ok()) << line;
    const std::string target = record.fields().at("input").list_value().values(0).string_value();
    target_of_kind[ParseAutoTvmTarget(target).model] = target;
  }
  EXPECT_EQ(
      target_of_kind,
      (std::map<std::string, std::string>{
          {"host-process", "c -keys=cpu -model=host-process"},
          {"qemu-mps2-an385", "c -keys=arm_cpu,cpu -mcpu=cortex-m3 -model=qemu-mps2-an385"},
          {"qemu-netduinoplus2", "c -keys=arm_cpu,cpu -mcpu=cortex-m4 -model=qemu-netduinoplus2"}}))
      << autotvm.str();
  EXPECT_EQ(notes.str(), "");  // every kind has a registered board

  // `farmctl boards` shows each board's core.
  std::ostringstream boards;
  ASSERT_TRUE(PrintBoards(tracker_, "qemu-mps2-an385", false, boards).ok());
  std::vector<std::string> rows = Lines(boards.str());
  ASSERT_EQ(rows.size(), 2u) << boards.str();
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[1], ' ', absl::SkipEmpty()))[2],
            "cortex-m3")
      << boards.str();
}

TEST_F(TrackerCommandsTest, CancelQueuedAndRunningJobs) {
  FakeAgent agent(agents_.get(), "agent-1", {FakeAgent::Board("slow0", "nucleo")}, {"slow0"});
  std::vector<std::string> ids = SubmitTrials({Matmul({}, 1, "nucleo"), Matmul({}, 2, "nucleo")});
  ASSERT_EQ(ids.size(), 2u);
  ASSERT_TRUE(WaitForState(ids[0], v1::RUNNING));

  std::ostringstream queue;
  ASSERT_TRUE(PrintQueue(tracker_, false, queue).ok());
  std::vector<std::string> rows = Lines(queue.str());
  ASSERT_EQ(rows.size(), 2u) << queue.str();
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[1], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"nucleo", "1", "0", "0", "1", "p0:1", "1"}))
      << queue.str();

  // The queued job first: cancelling the running one frees the board for it otherwise.
  std::ostringstream out;
  ASSERT_TRUE(Cancel(tracker_, {ids[1], ids[0]}, out).ok());
  // The state as a user reads it, not the enum's name (CANCELLED_STATE).
  EXPECT_EQ(out.str(), absl::StrCat(ids[1], " CANCELLED\n", ids[0], " CANCELLED\n"));
  EXPECT_EQ(GetJob(ids[1]).state(), v1::CANCELLED_STATE);
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (agent.cancels().empty() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
  EXPECT_EQ(agent.cancels(), std::vector<std::string>{ids[0]});

  // Again: the tracker's own errors, naming the job; every id is tried.
  std::ostringstream again;
  absl::Status status = Cancel(tracker_, {"j-no-such-job", ids[0]}, again);
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_TRUE(absl::StrContains(status.message(), "CancelJob j-no-such-job")) << status;
  EXPECT_EQ(again.str(), "");
  status = Cancel(tracker_, {ids[0]}, again);
  EXPECT_TRUE(absl::IsFailedPrecondition(status)) << status;

  // A watch of a finished job ends at once with its state.
  std::ostringstream watch;
  WatchOptions options;
  options.job_ids = {ids[1]};
  ASSERT_TRUE(Watch(tracker_, options, watch).ok());
  EXPECT_TRUE(absl::StrContains(watch.str(), ids[1] + " CANCELLED nucleo/matmul")) << watch.str();
  std::ostringstream shown;
  ASSERT_TRUE(ShowJobs(tracker_, {ids[0]}, false, shown).ok());
  EXPECT_TRUE(absl::StrContains(shown.str(), "state      CANCELLED\n")) << shown.str();
  EXPECT_TRUE(absl::StrContains(shown.str(), "result     cancelled by the client\n"))
      << shown.str();
  std::ostringstream table;
  ResultsOptions results;
  ASSERT_TRUE(PrintResults(tracker_, results, table).ok());
  EXPECT_TRUE(absl::StrContains(table.str(), " CANCELLED ")) << table.str();
  EXPECT_FALSE(absl::StrContains(table.str(), "CANCELLED_STATE")) << table.str();
  options.job_ids = {"j-no-such-job"};
  EXPECT_TRUE(absl::IsNotFound(Watch(tracker_, options, watch)));
}

TEST_F(TrackerCommandsTest, BoardsAndQueueTablesAndJson) {
  v1::BoardRegistration hp0 = FakeAgent::Board("hp0", "host-process");
  (*hp0.mutable_labels())["usb"] = "1";
  (*hp0.mutable_labels())["desk"] = "a";
  hp0.set_slots(2);
  hp0.set_flashes(7);
  FakeAgent agent(agents_.get(), "agent-1", {hp0, FakeAgent::Board("hp1", "host-process")});
  v1::BoardRegistration st0 = FakeAgent::Board("st0", "nucleo");
  st0.set_timing("cycles");  // an emulated board under the cycle model
  st0.set_cpu("cortex-m4");
  FakeAgent other(agents_.get(), "agent-2", {st0}, {"st0"});

  std::ostringstream boards;
  ASSERT_TRUE(PrintBoards(tracker_, "", false, boards).ok());
  std::vector<std::string> rows = Lines(boards.str());
  ASSERT_EQ(rows.size(), 4u) << boards.str();
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[0], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"BOARD", "KIND", "CPU", "TIMING", "LABELS", "STATE", "AGENT",
                                      "JOB", "JOBS/SLOTS", "FLASHES", "FAILS"}));
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[1], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"hp0", "host-process", "-", "-", "desk=a,usb=1", "IDLE",
                                      "agent-1", "-", "0/2", "7", "0"}))
      << boards.str();
  EXPECT_TRUE(absl::StartsWith(rows[2], "hp1 ")) << boards.str();
  EXPECT_TRUE(absl::StartsWith(rows[3], "st0 ")) << boards.str();

  // A job held on st0 shows on its board.
  std::vector<std::string> ids = SubmitTrials({Matmul({}, 1, "nucleo")});
  ASSERT_TRUE(WaitForState(ids[0], v1::RUNNING));
  std::ostringstream nucleo;
  ASSERT_TRUE(PrintBoards(tracker_, "nucleo", false, nucleo).ok());
  rows = Lines(nucleo.str());
  ASSERT_EQ(rows.size(), 2u) << nucleo.str();
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[1], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"st0", "nucleo", "cortex-m4", "cycles", "-", "BUSY",
                                      "agent-2", ids[0], "1/1", "0", "0"}))
      << nucleo.str();

  std::ostringstream json;
  ASSERT_TRUE(PrintBoards(tracker_, "host-process", true, json).ok());
  v1::ListBoardsResponse listed;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(json.str(), &listed).ok()) << json.str();
  EXPECT_EQ(listed.boards_size(), 2);
  EXPECT_TRUE(absl::StrContains(json.str(), "\"board_id\": \"hp0\"")) << json.str();

  std::ostringstream queue;
  ASSERT_TRUE(PrintQueue(tracker_, false, queue).ok());
  rows = Lines(queue.str());
  ASSERT_EQ(rows.size(), 4u) << queue.str();  // header, two kinds, TOTAL
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[0], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"KIND", "BOARDS", "FREE", "QUARANTINED", "QUEUED", "BY",
                                      "PRIORITY", "RUNNING"}));
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[1], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"host-process", "2", "2", "0", "0", "-", "0"}));
  EXPECT_EQ(std::vector<std::string>(absl::StrSplit(rows[3], ' ', absl::SkipEmpty())),
            (std::vector<std::string>{"TOTAL", "3", "2", "0", "0", "-", "1"}));

  std::ostringstream queue_json;
  ASSERT_TRUE(PrintQueue(tracker_, true, queue_json).ok());
  v1::QueueSummaryResponse summary;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(queue_json.str(), &summary).ok());
  EXPECT_EQ(summary.kinds_size(), 2);
}

TEST_F(TrackerCommandsTest, ClientWideWatchSeesOnlyThatClient) {
  FakeAgent agent(agents_.get(), "agent-1", {FakeAgent::Board("hp0", "host-process")});
  std::ostringstream out;
  absl::Status watched;
  WatchOptions options;
  options.client_id = "bob";
  options.max_events = 3;
  absl::Notification finished;
  std::thread watcher([&] {
    watched = Watch(tracker_, options, out);
    finished.Notify();
  });
  // The watch only sees what happens after it starts: keep submitting until it has had enough.
  std::vector<std::string> alice_ids;
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!finished.WaitForNotificationWithTimeout(absl::Milliseconds(50)) &&
         absl::Now() < deadline) {
    SubmitTrials({Matmul({})}, "bob");
    for (const std::string& id : SubmitTrials({Matmul({})}, "alice")) alice_ids.push_back(id);
  }
  watcher.join();
  ASSERT_TRUE(watched.ok()) << watched;
  std::vector<std::string> lines = Lines(out.str());
  EXPECT_EQ(lines.size(), 3u) << out.str();
  for (const std::string& line : lines) {
    for (const std::string& id : alice_ids) EXPECT_FALSE(absl::StrContains(line, id + " ")) << line;
  }
}

TEST_F(TrackerCommandsTest, TrackerErrorsNameTheField) {
  v1::SubmitTrialsRequest request;
  request.set_client_id("alice");
  request.set_request_id("r1");
  *request.add_trials() = Matmul({}, 1, "no-such-kind");
  std::ostringstream out;
  absl::StatusOr<std::vector<std::string>> ids = Submit(tracker_, request, out);
  ASSERT_FALSE(ids.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(ids.status())) << ids.status();
  EXPECT_TRUE(absl::StrContains(ids.status().message(), "SubmitTrials: trials[0].board_kind"))
      << ids.status();
  EXPECT_EQ(out.str(), "");
}

// ---- a tracker that is not there --------------------------------------------------------------

// A local port nothing listens on: bound, then closed.
int ClosedPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return 1;
  }
  close(fd);
  return ntohs(addr.sin_port);
}

TEST(TrackerDown, EveryCommandIsUnavailableNamingTheAddress) {
  std::string address = absl::StrCat("127.0.0.1:", ClosedPort());
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  auto stub = v1::Tracker::NewStub(channel);
  TrackerClient tracker;
  tracker.stub = stub.get();
  tracker.address = address;
  tracker.timeout = absl::Seconds(10);
  const std::string want = "cannot reach tracker at " + address;
  std::ostringstream out;

  std::vector<absl::Status> statuses;
  statuses.push_back(PrintBoards(tracker, "", false, out));
  statuses.push_back(PrintQueue(tracker, true, out));
  v1::SubmitTrialsRequest request;
  request.set_client_id("c");
  request.set_request_id("r");
  statuses.push_back(Submit(tracker, request, out).status());
  statuses.push_back(Watch(tracker, WatchOptions{}, out));
  WatchOptions named;
  named.job_ids = {"j-1"};
  statuses.push_back(Watch(tracker, named, out));
  statuses.push_back(PrintResults(tracker, ResultsOptions{}, out));
  statuses.push_back(Cancel(tracker, {"j-1"}, out));
  for (const absl::Status& s : statuses) {
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_TRUE(absl::StartsWith(s.message(), want)) << s;
  }
  EXPECT_EQ(out.str(), "");
}

// ---- flags and files --------------------------------------------------------------------------

TEST(TrialFromFlags, BuildsTheTrial) {
  TrialFlags flags;
  flags.kind = "nucleo-f746zg";
  flags.op = "matmul";
  flags.knobs = {"tile_m=16", "order=ikj", "unroll=2"};
  flags.number = 20;
  flags.repeat = 5;
  flags.min_repeat_ms = 50;
  flags.cooldown_ms = 10;
  flags.timeout_ms = 3000;
  flags.check = false;
  flags.seed = 9;
  flags.priority = 70;
  flags.board = "st0";
  flags.labels = {"rack=2", "usb=hub-1"};
  absl::StatusOr<v1::Trial> trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->board_kind(), "nucleo-f746zg");
  EXPECT_EQ(trial->op().template_op().op(), "matmul");
  EXPECT_EQ(trial->op().template_op().knobs().at("tile_m"), "16");
  EXPECT_EQ(trial->op().template_op().knobs().at("order"), "ikj");
  EXPECT_EQ(trial->op().template_op().knobs().size(), 3u);
  EXPECT_EQ(trial->args_size(), 0);  // no --shape: the tracker fills in the op's defaults
  EXPECT_EQ(trial->measure().number(), 20);
  EXPECT_EQ(trial->measure().repeat(), 5);
  EXPECT_EQ(trial->measure().min_repeat_ms(), 50);
  EXPECT_EQ(trial->measure().cooldown_ms(), 10);
  EXPECT_EQ(trial->measure().timeout_ms(), 3000);
  EXPECT_FALSE(trial->check_outputs());
  EXPECT_EQ(trial->seed(), 9u);
  EXPECT_EQ(trial->priority(), 70);
  EXPECT_EQ(trial->board_id(), "st0");
  EXPECT_EQ(trial->labels().at("usb"), "hub-1");

  flags.shapes = "1024,1024,1024";
  flags.op = "add";
  flags.knobs = {"unroll=8"};
  trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->args(0).shape(0), 1024);

  flags.op = "my_op";  // not in the table: knobs passed on as given (the tracker checks them)
  flags.knobs = {"vec=4", "layout=nhwc"};
  trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->op().template_op().knobs().at("vec"), "4");
  EXPECT_EQ(trial->op().template_op().knobs().at("layout"), "nhwc");
}

TEST(TrialFromFlags, AdaptiveFlagsSetMeasureOptions) {
  TrialFlags flags;
  flags.kind = "host-process";
  flags.op = "matmul";
  flags.target_pct = 1;
  flags.budget_ms = 2500;
  flags.max_repeat = 64;
  absl::StatusOr<v1::Trial> trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_DOUBLE_EQ(trial->measure().target_rel_ci(), 0.01);
  EXPECT_EQ(trial->measure().budget_ms(), 2500);
  EXPECT_EQ(trial->measure().max_repeat(), 64);
  flags.target_pct = 0.5;
  flags.budget_ms = 0;
  flags.max_repeat = 0;
  trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_DOUBLE_EQ(trial->measure().target_rel_ci(), 0.005);
  EXPECT_EQ(trial->measure().budget_ms(), 0);
  // The fixed mode by default.
  flags.target_pct = 0;
  trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->measure().target_rel_ci(), 0);

  auto error = [&](double pct, int64_t budget, int64_t max_repeat) {
    TrialFlags f = flags;
    f.target_pct = pct;
    f.budget_ms = budget;
    f.max_repeat = max_repeat;
    absl::StatusOr<v1::Trial> t = TrialFromFlags(f, catalog::BuiltinKnobSpace());
    EXPECT_TRUE(absl::IsInvalidArgument(t.status())) << t.status();
    return std::string(t.status().message());
  };
  EXPECT_TRUE(absl::StrContains(error(-1, 0, 0), "--target: -1 is not in 0..50"))
      << error(-1, 0, 0);
  EXPECT_TRUE(absl::StrContains(error(60, 0, 0), "--target"));
  EXPECT_TRUE(absl::StrContains(error(1, -5, 0), "--budget_ms: -5 is not in 0..3600000"));
  EXPECT_TRUE(absl::StrContains(error(1, 0, 2000), "--max_repeat: 2000 is not in 0..1024"));
  EXPECT_TRUE(absl::StrContains(error(0, 100, 0), "--budget-ms: only with --target"));
  EXPECT_TRUE(absl::StrContains(error(0, 0, 10), "--max-repeat: only with --target"));

  v1::MeasureOptions m;
  ASSERT_TRUE(SetAdaptive(2, 0, 30, &m).ok());
  EXPECT_DOUBLE_EQ(m.target_rel_ci(), 0.02);
  EXPECT_EQ(m.max_repeat(), 30);
}

TEST(ResultCostText, MedianIntervalUnstableAndCycles) {
  v1::Result r;
  EXPECT_EQ(ResultCostText(r), "-");
  for (double c : {1e-3, 1e-3, 1e-3}) r.add_costs_s(c);
  EXPECT_EQ(ResultCostText(r), "1 ms +-0.0 %");  // computed from the costs (no stats stored)
  r.set_cpu_hz(168e6);
  EXPECT_EQ(ResultCostText(r), "1 ms +-0.0 % = 168,000 cycles");
  // Stored stats win (the tracker's, with its threshold).
  r.mutable_stats()->set_count(3);
  r.mutable_stats()->set_median_s(2e-3);
  r.mutable_stats()->set_rel_half_width(0.05);
  r.mutable_stats()->set_unstable(true);
  EXPECT_EQ(ResultCostText(r), "2 ms +-5.0 % UNSTABLE = 336,000 cycles");
}

TEST(TrialFromFlags, OneOffCSource) {
  TrialFlags flags;
  flags.kind = "host-process";
  flags.c_source_path = "scale.c";
  flags.c_source = "int my_scale;";
  flags.entry = "my_scale";
  flags.reference = "my_scale_ref";
  flags.shapes = "64,64";
  absl::StatusOr<v1::Trial> trial = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(trial->op().c_source(), "int my_scale;");
  EXPECT_EQ(trial->op().entry_function(), "my_scale");
  EXPECT_EQ(trial->op().reference_function(), "my_scale_ref");
  EXPECT_EQ(trial->args_size(), 2);
  TrialFlags bad = flags;
  bad.shapes.clear();
  EXPECT_TRUE(absl::StrContains(TrialFromFlags(bad, catalog::BuiltinKnobSpace()).status().message(),
                                "--shape: required with --c-source"));
  bad = flags;
  bad.reference.clear();
  EXPECT_TRUE(absl::StrContains(TrialFromFlags(bad, catalog::BuiltinKnobSpace()).status().message(),
                                "--reference"));
  bad = flags;
  bad.op = "matmul";
  EXPECT_TRUE(absl::StrContains(TrialFromFlags(bad, catalog::BuiltinKnobSpace()).status().message(),
                                "takes no --op"));
  // Its compile options: split at spaces, each on the allow-list.
  TrialFlags tuned = flags;
  tuned.cflags = " -O3  -funroll-loops ";
  trial = TrialFromFlags(tuned, catalog::BuiltinKnobSpace());
  ASSERT_TRUE(trial.ok()) << trial.status();
  EXPECT_EQ(std::vector<std::string>(trial->op().cflags().begin(), trial->op().cflags().end()),
            (std::vector<std::string>{"-O3", "-funroll-loops"}));
  bad = flags;
  bad.cflags = "-O3 -fplugin=evil.so";
  EXPECT_EQ(TrialFromFlags(bad, catalog::BuiltinKnobSpace()).status().message(),
            "--cflags: \"-fplugin=evil.so\" is refused: it loads a compiler plugin (code run at "
            "build time)");
  bad = flags;
  bad.c_source_path.clear();
  bad.op = "matmul";
  bad.cflags = "-O3";
  EXPECT_TRUE(absl::StrContains(TrialFromFlags(bad, catalog::BuiltinKnobSpace()).status().message(),
                                "--cflags: only with --c-source"));
}

TEST(TrialFromFlags, RejectsBadFlagsNamingThem) {
  auto error = [](TrialFlags flags) {
    absl::StatusOr<v1::Trial> t = TrialFromFlags(flags, catalog::BuiltinKnobSpace());
    EXPECT_FALSE(t.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(t.status())) << t.status();
    return std::string(t.status().message());
  };
  TrialFlags base;
  base.kind = "host-process";
  base.op = "matmul";
  TrialFlags f = base;
  f.kind.clear();
  EXPECT_TRUE(absl::StrContains(error(f), "--kind"));
  f = base;
  f.knobs = {"tile_q=4"};
  EXPECT_TRUE(absl::StrContains(error(f), "matmul has no knob \"tile_q\" (knobs: tile_m, tile_n"));
  f.knobs = {"tile_m=3"};
  EXPECT_TRUE(absl::StrContains(error(f), "tile_m=3: not one of 1, 2, 4, 8, 16, 32"));
  f.knobs = {"tile_m"};
  EXPECT_TRUE(absl::StrContains(error(f), "--knob: \"tile_m\" is not name=value"));
  f.knobs = {"tile_m=4", "tile_m=8"};
  EXPECT_TRUE(absl::StrContains(error(f), "tile_m given twice"));
  f = base;
  f.op = "my_op";
  f.shapes = "4,4";
  f.knobs = {"vec="};
  EXPECT_TRUE(absl::StrContains(error(f), "--knob vec=: no value"));
  f = base;
  f.shapes = "32xx2";
  EXPECT_TRUE(absl::StrContains(error(f), "--shape"));
  f = base;
  f.priority = 101;
  EXPECT_TRUE(absl::StrContains(error(f), "--priority: 101 is not in 0..100"));
  f = base;
  f.repeat = -1;
  EXPECT_TRUE(absl::StrContains(error(f), "--repeat"));
  f = base;
  f.labels = {"=x"};
  EXPECT_TRUE(absl::StrContains(error(f), "--label"));
}

TEST(ParseSubmitFile, TextFormatAndJson) {
  absl::StatusOr<v1::SubmitTrialsRequest> text = ParseSubmitFile("trials.textproto", R"(
    client_id: "alice"
    trials {
      board_kind: "host-process"
      op { template_op { op: "matmul" knobs { key: "tile_m" value: "8" } } }
      args { shape: [32, 32] } args { shape: [32, 32] } args { shape: [32, 32] }
      measure { number: 10 repeat: 3 }
    }
  )");
  ASSERT_TRUE(text.ok()) << text.status();
  EXPECT_EQ(text->client_id(), "alice");
  ASSERT_EQ(text->trials_size(), 1);
  EXPECT_EQ(text->trials(0).op().template_op().knobs().at("tile_m"), "8");

  absl::StatusOr<v1::SubmitTrialsRequest> json = ParseSubmitFile("trials.json", R"({
    "requestId": "r-7",
    "trials": [{"boardKind": "host-process", "op": {"templateOp": {"op": "add", "knobs": {"unroll": "4"}}},
                "args": [{"shape": ["1024"]}, {"shape": [1024]}, {"shape": [1024]}]}]})");
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(json->request_id(), "r-7");
  EXPECT_EQ(json->trials(0).op().template_op().knobs().at("unroll"), "4");
  EXPECT_EQ(json->trials(0).args(1).shape(0), 1024);

  absl::StatusOr<v1::SubmitTrialsRequest> bad =
      ParseSubmitFile("t.textproto", "trials { nope: 1 }");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "t.textproto:1:")) << bad.status();
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "nope")) << bad.status();
  bad = ParseSubmitFile("t.json", "{\"trials\": 3}");
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "t.json: not a SubmitTrialsRequest"))
      << bad.status();
}

}  // namespace
}  // namespace benchfarm::farmctl
