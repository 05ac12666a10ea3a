#include "base/data_roots.h"

#include <unistd.h>

#include <cstdlib>

namespace benchfarm::base {
namespace {

std::string SelfExecutable() {
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
  if (n <= 0) return "";
  return std::string(path, static_cast<size_t>(n));
}

}  // namespace

std::vector<std::string> DataRoots(const char* argv0) {
  std::vector<std::string> roots;
  const std::string exe = SelfExecutable();
  if (argv0 != nullptr) roots.push_back(std::string(argv0) + ".runfiles/benchfarm");
  if (!exe.empty()) roots.push_back(exe + ".runfiles/benchfarm");
  for (const char* var : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(var)) roots.push_back(std::string(dir) + "/benchfarm");
  }
  if (!exe.empty()) roots.push_back(exe.substr(0, exe.rfind('/')) + "/../share/benchfarm");
  return roots;
}

std::string FindDataFile(const char* argv0, const std::string& relative) {
  if (access(relative.c_str(), F_OK) == 0) return AbsolutePath(relative);
  for (const std::string& root : DataRoots(argv0)) {
    const std::string path = root + "/" + relative;
    if (access(path.c_str(), F_OK) == 0) return path;
  }
  return "";
}

std::string AbsolutePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return std::string(cwd) + "/" + path;
}

}  // namespace benchfarm::base
