#include "tracker/client_channel.h"

#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/files.h"

namespace benchfarm::tracker {
namespace {

absl::StatusOr<std::string> ReadPem(const std::string& path, const char* what) {
  absl::StatusOr<std::string> text = base::ReadFile(path);
  if (!text.ok()) return absl::NotFoundError(absl::StrCat(what, ": ", text.status().message()));
  return text;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

}  // namespace

v1::TrackerCredentials CredentialsFromEnvironment(v1::TrackerCredentials c) {
  if (c.ca_cert().empty()) c.set_ca_cert(Env("BENCHFARM_CA"));
  if (c.cert().empty() && c.key().empty()) {
    c.set_cert(Env("BENCHFARM_CERT"));
    c.set_key(Env("BENCHFARM_KEY"));
  }
  if (c.token().empty() && c.token_file().empty()) {
    c.set_token(Env("BENCHFARM_TOKEN"));
    c.set_token_file(Env("BENCHFARM_TOKEN_FILE"));
  }
  const std::string insecure = Env("BENCHFARM_INSECURE");
  if (!insecure.empty() && insecure != "0") c.set_insecure(true);
  return c;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> TrackerChannel(
    const std::string& address, const v1::TrackerCredentials& c, grpc::ChannelArguments args) {
  args.SetMaxReceiveMessageSize(64 << 20);
  if (c.insecure()) {
    return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
  }
  if (c.ca_cert().empty()) {
    return absl::InvalidArgumentError(
        "no CA to verify the tracker: pass --ca FILE or set BENCHFARM_CA (the tracker prints "
        "where its ca.pem is), or --insecure for a tracker started with --insecure");
  }
  grpc::SslCredentialsOptions ssl;
  absl::StatusOr<std::string> ca = ReadPem(c.ca_cert(), "the CA certificate");
  if (!ca.ok()) return ca.status();
  ssl.pem_root_certs = *ca;
  if (!c.cert().empty() || !c.key().empty()) {
    if (c.cert().empty() || c.key().empty()) {
      return absl::InvalidArgumentError("a client certificate needs both cert and key");
    }
    absl::StatusOr<std::string> cert = ReadPem(c.cert(), "the certificate");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(c.key(), "the key");
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *cert;
    ssl.pem_private_key = *key;
  }
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::SslCredentials(ssl);
  std::string token = c.token();
  if (token.empty() && !c.token_file().empty()) {
    absl::StatusOr<std::string> text = ReadPem(c.token_file(), "the token file");
    if (!text.ok()) return text.status();
    token = std::string(absl::StripAsciiWhitespace(*text));
  }
  if (!token.empty()) {
    creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

}  // namespace benchfarm::tracker
