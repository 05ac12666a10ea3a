// HttpServer: see http_server.h.
#include "base/http_server.h"

#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <system_error>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/os_error.h"
#include "base/status_macros.h"
#include "base/tcp_listen.h"
#include "spdlog/spdlog.h"

namespace benchfarm::base {
namespace {

using SteadyClock = std::chrono::steady_clock;

// Connections accepted per wake-up at most, so that a flood of connects cannot starve the rest.
constexpr int kAcceptBatch = 64;
// Reads of what a closing client still sends per wake-up at most (4 KiB each): one that keeps
// sending cannot hold the loop.
constexpr int kDrainBatch = 16;
// How long accepting stops when accept() finds no descriptor and no connection to give one back.
constexpr auto kAcceptPause = std::chrono::milliseconds(100);

void CloseFd(int fd) {
  // On Linux the descriptor is released even when close() reports EINTR.
  if (close(fd) != 0 && errno != EINTR) {
    spdlog::warn("http server: close({}): {}", fd, ErrnoText(errno));
  }
}

const char* Reason(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
  }
  return "Error";
}

// A whole response. HEAD gets the headers GET would (Content-Length included) without the body.
std::string ResponseText(int status, absl::string_view content_type, absl::string_view body,
                         bool head) {
  return absl::StrCat("HTTP/1.1 ", status, " ", Reason(status), "\r\nContent-Type: ", content_type,
                      "\r\nContent-Length: ", body.size(),
                      status == 405 ? "\r\nAllow: GET, HEAD" : "", "\r\nConnection: close\r\n\r\n",
                      head ? "" : body);
}

// Open connections at most: the option, at least 1, at most half of RLIMIT_NOFILE's soft limit.
size_t ConnectionCap(int option) {
  size_t cap = static_cast<size_t>(std::max(option, 1));
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn("http server: getrlimit(RLIMIT_NOFILE): {}; connections capped at {}",
                 ErrnoText(errno), cap);
  } else if (limit.rlim_cur != RLIM_INFINITY) {
    cap = std::min<size_t>(cap, std::max<rlim_t>(limit.rlim_cur / 2, 1));
  }
  return cap;
}

}  // namespace

// The listener, the epoll set, the eventfd that stops the loop, and every connection. Everything
// but Stop() runs on the server's thread once Run() has started.
class HttpServer::Loop {
 public:
  Loop(HttpResource resource, const HttpServerOptions& options)
      : resource_(std::move(resource)),
        timeout_(std::chrono::duration_cast<SteadyClock::duration>(absl::ToChronoNanoseconds(
            std::clamp(options.request_timeout, absl::Milliseconds(1), absl::Hours(24))))),
        max_connections_(ConnectionCap(options.max_connections)) {}

  ~Loop() {
    for (const auto& [fd, connection] : connections_) CloseFd(fd);
    for (int fd : listeners_) CloseFd(fd);
    for (int fd : {epoll_, wake_}) {
      if (fd >= 0) CloseFd(fd);
    }
  }

  // Binds and listens on address, sets up epoll and the eventfd. Errors: HttpServer::Start()'s,
  // without the address.
  absl::Status Open(const std::string& address);
  // The port bound by Open().
  int port() const { return port_; }
  // Serves until Stop().
  void Run();
  // Wakes Run() to return. Safe from any thread.
  void Stop();

 private:
  // A connection waits for its request head, then is sent its response, then is waited on to
  // close its end (the server having shut down its own).
  enum class Phase { kRequest, kResponse, kClosing };
  // A connection's deadline, the order it got it in, its fd.
  using Place = std::tuple<SteadyClock::time_point, uint64_t, int>;
  static SteadyClock::time_point Deadline(const Place& p) { return std::get<0>(p); }
  static int FdOf(const Place& p) { return std::get<2>(p); }
  struct Connection {
    Phase phase = Phase::kRequest;
    Place place;
    std::string in;   // the request head so far (kRequest)
    std::string out;  // the response (kResponse)
    size_t sent = 0;  // of out
  };
  // Connections by deadline, then by when they got it (several get the same one in a wake-up).
  using Queue = std::set<Place>;

