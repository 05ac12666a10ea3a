// Where a benchfarm program finds the files it ships with (the crt tree, project templates,
// deploy/pki.sh): its Bazel runfiles (bazel-bin/X/X.runfiles/benchfarm, $RUNFILES_DIR,
// $TEST_SRCDIR), or the tree `./farm install-bin PREFIX` installs beside it
// (PREFIX/share/benchfarm). The executable's own path comes from /proc/self/exe, so this holds
// however the program was started (from $PATH, a symlink, any working directory).
#ifndef BENCHFARM_BASE_DATA_ROOTS_H_
#define BENCHFARM_BASE_DATA_ROOTS_H_

#include <string>
#include <vector>

namespace benchfarm::base {

// The candidate directories, most specific first (argv0: the program's argv[0]).
std::vector<std::string> DataRoots(const char* argv0);

// The first root/relative that exists, else "". The working directory is tried first.
std::string FindDataFile(const char* argv0, const std::string& relative);

// `path` made absolute against the working directory.
std::string AbsolutePath(const std::string& path);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_DATA_ROOTS_H_
