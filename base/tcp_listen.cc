// Listening TCP sockets: see tcp_listen.h.
#include "base/tcp_listen.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "base/os_error.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace benchfarm::base {
namespace {

// "HOST:PORT" or "[IPv6]:PORT" -> {host, port}.
absl::StatusOr<std::pair<std::string, std::string>> SplitAddress(const std::string& address) {
  std::string host;
  absl::string_view rest;
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close == std::string::npos) {
      return absl::InvalidArgumentError("no ']' after '['");
    }
    host = address.substr(1, close - 1);
    rest = absl::string_view(address).substr(close + 1);
  } else {
    const size_t colon = address.find(':');
    if (colon == std::string::npos) {
      return absl::InvalidArgumentError("no port (HOST:PORT)");
    }
    host = address.substr(0, colon);
    rest = absl::string_view(address).substr(colon);
  }
  int port = -1;
  if (host.empty() || !absl::ConsumePrefix(&rest, ":") || rest.empty() ||
      !std::all_of(rest.begin(), rest.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      !absl::SimpleAtoi(rest, &port) || port > 65535) {
    return absl::InvalidArgumentError("not HOST:PORT or [IPv6]:PORT with a port up to 65535");
  }
  return std::make_pair(host, std::string(rest));
}

int PortOf(const sockaddr_storage& address) {
  return ntohs(address.ss_family == AF_INET6
                   ? reinterpret_cast<const sockaddr_in6*>(&address)->sin6_port
                   : reinterpret_cast<const sockaddr_in*>(&address)->sin_port);
}

// Binds and listens on `a` (its port replaced by `port` unless 0): the fd, or why not.
absl::StatusOr<int> ListenOn(const addrinfo& a, int port) {
  sockaddr_storage where{};
  std::copy_n(reinterpret_cast<const char*>(a.ai_addr), a.ai_addrlen,
              reinterpret_cast<char*>(&where));
  if (port != 0) {
    const uint16_t net_port = htons(static_cast<uint16_t>(port));
    if (where.ss_family == AF_INET6) {
      reinterpret_cast<sockaddr_in6*>(&where)->sin6_port = net_port;
    } else {
      reinterpret_cast<sockaddr_in*>(&where)->sin_port = net_port;
    }
  }
  const int fd = socket(a.ai_family, a.ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a.ai_protocol);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", ErrnoText(errno)));
  const int on = 1;
  std::string error;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0) {
    error = absl::StrCat("SO_REUSEADDR: ", ErrnoText(errno));
  } else if (bind(fd, reinterpret_cast<const sockaddr*>(&where), a.ai_addrlen) != 0) {
    error = absl::StrCat("bind: ", ErrnoText(errno));
  } else if (listen(fd, SOMAXCONN) != 0) {
    error = absl::StrCat("listen: ", ErrnoText(errno));
  } else {
    return fd;
  }
  close(fd);
  return absl::UnavailableError(error);
}

}  // namespace

absl::StatusOr<TcpListeners> ListenTcp(const std::string& address) {
  ASSIGN_OR_RETURN(auto host_port, SplitAddress(address));
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int resolved =
      getaddrinfo(host_port.first.c_str(), host_port.second.c_str(), &hints, &found);
  if (resolved != 0) {
    return absl::UnavailableError(resolved == EAI_SYSTEM ? ErrnoText(errno)
                                                         : gai_strerror(resolved));
  }
  TcpListeners out;
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    absl::StatusOr<int> fd = ListenOn(*a, out.port);
    if (!fd.ok()) {
      error = std::string(fd.status().message());
      if (!out.fds.empty()) {
        spdlog::warn("listening on {}: one of its addresses does not bind: {}", address, error);
      }
      continue;
    }
    if (out.fds.empty()) {
      sockaddr_storage bound{};
      socklen_t length = sizeof(bound);
      if (getsockname(*fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
        error = absl::StrCat("getsockname: ", ErrnoText(errno));
        close(*fd);
        continue;
      }
      out.port = PortOf(bound);
    }
    out.fds.push_back(*fd);
  }
  freeaddrinfo(found);
  if (out.fds.empty()) return absl::UnavailableError(error);
  return out;
}

bool FailedBeforeAccept(int err) {
  switch (err) {
    case ECONNABORTED:
    case EPROTO:
    case ENETDOWN:
    case ENOPROTOOPT:
    case EHOSTDOWN:
    case ENONET:
    case EHOSTUNREACH:
    case EOPNOTSUPP:
    case ENETUNREACH:
      return true;
  }
  return false;
}

std::string PeerName(int fd) {
  sockaddr_storage peer{};
  socklen_t length = sizeof(peer);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &length) != 0) return "unknown peer";
  char text[INET6_ADDRSTRLEN] = {};
  if (peer.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&peer);
    if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
      // The last 4 bytes are the IPv4 address.
      inet_ntop(AF_INET, &in6->sin6_addr.s6_addr[12], text, sizeof(text));
      return absl::StrCat("ipv4:", text, ":", PortOf(peer));
    }
    inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
    return absl::StrCat("ipv6:[", text, "]:", PortOf(peer));
  }
  if (peer.ss_family == AF_INET) {
    inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(&peer)->sin_addr, text, sizeof(text));
    return absl::StrCat("ipv4:", text, ":", PortOf(peer));
  }
  return "unknown peer";
}

}  // namespace benchfarm::base
