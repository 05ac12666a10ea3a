// tracker: benchfarm's job queue daemon. Wires config, store, core, gRPC and metrics together.
//
//   tracker [--config FILE] [--listen ADDR] [--database PATH] [--metrics ADDR] [--log_level L]
//           [--state_dir DIR] [--insecure]
//
// Secure by default (tracker/server_security.h): TLS, clients authenticated by certificate or
// token; on first start it makes its CA, certificate and an admin token in the state directory
// and logs how to use them.
//
// FILE is a text-format benchfarm.v1.TrackerConfig (proto/config.proto); flags override it.
// A relative database path (the default is benchfarm-tracker.db) is relative to the working
// directory; the log names the absolute path.
// Several trackers may be started on one database (active/standby, tracker/leadership.h): one
// serves, the others wait without listening and take over when it stops.
// Once serving it prints "tracker: listening on <addr>" on stdout — its one line of
// machine-readable output, which scripts and tests wait for; everything else is logging
// (base/logging.h) on stderr. It stops cleanly on SIGTERM/SIGINT.

#include <unistd.h>

#include <csignal>
#include <cstdio>  // the "listening on" line
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "base/clock.h"
#include "base/command_line.h"
#include "base/logging.h"
#include "base/memory.h"
#include "base/status_macros.h"
#include "google/protobuf/text_format.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "proto/config.pb.h"
#include "spdlog/spdlog.h"
#include "tracker/front_door.h"
#include "tracker/job_queue.h"
#include "tracker/leadership.h"
#include "tracker/metrics.h"
#include "tracker/pg_store.h"
#include "tracker/refusal_log.h"
#include "tracker/server_security.h"
#include "tracker/service.h"
#include "tracker/sqlite_store.h"

ABSL_FLAG(std::string, config, "", "text-format TrackerConfig file");
ABSL_FLAG(std::string, listen, "", "gRPC address (overrides listen_address)");
ABSL_FLAG(std::string, database, "",
          "SQLite file, or a PostgreSQL database as postgresql://USER@HOST:PORT/DB (overrides "
          "database_path; default: benchfarm-tracker.db in the working directory)");
ABSL_FLAG(std::string, metrics, "",
          "Prometheus address (overrides metrics_address); 'off' disables");
ABSL_FLAG(
    bool, insecure, false,
    "plain text, no authentication: every caller may do everything (loopback addresses only)");
ABSL_FLAG(std::string, state_dir, "",
          "security state (CA, certificate, tokens); default: the database path + .pki");
ABSL_FLAG(std::string, log_level, "",
          "trace|debug|info|warn|error|critical|off (default: $BENCHFARM_LOG_LEVEL, else info)");

namespace {

constexpr char kUsage[] =
    "benchfarm's job queue daemon (README \"The tracker\").\n"
    "\n"
    "  benchfarm-tracker [--config FILE] [--listen ADDR] [--database PATH] [--metrics ADDR|off]\n"
    "                    [--state_dir DIR] [--insecure] [--log_level L]\n"
    "  benchfarm-tracker --version\n"
    "\n"
    "FILE is a text-format benchfarm.v1.TrackerConfig (proto/config.proto); flags override it.\n"
    "Secure by default: TLS, its CA made in the state directory on first start. Prints\n"
    "\"tracker: listening on HOST:PORT\" on stdout once serving; logs on stderr; stops on\n"
    "SIGTERM/SIGINT.";

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

int Fail(const std::string& message) {
  spdlog::error("{}", message);
  return 1;
}

// `path` made absolute against the working directory, for messages.
std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[4096];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return path;
  return absl::StrCat(cwd, "/", path);
}

