// PostgresServer, the tests' throwaway PostgreSQL: it starts, answers, survives Kill() and
// Restart(), stops, says what is missing when PostgreSQL is not installed, and leaves no server
// behind when the test process dies (kill -9).

#include "tests/postgres_server.h"

#include <postgresql/libpq-fe.h>  // /usr/include/postgresql: see //third_party:pq
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/process_exit.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "process/subprocess.h"

namespace benchfarm::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

bool Answers(int port) {
  return PQping(absl::StrCat("host=127.0.0.1 port=", port, " dbname=postgres connect_timeout=2")
                    .c_str()) != PQPING_NO_RESPONSE;
}

TEST(PostgresServer, StartsAnswersSurvivesKillAndRestartAndStops) {
  absl::StatusOr<std::unique_ptr<PostgresServer>> started = PostgresServer::Start();
  ASSERT_TRUE(started.ok()) << started.status();
  PostgresServer& server = **started;
  const int port = server.port();
  EXPECT_TRUE(server.running());
  absl::StatusOr<std::string> conninfo = server.CreateDatabase("farm");
  ASSERT_TRUE(conninfo.ok()) << conninfo.status();
  EXPECT_EQ(*conninfo, absl::StrCat("host=127.0.0.1 port=", port, " dbname=farm user=benchfarm"));
  ASSERT_TRUE(server.Query("farm", "CREATE TABLE t (x INT); INSERT INTO t VALUES (42)").ok());
  EXPECT_EQ(server.Query("farm", "SHOW fsync").value_or(""), "on");
  EXPECT_EQ(server.Query("farm", "SHOW listen_addresses").value_or(""), "127.0.0.1");
  EXPECT_EQ(server.CreateDatabase("farm").status().code(), absl::StatusCode::kInternal);

  server.Kill();
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(Answers(port));
  EXPECT_EQ(server.Query("farm", "SELECT 1").status().code(), absl::StatusCode::kUnavailable);
  ASSERT_TRUE(server.Restart().ok()) << server.LogTail();
  EXPECT_EQ(server.port(), port);
  EXPECT_EQ(server.Query("farm", "SELECT x FROM t").value_or(""), "42");
  ASSERT_TRUE(server.Restart().ok()) << server.LogTail();  // a clean stop this time
  EXPECT_EQ(server.Query("farm", "SELECT x FROM t").value_or(""), "42");
  EXPECT_THAT(server.LogTail(), HasSubstr("database system is ready to accept connections"));

  EXPECT_TRUE(server.Stop().ok());
  EXPECT_FALSE(server.running());
  EXPECT_FALSE(Answers(port));
  started->reset();  // destroying a stopped server is fine
}

TEST(PostgresServer, MissingBinariesFailStartNamingThePackage) {
  PostgresServerOptions options;
  options.bin_dir = "/nonexistent/postgresql/15/bin";
  absl::StatusOr<std::unique_ptr<PostgresServer>> server = PostgresServer::Start(options);
  ASSERT_FALSE(server.ok());
  EXPECT_EQ(server.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(server.status().message(), AllOf(HasSubstr("postgresql-15"),
                                               HasSubstr("/nonexistent/postgresql/15/bin/initdb")));
}

// A test process killed with its server running takes the server along (PR_SET_PDEATHSIG).
TEST(PostgresServer, AKilledTestProcessLeavesNoServerBehind) {
  const char* srcdir = std::getenv("TEST_SRCDIR");
  ASSERT_NE(srcdir, nullptr);
  process::SubprocessOptions options;
  options.argv = {absl::StrCat(srcdir, "/benchfarm/tests/postgres_server_child")};
  absl::StatusOr<std::unique_ptr<process::Subprocess>> child = process::Subprocess::Start(options);
  ASSERT_TRUE(child.ok()) << child.status();
  const int out = (*child)->TakeStdout();
  std::string line;
  char c;
  while (read(out, &c, 1) == 1 && c != '\n') line.push_back(c);
  close(out);
  // "port N DATA_DIR"
  std::vector<std::string> words = absl::StrSplit(line, ' ');
  int port = 0;
  ASSERT_TRUE(words.size() == 3 && words[0] == "port" && absl::SimpleAtoi(words[1], &port)) << line;
  const std::string dir = std::filesystem::path(words[2]).parent_path();
  ASSERT_TRUE(Answers(port));

  // Only the test process is killed: not its process group, which the server does not share.
  ASSERT_EQ(kill((*child)->pid(), SIGKILL), 0);
  ASSERT_TRUE((*child)->WaitExit(absl::Now() + absl::Seconds(10)).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (Answers(port) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(Answers(port)) << "the server on port " << port << " outlived its test process";
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
}

}  // namespace
}  // namespace benchfarm::testing
