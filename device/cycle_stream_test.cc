// CycleStream on a pipe written as the cycle-model plugin writes it: the greeting, intervals
// taken per call in order, a call's intervals counted exactly (too few, too many), malformed
// records, a stream that ends, the summary, and a writer that is not the plugin.

#include "device/cycle_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

namespace benchfarm::device {
namespace {

class Pipe {
 public:
  Pipe() {
    int fds[2];
    EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
    read_ = fds[0];
    write_ = fds[1];
  }
  ~Pipe() { Close(); }
  int TakeRead() { return std::exchange(read_, -1); }
  void Write(const std::string& text) {
    ASSERT_EQ(write(write_, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  }
  void Close() {
    if (write_ >= 0) close(write_);
    write_ = -1;
  }

 private:
  int read_ = -1, write_ = -1;
};

absl::Time Soon() { return absl::Now() + absl::Seconds(5); }

constexpr char kGreeting[] = "benchfarm-cycle-model 1 core=cortex-m3 regions=0\n";

// A stream whose plugin has greeted: `p` writes what the plugin would, `s` reads it.
class ReadyStream : public ::testing::Test {
 protected:
  void SetUp() override {
    p.Write(kGreeting);
    ASSERT_TRUE(s.WaitReady(Soon()).ok());
  }

  Pipe p;
  CycleStream s{p.TakeRead(), "board b0"};
};

TEST_F(ReadyStream, GreetsThenHandsOutEachCallsIntervalsInOrder) {
  EXPECT_EQ(s.core(), "cortex-m3");
  p.Write("interval 100 80\ninterval 110 81\n");
  absl::StatusOr<std::vector<ModeledInterval>> two = s.Take(2, Soon());
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ((*two)[0].cycles, 100u);
  EXPECT_EQ((*two)[1].instructions, 81u);
  // A record split across writes is whole when taken.
  p.Write("interval 12");
  p.Write("3 99\n");
  absl::StatusOr<std::vector<ModeledInterval>> one = s.Take(1, Soon());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].cycles, 123u);
  // Discard drops what came before the next call.
  p.Write("interval 1 1\n");
  absl::SleepFor(absl::Milliseconds(50));
  s.Discard();
  p.Write("interval 7 7\n");
  one = s.Take(1, Soon());
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)[0].cycles, 7u);
}

TEST_F(ReadyStream, ACallsIntervalsAreCountedExactly) {
  p.Write("interval 1 1\n");
  absl::StatusOr<std::vector<ModeledInterval>> few =
      s.Take(3, absl::Now() + absl::Milliseconds(200));
  ASSERT_FALSE(few.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(few.status())) << few.status();
  EXPECT_TRUE(absl::StrContains(few.status().message(),
                                "board b0: the cycle model reported 1 timed "
                                "intervals for 3 repeats"))
      << few.status();
  s.Discard();
  p.Write("interval 1 1\ninterval 2 2\ninterval 3 3\n");
  absl::StatusOr<std::vector<ModeledInterval>> many = s.Take(2, Soon());
  ASSERT_FALSE(many.ok());
  EXPECT_TRUE(absl::IsDataLoss(many.status())) << many.status();
  EXPECT_TRUE(absl::StrContains(many.status().message(), "reported 3 timed intervals for 2"))
      << many.status();
}

TEST_F(ReadyStream, AMalformedRecordIsDataLoss) {
  p.Write("interval x 1\n");
  absl::StatusOr<std::vector<ModeledInterval>> got = s.Take(1, Soon());
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(absl::IsDataLoss(got.status()));
  EXPECT_TRUE(absl::StrContains(got.status().message(), "malformed record: \"interval x 1\""))
      << got.status();
  s.Discard();
  p.Write(std::string(1000, 'z'));  // no newline: more than a record can be
  got = s.Take(1, Soon());
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(absl::StrContains(got.status().message(), "a line of over")) << got.status();
}

TEST_F(ReadyStream, AStreamThatEndsIsUnavailableAndKeepsItsSummary) {
  p.Write("interval 5 5\nend cycles=9 instructions=8 unmodeled=0 intervals=1\n");
  p.Close();
  absl::StatusOr<std::vector<ModeledInterval>> got = s.Take(2, Soon());
  ASSERT_FALSE(got.ok());
  EXPECT_TRUE(absl::IsUnavailable(got.status())) << got.status();
  EXPECT_TRUE(absl::StrContains(got.status().message(), "after 1 of 2")) << got.status();
  EXPECT_TRUE(s.Ended());
  EXPECT_EQ(s.Summary().at("cycles"), 9u);
  EXPECT_EQ(s.Summary().at("unmodeled"), 0u);
}

TEST(CycleStream, AWriterThatIsNotThePluginIsRefused) {
  {
    Pipe p;
    CycleStream s(p.TakeRead(), "board b0");
    p.Write("hello\n");
    absl::Status ready = s.WaitReady(Soon());
    EXPECT_TRUE(absl::IsFailedPrecondition(ready)) << ready;
    EXPECT_TRUE(absl::StrContains(ready.message(), "not its greeting: \"hello\"")) << ready;
  }
  {
    Pipe p;
    CycleStream s(p.TakeRead(), "board b0");
    p.Close();
    EXPECT_TRUE(absl::IsUnavailable(s.WaitReady(Soon())));
  }
  {
    Pipe p;
    CycleStream s(p.TakeRead(), "board b0");
    EXPECT_TRUE(absl::IsDeadlineExceeded(s.WaitReady(absl::Now() + absl::Milliseconds(100))));
  }
}

}  // namespace
}  // namespace benchfarm::device
