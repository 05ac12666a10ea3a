// HttpServer: what it answers (200, HEAD, 404, 405, 400, 431), requests in pieces, a slow reader
// beside a scrape, deadlines, the connection cap, running out of descriptors, and stopping.
#include "base/http_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/http_probe.h"

namespace benchfarm::base {
namespace {

using testing::CloseAll;
using testing::Connect;
using testing::Exchange;
using testing::HttpGet;
using testing::IsOk;
using testing::OpenStalledConnections;
using testing::ReadAll;
using testing::SendAll;

constexpr char kBody[] = "answer 42\n";

HttpResource Resource(std::string body = kBody) {
  HttpResource r;
  r.path = "/metrics";
  r.content_type = "text/plain; version=0.0.4";
  r.body = [body] { return body; };
  return r;
}

std::unique_ptr<HttpServer> StartOrDie(HttpServerOptions options = {},
                                       HttpResource resource = Resource()) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server =
      HttpServer::Start("127.0.0.1:0", std::move(resource), options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

std::string Request(const std::string& method, const std::string& target) {
  return absl::StrCat(method, " ", target, " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
}

// Whether the server hangs up on fd within `within` (EOF or a reset, not the read timeout).
bool ClosedByServerWithin(int fd, absl::Duration within) {
  timeval tv = absl::ToTimeval(within);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[4096];
  while (true) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) continue;
    return n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
  }
}

// ---- what it answers --------------------------------------------------------------------------

TEST(HttpServer, GetOfThePathAnswersTheBody) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  ASSERT_NE(server->port(), 0);
  const std::string response = HttpGet(server->port(), "/metrics");
  EXPECT_TRUE(absl::StartsWith(response, "HTTP/1.1 200 OK\r\n")) << response;
  EXPECT_TRUE(absl::StrContains(response, "\r\nContent-Type: text/plain; version=0.0.4\r\n"));
  EXPECT_TRUE(absl::StrContains(response, "\r\nContent-Length: 10\r\n"));
  EXPECT_TRUE(absl::StrContains(response, "\r\nConnection: close\r\n"));
  EXPECT_TRUE(absl::EndsWith(response, "\r\n\r\nanswer 42\n")) << response;
  // A query string is ignored; HTTP/1.0 is answered too.
  EXPECT_TRUE(IsOk(HttpGet(server->port(), "/metrics?name[]=x")));
  EXPECT_TRUE(IsOk(Exchange(server->port(), "GET /metrics HTTP/1.0\r\n\r\n")));
}

TEST(HttpServer, HeadAnswersTheHeadersOnly) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  const std::string response = Exchange(server->port(), Request("HEAD", "/metrics"));
  EXPECT_TRUE(absl::StartsWith(response, "HTTP/1.1 200 OK\r\n")) << response;
  EXPECT_TRUE(absl::StrContains(response, "\r\nContent-Length: 10\r\n"));
  EXPECT_TRUE(absl::EndsWith(response, "\r\n\r\n")) << response;
}

TEST(HttpServer, OtherPathsMethodsAndGarbageAreRefused) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  EXPECT_TRUE(absl::StartsWith(HttpGet(port, "/"), "HTTP/1.1 404 Not Found\r\n"));
  EXPECT_TRUE(absl::StartsWith(HttpGet(port, "/metrics/x"), "HTTP/1.1 404 "));
  const std::string post = Exchange(port, Request("POST", "/metrics"));
  EXPECT_TRUE(absl::StartsWith(post, "HTTP/1.1 405 Method Not Allowed\r\n")) << post;
  EXPECT_TRUE(absl::StrContains(post, "\r\nAllow: GET, HEAD\r\n"));
  EXPECT_TRUE(absl::StartsWith(Exchange(port, "hello\r\n\r\n"), "HTTP/1.1 400 "));
  EXPECT_TRUE(absl::StartsWith(Exchange(port, "GET /metrics SPDY/3\r\n\r\n"), "HTTP/1.1 400 "));
}

TEST(HttpServer, AnOversizedRequestHeadGets431) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  const std::string big = absl::StrCat("GET /metrics HTTP/1.1\r\nX-Filler: ",
                                       std::string(2 * kMaxRequestHeadBytes, 'x'), "\r\n\r\n");
  const std::string response = Exchange(server->port(), big);
  EXPECT_TRUE(absl::StartsWith(response, "HTTP/1.1 431 ")) << response.substr(0, 200);
  // One just under the cap is answered.
  const std::string fits = absl::StrCat("GET /metrics HTTP/1.1\r\nX-Filler: ",
                                        std::string(kMaxRequestHeadBytes - 100, 'x'), "\r\n\r\n");
  EXPECT_TRUE(IsOk(Exchange(server->port(), fits)));
}

TEST(HttpServer, ARequestSplitAcrossManyWritesIsAnswered) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  const int fd = Connect(server->port());
  ASSERT_GE(fd, 0);
  for (char c : Request("GET", "/metrics")) {
    ASSERT_TRUE(SendAll(fd, std::string(1, c)));
    absl::SleepFor(absl::Milliseconds(2));
  }
  EXPECT_TRUE(absl::EndsWith(ReadAll(fd), "\r\n\r\nanswer 42\n"));
  close(fd);
}

// ---- slow and idle connections ----------------------------------------------------------------

