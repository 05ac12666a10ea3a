#include "client/diagnose.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "base/certificate.h"
#include "base/files.h"
#include "base/time_proto.h"

namespace benchfarm::client {
namespace {

std::string FormatUtc(const ASN1_TIME* t) { return base::FormatUtc(base::CertificateTime(t)); }

// The caller's own certificate, checked before anything is sent: expired or not yet valid.
std::string CheckOwnCertificate(const std::string& path) {
  absl::StatusOr<std::string> pem = base::ReadFile(path);
  if (!pem.ok()) return "";
  base::Certificate owned = base::ParseCertificate(*pem);
  X509* cert = owned.get();
  if (cert == nullptr) return absl::StrCat("your certificate ", path, " is not a PEM certificate");
  std::string out;
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    out =
        absl::StrCat("your certificate ", path, " expired on ", FormatUtc(X509_get0_notAfter(cert)),
                     ": ask the farm's admin for a new one (deploy/pki.sh user DIR NAME)");
  } else if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    out = absl::StrCat("your certificate ", path, " is not valid before ",
                       FormatUtc(X509_get0_notBefore(cert)), " (is this machine's clock right?)");
  }
  return out;
}

// HOST:PORT or [HOST]:PORT of the first of several addresses.
bool FirstHostPort(const std::string& address, std::string* host, std::string* port) {
  absl::string_view a = absl::StripAsciiWhitespace(address.substr(0, address.find(',')));
  const size_t colon = a.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return false;
  absl::string_view h = a.substr(0, colon);
  if (absl::ConsumePrefix(&h, "[")) absl::ConsumeSuffix(&h, "]");
  *host = std::string(h);
  *port = std::string(a.substr(colon + 1));
  return true;
}

// A connected TCP socket (blocking, with send and receive timeouts), or -1.
int Connect(const std::string& host, const std::string& port, absl::Duration timeout) {
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return -1;
  int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  bool connected = false;
  if (fd >= 0) {
    connected = connect(fd, found->ai_addr, found->ai_addrlen) == 0;
    if (!connected && errno == EINPROGRESS) {
      pollfd p = {fd, POLLOUT, 0};
      int error = 0;
      socklen_t len = sizeof(error);
      connected = poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(timeout))) == 1 &&
                  getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) == 0 && error == 0;
    }
  }
  freeaddrinfo(found);
  if (!connected) {
    if (fd >= 0) close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // blocking, each read and write bounded
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  return fd;
}

}  // namespace

std::string DiagnoseTransport(const std::string& address, const v1::TrackerCredentials& c,
                              absl::Duration timeout) {
  if (!c.insecure() && !c.cert().empty()) {
    if (std::string own = CheckOwnCertificate(c.cert()); !own.empty()) return own;
  }
  std::string host, port;
  if (!FirstHostPort(address, &host, &port)) return "";
  const int fd = Connect(host, port, timeout);
  if (fd < 0) return "";  // nothing listens there: gRPC says so
  std::unique_ptr<SSL_CTX, decltype(&SSL_CTX_free)> ctx(SSL_CTX_new(TLS_client_method()),
                                                        &SSL_CTX_free);
  const bool have_ca = ctx != nullptr && !c.ca_cert().empty() &&
                       SSL_CTX_load_verify_locations(ctx.get(), c.ca_cert().c_str(), nullptr) == 1;
  std::unique_ptr<SSL, decltype(&SSL_free)> ssl(ctx != nullptr ? SSL_new(ctx.get()) : nullptr,
                                                &SSL_free);
  if (ssl == nullptr) {
    close(fd);
    return "";
  }
  SSL_set_verify(ssl.get(), SSL_VERIFY_NONE, nullptr);  // look, and say what verification finds
  in6_addr ip;
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
  if (!is_ip) SSL_set_tlsext_host_name(ssl.get(), host.c_str());
  SSL_set_fd(ssl.get(), fd);
  const bool tls = SSL_connect(ssl.get()) == 1;
  std::string out;
  if (tls && c.insecure()) {
    out = absl::StrCat("the tracker at ", host, ":", port,
                       " speaks TLS: give --ca (the tracker's ca.pem; $BENCHFARM_CA) and a token "
                       "or certificate, or drop --insecure ($BENCHFARM_INSECURE)");
  } else if (!tls && !c.insecure()) {
    out = absl::StrCat("the tracker at ", host, ":", port,
                       " does not speak TLS: if it was started with --insecure, call it with "
                       "--insecure ($BENCHFARM_INSECURE=1)");
  } else if (tls && have_ca) {
    X509* peer = SSL_get1_peer_certificate(ssl.get());
    const long verified = SSL_get_verify_result(ssl.get());
    if (peer != nullptr && verified != X509_V_OK) {
      out = absl::StrCat(
          "the tracker's certificate (issued by ", base::NameText(X509_get_issuer_name(peer)),
          ") does not verify against the CA in ", c.ca_cert(), ": ",
          X509_verify_cert_error_string(verified),
          verified == X509_V_ERR_CERT_HAS_EXPIRED
              ? absl::StrCat(" (on ", FormatUtc(X509_get0_notAfter(peer)), ")")
              : std::string(" — is it this farm's ca.pem? (the tracker logs where its ca.pem is)"));
    } else if (peer != nullptr &&
               (is_ip ? X509_check_ip_asc(peer, host.c_str(), 0)
                      : X509_check_host(peer, host.c_str(), host.size(), 0, nullptr)) != 1) {
      out = absl::StrCat("the tracker's certificate does not name ", host,
                         ": call it by a name its certificate has (localhost, 127.0.0.1, its "
                         "listen host or the machine's name; deploy/pki.sh init DIR HOST)");
    }
    X509_free(peer);
  }
  if (tls) SSL_shutdown(ssl.get());
  close(fd);
  return out;
}

}  // namespace benchfarm::client
