// The front door reports a plain-text client of a TLS tracker with the address gRPC would give
// it and closes it, while a silent connection and one closed at once wait or go without holding
// it up; with plain text expected, it hands connections to gRPC as they come (issue 38 §2).

#include "tracker/front_door.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tests/http_probe.h"

namespace benchfarm::tracker {
namespace {

// A gRPC server (no services: a connection it was handed is enough) fed by a front door.
struct Served {
  explicit Served(FrontDoorOptions options) {
    grpc::ServerBuilder builder;
    acceptor = builder.experimental().AddExternalConnectionAcceptor(
        grpc::ServerBuilder::experimental_type::ExternalConnectionType::FROM_FD,
        grpc::InsecureServerCredentials());
    server = builder.BuildAndStart();
    absl::StatusOr<std::unique_ptr<FrontDoor>> listening =
        FrontDoor::Listen("127.0.0.1:0", options);
    EXPECT_TRUE(listening.ok()) << listening.status();
    door = std::move(*listening);
    door->Start(acceptor.get(), [this](const std::string& peer, const std::string& sent) {
      absl::MutexLock lock(&mu);
      reported.push_back(absl::StrCat(peer, " ", sent));
      if (!one_reported.HasBeenNotified()) one_reported.Notify();
    });
  }
  ~Served() {
    door.reset();
    server->Shutdown();
  }

  std::unique_ptr<grpc::experimental::ExternalConnectionAcceptor> acceptor;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<FrontDoor> door;
  absl::Mutex mu;
  std::vector<std::string> reported ABSL_GUARDED_BY(mu);
  absl::Notification one_reported;
};

int LocalPort(int fd) {
  sockaddr_in local{};
  socklen_t length = sizeof(local);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length), 0);
  return ntohs(local.sin_port);
}

TEST(FrontDoor, ReportsAPlainTextClientWithItsAddressAndClosesIt) {
  Served served({});
  const int silent = testing::Connect(served.door->port());
  ASSERT_GE(silent, 0);
  close(testing::Connect(served.door->port()));  // gone before it sent anything
  const int plain = testing::Connect(served.door->port());
  ASSERT_GE(plain, 0);
  ASSERT_TRUE(testing::SendAll(plain, "GET / HTTP/1.1\r\nHost: tracker\r\n\r\n"));
  EXPECT_EQ(testing::ReadAll(plain), "");  // closed, not answered
  ASSERT_TRUE(served.one_reported.WaitForNotificationWithTimeout(absl::Seconds(60)));
  {
    absl::MutexLock lock(&served.mu);
    // Its first 16 bytes, after the peer as gRPC names it ("ipv4:ADDRESS:PORT").
    EXPECT_EQ(served.reported, std::vector<std::string>{absl::StrCat(
                                   "ipv4:127.0.0.1:", LocalPort(plain), " GET / HTTP/1.1\r\n")});
  }
  close(plain);
  close(silent);
}

TEST(FrontDoor, HandsEveryConnectionToGrpcWhenPlainTextIsExpected) {
  FrontDoorOptions options;
  options.expect_tls = false;
  Served served(options);
  std::shared_ptr<grpc::Channel> channel = grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", served.door->port()), grpc::InsecureChannelCredentials());
  // Connected: gRPC's HTTP/2 handshake with the server the door handed the connection to.
  EXPECT_TRUE(
      channel->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(60)));
  absl::MutexLock lock(&served.mu);
  EXPECT_TRUE(served.reported.empty());
}

}  // namespace
}  // namespace benchfarm::tracker
