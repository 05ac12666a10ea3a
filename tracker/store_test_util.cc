#include "tracker/store_test_util.h"

#include <sys/stat.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"

namespace benchfarm::tracker {

std::string TestDir() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string base = tmp != nullptr ? tmp : "/tmp";
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  // Parametrized tests are named "Prefix/Suite.Case/Param".
  std::string dir = absl::StrCat(
      base, "/",
      absl::StrReplaceAll(absl::StrCat(info->test_suite_name(), ".", info->name()), {{"/", "_"}}));
  std::string command = absl::StrCat("rm -rf '", dir, "'");
  if (std::system(command.c_str()) != 0) ADD_FAILURE() << "cannot clear " << dir;
  if (mkdir(dir.c_str(), 0755) != 0) ADD_FAILURE() << "cannot create " << dir;
  return dir;
}

v1::Job MakeJob(const std::string& job_id, const std::string& client_id,
                const std::string& board_kind, const std::string& op, v1::JobState state,
                int priority) {
  v1::Job job;
  job.set_job_id(job_id);
  job.set_client_id(client_id);
  job.set_state(state);
  v1::Trial* trial = job.mutable_trial();
  trial->set_board_kind(board_kind);
  trial->set_priority(priority);
  if (op.empty()) {
    trial->mutable_op()->set_c_source("int f(void) { return 0; }");
  } else {
    trial->mutable_op()->mutable_template_op()->set_op(op);
    (*trial->mutable_op()->mutable_template_op()->mutable_knobs())["tile_m"] = "8";
  }
  trial->add_args()->add_shape(16);
  trial->set_seed(42);
  job.mutable_submitted_at()->set_seconds(1700000000);
  return job;
}

std::vector<std::string> JobIds(const std::vector<StoredJob>& jobs) {
  std::vector<std::string> ids;
  for (const StoredJob& stored : jobs) ids.push_back(stored.job.job_id());
  return ids;
}

}  // namespace benchfarm::tracker
