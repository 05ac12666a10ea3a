#include "base/process_stat.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <optional>

#include "gtest/gtest.h"

namespace benchfarm::base {
namespace {

TEST(ReadProcessStatTest, DescribesThisProcess) {
  std::optional<ProcessStat> st = ReadProcessStat(getpid());
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->pid, getpid());
  EXPECT_EQ(st->ppid, getppid());
  EXPECT_EQ(st->pgrp, getpgrp());
  EXPECT_EQ(st->session, getsid(0));
  EXPECT_EQ(st->state, 'R');
  EXPECT_GT(st->start_time, 0u);
  EXPECT_FALSE(st->name.empty());
  EXPECT_FALSE(ReadProcessStat(0).has_value());
  EXPECT_FALSE(ReadProcessStat(-1).has_value());
}

TEST(ReadProcessStatTest, CountsCpuTime) {
  const double before = ReadProcessStat(getpid())->cpu_seconds;
  volatile uint64_t x = 0;
  for (double spent = 0; spent < 0.05;) {
    for (int i = 0; i < 1000000; ++i) x = x + i;
    spent = ReadProcessStat(getpid())->cpu_seconds - before;
  }
  EXPECT_GE(ReadProcessStat(getpid())->cpu_seconds - before, 0.05);
}

bool Contains(const std::vector<ProcessStat>& v, pid_t pid) {
  return std::any_of(v.begin(), v.end(), [pid](const ProcessStat& s) { return s.pid == pid; });
}

TEST(DescendantsTest, FindsChildrenAndGrandchildren) {
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(ready[1], &grandchild, sizeof(grandchild));
    pause();
    _exit(0);
  }
  close(ready[1]);
  pid_t grandchild = 0;
  ASSERT_EQ(read(ready[0], &grandchild, sizeof(grandchild)),
            static_cast<ssize_t>(sizeof(grandchild)));
  close(ready[0]);

  const std::vector<ProcessStat> mine = Descendants(getpid());
  EXPECT_TRUE(Contains(mine, child));
  EXPECT_TRUE(Contains(mine, grandchild));
  EXPECT_FALSE(Contains(mine, getpid()));
  // The child's descendants hold the grandchild only; this process's parent is not below it.
  const std::vector<ProcessStat> below_child = Descendants(child);
  EXPECT_TRUE(Contains(below_child, grandchild));
  EXPECT_FALSE(Contains(below_child, child));
  EXPECT_FALSE(Contains(Descendants(getpid()), getppid()));

  kill(grandchild, SIGKILL);
  kill(child, SIGKILL);
  ASSERT_EQ(waitpid(child, nullptr, 0), child);
}

}  // namespace
}  // namespace benchfarm::base