  Queue& QueueOf(const Connection& c) { return c.phase == Phase::kResponse ? answering_ : idle_; }
  Place NewPlace(int fd, SteadyClock::time_point now) {
    return {now + timeout_, next_order_++, fd};
  }
  void Accept(int listener, SteadyClock::time_point now);
  // Whether `listener` has a connection to accept (poll(), which needs no descriptor).
  bool ConnectionWaiting(int listener);
  void PauseAccepting(SteadyClock::time_point now);
  void ResumeAccepting();
  // Closes the idle connection nearest its deadline, else the answered one nearest it. False
  // when none is open.
  bool CloseOne();
  void Close(int fd);
  // Moves c to `phase` with a fresh deadline and the epoll interest the phase needs. False (c
  // closed) when epoll refuses.
  bool Enter(int fd, Connection& c, Phase phase, SteadyClock::time_point now);
  void ReadRequest(int fd, Connection& c, SteadyClock::time_point now);
  void Respond(int fd, Connection& c, SteadyClock::time_point now);
  void WriteResponse(int fd, Connection& c, SteadyClock::time_point now);
  void DrainUntilClosed(int fd);
  void CloseExpired(SteadyClock::time_point now);
  // epoll_wait's timeout: until the nearest deadline or the end of a pause in accepting.
  int WaitMillis(SteadyClock::time_point now) const;

  const HttpResource resource_;
  const SteadyClock::duration timeout_;
  const size_t max_connections_;
  std::vector<int> listeners_;  // one per address the host resolves to (ListenTcp)
  int epoll_ = -1;
  int wake_ = -1;
  int port_ = 0;
  std::unordered_map<int, Connection> connections_;
  Queue idle_;       // kRequest and kClosing
  Queue answering_;  // kResponse
  uint64_t next_order_ = 0;
  // Set while accepting is paused (accept() failed): when to resume.
  std::optional<SteadyClock::time_point> accept_paused_until_;
  // Whether accept() failed last time (logged once, until it works again).
  bool accept_failing_ = false;
};

absl::Status HttpServer::Loop::Open(const std::string& address) {
  ASSIGN_OR_RETURN(TcpListeners listening, ListenTcp(address));
  listeners_ = std::move(listening.fds);
  port_ = listening.port;
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_ < 0) return absl::InternalError(absl::StrCat("epoll_create1: ", ErrnoText(errno)));
  wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_ < 0) return absl::InternalError(absl::StrCat("eventfd: ", ErrnoText(errno)));
  std::vector<int> watched = listeners_;
  watched.push_back(wake_);
  for (int fd : watched) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0) {
      return absl::InternalError(absl::StrCat("epoll_ctl: ", ErrnoText(errno)));
    }
  }
  return absl::OkStatus();
}

void HttpServer::Loop::Stop() {
  const uint64_t one = 1;
  while (write(wake_, &one, sizeof(one)) < 0) {
    if (errno == EINTR) continue;
    // EAGAIN would mean the counter is already far from 0: the loop is woken anyway.
    if (errno != EAGAIN) {
      spdlog::error("http server on port {}: eventfd write: {}", port_, ErrnoText(errno));
    }
    return;
  }
}

void HttpServer::Loop::Run() {
  std::vector<epoll_event> events(64);
  while (true) {
    const int n = epoll_wait(epoll_, events.data(), static_cast<int>(events.size()),
                             WaitMillis(SteadyClock::now()));
    if (n < 0) {
      if (errno == EINTR) continue;
      spdlog::error("http server on port {}: epoll_wait: {}; no longer serving", port_,
                    ErrnoText(errno));
      return;
    }
    const SteadyClock::time_point now = SteadyClock::now();
    for (int i = 0; i < n; ++i) {
      const int fd = events[i].data.fd;
      if (fd == wake_) return;
      if (std::find(listeners_.begin(), listeners_.end(), fd) != listeners_.end()) {
        Accept(fd, now);
        continue;
      }
      // Gone when closed earlier in this batch. The fd may since belong to a new connection;
      // the handlers below then find nothing to read or write yet, which is harmless.
      auto it = connections_.find(fd);
      if (it == connections_.end()) continue;
      switch (it->second.phase) {
        case Phase::kRequest:
          ReadRequest(fd, it->second, now);
          break;
        case Phase::kResponse:
          WriteResponse(fd, it->second, now);
          break;
        case Phase::kClosing:
          DrainUntilClosed(fd);
          break;
      }
    }
    CloseExpired(now);
    if (accept_paused_until_.has_value() && *accept_paused_until_ <= now) ResumeAccepting();
  }
}

