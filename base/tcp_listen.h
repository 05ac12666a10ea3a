// Listening TCP sockets and the names of their peers, shared by the daemons' own listeners (the
// /metrics HTTP server, the tracker's front door in front of gRPC).
//
// Thread-safety: the functions are thread-safe.

#ifndef BENCHFARM_BASE_TCP_LISTEN_H_
#define BENCHFARM_BASE_TCP_LISTEN_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace benchfarm::base {

struct TcpListeners {
  // Non-blocking, close-on-exec, listening; one per address the host resolves to that binds.
  std::vector<int> fds;
  int port = 0;  // the port they listen on (the one picked, after port 0)
};

// Listens on address — "HOST:PORT" with an IPv4 address or name ("127.0.0.1:9470",
// "0.0.0.0:9470", "localhost:9470") or "[IPv6]:PORT" ("[::]:9470"); port 0 picks one — on every
// address HOST resolves to (as gRPC does: "localhost" is 127.0.0.1 and ::1), all on one port,
// with SO_REUSEADDR. Fails only when none binds. Errors, without the address: InvalidArgument
// when address is not of that form; Unavailable when it cannot be resolved or bound (e.g. in
// use).
absl::StatusOr<TcpListeners> ListenTcp(const std::string& address);

// Whether accept() failed with `err` for a connection that failed before it was accepted
// (accept(2): Linux passes the connection's pending network error on): the next may succeed.
bool FailedBeforeAccept(int err);

// The peer of connected socket `fd` as gRPC names it ("ipv4:10.0.0.7:51234", "ipv6:[::1]:51234";
// an IPv4-mapped IPv6 address as IPv4), so that a log line of ours and one of gRPC's name a
// client alike; "unknown peer" when getpeername fails.
std::string PeerName(int fd);

}  // namespace benchfarm::base

#endif  // BENCHFARM_BASE_TCP_LISTEN_H_