// The config: defaults, the --config file, then the flags; checked.
absl::StatusOr<benchfarm::v1::TrackerConfig> LoadConfig() {
  benchfarm::v1::TrackerConfig config;
  config.set_listen_address("127.0.0.1:7070");
  config.set_database_path("benchfarm-tracker.db");
  config.set_metrics_address("127.0.0.1:9470");
  config.set_lease_seconds(60);
  config.set_heartbeat_seconds(5);
  config.set_retry_budget(3);
  config.set_quarantine_threshold(3);
  if (!absl::GetFlag(FLAGS_config).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_config));
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot read config ", absl::GetFlag(FLAGS_config)));
    }
    std::stringstream text;
    text << in.rdbuf();
    benchfarm::v1::TrackerConfig file;
    if (!google::protobuf::TextFormat::ParseFromString(text.str(), &file)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config ", absl::GetFlag(FLAGS_config),
                       " is not a valid TrackerConfig (the parser's message is above)"));
    }
    config.MergeFrom(file);
  }
  if (!absl::GetFlag(FLAGS_listen).empty()) config.set_listen_address(absl::GetFlag(FLAGS_listen));
  if (!absl::GetFlag(FLAGS_database).empty())
    config.set_database_path(absl::GetFlag(FLAGS_database));
  if (!absl::GetFlag(FLAGS_metrics).empty()) {
    config.set_metrics_address(
        absl::GetFlag(FLAGS_metrics) == "off" ? "" : absl::GetFlag(FLAGS_metrics));
  }
  auto invalid = [](const char* problem) {
    return absl::InvalidArgumentError(absl::StrCat("config: ", problem));
  };
  if (config.lease_seconds() < 1) return invalid("lease_seconds must be at least 1");
  if (config.heartbeat_seconds() < 1 || config.heartbeat_seconds() >= config.lease_seconds()) {
    return invalid("heartbeat_seconds must be at least 1 and less than lease_seconds");
  }
  if (config.retry_budget() < 1) return invalid("retry_budget must be at least 1");
  if (config.quarantine_threshold() < 1) return invalid("quarantine_threshold must be at least 1");
  if (config.listen_address().empty()) return invalid("listen_address is required");
  if (absl::GetFlag(FLAGS_insecure)) config.mutable_security()->set_insecure(true);
  if (!absl::GetFlag(FLAGS_state_dir).empty()) {
    config.mutable_security()->set_state_dir(absl::GetFlag(FLAGS_state_dir));
  }
  return config;
}

// The database: a SQLite file, or a PostgreSQL database (postgresql://...) that trackers on
// several machines share. `name` is what logs say: without credentials.
struct Database {
  std::string path;
  bool postgres = false;
  std::string name;
};

absl::StatusOr<Database> DatabaseOf(const benchfarm::v1::TrackerConfig& config) {
  Database db;
  db.path = config.database_path();
  db.postgres = benchfarm::tracker::PgStore::IsUri(db.path);
  db.name = Absolute(db.path);
  if (db.postgres) {
    absl::StatusOr<std::string> name = benchfarm::tracker::PgStore::NameOf(db.path);
    if (!name.ok())
      return absl::InvalidArgumentError(absl::StrCat("database_path: ", name.status().message()));
    db.name = absl::StrCat("postgres ", *name);
  }
  return db;
}

// Of several trackers on this database, one serves; the others wait here (active/standby). True
// once this one leads, false when it was stopped while waiting. A leader whose leadership may have
// passed on (its connection to the database is gone) stops at once: another tracker may serve
// already, and two must never write. The watchdog is never joined (a check may wait on a stopped
// database server) and the leadership never freed: it is held until the process ends.
absl::StatusOr<bool> Lead(const Database& db) {
  std::unique_ptr<benchfarm::tracker::Leadership> leadership;
  if (db.postgres) {
    leadership = std::make_unique<benchfarm::tracker::PgLeadership>(
        db.path, db.name.substr(sizeof("postgres ") - 1));
  } else {
    leadership = std::make_unique<benchfarm::tracker::FileLeadership>(db.name + ".leader");
  }
  absl::StatusOr<bool> leading = leadership->TryAcquire();
  if (!leading.ok() && !absl::IsUnavailable(leading.status())) return leading.status();
  if (!leading.ok() || !*leading) {
    if (leading.ok()) {
      const std::string leader = leadership->Leader();
      spdlog::info("standby: {} serves {} (it holds {}); taking over when it stops",
                   leader.empty() ? "another tracker" : leader, db.name, leadership->Lock());
    } else {
      spdlog::warn("standby: {}; trying again", std::string(leading.status().message()));
    }
    leading = leadership->Acquire([] { return g_stop != 0; }, absl::Milliseconds(100));
    if (!leading.ok()) return leading.status();
    if (!*leading) return false;
    spdlog::info("leading: the tracker that served {} stopped; taking over", db.name);
  }
  benchfarm::tracker::Leadership* const held = leadership.release();
  std::thread([held] {
    while (!g_stop) {
      if (!held->StillLeading()) {
        spdlog::critical(
            "lost the database's leadership ({}): stopping now so that a standby "
            "serves alone",
            held->Lock());
        std::_Exit(3);
      }
      absl::SleepFor(absl::Seconds(1));
    }
  }).detach();
  return true;
}

// Every acknowledged submission and result is on stable storage (fsync'd: survives power loss);
// group commit shares each fsync among the changes of a batch.
absl::StatusOr<std::unique_ptr<benchfarm::tracker::Store>> OpenStore(const Database& db) {
  if (db.postgres) {
    ASSIGN_OR_RETURN(auto opened, benchfarm::tracker::PgStore::Open(db.path));
    return std::unique_ptr<benchfarm::tracker::Store>(std::move(opened));
  }
  benchfarm::tracker::SqliteStoreOptions store_options;
  store_options.synchronous_full = true;
  ASSIGN_OR_RETURN(auto opened, benchfarm::tracker::SqliteStore::Open(db.path, store_options));
  return std::unique_ptr<benchfarm::tracker::Store>(std::move(opened));
}

