// Tests of process_exit.h: wait statuses of real children become exit codes and signals, and
// ToString() says which.

#include "base/process_exit.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace benchfarm::base {
namespace {

// Forks a child that runs `body`, reaps it and returns its wait status.
template <typename Body>
int WaitStatusOf(Body body) {
  const pid_t pid = fork();
  if (pid == 0) {
    body();
    _exit(0);
  }
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return status;
}

TEST(ProcessExit, ExitCode) {
  const ProcessExit e = ProcessExit::FromWaitStatus(WaitStatusOf([] { _exit(3); }));
  EXPECT_TRUE(e.exited());
  EXPECT_FALSE(e.signaled());
  EXPECT_EQ(e.exit_code, 3);
  EXPECT_EQ(e.signal, 0);
  EXPECT_EQ(e.ToString(), "exit code 3");
}

TEST(ProcessExit, ExitCodeZero) {
  const ProcessExit e = ProcessExit::FromWaitStatus(WaitStatusOf([] {}));
  EXPECT_TRUE(e.exited());
  EXPECT_EQ(e.ToString(), "exit code 0");
}

TEST(ProcessExit, KilledBySignal) {
  const ProcessExit e = ProcessExit::FromWaitStatus(WaitStatusOf([] { raise(SIGKILL); }));
  EXPECT_FALSE(e.exited());
  EXPECT_TRUE(e.signaled());
  EXPECT_EQ(e.exit_code, -1);
  EXPECT_EQ(e.signal, SIGKILL);
  EXPECT_FALSE(e.core_dumped);
  EXPECT_EQ(e.ToString(), "killed by signal 9 (Killed)");
}

TEST(ProcessExit, DefaultIsNeither) {
  const ProcessExit e;
  EXPECT_FALSE(e.exited());
  EXPECT_FALSE(e.signaled());
  EXPECT_EQ(e.ToString(), "unknown end");
}

}  // namespace
}  // namespace benchfarm::base
