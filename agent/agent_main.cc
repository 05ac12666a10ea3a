// agent: benchfarm's board agent. Runs trials from the tracker on the boards of this host.
//
//   agent --config FILE [--tracker ADDR] [--metrics ADDR|off] [--log_level L]
//
// FILE is a text-format benchfarm.v1.AgentConfig (proto/config.proto; examples in deploy/); its
// relative scratch_dir, cache_dir and spool_dir are relative to the working directory, and
// relative build_template / crt_dir paths are looked for there first, then in the data files
// that come with the binary (see search_roots below). Once
// started it prints "agent: <id> serving N boards for tracker <addr> (metrics on port P)" on
// stdout — its one line of machine-readable output, which scripts and tests wait for; everything
// else is logging (base/logging.h) on stderr. It stops cleanly on SIGTERM/SIGINT (results not yet
// delivered stay in the spool for next time).
//
// Everything it starts (boards, QEMU, builds) dies with it, kill -9 included
// (process/subprocess.h). Before it starts anything it locks its scratch_dir (a second agent on the
// same directories is refused) and ends what a killed predecessor left running there
// (process/leftovers.h: the children's records in <scratch_dir>/processes, stale links into
// sandboxes).

#include <unistd.h>

#include <csignal>
#include <cstdio>  // the "serving" line
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "agent/agent.h"
#include "base/command_line.h"
#include "base/data_roots.h"
#include "base/logging.h"
#include "process/leftovers.h"
#include "process/subprocess.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, config, "", "text-format AgentConfig file (required)");
ABSL_FLAG(std::string, tracker, "", "tracker address (overrides tracker_address)");
ABSL_FLAG(std::string, metrics, "",
          "Prometheus address (overrides metrics_address); 'off' disables");
ABSL_FLAG(bool, insecure, false, "reach a tracker started with --insecure (plain text)");
ABSL_FLAG(std::string, log_level, "",
          "trace|debug|info|warn|error|critical|off (default: $BENCHFARM_LOG_LEVEL, else info)");

namespace {

constexpr char kUsage[] =
    "benchfarm's board agent: runs the tracker's trials on this host's boards\n"
    "(README \"The agent\").\n"
    "\n"
    "  benchfarm-agent --config FILE [--tracker ADDR] [--metrics ADDR|off] [--insecure]\n"
    "                  [--log_level L]\n"
    "  benchfarm-agent --version\n"
    "\n"
    "FILE is a text-format benchfarm.v1.AgentConfig (proto/config.proto; examples in deploy/);\n"
    "flags override it. Prints \"agent: ID serving N boards for tracker ADDR\" on stdout once\n"
    "started; logs on stderr; stops on SIGTERM/SIGINT.";

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

int Fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  benchfarm::base::SetUpCommandLine("benchfarm-agent", kUsage, __FILE__);
  absl::ParseCommandLine(argc, argv);
  if (absl::Status s = benchfarm::base::InitLogging("agent", absl::GetFlag(FLAGS_log_level));
      !s.ok()) {
    return Fail(std::string(s.message()));
  }
  if (absl::GetFlag(FLAGS_config).empty()) return Fail("--config FILE is required");
  absl::StatusOr<benchfarm::v1::AgentConfig> config =
      benchfarm::agent::LoadAgentConfig(absl::GetFlag(FLAGS_config));
  if (!config.ok()) return Fail(std::string(config.status().message()));
  if (!absl::GetFlag(FLAGS_tracker).empty())
    config->set_tracker_address(absl::GetFlag(FLAGS_tracker));
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    config->set_metrics_address(
        absl::GetFlag(FLAGS_metrics) == "off" ? "" : absl::GetFlag(FLAGS_metrics));
  }
  // Relative state directories are relative to the working directory; made absolute here, since
  // build templates and boards run in directories of their own.
  if (!config->scratch_dir().empty())
    config->set_scratch_dir(benchfarm::base::AbsolutePath(config->scratch_dir()));
  if (!config->cache_dir().empty())
    config->set_cache_dir(benchfarm::base::AbsolutePath(config->cache_dir()));
  if (!config->spool_dir().empty())
    config->set_spool_dir(benchfarm::base::AbsolutePath(config->spool_dir()));
  benchfarm::v1::TrackerCredentials* creds = config->mutable_credentials();
  if (absl::GetFlag(FLAGS_insecure)) creds->set_insecure(true);
  for (std::string* path :
       {creds->mutable_ca_cert(), creds->mutable_cert(), creds->mutable_key()}) {
    if (!path->empty()) *path = benchfarm::base::AbsolutePath(*path);
  }
  // What a killed predecessor left running is ended before anything new starts. The scratch
  // directory's default is Agent::Create's, made explicit here.
  if (config->scratch_dir().empty() && !config->agent_id().empty()) {
    config->set_scratch_dir(absl::StrCat("/tmp/benchfarm-agent-", config->agent_id(), "/scratch"));
  }
  std::unique_ptr<benchfarm::process::StateLock> state_lock;
  if (!config->scratch_dir().empty()) {
    absl::StatusOr<std::unique_ptr<benchfarm::process::StateLock>> locked =
        benchfarm::process::StateLock::Acquire(config->scratch_dir());
    if (!locked.ok()) return Fail(std::string(locked.status().message()));
    state_lock = *std::move(locked);
    const std::string records = benchfarm::process::ProcessRecordDir(config->scratch_dir());
    absl::StatusOr<benchfarm::process::LeftoverReport> leftovers =
        benchfarm::process::KillLeftovers(records, absl::Now() + absl::Seconds(30));
    if (!leftovers.ok()) return Fail(std::string(leftovers.status().message()));
    if (!leftovers->killed.empty() || !leftovers->still_running.empty()) {
      spdlog::warn("a previous agent's processes were still running: {}",
                   benchfarm::process::DescribeLeftovers(*leftovers));
    } else if (leftovers->records > 0) {
      spdlog::info("previous agent's records: {}",
                   benchfarm::process::DescribeLeftovers(*leftovers));
    }
    if (int links = benchfarm::process::RemoveSandboxLinks(config->scratch_dir()); links > 0) {
      spdlog::info("removed {} stale links into a previous agent's sandboxes", links);
    }
    benchfarm::process::RecordChildrenIn(records);
  }
  benchfarm::agent::AgentOptions options;
  options.config = *config;
  // Relative build_template paths and the crt tree: the working directory first (Agent::Create),
  // then the agent's runfiles (a Bazel build: bazel-bin/agent/agent.runfiles/benchfarm), then
  // the tree `./farm install-bin PREFIX` installs beside the binary (PREFIX/bin/benchfarm-agent,
  // PREFIX/share/benchfarm/{crt,agent/templates}). The executable's own path comes from
  // /proc/self/exe, so this holds however the agent was started (from $PATH, a symlink, any cwd).
  options.search_roots = benchfarm::base::DataRoots(argv[0]);
  absl::StatusOr<std::unique_ptr<benchfarm::agent::Agent>> agent =
      benchfarm::agent::Agent::Create(options);
  if (!agent.ok()) return Fail(std::string(agent.status().message()));
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  (*agent)->Start();
  std::printf("agent: %s serving %d boards for tracker %s", config->agent_id().c_str(),
              config->boards_size(), config->tracker_address().c_str());
  if ((*agent)->metrics_port() != 0) std::printf(" (metrics on port %d)", (*agent)->metrics_port());
  std::printf("\n");
  std::fflush(stdout);
  while (!g_stop) absl::SleepFor(absl::Milliseconds(100));
  spdlog::info("stopping ({} results spooled)", (*agent)->spooled());
  (*agent)->Stop();
  return 0;
}
