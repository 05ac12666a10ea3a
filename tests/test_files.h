// Files a gtest test reads and writes: what it ships with (its runfiles) and a directory of its
// own under TEST_TMPDIR.
#ifndef BENCHFARM_TESTS_TEST_FILES_H_
#define BENCHFARM_TESTS_TEST_FILES_H_

#include <string>

namespace benchfarm::testing {

// A file the test ships with (base/data_roots.h: its runfiles), or "" if none is there.
std::string Runfiles(const std::string& path);

// $TEST_TMPDIR/<the running test's name>, made if missing (a failed expectation if it cannot be).
std::string TestDir();

}  // namespace benchfarm::testing

#endif  // BENCHFARM_TESTS_TEST_FILES_H_