benchfarm::tracker::JobQueueOptions QueueOptions(const benchfarm::v1::TrackerConfig& config) {
  benchfarm::tracker::JobQueueOptions options;
  options.lease = absl::Seconds(config.lease_seconds());
  options.retry_budget = config.retry_budget();
  options.quarantine_threshold = config.quarantine_threshold();
  options.health_check_trial = config.health_check_trial();
  if (config.max_queued_per_client() > 0)
    options.max_queued_per_client = config.max_queued_per_client();
  if (config.max_queued_bytes_per_client() > 0) {
    options.max_queued_bytes_per_client = config.max_queued_bytes_per_client();
  }
  if (config.unstable_threshold() > 0) options.unstable_threshold = config.unstable_threshold();
  if (config.max_operator_bytes_per_client() > 0) {
    options.catalog.max_bytes_per_client = config.max_operator_bytes_per_client();
  }
  if (config.max_operator_versions_per_client() > 0) {
    options.catalog.max_versions_per_client = config.max_operator_versions_per_client();
  }
  if (config.operator_cache_bytes() > 0)
    options.catalog.cache_bytes = config.operator_cache_bytes();
  if (config.max_slots_per_board() > 0) options.max_slots_per_board = config.max_slots_per_board();
  return options;
}

// How to reach the tracker, the way Jupyter prints its token: the CA to trust and a credential.
void LogHowToReach(const benchfarm::tracker::ServerSecurity& security, const std::string& host,
                   int port) {
  if (security.auth == nullptr) {
    spdlog::warn(
        "insecure: plain text, no authentication (--insecure); every caller may do everything");
    return;
  }
  spdlog::info("secure: TLS; clients need the CA {} and a token or certificate of it",
               security.ca_cert);
  if (security.initialized_now) {
    spdlog::info("first start: made a CA, this tracker's certificate and an admin token in {}",
                 security.state_dir);
  }
  if (!security.admin_token_file.empty()) {
    spdlog::info(
        "farmctl as admin: export BENCHFARM_TRACKER={}:{} BENCHFARM_CA={} "
        "BENCHFARM_TOKEN_FILE={}",
        host, port, security.ca_cert, security.admin_token_file);
  }
  spdlog::info(
      "an agent: deploy/pki.sh agent {} AGENT_ID BOARD_GLOB=KIND[:SLOTS]...; a user token: "
      "deploy/pki.sh token {} NAME (README \"Security\")",
      security.state_dir, security.state_dir);
}

