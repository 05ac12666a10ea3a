// Tests of logging.h: the level comes from the flag, else the environment, else info; bad levels
// are refused with where they came from; lines on stderr carry time, level letter and program.

#include "base/logging.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "spdlog/spdlog.h"

namespace benchfarm::base {
namespace {

using ::testing::HasSubstr;
using ::testing::MatchesRegex;

class LoggingTest : public ::testing::Test {
 protected:
  void SetUp() override { unsetenv(kLogLevelEnv); }
  void TearDown() override { unsetenv(kLogLevelEnv); }
};

TEST_F(LoggingTest, ParsesEveryLevelName) {
  EXPECT_EQ(*ParseLogLevel("trace"), spdlog::level::trace);
  EXPECT_EQ(*ParseLogLevel("debug"), spdlog::level::debug);
  EXPECT_EQ(*ParseLogLevel("INFO"), spdlog::level::info);
  EXPECT_EQ(*ParseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("Warning"), spdlog::level::warn);
  EXPECT_EQ(*ParseLogLevel("error"), spdlog::level::err);
  EXPECT_EQ(*ParseLogLevel("err"), spdlog::level::err);
  EXPECT_EQ(*ParseLogLevel("critical"), spdlog::level::critical);
  EXPECT_EQ(*ParseLogLevel("off"), spdlog::level::off);
  absl::StatusOr<spdlog::level::level_enum> bad = ParseLogLevel("loud");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("\"loud\""));
}

TEST_F(LoggingTest, DefaultsToInfoUnderTheProgramsName) {
  ASSERT_TRUE(InitLogging("tracker").ok());
  EXPECT_EQ(spdlog::default_logger()->name(), "tracker");
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);
}

TEST_F(LoggingTest, FlagBeatsEnvironment) {
  setenv(kLogLevelEnv, "warn", 1);
  ASSERT_TRUE(InitLogging("agent").ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::warn);
  ASSERT_TRUE(InitLogging("agent", "debug").ok());
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::debug);
}

TEST_F(LoggingTest, BadLevelSaysWhereItCameFromAndLeavesInfo) {
  absl::Status from_flag = InitLogging("agent", "chatty");
  EXPECT_EQ(from_flag.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(from_flag.message()), HasSubstr("--log_level"));
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);

  setenv(kLogLevelEnv, "nope", 1);
  absl::Status from_env = InitLogging("agent");
  EXPECT_EQ(from_env.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(from_env.message()), HasSubstr("$BENCHFARM_LOG_LEVEL"));
  EXPECT_EQ(spdlog::default_logger()->level(), spdlog::level::info);
}

TEST_F(LoggingTest, WritesOneLinePerMessageToStderr) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path = std::string(tmp != nullptr ? tmp : "/tmp") + "/logging_test.err";
  const int file = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(file, 0);
  fflush(stderr);
  const int saved = dup(STDERR_FILENO);
  ASSERT_GE(saved, 0);
  ASSERT_EQ(dup2(file, STDERR_FILENO), STDERR_FILENO);
  close(file);

  ASSERT_TRUE(InitLogging("tracker", "info").ok());
  spdlog::info("listening on {}:{}", "127.0.0.1", 7070);
  spdlog::debug("not shown at info");
  spdlog::error("database {} is locked", "/tmp/x.db");

  fflush(stderr);
  dup2(saved, STDERR_FILENO);
  close(saved);
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string time = "[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}";
  EXPECT_THAT(text.str(), MatchesRegex(time + " I tracker: listening on 127\\.0\\.0\\.1:7070\n" +
                                       time + " E tracker: database /tmp/x\\.db is locked\n"));
}

}  // namespace
}  // namespace benchfarm::base
