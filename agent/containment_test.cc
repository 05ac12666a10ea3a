// Issue 14, "User code contained": trials whose C code tries to get out — at run time on a
// host-process board, and at build time through the preprocessor — against an in-process tracker
// and a real agent. Each probe's kernel writes what its system call returned (or -errno) into
// output element 0 and its reference writes a sentinel, so the trial ends WRONG_ANSWER with
// "output element 0 is <value>" and the test reads what happened; then the test checks on the host
// that the side effect did not happen (file absent, no connection, no surviving process, the
// agent alive, the cache intact).
//
// Runs without Bazel's own sandbox (tags = no-sandbox): as root (CI) the agent's sandbox is then
// in root mode, a uid per sandbox, where the process limit holds.

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/agent.h"
#include "base/files.h"
#include "process/sandbox.h"
#include "tests/in_process_tracker.h"

namespace benchfarm::agent {
namespace {

constexpr char kKind[] = "host-process";
constexpr char kSentinel[] = "-12345.0f";  // what the reference writes

v1::Trial Matmul() {
  v1::Trial t;
  t.set_board_kind(kKind);
  t.mutable_op()->mutable_template_op()->set_op("matmul");
  t.set_check_outputs(true);
  t.mutable_measure()->set_number(3);
  t.set_seed(7);
  return t;
}

// A c_source trial whose kernel runs `body` (a C function body returning int) once and writes
// the result into output element 0; the reference writes the sentinel everywhere.
v1::Trial Probe(const std::string& body, const std::string& preamble = "") {
  const std::string source =
      absl::StrCat("#define _GNU_SOURCE\n", preamble,
                   "#include <benchfarm/ops/common.h>\n"
                   "#include <dlpack/dlpack.h>\n"
                   "#include <errno.h>\n"
                   "#include <fcntl.h>\n"
                   "#include <signal.h>\n"
                   "#include <string.h>\n"
                   "#include <arpa/inet.h>\n"
                   "#include <netinet/in.h>\n"
                   "#include <pthread.h>\n"
                   "#include <sys/socket.h>\n"
                   "#include <sys/wait.h>\n"
                   "#include <unistd.h>\n"
                   "static void fill(DLTensor* c, float first) {\n"
                   "  float* d = (float*)c->data;\n"
                   "  int64_t i;\n"
                   "  for (i = 0; i < c->shape[0]; ++i) d[i] = i == 0 ? first : ",
                   kSentinel,
                   ";\n"
                   "}\n"
                   "__attribute__((unused)) static void* spin_forever(void* arg) {\n"
                   "  for (;;) {}\n"
                   "  return arg;\n"
                   "}\n"
                   "static int probe(void) {\n",
                   body,
                   "\n}\n"
                   "BF_OPS_DECLARE_PACKED(probe_entry);\n"
                   "BF_OPS_DECLARE_PACKED(probe_entry) {\n"
                   "  fill((DLTensor*)args[2].v_handle, (float)probe());\n"
                   "  return 0;\n"
                   "}\n"
                   "BF_OPS_DECLARE_PACKED(probe_reference);\n"
                   "BF_OPS_DECLARE_PACKED(probe_reference) {\n"
                   "  fill((DLTensor*)args[2].v_handle, ",
                   kSentinel,
                   ");\n"
                   "  return 0;\n"
                   "}\n");
  v1::Trial t;
  t.set_board_kind(kKind);
  t.mutable_op()->set_c_source(source);
  t.mutable_op()->set_entry_function("probe_entry");
  t.mutable_op()->set_reference_function("probe_reference");
  for (int i = 0; i < 3; ++i) t.add_args()->add_shape(4);
  t.set_check_outputs(true);
  t.mutable_measure()->set_number(1);
  t.mutable_measure()->set_timeout_ms(20000);
  return t;
}

// C source text of a string literal.
std::string Quoted(const std::string& s) { return absl::StrCat("\"", s, "\""); }

// What the probe's kernel returned, from "output element 0 is <value>, the reference ...".
std::optional<int64_t> ProbeValue(const v1::Job& job) {
  const std::string& m = job.result().message();
  const std::string prefix = "output element 0 is ";
  const size_t at = m.find(prefix);
  if (job.result().error_code() != v1::WRONG_ANSWER || at == std::string::npos) return std::nullopt;
  const size_t start = at + prefix.size();
  const size_t end = m.find(',', start);
  double value;
  if (!absl::SimpleAtod(m.substr(start, end - start), &value)) return std::nullopt;
  return static_cast<int64_t>(value);
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Processes whose command line contains `marker`.
int ProcessesWith(const std::string& marker) {
  int found = 0;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  while (struct dirent* e = readdir(proc)) {
    int pid;
    if (!absl::SimpleAtoi(e->d_name, &pid)) continue;
    const std::string cmdline = Read(absl::StrCat("/proc/", pid, "/cmdline"));
    if (absl::StrContains(cmdline, marker)) ++found;
  }
  closedir(proc);
  return found;
}

class ContainmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(std::getenv("TEST_TMPDIR"), "/",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_TRUE(base::MakeDirs(dir_).ok());
    tracker::JobQueueOptions q;
    q.known_kinds = {kKind};
    tracker::ServiceOptions s;
    s.heartbeat = absl::Milliseconds(500);
    s.dispatch_period = absl::Milliseconds(50);
    tracker_ = std::make_unique<testing::InProcessTracker>(dir_ + "/tracker.db", q, s);
    ASSERT_TRUE(tracker_->Start().ok());
  }

  void TearDown() override {
    if (agent_ != nullptr) agent_->Stop();
    tracker_->Stop();
  }

  v1::AgentConfig Config() {
    v1::AgentConfig c = tracker_->AgentConfig("agent-contained", dir_);
    v1::BoardConfig* b = c.add_boards();
    b->set_id("b0");
    b->set_kind(kKind);
    b->mutable_host_process()->set_use_pty(use_pty_);
    b->set_build_template("agent/templates/host-process");
    return c;
  }

  void StartAgent() {
    AgentOptions o;
    o.config = Config();
    o.max_backoff = absl::Seconds(1);
    absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
    ASSERT_TRUE(agent.ok()) << agent.status();
    agent_ = *std::move(agent);
    agent_->Start();
  }

  std::vector<v1::Job> Run(const std::vector<v1::Trial>& trials,
                           const std::string& client = "test") {
    absl::StatusOr<std::vector<std::string>> ids = tracker_->Submit(trials, client);
    EXPECT_TRUE(ids.ok()) << ids.status();
    if (!ids.ok()) return {};
    absl::StatusOr<std::vector<v1::Job>> jobs = tracker_->WaitFinished(*ids, absl::Seconds(120));
    EXPECT_TRUE(jobs.ok()) << jobs.status();
    return jobs.ok() ? *jobs : std::vector<v1::Job>{};
  }

  // Runs one probe; its value (the test fails if the trial did not end as a probe reports).
  int64_t RunProbe(const std::string& what, const std::string& body) {
    std::vector<v1::Job> jobs = Run({Probe(body)}, "outsider");
    EXPECT_EQ(jobs.size(), 1u) << what;
    if (jobs.size() != 1) return INT64_MIN;
    std::optional<int64_t> value = ProbeValue(jobs[0]);
    EXPECT_TRUE(value.has_value()) << what << ": " << jobs[0].result().DebugString();
    std::cerr << "probe " << what << ": " << (value ? absl::StrCat(*value) : "-") << "\n";
    return value.value_or(INT64_MIN);
  }

  bool use_pty_ = false;
  std::string dir_;
  std::unique_ptr<testing::InProcessTracker> tracker_;
  std::unique_ptr<Agent> agent_;
};

TEST_F(ContainmentTest, ATrialsCodeOnTheBoardCannotReachOutItsSandbox) {
  setenv(absl::StrCat("BF_AGENT_SECRET_", getpid()).c_str(), "1", 1);
  StartAgent();
  std::cerr << "sandbox: " << process::DescribeSandbox() << "\n";
  // Another client's plain trial first: its image is in the cache now.
  std::vector<v1::Job> jobs = Run({Matmul()}, "victim");
  ASSERT_EQ(jobs.size(), 1u);
  ASSERT_EQ(jobs[0].result().error_code(), v1::NO_ERROR) << jobs[0].result().message();
  std::vector<std::string> images;
  if (DIR* d = opendir((dir_ + "/cache/images").c_str())) {
    while (struct dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') images.push_back(dir_ + "/cache/images/" + e->d_name + "/image");
    }
    closedir(d);
  }
  ASSERT_EQ(images.size(), 1u);
  const std::string victim_image = images[0];
  const std::string victim_bytes = Read(victim_image);

  // Files outside its directory: the host's /tmp, the test's directory, the agent's cache (the
  // other client's image itself, and a new file beside it), its own image.
  const std::string escape = absl::StrCat("/tmp/escape-", getpid());
  unlink(escape.c_str());
  const std::string planted = dir_ + "/cache/images/planted";
  const std::string test_file = dir_ + "/escape";
  const char* kWrite =
      "  int fd = open(%s, O_WRONLY | O_CREAT | O_TRUNC, 0644);\n"
      "  if (fd < 0) return -errno;\n"
      "  if (write(fd, \"#!/bin/sh\\necho injected\\n\", 24) != 24) return -1000 - errno;\n"
      "  close(fd);\n"
      "  return 1;";
  auto write_probe = [&](const std::string& path) {
    std::string body = kWrite;
    body.replace(body.find("%s"), 2, Quoted(path));
    return body;
  };
  // Its private /tmp may take the file (1) — the host's /tmp must not get it.
  const int64_t tmp = RunProbe("write /tmp/escape-<pid>", write_probe(escape));
  EXPECT_TRUE(tmp == 1 || tmp < 0) << tmp;
  EXPECT_FALSE(Exists(escape));
  EXPECT_EQ(RunProbe("write into the test's directory", write_probe(test_file)), -ENOENT);
  EXPECT_FALSE(Exists(test_file));
  EXPECT_EQ(RunProbe("overwrite the cached image", write_probe(victim_image)), -ENOENT);
  EXPECT_EQ(RunProbe("plant a file in the cache", write_probe(planted)), -ENOENT);
  EXPECT_FALSE(Exists(planted));
  // (Its image is bound read-only at /bf/image in its sandbox.)
  const int64_t own = RunProbe("write its own image", write_probe("/bf/image"));
  EXPECT_TRUE(own == -EROFS || own == -ETXTBSY || own == -EACCES) << own;
  EXPECT_EQ(Read(victim_image), victim_bytes);

  // Secrets of the host.
  EXPECT_EQ(RunProbe("read /etc/shadow",
                     "  int fd = open(\"/etc/shadow\", O_RDONLY);\n"
                     "  if (fd < 0) return -errno;\n"
                     "  close(fd);\n"
                     "  return 1;"),
            -ENOENT);

  // The agent's environment (a token, say), through the sandbox's init or its own environment.
  const std::string marker = absl::StrCat("BF_AGENT_SECRET_", getpid());
  for (const char* file : {"/proc/1/environ", "/proc/self/environ"}) {
    const int64_t found =
        RunProbe(absl::StrCat("look for the agent's environment in ", file),
                 absl::StrCat("  char buf[65536];\n"
                              "  ssize_t n;\n"
                              "  int fd = open(\"",
                              file,
                              "\", O_RDONLY);\n"
                              "  if (fd < 0) return -errno;\n"
                              "  n = read(fd, buf, sizeof(buf) - 1);\n"
                              "  close(fd);\n"
                              "  if (n < 0) return -errno;\n"
                              "  buf[n] = 0;\n"
                              "  for (ssize_t i = 0; i < n; ++i) if (buf[i] == 0) buf[i] = '\\n';\n"
                              "  return strstr(buf, \"",
                              marker, "\") != NULL ? 1 : 0;"));
    EXPECT_LE(found, 0) << file;
  }

  // The network: a port the test listens on.
  const int listener = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  ASSERT_GE(listener, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  ASSERT_EQ(listen(listener, 8), 0);
  socklen_t len = sizeof(addr);
  ASSERT_EQ(getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const int64_t connected = RunProbe(
      "connect to the test's port",
      absl::StrCat("  struct sockaddr_in a;\n"
                   "  int s = socket(AF_INET, SOCK_STREAM, 0);\n"
                   "  if (s < 0) return -errno;\n"
                   "  memset(&a, 0, sizeof(a));\n"
                   "  a.sin_family = AF_INET;\n"
                   "  a.sin_port = htons(",
                   ntohs(addr.sin_port),
                   ");\n"
                   "  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);\n"
                   "  if (connect(s, (struct sockaddr*)&a, sizeof(a)) != 0) return -errno;\n"
                   "  return 1;"));
  EXPECT_TRUE(connected == -ECONNREFUSED || connected == -ENETUNREACH) << connected;
  EXPECT_EQ(accept(listener, nullptr, nullptr), -1);
  EXPECT_EQ(errno, EAGAIN);
  close(listener);

  // Processes: 300 forks, each child holding its slot until the parent has counted.
  const int64_t forked = RunProbe("fork 300 times",
                                  "  int n = 0, i;\n"
                                  "  pid_t kids[300];\n"
                                  "  for (i = 0; i < 300; ++i) {\n"
                                  "    pid_t p = fork();\n"
                                  "    if (p < 0) break;\n"
                                  "    if (p == 0) { alarm(60); pause(); _exit(0); }\n"
                                  "    kids[n++] = p;\n"
                                  "  }\n"
                                  "  for (i = 0; i < n; ++i) kill(kids[i], SIGKILL);\n"
                                  "  for (i = 0; i < n; ++i) waitpid(kids[i], NULL, 0);\n"
                                  "  return n;");
  if (process::MakeSandboxCommand({}, {"/bin/true"})->bounds_processes) {
    EXPECT_LT(forked, 64);  // the board's sandbox allows 64 processes in all
  } else {
    std::cerr << "the process limit is not enforced here: " << process::DescribeSandbox() << "\n";
  }
  EXPECT_LT(forked, 300);

  // Signals: this process (the agent), its parent in the sandbox, everything it can see.
  EXPECT_EQ(RunProbe("kill the agent",
                     absl::StrCat("  return kill(", getpid(), ", SIGTERM) == 0 ? 1 : -errno;")),
            -ESRCH);
  const int64_t parent = RunProbe("its parent",
                                  "  kill(getppid(), SIGTERM);\n"
                                  "  kill(-1, SIGKILL);\n"
                                  "  return getppid();");
  EXPECT_NE(parent, getpid());
  EXPECT_NE(parent, getppid());
  EXPECT_EQ(kill(getpid(), 0), 0);

  // After all that, the other client's plain trial: the verified cached image, right answers.
  jobs = Run({Matmul()}, "victim");
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].result().error_code(), v1::NO_ERROR) << jobs[0].result().message();
  EXPECT_EQ(Read(victim_image), victim_bytes);
  AgentCounters c = agent_->counters();
  EXPECT_EQ(c.builds, 13);  // the matmul image once, and each probe
  EXPECT_GE(c.cache_hits, 1);
}

// A daemon (setsid, then fork) started by a trial is gone once the trial's call returns, while
// the board keeps serving its image; a thread the trial started makes the board restart. Over
// the board's pty.
TEST_F(ContainmentTest, NothingATrialStartsOutlivesItsTrial) {
  use_pty_ = true;
  StartAgent();
  absl::BitGen gen;
  const std::string marker =
      absl::StrCat("bf-contained-", getpid(), "-", absl::Uniform<uint32_t>(gen, 1, 1u << 30));
  const int64_t started = RunProbe(
      "setsid daemon", absl::StrCat("  pid_t p = fork(), q;\n"
                                    "  int status;\n"
                                    "  if (p < 0) return -errno;\n"
                                    "  if (p == 0) {\n"
                                    "    setsid();\n"
                                    "    q = fork();\n"
                                    "    if (q == 0) {\n"
                                    "      execl(\"/bin/sleep\", ",
                                    Quoted(marker),
                                    ", \"600\", (char*)0);\n"
                                    "      _exit(1);\n"
                                    "    }\n"
                                    "    _exit(q > 0 ? 0 : 2);\n"
                                    "  }\n"
                                    "  waitpid(p, &status, 0);\n"
                                    "  return WIFEXITED(status) ? 1 + WEXITSTATUS(status) : -1;"));
  EXPECT_EQ(started, 1);
  // The daemon was killed when the call returned, before the result was reported (before this
  // change it ran until the board was next flashed). The board was not restarted for it.
  EXPECT_EQ(ProcessesWith(marker), 0);
  EXPECT_EQ(agent_->counters().boards.leftovers_killed, 1);
  EXPECT_EQ(agent_->counters().boards.flashes, 1);
  EXPECT_EQ(agent_->counters().boards.resets, 0);

  // A thread started in the board process (it spins for ever) cannot be killed alone: the board
  // restarts, so the next trial finds it fresh.
  EXPECT_EQ(RunProbe("spinning thread",
                     "  pthread_t t;\n"
                     "  return pthread_create(&t, 0, spin_forever, 0) == 0 ? 1 : -1;"),
            1);
  std::vector<v1::Job> jobs = Run({Matmul()});
  ASSERT_EQ(jobs.size(), 1u);
  EXPECT_EQ(jobs[0].result().error_code(), v1::NO_ERROR) << jobs[0].result().message();
  // The daemon probe's image, the thread probe's (and the board restarted after it), matmul's.
  EXPECT_EQ(agent_->counters().boards.flashes, 3);
  EXPECT_EQ(agent_->counters().boards.resets, 1);
}

// The preprocessor cannot read host files into the compiler's messages: they are not in the
// build's sandbox.
TEST_F(ContainmentTest, IncludesOfHostFilesLeakNothingIntoCompileErrors) {
  const std::string env_secret = absl::StrCat("BF_AGENT_SECRET_", getpid());
  setenv(env_secret.c_str(), "1", 1);
  StartAgent();
  const std::string secret_file = dir_ + "/secret.h";
  const std::string secret =
      absl::StrCat("BENCHFARM_SECRET_", absl::Uniform<uint32_t>(absl::BitGen(), 1, 1u << 30));
  std::ofstream(secret_file) << secret << " is the first line\n";
  std::vector<v1::Job> jobs =
      Run({Probe("  return 1;", "#include \"/etc/shadow\"\n"),
           Probe("  return 2;", absl::StrCat("#include ", Quoted(secret_file), "\n")),
           Probe("  return 3;", absl::StrCat("#include ", Quoted(dir_ + "/cache/images"), "\n")),
           Probe("  return 4;", "#include \"/proc/1/environ\"\n")});
  ASSERT_EQ(jobs.size(), 4u);
  const std::string shadow = Read("/etc/shadow");
  const std::string shadow_first = shadow.substr(0, shadow.find('\n'));
  for (const v1::Job& j : jobs) {
    const std::string& m = j.result().message();
    EXPECT_EQ(j.result().error_code(), v1::COMPILE_DEVICE) << m;
    if (j.job_id() != jobs.back().job_id()) {
      EXPECT_TRUE(absl::StrContains(m, "No such file or directory")) << m;
    }
    EXPECT_FALSE(absl::StrContains(m, secret)) << m;
    EXPECT_FALSE(absl::StrContains(m, env_secret)) << m;
    if (!shadow_first.empty()) {
      EXPECT_FALSE(absl::StrContains(m, shadow_first)) << m;
    }
    EXPECT_FALSE(absl::StrContains(m, "root:")) << m;
  }
}

// No sandbox, no agent: without bwrap it refuses to start and says what to install.
TEST_F(ContainmentTest, WithoutBubblewrapTheAgentRefusesToStart) {
  const std::string empty = dir_ + "/empty-path";
  ASSERT_TRUE(base::MakeDirs(empty).ok());
  const char* saved = std::getenv("PATH");
  const std::string path = saved != nullptr ? saved : "";
  setenv("PATH", empty.c_str(), 1);
  AgentOptions o;
  o.config = Config();
  absl::StatusOr<std::unique_ptr<Agent>> agent = Agent::Create(o);
  setenv("PATH", path.c_str(), 1);
  ASSERT_FALSE(agent.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(agent.status())) << agent.status();
  EXPECT_TRUE(absl::StrContains(agent.status().message(), "apt install bubblewrap"))
      << agent.status();
}

}  // namespace
}  // namespace benchfarm::agent