// Stops serving once what the last calls changed is stored and their answers (run by the commit
// thread) are given, before the server and the service they use go away; a failing store is tried
// again for a while before giving up on what it holds. Then exits without freeing the queue one
// object at a time (a million queued jobs took ~6 s, which systemd waits out). The database needs
// no closing: every commit is already durable (an unclosed SQLite WAL is replayed on the next
// open, as after a crash; keep the -wal file with the database when copying it); locks and
// connections end with the process.
[[noreturn]] void StopServing(benchfarm::tracker::TrackerService& service, grpc::Server& server,
                              benchfarm::tracker::JobQueue& queue) {
  spdlog::info("stopping");
  service.Stop();
  server.Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  const absl::Time flush_deadline = absl::Now() + absl::Seconds(10);
  absl::Status flushed;
  while (!(flushed = queue.Flush()).ok() && absl::Now() < flush_deadline) {
    absl::SleepFor(absl::Milliseconds(200));
  }
  int code = 0;
  if (!flushed.ok()) {
    spdlog::error("stopping with changes not stored: {}", std::string(flushed.message()));
    code = 1;
  }
  spdlog::info("stopped");
  spdlog::default_logger()->flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  benchfarm::base::SetUpCommandLine("benchfarm-tracker", kUsage, __FILE__);
  absl::ParseCommandLine(argc, argv);
  // Debian's Abseil is built with deadlock detection on: a lock-order graph update on every
  // Mutex acquisition, a few % of the tracker's CPU. The tests keep it (they run the same code in
  // process); the daemon does not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (absl::Status s = benchfarm::base::InitLogging("tracker", absl::GetFlag(FLAGS_log_level));
      !s.ok()) {
    return Fail(std::string(s.message()));
  }
  absl::StatusOr<benchfarm::v1::TrackerConfig> loaded = LoadConfig();
  if (!loaded.ok()) return Fail(std::string(loaded.status().message()));
  const benchfarm::v1::TrackerConfig& config = *loaded;
  // SIGTERM stops a standby as cleanly as a leader (and one right after "listening").
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);

  // /metrics from the start: a standby says it is one (benchfarm_tracker_leader 0).
  benchfarm::tracker::Metrics metrics;
  if (!config.metrics_address().empty()) {
    absl::Status s = metrics.Serve(config.metrics_address());
    if (!s.ok()) return Fail(std::string(s.message()));
  }
  metrics.SetLeader(false);
  absl::StatusOr<Database> db = DatabaseOf(config);
  if (!db.ok()) return Fail(std::string(db.status().message()));
  absl::StatusOr<bool> leading = Lead(*db);
  if (!leading.ok()) return Fail(std::string(leading.status().message()));
  if (!*leading) {
    spdlog::info("stopping (standby)");
    return 0;
  }
  metrics.SetLeader(true);

  absl::StatusOr<benchfarm::tracker::ServerSecurity> security =
      benchfarm::tracker::SetUpServerSecurity(config, argv[0]);
  if (!security.ok()) return Fail(std::string(security.status().message()));
  // A failed TLS handshake (a plain-text client, one that does not trust this tracker's
  // certificate): counted and logged a burst at a time, not once per retry on stderr. The front
  // door names a plain-text client's address; gRPC reports the rest without one (front_door.h).
  benchfarm::tracker::RefusalLog handshake_log;
  auto refuse_handshake = [&](const char* reason, const std::string& from,
                              const std::string& detail) {
    metrics.AuthRefused("Handshake", reason);
    handshake_log.Note(absl::StrCat("refused a TLS handshake", from, " (", reason, "): ", detail,
                                    std::string_view(reason) == "PLAINTEXT_CLIENT"
                                        ? " (a client without TLS: farmctl --insecure?)"
                                        : ""));
  };
  benchfarm::tracker::RouteGrpcLogs(
      [&](const char* reason, const std::string& detail) { refuse_handshake(reason, "", detail); });
  benchfarm::tracker::FrontDoorOptions door_options;
  door_options.expect_tls = security->auth != nullptr;
  absl::StatusOr<std::unique_ptr<benchfarm::tracker::FrontDoor>> door =
      benchfarm::tracker::FrontDoor::Listen(config.listen_address(), door_options);
  if (!door.ok()) return Fail(std::string(door.status().message()));
  absl::StatusOr<std::unique_ptr<benchfarm::tracker::Store>> store = OpenStore(*db);
  if (!store.ok()) return Fail(std::string(store.status().message()));
  spdlog::info(
      "database {}; lease {} s, heartbeat {} s, retry budget {}, quarantine after {}; malloc: {}",
      db->name, config.lease_seconds(), config.heartbeat_seconds(), config.retry_budget(),
      config.quarantine_threshold(), benchfarm::base::HeapAllocator());

  benchfarm::base::RealClock clock;
  benchfarm::tracker::JobQueue queue(store->get(), &clock, QueueOptions(config));
  absl::Status recovered = queue.Recover();
  if (!recovered.ok()) return Fail(absl::StrCat("recovery failed: ", recovered.message()));

  benchfarm::tracker::ServiceOptions service_options;
  service_options.heartbeat = absl::Seconds(config.heartbeat_seconds());
  service_options.lease = absl::Seconds(config.lease_seconds());
  service_options.auth = security->auth.get();
  benchfarm::tracker::TrackerService service(&queue, &metrics, service_options);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // Connections come from the front door, which accepted them (front_door.h).
  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor =
      builder.experimental().AddExternalConnectionAcceptor(
          grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
          security->credentials);
  service.AddTo(&builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr) return Fail("cannot start the gRPC server");
  (*door)->Start(acceptor.get(), [&](const std::string& peer, const std::string& sent) {
    refuse_handshake("PLAINTEXT_CLIENT", absl::StrCat(" from ", peer),
                     absl::StrCat("it spoke plain text (\"", absl::CHexEscape(sent), "...\")"));
  });
  const int port = (*door)->port();
  const std::string host = config.listen_address().substr(0, config.listen_address().rfind(':'));
  LogHowToReach(*security, host, port);
  std::printf("tracker: listening on %s:%d", host.c_str(), port);
  if (metrics.port() != 0) std::printf(" (metrics on port %d)", metrics.port());
  std::printf("\n");
  std::fflush(stdout);

  while (!g_stop) absl::SleepFor(absl::Milliseconds(100));
  door->reset();  // no new connection for a server shutting down
  StopServing(service, *server, queue);
}
