#include "tracker/server_security.h"

#include <sys/stat.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/data_roots.h"
#include "base/files.h"
#include "process/run_command.h"

namespace benchfarm::tracker {
namespace {

// A credential file the config names; NotFound "security: WHAT: ..." when it cannot be read.
absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok())
    return absl::NotFoundError(absl::StrCat("security: ", what, ": ", text.status().message()));
  return text;
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// "host:port" or "[v6]:port" -> host.
std::string HostOf(const std::string& address) {
  if (absl::StartsWith(address, "[")) return address.substr(1, address.find(']') - 1);
  size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

bool IsLoopbackAddress(const std::string& address) {
  const std::string host = HostOf(address);
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

absl::StatusOr<ServerSecurity> SetUpServerSecurity(const v1::TrackerConfig& config,
                                                   const char* argv0) {
  const v1::TrackerSecurity& sec = config.security();
  ServerSecurity out;
  if (sec.insecure()) {
    if (!IsLoopbackAddress(config.listen_address())) {
      return absl::InvalidArgumentError(
          absl::StrCat("security.insecure: plain text is allowed only on a loopback address, not ",
                       config.listen_address(), " (drop --insecure to serve TLS)"));
    }
    out.credentials = grpc::InsecureServerCredentials();
    return out;
  }
  out.state_dir = base::AbsolutePath(!sec.state_dir().empty() ? sec.state_dir()
                                                              : config.database_path() + ".pki");
  auto in_state = [&](const std::string& given, const char* name) {
    return given.empty() ? absl::StrCat(out.state_dir, "/", name) : base::AbsolutePath(given);
  };
  out.ca_cert = in_state(sec.ca_cert(), "ca.pem");
  const std::string cert = in_state(sec.server_cert(), "tracker.pem");
  const std::string key = in_state(sec.server_key(), "tracker.key");
  const bool explicit_files = !sec.ca_cert().empty() || !sec.server_cert().empty();
  if (!explicit_files && !Exists(out.ca_cert)) {
    // First start: the tracker's own CA, certificate and admin token.
    const std::string pki = base::FindDataFile(argv0, "deploy/pki.sh");
    if (pki.empty()) {
      return absl::FailedPreconditionError(
          "security: cannot find deploy/pki.sh to create the state directory's CA (reinstall, "
          "or name security.ca_cert, server_cert and server_key)");
    }
    process::RunCommandOptions run;
    run.argv = {"bash", pki, "init", out.state_dir};
    const std::string host = HostOf(config.listen_address());
    if (!host.empty() && host != "0.0.0.0" && host != "::") run.argv.push_back(host);
    run.time_limit = absl::Seconds(60);
    absl::StatusOr<process::CommandRun> ran =
        process::RunCommand(run, absl::Now() + absl::Seconds(60), "pki.sh");
    if (!ran.ok()) return absl::FailedPreconditionError(std::string(ran.status().message()));
    if (!ran->succeeded()) {
      return absl::FailedPreconditionError(
          absl::StrCat("security: pki.sh init ", out.state_dir, " failed: ", ran->output));
    }
    out.initialized_now = true;
  }
  if (Exists(absl::StrCat(out.state_dir, "/admin.token"))) {
    out.admin_token_file = absl::StrCat(out.state_dir, "/admin.token");
  }
  absl::StatusOr<std::string> ca = ReadPem(out.ca_cert, "the CA certificate");
  if (!ca.ok()) return ca.status();
  absl::StatusOr<std::string> cert_pem = ReadPem(cert, "the tracker's certificate");
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem = ReadPem(key, "the tracker's key");
  if (!key_pem.ok()) return key_pem.status();
  // Any client certificate gets through the handshake (its key is still proven): the
  // Authenticator checks it against the CA and answers what is wrong with it — expired, of
  // another CA — where a failed handshake would tell the client only "Socket closed".
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_BUT_DONT_VERIFY);
  ssl.pem_root_certs = *ca;
  ssl.pem_key_cert_pairs.push_back({*key_pem, *cert_pem});
  out.credentials = grpc::SslServerCredentials(ssl);
  AuthOptions auth;
  auth.tokens_file = in_state(sec.tokens_file(), "tokens");
  auth.revoked_file = in_state(sec.revoked_file(), "revoked");
  auth.ca_pem = *ca;
  out.auth = std::make_unique<Authenticator>(auth);
  return out;
}

}  // namespace benchfarm::tracker