int HttpServer::Loop::WaitMillis(SteadyClock::time_point now) const {
  std::optional<SteadyClock::time_point> next = accept_paused_until_;
  for (const Queue* q : {&idle_, &answering_}) {
    if (!q->empty() && (!next.has_value() || Deadline(*q->begin()) < *next)) {
      next = Deadline(*q->begin());
    }
  }
  if (!next.has_value()) return -1;
  if (*next <= now) return 0;
  // Rounded up, so that the loop does not wake just before the deadline and wait again.
  return static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(*next - now).count());
}

void HttpServer::Loop::Accept(int listener, SteadyClock::time_point now) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || FailedBeforeAccept(err)) continue;
      if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
        // accept() wants a descriptor even to find no connection waiting: give one back only for
        // a waiting connection, and with none to give, wait rather than spin.
        if (!ConnectionWaiting(listener)) return;
        if (CloseOne()) continue;
      }
      if (!accept_failing_) {  // once a streak: a retry every 100 ms need not be logged
        spdlog::warn("http server on port {}: accept: {}; trying again every {} ms", port_,
                     ErrnoText(err), kAcceptPause.count());
        accept_failing_ = true;
      }
      PauseAccepting(now);
      return;
    }
    if (accept_failing_) {
      spdlog::info("http server on port {}: accepting again", port_);
      accept_failing_ = false;
    }
    if (connections_.size() >= max_connections_) CloseOne();
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = fd;
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &event) != 0) {
      spdlog::warn("http server on port {}: epoll_ctl: {}; connection dropped", port_,
                   ErrnoText(errno));
      CloseFd(fd);
      continue;
    }
    Connection& c = connections_[fd];
    c.place = NewPlace(fd, now);
    idle_.insert(c.place);
  }
}

bool HttpServer::Loop::ConnectionWaiting(int fd) {
  pollfd listener{};
  listener.fd = fd;
  listener.events = POLLIN;
  int n;
  while ((n = poll(&listener, 1, 0)) < 0 && errno == EINTR) {
  }
  if (n < 0) {
    // Say yes: the caller then closes a connection or pauses, and never spins.
    spdlog::error("http server on port {}: poll: {}", port_, ErrnoText(errno));
    return true;
  }
  return n > 0 && (listener.revents & POLLIN) != 0;
}

void HttpServer::Loop::PauseAccepting(SteadyClock::time_point now) {
  for (int listener : listeners_) {
    if (epoll_ctl(epoll_, EPOLL_CTL_DEL, listener, nullptr) != 0 && errno != ENOENT) {
      spdlog::error("http server on port {}: epoll_ctl: {}", port_, ErrnoText(errno));
    }
  }
  accept_paused_until_ = now + kAcceptPause;
}

void HttpServer::Loop::ResumeAccepting() {
  for (int listener : listeners_) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.fd = listener;
    // EEXIST: added on an earlier try that failed for another listener.
    if (epoll_ctl(epoll_, EPOLL_CTL_ADD, listener, &event) != 0 && errno != EEXIST) {
      // Try again after another pause rather than never accept again.
      spdlog::error("http server on port {}: epoll_ctl: {}", port_, ErrnoText(errno));
      accept_paused_until_ = SteadyClock::now() + kAcceptPause;
      return;
    }
  }
  accept_paused_until_.reset();
}

bool HttpServer::Loop::CloseOne() {
  for (Queue* q : {&idle_, &answering_}) {
    if (!q->empty()) {
      spdlog::debug("http server on port {}: {} connections open; closing one", port_,
                    connections_.size());
      Close(FdOf(*q->begin()));
      return true;
    }
  }
  return false;
}

void HttpServer::Loop::Close(int fd) {
  auto it = connections_.find(fd);
  QueueOf(it->second).erase(it->second.place);
  connections_.erase(it);
  CloseFd(fd);  // which also takes it out of the epoll set
}