TEST(HttpServer, AClientThatNeverReadsALargeResponseBlocksNoOne) {
  HttpServerOptions options;
  options.request_timeout = absl::Seconds(1);
  const std::string big(8 << 20, 'm');  // far more than the socket buffers hold
  std::unique_ptr<HttpServer> server = StartOrDie(options, Resource(big));
  ASSERT_NE(server, nullptr);
  const int stuck = Connect(server->port());
  ASSERT_GE(stuck, 0);
  ASSERT_TRUE(SendAll(stuck, Request("GET", "/metrics")));
  absl::SleepFor(absl::Milliseconds(200));  // the server has filled stuck's buffers

  const absl::Time start = absl::Now();
  const std::string response = HttpGet(server->port(), "/metrics");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_TRUE(IsOk(response));
  EXPECT_TRUE(absl::EndsWith(response, big));

  // Past its deadline the reader that never read is cut off with part of the response.
  absl::SleepFor(absl::Seconds(1.5));
  const std::string part = ReadAll(stuck);
  EXPECT_LT(part.size(), big.size());
  close(stuck);
}

TEST(HttpServer, ConnectionsThatDoNotSendTheirRequestInTimeAreClosed) {
  HttpServerOptions options;
  options.request_timeout = absl::Milliseconds(300);
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  std::vector<int> stalled = OpenStalledConnections(server->port(), 1, 1);
  ASSERT_EQ(stalled.size(), 2u);
  for (int fd : stalled) EXPECT_TRUE(ClosedByServerWithin(fd, absl::Seconds(3)));
  CloseAll(stalled);
}

TEST(HttpServer, PastTheCapTheOldestIdleConnectionMakesRoom) {
  HttpServerOptions options;
  options.max_connections = 6;
  std::unique_ptr<HttpServer> server = StartOrDie(options);
  ASSERT_NE(server, nullptr);
  std::vector<int> stalled = OpenStalledConnections(server->port(), 10, 2);
  ASSERT_EQ(stalled.size(), 12u);
  testing::ExpectScrapesAnswerWithin(server->port(), 4, absl::Seconds(2));
  // The first ones made room for later ones; the newest is still open (request_timeout is 5 s,
  // and the 4 scrapes closed 4 stalled ones at most).
  EXPECT_TRUE(ClosedByServerWithin(stalled.front(), absl::Milliseconds(500)));
  EXPECT_FALSE(ClosedByServerWithin(stalled.back(), absl::Milliseconds(500)));
  CloseAll(stalled);
}

TEST(HttpServer, KeepsAnsweringWhenTheProcessRunsOutOfDescriptors) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  rlimit before{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = std::min<rlim_t>(before.rlim_cur, 256);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  std::vector<int> fillers;
  for (int fd; (fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0;) fillers.push_back(fd);
  ASSERT_EQ(errno, EMFILE);

  // The one descriptor left goes to the client: accept() fails with EMFILE and there is no
  // connection to close, so the server waits rather than spins.
  close(fillers.back());
  fillers.pop_back();
  const int waiting = Connect(server->port());
  EXPECT_GE(waiting, 0);
  rusage start{};
  getrusage(RUSAGE_SELF, &start);
  absl::SleepFor(absl::Seconds(1));
  rusage end{};
  getrusage(RUSAGE_SELF, &end);
  const absl::Duration cpu =
      absl::DurationFromTimeval(end.ru_utime) + absl::DurationFromTimeval(end.ru_stime) -
      absl::DurationFromTimeval(start.ru_utime) - absl::DurationFromTimeval(start.ru_stime);
  EXPECT_LT(cpu, absl::Milliseconds(300));

  // Two descriptors free: one for the scrape's socket, one the server accepts `waiting` with;
  // the scrape's connection then finds none and the server closes `waiting` to take it.
  for (int i = 0; i < 2; ++i) {
    close(fillers.back());
    fillers.pop_back();
  }
  testing::ExpectScrapesAnswerWithin(server->port(), 1, absl::Seconds(2));

  CloseAll(fillers);
  close(waiting);
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &before), 0);
  testing::ExpectScrapesAnswerWithin(server->port(), 1, absl::Seconds(2));
}

// ---- starting and stopping --------------------------------------------------------------------

TEST(HttpServer, StopClosesTheListenerAndEveryConnection) {
  std::unique_ptr<HttpServer> server = StartOrDie();
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  std::vector<int> stalled = OpenStalledConnections(port, 2, 1);
  server.reset();
  for (int fd : stalled) EXPECT_TRUE(ClosedByServerWithin(fd, absl::Seconds(1)));
  EXPECT_LT(Connect(port), 0);
  CloseAll(stalled);
}

TEST(HttpServer, StartRefusesBadAndBusyAddresses) {
  for (const char* bad :
       {"127.0.0.1", "127.0.0.1:", ":9470", "127.0.0.1:x", "127.0.0.1:70000", "[::1", "::1:9470"}) {
    absl::StatusOr<std::unique_ptr<HttpServer>> s = HttpServer::Start(bad, Resource());
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s.status();
  }
  std::unique_ptr<HttpServer> first = StartOrDie();
  ASSERT_NE(first, nullptr);
  const std::string busy = absl::StrCat("127.0.0.1:", first->port());
  absl::StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Start(busy, Resource());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), busy)) << second.status();
}

TEST(HttpServer, ListensOnEveryIPv4Interface) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start("0.0.0.0:0", Resource());
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(IsOk(HttpGet((*server)->port(), "/metrics")));
}

TEST(HttpServer, ListensOnIPv6) {
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start("[::]:0", Resource());
  if (!server.ok()) GTEST_SKIP() << "no IPv6 here: " << server.status();
  // [::] takes IPv4 connections too unless net.ipv6.bindv6only is set.
  EXPECT_NE((*server)->port(), 0);
}

}  // namespace
}  // namespace benchfarm::base
