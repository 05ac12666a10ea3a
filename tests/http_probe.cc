#include "tests/http_probe.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace benchfarm::testing {

absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
    const int error = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("binding a loopback port: ", std::strerror(error)));
  }
  close(fd);
  return ntohs(address.sin_port);
}

// A TCP connection to 127.0.0.1:port (-1 on failure) with send/receive timeouts.
int Connect(int port, absl::Duration timeout) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  return write(fd, data.data(), data.size()) == static_cast<ssize_t>(data.size());
}

std::string Exchange(int port, const std::string& request) {
  int fd = Connect(port);
  if (fd < 0) return "";
  std::string response = SendAll(fd, request) ? ReadAll(fd) : "";
  close(fd);
  return response;
}

std::string HttpGet(int port, const std::string& path) {
  return Exchange(port, absl::StrCat("GET ", path,
                                     " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
}

std::string ReadAll(int fd) {
  std::string data;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) data.append(buf, static_cast<size_t>(n));
  return data;
}

void ExpectScrapesAnswerWithin(int port, int scrapes, absl::Duration limit) {
  for (int i = 0; i < scrapes; ++i) {
    const absl::Time start = absl::Now();
    const std::string response = HttpGet(port, "/metrics");
    const absl::Duration took = absl::Now() - start;
    EXPECT_TRUE(IsOk(response)) << "scrape " << i << ": " << response.substr(0, 200);
    EXPECT_LT(took, limit) << "scrape " << i;
  }
}

void ExpectScrapesAnswerWhileStalled(int port, int idle, int slow) {
  std::vector<int> stalled = OpenStalledConnections(port, idle, slow);
  ExpectScrapesAnswerWithin(port, 4, absl::Seconds(2));
  CloseAll(stalled);
}

// Opens `idle` connections that never send a byte and `slow` ones that send half a request.
std::vector<int> OpenStalledConnections(int port, int idle, int slow) {
  std::vector<int> fds;
  for (int i = 0; i < idle + slow; ++i) {
    int fd = Connect(port);
    EXPECT_GE(fd, 0);
    if (fd < 0) continue;
    if (i >= idle) {
      EXPECT_TRUE(SendAll(fd, "GET /metrics HTTP/1.1\r\nHost: 127.0"));
    }
    fds.push_back(fd);
  }
  // Let the server accept them (and read the slow ones' halves) before the real request.
  absl::SleepFor(absl::Milliseconds(200));
  return fds;
}

void CloseAll(const std::vector<int>& fds) {
  for (int fd : fds) close(fd);
}

// Prometheus text format -> {"name{labels}": value}.
std::map<std::string, double> ParseSamples(const std::string& response) {
  std::map<std::string, double> samples;
  size_t body = response.find("\r\n\r\n");
  if (body == std::string::npos) return samples;
  for (absl::string_view line : absl::StrSplit(response.substr(body + 4), '\n')) {
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    if (space == absl::string_view::npos) continue;
    samples[std::string(line.substr(0, space))] = std::stod(std::string(line.substr(space + 1)));
  }
  return samples;
}

bool IsOk(const std::string& response) {
  return absl::StartsWith(response, "HTTP/1.1 200") || absl::StartsWith(response, "HTTP/1.0 200");
}

}  // namespace benchfarm::testing
