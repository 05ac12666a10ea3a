// The tracker's /metrics over HTTP (tests/http_probe.h) and its gRPC health service, on an
// in-process server.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/build_info.h"
#include "google/protobuf/unknown_field_set.h"
#include "grpcpp/generic/generic_stub.h"
#include "tests/http_probe.h"
#include "tracker/service_test_fixture.h"

namespace benchfarm::tracker {
namespace {

using ::benchfarm::testing::HttpGet;
using ::benchfarm::testing::ParseSamples;

TEST_F(ServiceTest, MetricsAreServedOverHttp) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_TRUE(metrics_.Serve("127.0.0.1:0").ok());
  const int port = metrics_.port();
  ASSERT_NE(port, 0);

  std::vector<std::string> alice = Submit("alice", "r1", std::vector<v1::Trial>(3, MakeTrial()));
  std::vector<std::string> bob = Submit("bob", "r1", std::vector<v1::Trial>(2, MakeTrial()));
  auto agent = Agent(Registration("agent-1", {Board("b1")}));
  // One infrastructure error (re-queued), two results (one measured, one a wrong answer), one
  // job left running.
  std::optional<v1::JobOffer> offer = agent->NextOffer();
  ASSERT_TRUE(offer.has_value());
  ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, v1::FLASH_ERROR));
  for (v1::ErrorCode code : {v1::NO_ERROR, v1::WRONG_ANSWER}) {
    offer = agent->NextOffer();
    ASSERT_TRUE(offer.has_value());
    ASSERT_NO_FATAL_FAILURE(agent->Report(*offer, code));
  }
  std::optional<v1::JobOffer> running = agent->NextOffer();
  ASSERT_TRUE(running.has_value());
  // Cancel one of the two still queued, one that never ran (so no wait time to observe).
  std::vector<std::string> all = alice;
  all.insert(all.end(), bob.begin(), bob.end());
  std::string queued;
  for (const std::string& id : all) {
    v1::Job job = Get(id);
    if (job.state() == v1::QUEUED && job.attempts_size() == 0) queued = id;
  }
  ASSERT_FALSE(queued.empty());
  ASSERT_TRUE(Cancel(queued).ok());

  // The dispatcher brings the gauges up to date every dispatch period; results and cancellations
  // reach the histograms at once.
  const std::map<std::string, double> expected = {
      {"benchfarm_tracker_trials_submitted_total{client=\"alice\"}", 3},
      {"benchfarm_tracker_trials_submitted_total{client=\"bob\"}", 2},
      // Finished jobs by their result's error code: a failure is not counted as a success.
      {"benchfarm_tracker_jobs_finished_total{board_kind=\"host\",error_code=\"NO_ERROR\"}", 1},
      {"benchfarm_tracker_jobs_finished_total{board_kind=\"host\",error_code=\"WRONG_ANSWER\"}", 1},
      {"benchfarm_tracker_jobs_finished_total{board_kind=\"host\",error_code=\"CANCELLED\"}", 1},
      {"benchfarm_tracker_jobs{state=\"QUEUED\"}", 1},
      {"benchfarm_tracker_jobs{state=\"RUNNING\"}", 1},
      {"benchfarm_tracker_boards{state=\"BUSY\"}", 1},
      {"benchfarm_tracker_queue_depth{board_kind=\"host\",priority=\"0\"}", 1},
      {"benchfarm_tracker_requeues_total", 1},
      {"benchfarm_tracker_lease_expiries_total", 0},
      {"benchfarm_tracker_unstable_results_total", 0},
      {"benchfarm_tracker_job_wait_seconds_count", 2},
      {"benchfarm_tracker_job_run_seconds_count", 2},
  };
  std::string response;
  std::map<std::string, double> samples;
  auto matches = [&] {
    response = HttpGet(port, "/metrics");
    samples = ParseSamples(response);
    for (const auto& [series, value] : expected) {
      auto it = samples.find(series);
      if (it == samples.end() || it->second != value) return false;
    }
    return true;
  };
  bool matched = WaitFor(matches);
  ASSERT_TRUE(absl::StartsWith(response, "HTTP/1.1 200") ||
              absl::StartsWith(response, "HTTP/1.0 200"))
      << response.substr(0, 200);
  for (const auto& [series, value] : expected) {
    auto it = samples.find(series);
    ASSERT_NE(it, samples.end()) << series << " missing from\n" << response;
    EXPECT_EQ(it->second, value) << series;
  }
  EXPECT_TRUE(matched);
  // Histogram buckets of the wait and run times: every observation is in the +Inf bucket.
  EXPECT_EQ(samples["benchfarm_tracker_job_wait_seconds_bucket{le=\"+Inf\"}"], 2);
  EXPECT_GE(samples["benchfarm_tracker_job_run_seconds_sum"], 0);
  EXPECT_NE(response.find("# TYPE benchfarm_tracker_job_wait_seconds histogram"),
            std::string::npos);
  EXPECT_NE(response.find("# TYPE benchfarm_tracker_jobs_finished_total counter"),
            std::string::npos);
  // Which build serves: one series, 1, its labels the version and commit --version prints.
  const std::string build_info = absl::StrCat("benchfarm_build_info{commit=\"", base::Commit(),
                                              "\",version=\"", base::Version(), "\"}");
  EXPECT_EQ(samples[build_info], 1) << build_info << " missing from\n" << response;
}

TEST_F(ServiceTest, HealthServiceAnswersServing) {
  ASSERT_NO_FATAL_FAILURE(StartServer());
  ASSERT_NE(server_->GetHealthCheckService(), nullptr);
  // grpc.health.v1.Health/Check with an empty HealthCheckRequest (service ""), spoken through
  // the generic stub: Debian ships no health.proto. HealthCheckResponse.status is field 1.
  grpc::GenericStub stub(channel_);
  grpc::CompletionQueue cq;
  grpc::ClientContext context;
  context.set_deadline(Soon());
  grpc::Slice empty_request("");
  grpc::ByteBuffer request(&empty_request, 1);
  grpc::ByteBuffer response;
  grpc::Status status;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> call =
      stub.PrepareUnaryCall(&context, "/grpc.health.v1.Health/Check", request, &cq);
  call->StartCall();
  int tag = 1;
  call->Finish(&response, &status, &tag);
  void* got = nullptr;
  bool ok = false;
  ASSERT_EQ(cq.AsyncNext(&got, &ok, Soon()), grpc::CompletionQueue::GOT_EVENT);
  ASSERT_EQ(got, &tag);
  ASSERT_TRUE(ok);
  ASSERT_TRUE(status.ok()) << status.error_message();
  std::vector<grpc::Slice> slices;
  ASSERT_TRUE(response.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& s : slices)
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  google::protobuf::UnknownFieldSet fields;
  ASSERT_TRUE(fields.ParseFromString(bytes));
  ASSERT_EQ(fields.field_count(), 1);
  EXPECT_EQ(fields.field(0).number(), 1);
  EXPECT_EQ(fields.field(0).varint(), 1u);  // SERVING
  cq.Shutdown();
  while (cq.Next(&got, &ok)) {
  }
}

}  // namespace
}  // namespace benchfarm::tracker
