#include "client/channel.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include <cstdlib>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/files.h"

namespace benchfarm::client {
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

// HOST:PORT or [HOST]:PORT -> (host, port); false if it is neither.
bool SplitHostPort(absl::string_view address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == absl::string_view::npos || colon == 0 || colon + 1 == address.size()) return false;
  absl::string_view h = address.substr(0, colon);
  if (absl::ConsumePrefix(&h, "[") && !absl::ConsumeSuffix(&h, "]")) return false;
  *host = std::string(h);
  *port = std::string(address.substr(colon + 1));
  return true;
}

}  // namespace

absl::StatusOr<std::string> TrackerTarget(const std::string& address) {
  if (address.find(',') == std::string::npos) return address;
  std::vector<std::string> v4, v6;
  for (absl::string_view part : absl::StrSplit(address, ',', absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    std::string host, port;
    if (!SplitHostPort(part, &host, &port)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tracker address \"", address, "\": \"", part, "\" is not HOST:PORT"));
    }
    addrinfo hints = {};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("tracker address \"", address, "\": ", host, ": ", gai_strerror(rc)));
    }
    char text[INET6_ADDRSTRLEN] = {};
    if (found->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr, text,
                sizeof(text));
      v4.push_back(absl::StrCat(text, ":", port));
    } else {
      inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(found->ai_addr)->sin6_addr, text,
                sizeof(text));
      v6.push_back(absl::StrCat("[", text, "]:", port));
    }
    freeaddrinfo(found);
  }
  if (!v4.empty() && !v6.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tracker address \"", address, "\": mixes IPv4 and IPv6 trackers; use one family"));
  }
  return v4.empty() ? absl::StrCat("ipv6:", absl::StrJoin(v6, ","))
                    : absl::StrCat("ipv4:", absl::StrJoin(v4, ","));
}

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

absl::StatusOr<std::shared_ptr<grpc::Channel>> TrackerChannel(const std::string& address,
                                                              const v1::TrackerCredentials& c,
                                                              grpc::ChannelArguments args) {
  args.SetMaxReceiveMessageSize(64 << 20);
  absl::StatusOr<std::string> target = TrackerTarget(address);
  if (!target.ok()) return target.status();
  if (*target != address) {
    // Several trackers: the certificate is checked against the first one's name (give every
    // tracker of a farm a certificate for it), whichever one answers.
    std::string host, port;
    SplitHostPort(absl::StripAsciiWhitespace(address.substr(0, address.find(','))), &host, &port);
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, absl::StrCat(host, ":", port));
  }
  if (c.insecure()) {
    return grpc::CreateCustomChannel(*target, grpc::InsecureChannelCredentials(), args);
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
  return grpc::CreateCustomChannel(*target, creds, args);
}

}  // namespace benchfarm::client
