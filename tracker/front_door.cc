// FrontDoor: see front_door.h.
#include "tracker/front_door.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/os_error.h"
#include "base/tcp_listen.h"
#include "spdlog/spdlog.h"

namespace benchfarm::tracker {
namespace {

// A TLS record of type handshake: how every TLS client's first flight (its ClientHello) opens.
constexpr unsigned char kTlsHandshakeRecord = 0x16;
// Connections accepted per wake-up at most, so that a flood of connects cannot starve the rest.
constexpr int kAcceptBatch = 64;
// How long accepting stops when accept() fails for want of descriptors or memory.
constexpr absl::Duration kAcceptPause = absl::Milliseconds(100);

}  // namespace

absl::StatusOr<std::unique_ptr<FrontDoor>> FrontDoor::Listen(const std::string& address,
                                                             FrontDoorOptions options) {
  absl::StatusOr<base::TcpListeners> listening = base::ListenTcp(address);
  if (!listening.ok()) {
    return absl::Status(listening.status().code(), absl::StrCat("cannot listen on ", address, ": ",
                                                                listening.status().message()));
  }
  const int wake = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake < 0) {
    for (int fd : listening->fds) close(fd);
    return absl::InternalError(
        absl::StrCat("cannot listen on ", address, ": eventfd: ", base::ErrnoText(errno)));
  }
  return std::unique_ptr<FrontDoor>(
      new FrontDoor(std::move(listening->fds), listening->port, wake, options));
}

FrontDoor::FrontDoor(std::vector<int> listeners, int port, int wake, FrontDoorOptions options)
    : listeners_(std::move(listeners)), port_(port), wake_(wake), options_(options) {}

FrontDoor::~FrontDoor() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    while (write(wake_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    thread_.join();
  }
  for (const Waiting& w : waiting_) close(w.fd);
  for (int fd : listeners_) close(fd);
  close(wake_);
}

void FrontDoor::Start(grpc::experimental::ExternalConnectionAcceptor* acceptor,
                      PlainTextHandler on_plain_text) {
  acceptor_ = acceptor;
  on_plain_text_ = std::move(on_plain_text);
  thread_ = std::thread([this] { Run(); });
}

void FrontDoor::Run() {
  std::vector<pollfd> polled;
  while (true) {
    const absl::Time before = absl::Now();
    const bool accepting = before >= accept_paused_until_;
    polled.clear();
    polled.push_back({wake_, POLLIN, 0});
    for (int fd : listeners_) polled.push_back({accepting ? fd : -1, POLLIN, 0});
    for (const Waiting& w : waiting_) polled.push_back({w.fd, POLLIN, 0});
    if (poll(polled.data(), polled.size(), WaitMillis(before)) < 0) {
      if (errno == EINTR) continue;
      spdlog::error("front door on port {}: poll: {}; no longer accepting", port_,
                    base::ErrnoText(errno));
      return;
    }
    if (polled[0].revents != 0) return;
    const absl::Time now = absl::Now();
    // The connections that were waiting: examined when they sent something (or closed), handed
    // over past their deadline.
    const size_t first_waiting = 1 + listeners_.size();
    std::deque<Waiting> still;
    for (size_t i = 0; i < waiting_.size(); ++i) {
      const Waiting& w = waiting_[i];
      if (polled[first_waiting + i].revents != 0) {
        if (Examine(w)) still.push_back(w);
      } else if (w.deadline <= now) {
        HandOver(w);
      } else {
        still.push_back(w);
      }
    }
    waiting_ = std::move(still);
    for (size_t i = 0; i < listeners_.size(); ++i) {
      if ((polled[1 + i].revents & POLLIN) != 0) Accept(listeners_[i], now);
    }
  }
}

int FrontDoor::WaitMillis(absl::Time now) const {
  absl::Time next = absl::InfiniteFuture();
  if (!waiting_.empty()) next = waiting_.front().deadline;
  if (now < accept_paused_until_) next = std::min(next, accept_paused_until_);
  if (next == absl::InfiniteFuture()) return -1;
  // Rounded up, so that the loop does not wake just before the deadline and wait again.
  return static_cast<int>(std::max<int64_t>(0, absl::ToInt64Milliseconds(next - now) + 1));
}

void FrontDoor::Accept(int listener, absl::Time now) {
  for (int i = 0; i < kAcceptBatch; ++i) {
    const int fd = accept4(listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK) return;
      if (err == EINTR || base::FailedBeforeAccept(err)) continue;
      if (!accept_failing_) {  // once a streak
        spdlog::warn("front door on port {}: accept: {}; trying again every {}", port_,
                     base::ErrnoText(err), absl::FormatDuration(kAcceptPause));
        accept_failing_ = true;
      }
      accept_paused_until_ = now + kAcceptPause;
      return;
    }
    if (accept_failing_) {
      spdlog::info("front door on port {}: accepting again", port_);
      accept_failing_ = false;
    }
    // As gRPC's own listener sets it: small messages (heartbeats, replies) go out at once.
    const int on = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    const Waiting w{fd, listener, now + options_.first_bytes_timeout};
    if (!options_.expect_tls) {
      HandOver(w);
      continue;
    }
    // A TLS client writes its ClientHello right after connecting: it is often here already.
    if (!Examine(w)) continue;
    if (static_cast<int>(waiting_.size()) >= options_.max_waiting) {
      HandOver(waiting_.front());
      waiting_.pop_front();
    }
    waiting_.push_back(w);
  }
}

bool FrontDoor::Examine(const Waiting& w) {
  char head[16];
  const ssize_t n = recv(w.fd, head, sizeof(head), MSG_PEEK);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return true;
  if (n <= 0) {  // closed (or reset) before it sent anything: nothing for gRPC to do
    close(w.fd);
    return false;
  }
  if (static_cast<unsigned char>(head[0]) == kTlsHandshakeRecord) {
    HandOver(w);
    return false;
  }
  const std::string peer = base::PeerName(w.fd);
  // What it sent is dropped, so that the close is a FIN rather than a reset its client would
  // report as something else; at most a few reads, never waiting.
  char drop[4096];
  for (int i = 0; i < 4 && recv(w.fd, drop, sizeof(drop), 0) > 0; ++i) {
  }
  close(w.fd);
  on_plain_text_(peer, std::string(head, n));
  return false;
}

void FrontDoor::HandOver(const Waiting& w) {
  grpc::experimental::ExternalConnectionAcceptor::NewConnectionParameters p;
  p.listener_fd = w.listener;
  p.fd = w.fd;
  acceptor_->HandleNewConnection(&p);
}

}  // namespace benchfarm::tracker