bool HttpServer::Loop::Enter(int fd, Connection& c, Phase phase, SteadyClock::time_point now) {
  QueueOf(c).erase(c.place);
  c.phase = phase;
  c.place = NewPlace(fd, now);
  QueueOf(c).insert(c.place);
  epoll_event event{};
  event.events = phase == Phase::kResponse ? EPOLLOUT : EPOLLIN;
  event.data.fd = fd;
  if (epoll_ctl(epoll_, EPOLL_CTL_MOD, fd, &event) != 0) {
    spdlog::warn("http server on port {}: epoll_ctl: {}; connection dropped", port_,
                 ErrnoText(errno));
    Close(fd);
    return false;
  }
  return true;
}

void HttpServer::Loop::ReadRequest(int fd, Connection& c, SteadyClock::time_point now) {
  char buffer[4096];
  while (true) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n == 0) {  // closed before its request was whole
      Close(fd);
      return;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) Close(fd);
      return;
    }
    // Search only where the new bytes can complete "\r\n\r\n"; keep at most the cap.
    const size_t from = c.in.size() < 3 ? 0 : c.in.size() - 3;
    c.in.append(buffer, std::min(static_cast<size_t>(n), kMaxRequestHeadBytes - c.in.size()));
    if (c.in.find("\r\n\r\n", from) != std::string::npos || c.in.size() == kMaxRequestHeadBytes) {
      Respond(fd, c, now);
      return;
    }
  }
}

void HttpServer::Loop::Respond(int fd, Connection& c, SteadyClock::time_point now) {
  const size_t line_end = c.in.find("\r\n");
  std::vector<absl::string_view> line =
      absl::StrSplit(absl::string_view(c.in).substr(0, line_end), ' ');
  if (c.in.find("\r\n\r\n") == std::string::npos) {
    c.out = ResponseText(431, "text/plain", "request head too large\n", false);
  } else if (line.size() != 3 || line[1].empty() || !absl::StartsWith(line[2], "HTTP/1.")) {
    c.out = ResponseText(400, "text/plain", "bad request\n", false);
  } else if (line[0] != "GET" && line[0] != "HEAD") {
    c.out = ResponseText(405, "text/plain", "only GET and HEAD\n", false);
  } else if (line[1].substr(0, line[1].find('?')) != resource_.path) {
    c.out = ResponseText(404, "text/plain", "not found\n", line[0] == "HEAD");
  } else {
    c.out = ResponseText(200, resource_.content_type, resource_.body(), line[0] == "HEAD");
  }
  c.in = std::string();
  if (Enter(fd, c, Phase::kResponse, now)) WriteResponse(fd, c, now);
}

void HttpServer::Loop::WriteResponse(int fd, Connection& c, SteadyClock::time_point now) {
  while (c.sent < c.out.size()) {
    const ssize_t n = send(fd, c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) Close(fd);
      return;
    }
    c.sent += static_cast<size_t>(n);
  }
  c.out = std::string();
  // FIN after the response; then wait for the client's, reading what it still sends, so that
  // closing with unread bytes does not reset the connection under the response.
  if (shutdown(fd, SHUT_WR) != 0) {
    Close(fd);
    return;
  }
  if (Enter(fd, c, Phase::kClosing, now)) DrainUntilClosed(fd);
}

void HttpServer::Loop::DrainUntilClosed(int fd) {
  char buffer[4096];
  for (int i = 0; i < kDrainBatch; ++i) {
    const ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    if (n > 0) continue;
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    Close(fd);  // the client's end closed (or failed)
    return;
  }
}

void HttpServer::Loop::CloseExpired(SteadyClock::time_point now) {
  for (Queue* q : {&idle_, &answering_}) {
    while (!q->empty() && Deadline(*q->begin()) <= now) Close(FdOf(*q->begin()));
  }
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address,
                                                              HttpResource resource,
                                                              HttpServerOptions options) {
  auto loop = std::make_unique<Loop>(std::move(resource), options);
  const absl::Status opened = loop->Open(address);
  if (!opened.ok()) {
    return absl::Status(opened.code(),
                        absl::StrCat("cannot listen on ", address, ": ", opened.message()));
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(loop)));
}

HttpServer::HttpServer(std::unique_ptr<Loop> loop)
    : loop_(std::move(loop)), thread_([this] { loop_->Run(); }) {}

int HttpServer::port() const { return loop_->port(); }

HttpServer::~HttpServer() {
  loop_->Stop();
  thread_.join();
}

}  // namespace benchfarm::base
