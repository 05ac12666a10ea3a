#include "tracker/store_test_util.h"

#include <sys/stat.h>

#include <cstdlib>
#include <optional>

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

v1::AttemptLog MakeLog(int attempt, const std::string& board_id, const std::string& text) {
  v1::AttemptLog log;
  log.set_attempt(attempt);
  log.set_board_id(board_id);
  log.set_text(text);
  return log;
}

WriteBatch LogBatch(const std::string& job_id, const v1::AttemptLog& log) {
  WriteBatch batch;
  batch.logs.push_back({job_id, log});
  return batch;
}

absl::Status UpgradedToAttemptLogs(Store& store) {
  absl::StatusOr<std::optional<StoredJob>> job = store.GetJob("a");
  if (!job.ok()) return job.status();
  absl::StatusOr<std::vector<v1::Operator>> ops = store.LoadOperators();
  if (!ops.ok()) return ops.status();
  if (!job->has_value() || ops->size() != 1) {
    return absl::InternalError("the upgrade lost job a or the operator");
  }
  absl::StatusOr<std::vector<v1::AttemptLog>> logs = store.GetAttemptLogs("a");
  if (!logs.ok()) return logs.status();
  if (!logs->empty()) return absl::InternalError("job a has logs before any was written");
  if (absl::Status s = store.Apply(LogBatch("a", MakeLog(1, "hp0", "build: ok\n"))); !s.ok()) {
    return s;
  }
  logs = store.GetAttemptLogs("a");
  if (!logs.ok()) return logs.status();
  if (logs->size() != 1) return absl::InternalError("the log written is not read back");
  return absl::OkStatus();
}

}  // namespace benchfarm::tracker
