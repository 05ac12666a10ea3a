#include "tracker/store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace benchfarm::tracker {

WriteBatch::JobWrite WriteBatch::JobWrite::Of(int64_t seq, bool insert, const v1::Job& job) {
  JobWrite write;
  write.seq = seq;
  write.insert = insert;
  write.job_id = job.job_id();
  write.client_id = job.client_id();
  write.board_kind = job.trial().board_kind();
  write.op = job.trial().op().template_op().op();
  write.state = job.state();
  write.priority = job.trial().priority();
  job.SerializeToString(&write.data);
  return write;
}

absl::StatusOr<std::vector<int64_t>> Store::InsertSubmission(const std::string& client_id,
                                                             const std::string& request_id,
                                                             const std::vector<v1::Job>& jobs) {
  absl::MutexLock lock(&insert_mu_);
  ASSIGN_OR_RETURN(int64_t seq, LastSeq());
  WriteBatch batch;
  WriteBatch::Submission& submission = batch.submissions.emplace_back();
  submission.client_id = client_id;
  submission.request_id = request_id;
  std::vector<int64_t> seqs;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (jobs[i].job_id().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("job ", i, " of submission (", client_id, ", ",
                                                     request_id, ") has no job_id"));
    }
    submission.job_ids.push_back(jobs[i].job_id());
    batch.jobs.push_back(WriteBatch::JobWrite::Of(++seq, true, jobs[i]));
    seqs.push_back(seq);
  }
  RETURN_IF_ERROR(Apply(batch));
  return seqs;
}

absl::Status Store::UpdateJob(const v1::Job& job) {
  if (job.job_id().empty()) return absl::InvalidArgumentError("UpdateJob: the job has no job_id");
  WriteBatch batch;
  batch.jobs.push_back(WriteBatch::JobWrite::Of(0, false, job));
  return Apply(batch);
}

absl::Status Store::UpsertBoard(const v1::Board& board) {
  if (board.board_id().empty()) {
    return absl::InvalidArgumentError("UpsertBoard: the board has no board_id");
  }
  WriteBatch batch;
  batch.boards.push_back(board);
  return Apply(batch);
}

int64_t FilesBytes(const v1::Operator& op) {
  int64_t bytes = 0;
  for (const auto& [name, content] : op.files()) {
    bytes += static_cast<int64_t>(name.size() + content.size());
  }
  return bytes;
}

void WithoutFiles(v1::Operator* op) {
  if (op->files_size() > 0) op->set_files_bytes(FilesBytes(*op));
  op->clear_files();
}

}  // namespace benchfarm::tracker
