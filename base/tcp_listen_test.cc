// ListenTcp listens on every address a name resolves to, on one port (as gRPC does, whose
// listener the tracker's front door replaces); PeerName names a client as gRPC does. (Malformed
// addresses: http_server_test.)

#include "base/tcp_listen.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace benchfarm::base {
namespace {

TEST(ListenTcp, LocalhostIsEveryLoopbackAddressOnOnePort) {
  absl::StatusOr<TcpListeners> listening = ListenTcp("localhost:0");
  ASSERT_TRUE(listening.ok()) << listening.status();
  ASSERT_FALSE(listening->fds.empty());
  EXPECT_GT(listening->port, 0);
  for (int fd : listening->fds) {
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length), 0);
    const int port =
        ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                          : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    EXPECT_EQ(port, listening->port);
  }
  // 127.0.0.1 is one of them (whichever order the resolver gives ::1 and it in), and the server
  // side of the connection names the client as gRPC would.
  const int client = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(listening->port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  ASSERT_EQ(connect(client, reinterpret_cast<sockaddr*>(&to), sizeof(to)), 0);
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  ASSERT_EQ(getsockname(client, reinterpret_cast<sockaddr*>(&local), &length), 0);
  std::vector<pollfd> polled;
  for (int fd : listening->fds) polled.push_back({fd, POLLIN, 0});
  ASSERT_EQ(poll(polled.data(), polled.size(), 60'000), 1);
  int accepted = -1;
  for (const pollfd& p : polled) {
    if (p.revents & POLLIN) accepted = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
  }
  ASSERT_GE(accepted, 0);
  EXPECT_EQ(PeerName(accepted), absl::StrCat("ipv4:127.0.0.1:", ntohs(local.sin_port)));
  close(accepted);
  close(client);
  for (int fd : listening->fds) close(fd);
}

}  // namespace
}  // namespace benchfarm::base
