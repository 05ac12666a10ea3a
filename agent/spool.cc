#include "agent/spool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/files.h"
#include "spdlog/spdlog.h"

namespace benchfarm::agent {
namespace {

// Job ids come from the tracker; anything but [A-Za-z0-9._-] is escaped so a file name is safe.
std::string FileNameOf(const std::string& job_id) {
  std::string out;
  for (char c : job_id) {
    if (isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') {
      out.push_back(c);
    } else {
      absl::StrAppend(&out, "%", absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ResultSpool>> ResultSpool::Open(const std::string& dir) {
  absl::Status made = base::MakeDirs(dir);
  if (!made.ok()) return absl::Status(made.code(), absl::StrCat("spool: ", made.message()));
  std::unique_ptr<ResultSpool> spool(new ResultSpool(dir));
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) {
    return absl::InternalError(absl::StrCat("spool: cannot read ", dir, ": ", strerror(errno)));
  }
  std::vector<std::string> names;
  while (struct dirent* e = readdir(d)) names.push_back(e->d_name);
  closedir(d);
  for (const std::string& name : names) {
    if (!absl::EndsWith(name, ".result")) continue;
    std::string path = dir + "/" + name;
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    v1::JobResult result;
    if (!in || !result.ParseFromString(bytes.str()) || result.job_id().empty()) {
      spdlog::warn("spool: {} is unreadable; moved aside as .corrupt", path);
      std::rename(path.c_str(), (path + ".corrupt").c_str());
      continue;
    }
    spool->results_[result.job_id()] = result;
  }
  return spool;
}

std::string ResultSpool::PathOf(const std::string& job_id) const {
  return absl::StrCat(dir_, "/", FileNameOf(job_id), ".result");
}

absl::Status ResultSpool::Add(const v1::JobResult& result) {
  const std::string path = PathOf(result.job_id());
  const std::string tmp = path + ".tmp";
  std::string bytes;
  result.SerializeToString(&bytes);
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return absl::InternalError(absl::StrCat("spool: ", tmp, ": ", strerror(errno)));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return absl::InternalError(absl::StrCat("spool: writing ", tmp, ": ", strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd) != 0 || close(fd) != 0 || rename(tmp.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("spool: storing ", path, ": ", strerror(errno)));
  }
  // The rename itself is durable once the directory is synced.
  int dfd = open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)fsync(dfd);
    close(dfd);
  }
  absl::MutexLock lock(&mu_);
  results_[result.job_id()] = result;
  return absl::OkStatus();
}

void ResultSpool::Remove(const std::string& job_id, int attempt) {
  absl::MutexLock lock(&mu_);
  auto it = results_.find(job_id);
  if (it == results_.end() || it->second.attempt() != attempt) return;
  results_.erase(it);
  unlink(PathOf(job_id).c_str());
}

std::map<std::string, int> ResultSpool::Attempts() const {
  absl::MutexLock lock(&mu_);
  std::map<std::string, int> out;
  for (const auto& [id, r] : results_) out[id] = r.attempt();
  return out;
}

std::optional<v1::JobResult> ResultSpool::Get(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  auto it = results_.find(job_id);
  if (it == results_.end()) return std::nullopt;
  return it->second;
}

std::vector<v1::JobResult> ResultSpool::All() const {
  absl::MutexLock lock(&mu_);
  std::vector<v1::JobResult> out;
  for (const auto& [id, r] : results_) out.push_back(r);
  return out;
}

size_t ResultSpool::size() const {
  absl::MutexLock lock(&mu_);
  return results_.size();
}

bool ResultSpool::Contains(const std::string& job_id) const {
  absl::MutexLock lock(&mu_);
  return results_.count(job_id) > 0;
}

}  // namespace benchfarm::agent
