#include "agent/attempt_log.h"

#include <string>

#include "absl/strings/match.h"
#include "base/bounded_text.h"
#include "catalog/trial.h"
#include "gtest/gtest.h"

namespace benchfarm::agent {
namespace {

TEST(AttemptLog, EventsAreStampedLines) {
  AttemptLog log;
  EXPECT_TRUE(log.empty());
  const absl::Time at = absl::FromUnixSeconds(1800000000) + absl::Milliseconds(42);
  log.Add("build: cc -c trial.c", at);
  log.Add("trial.c:1: error: expected ';'\ntrial.c:2: note: here\n", at);
  EXPECT_EQ(log.Text(),
            "08:00:00.042 build: cc -c trial.c\n"
            "08:00:00.042 trial.c:1: error: expected ';'\ntrial.c:2: note: here\n");
}

TEST(AttemptLog, BinaryAndHugeOutputStaysValidAndBounded) {
  AttemptLog log;
  log.Add("build: first");
  std::string binary;
  for (int i = 0; i < (3 << 20); ++i) binary.push_back(static_cast<char>(i * 131 % 256));
  log.Add(binary);
  log.Add(binary);
  log.Add("result: COMPILE_DEVICE: compile failed");
  const std::string text = log.Text();
  EXPECT_LE(text.size(), catalog::kMaxAttemptLogBytes);
  EXPECT_EQ(base::ValidUtf8(text), text);  // valid UTF-8, no NUL
  EXPECT_TRUE(absl::StrContains(text, "build: first"));
  EXPECT_TRUE(absl::StrContains(text, "bytes cut here"));
  EXPECT_TRUE(absl::EndsWith(text, "result: COMPILE_DEVICE: compile failed\n"));
}

}  // namespace
}  // namespace benchfarm::agent
