#include "benchmarks/wire_agents.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace benchfarm::bench {
namespace {

// HTTP/2 (RFC 9113): frame types and flags the agents use.
constexpr uint8_t kData = 0x0, kHeaders = 0x1, kRstStream = 0x3, kSettings = 0x4, kPing = 0x6,
                  kGoaway = 0x7, kWindowUpdate = 0x8;
constexpr uint8_t kAck = 0x1, kEndStream = 0x1, kEndHeaders = 0x4, kPadded = 0x8;
constexpr uint16_t kSettingsEnablePush = 0x2, kSettingsInitialWindow = 0x4,
                   kSettingsMaxFrameSize = 0x5;
constexpr uint32_t kStream = 1;             // each connection's one stream
constexpr int64_t kMaxWindow = 0x7fffffff;  // 2^31 - 1
constexpr int64_t kDefaultWindow = 65535;   // until SETTINGS say otherwise
constexpr char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
constexpr uint64_t kWakeTag = ~uint64_t{0};  // the eventfd's epoll tag

void PutFrameHeader(std::string* out, size_t length, uint8_t type, uint8_t flags, uint32_t stream) {
  const char h[9] = {static_cast<char>(length >> 16), static_cast<char>(length >> 8),
                     static_cast<char>(length),       static_cast<char>(type),
                     static_cast<char>(flags),        static_cast<char>(stream >> 24),
                     static_cast<char>(stream >> 16), static_cast<char>(stream >> 8),
                     static_cast<char>(stream)};
  out->append(h, sizeof h);
}

void PutU32(std::string* out, uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, sizeof b);
}

uint32_t GetU32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | uint32_t{u[3]};
}

void PutWindowUpdate(std::string* out, uint32_t stream, int64_t increment) {
  PutFrameHeader(out, 4, kWindowUpdate, 0, stream);
  PutU32(out, static_cast<uint32_t>(increment));
}

// HPACK (RFC 7541): a string literal, not Huffman-coded; its length an integer with a 7-bit
// prefix (5.1).
void PutHpackString(std::string* out, absl::string_view s) {
  size_t n = s.size();
  if (n < 127) {
    out->push_back(static_cast<char>(n));
  } else {
    out->push_back(static_cast<char>(127));
    for (n -= 127; n >= 128; n >>= 7) out->push_back(static_cast<char>((n & 0x7f) | 0x80));
    out->push_back(static_cast<char>(n));
  }
  out->append(s.data(), s.size());
}

// The request's header block: each field a literal without indexing, with a new name (6.2.2),
// so nothing the tracker's decoder keeps depends on what came before.
std::string RequestHeaders(const std::string& authority) {
  std::string block;
  const std::pair<absl::string_view, absl::string_view> fields[] = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", "/benchfarm.v1.TrackerAgent/Connect"},
      {":authority", authority},
      {"content-type", "application/grpc"},
      {"te", "trailers"},
      {"user-agent", "benchfarm-wire-agents"},
  };
  for (const auto& [name, value] : fields) {
    block.push_back('\0');
    PutHpackString(&block, name);
    PutHpackString(&block, value);
  }
  return block;
}

}  // namespace

struct WireAgents::Conn {
  int fd = -1;
  uint64_t tag = 0;  // its index in conns_: its epoll tag
  std::string id;
  std::string in;        // bytes read, not yet taken as whole frames
  std::string messages;  // the stream's DATA, not yet taken as whole gRPC messages
  std::string pending;   // gRPC messages not yet framed as DATA (the tracker's window is shut)
  std::string out;       // bytes to write
  size_t out_sent = 0;
  bool want_out = false;  // EPOLLOUT armed
  // Flow control. Ours to send in: the tracker's windows. Ours to grant: bytes received since
  // the last WINDOW_UPDATE.
  int64_t conn_window = kDefaultWindow, stream_window = kDefaultWindow;
  int64_t initial_window = kDefaultWindow;  // the tracker's SETTINGS_INITIAL_WINDOW_SIZE
  size_t max_frame = 16384;                 // the tracker's SETTINGS_MAX_FRAME_SIZE
  int64_t conn_received = 0, stream_received = 0;
  bool batched_results = false;                       // the tracker reads AgentMessage.results
  std::vector<std::pair<std::string, int32_t>> held;  // offers held while paused
  std::set<std::string> offered_boards;
};

WireAgents::WireAgents(Board* board, Options options) : board_(board), options_(options) {}

WireAgents::~WireAgents() { Stop(); }

absl::Status WireAgents::Start(const std::string& address, int agents, int boards) {
  if (epoll_ >= 0 || !conns_.empty() || thread_.joinable()) {
    return absl::FailedPreconditionError("WireAgents started twice");
  }
  const size_t colon = address.rfind(':');
  int port = 0;
  sockaddr_in to{};
  to.sin_family = AF_INET;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) ||
      port <= 0 || port > 65535 ||
      inet_pton(AF_INET, address.substr(0, colon).c_str(), &to.sin_addr) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("WireAgents: '", address, "' is not an IPv4 HOST:PORT"));
  }
  to.sin_port = htons(static_cast<uint16_t>(port));
  boards_ = boards;
  epoll_ = epoll_create1(EPOLL_CLOEXEC);
  wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (epoll_ < 0 || wake_ < 0) {
    return absl::InternalError(absl::StrCat("WireAgents: epoll/eventfd: ", strerror(errno)));
  }
  epoll_event wake_event{};
  wake_event.events = EPOLLIN;
  wake_event.data.u64 = kWakeTag;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, wake_, &wake_event);

  // What every connection starts with: the preface, SETTINGS (no server push; stream windows of
  // 2^31 - 1), the connection's window raised to the same, and the stream's request headers.
  std::string opening(kPreface, sizeof kPreface - 1);
  PutFrameHeader(&opening, 12, kSettings, 0, 0);
  opening.push_back(0);
  opening.push_back(static_cast<char>(kSettingsEnablePush));
  PutU32(&opening, 0);
  opening.push_back(0);
  opening.push_back(static_cast<char>(kSettingsInitialWindow));
  PutU32(&opening, static_cast<uint32_t>(kMaxWindow));
  PutWindowUpdate(&opening, 0, kMaxWindow - kDefaultWindow);
  const std::string headers = RequestHeaders(address);
  PutFrameHeader(&opening, headers.size(), kHeaders, kEndHeaders, kStream);
  opening += headers;

  for (int i = 0; i < agents; ++i) {
    auto c = std::make_unique<Conn>();
    c->id = absl::StrCat("agent-", i);
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0) {
      const std::string why = strerror(errno);
      if (c->fd >= 0) close(c->fd);
      return absl::UnavailableError(
          absl::StrCat("WireAgents: ", c->id, " could not connect to ", address, ": ", why));
    }
    const int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    c->out = opening;
    // The registration, as tracker_bench's SimAgent sends it.
    out_.Clear();
    v1::Register* r = out_.mutable_register_();
    r->set_agent_id(c->id);
    r->set_batched_acks(options_.batched_acks);
    r->set_batched_offers(options_.batched_offers);
    for (int b = 0; b < boards; ++b) {
      v1::BoardRegistration* board = r->add_boards();
      board->set_board_id(BoardId(c->id, b));
      board->set_kind("host");
    }
    SendMessage(*c);
    c->tag = conns_.size();
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = c->tag;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, c->fd, &event);
    conns_.push_back(std::move(c));
    Flush(*conns_.back());
  }
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void WireAgents::Pause() { paused_ = true; }

void WireAgents::Resume() {
  paused_ = false;
  const uint64_t one = 1;
  if (wake_ >= 0) (void)!write(wake_, &one, sizeof one);
}

void WireAgents::Stop() {
  if (thread_.joinable()) {
    stopping_ = true;
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
    thread_.join();
  }
  for (auto& c : conns_) {
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
  }
  if (epoll_ >= 0) close(epoll_);
  if (wake_ >= 0) close(wake_);
  epoll_ = wake_ = -1;
}

void WireAgents::Loop() {
  epoll_event events[256];
  while (!stopping_) {
    const int n = epoll_wait(epoll_, events, 256, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      const std::string why = absl::StrCat("WireAgents: epoll_wait: ", strerror(errno));
      std::fprintf(stderr, "%s\n", why.c_str());
      absl::MutexLock lock(&board_->mu);
      if (board_->failure.empty()) board_->failure = why;
      return;
    }
    for (int i = 0; i < n && !stopping_; ++i) {
      if (events[i].data.u64 == kWakeTag) {
        uint64_t count;
        (void)!read(wake_, &count, sizeof count);
        if (paused_) continue;
        for (auto& c : conns_) {
          if (c->fd < 0 || c->held.empty()) continue;
          std::vector<std::pair<std::string, int32_t>> held;
          held.swap(c->held);
          Answer(*c, held);
          Flush(*c);
        }
        continue;
      }
      Conn& c = *conns_[events[i].data.u64];
      if (c.fd < 0) continue;
      if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) Read(c);
      if (c.fd >= 0 && (events[i].events & EPOLLOUT)) Flush(c);
    }
  }
}

void WireAgents::Read(Conn& c) {
  char buffer[65536];
  const ssize_t n = read(c.fd, buffer, sizeof buffer);
  if (n < 0) {
    if (errno != EAGAIN && errno != EINTR) {
      Fail(c, absl::StrCat("reading its connection: ", strerror(errno)));
    }
    return;
  }
  if (n == 0) {
    Fail(c, "the tracker closed its connection");
    return;
  }
  c.in.append(buffer, static_cast<size_t>(n));
  if (TakeFrames(c)) Flush(c);
}

bool WireAgents::TakeFrames(Conn& c) {
  size_t at = 0;
  while (c.in.size() - at >= 9) {
    const auto* h = reinterpret_cast<const unsigned char*>(c.in.data() + at);
    const size_t length = size_t{h[0]} << 16 | size_t{h[1]} << 8 | size_t{h[2]};
    if (c.in.size() - at - 9 < length) break;
    const uint32_t stream = GetU32(c.in.data() + at + 5) & 0x7fffffff;
    if (!Frame(c, h[3], h[4], stream, c.in.data() + at + 9, length)) return false;
    at += 9 + length;
  }
  c.in.erase(0, at);
  return true;
}

bool WireAgents::Frame(Conn& c, uint8_t type, uint8_t flags, uint32_t stream, const char* payload,
                       size_t length) {
  switch (type) {
    case kData: {
      c.conn_received += static_cast<int64_t>(length);
      if (stream != kStream) return true;
      c.stream_received += static_cast<int64_t>(length);
      if (flags & kPadded) {
        const size_t pad = length > 0 ? static_cast<unsigned char>(payload[0]) : 0;
        if (length == 0 || pad + 1 > length) {
          Fail(c, "the tracker sent a DATA frame padded beyond its length");
          return false;
        }
        c.messages.append(payload + 1, length - 1 - pad);
      } else {
        c.messages.append(payload, length);
      }
      if (flags & kEndStream) {
        Fail(c, "the tracker ended its stream");
        return false;
      }
      const int taken = TakeMessages(c);
      if (taken < 0) return false;
      // As gRPC's client does once it has read a message: the bytes granted back, the stream's
      // and the connection's (so the tracker reads what benchfarm's agent sends it).
      if (taken > 0) {
        PutWindowUpdate(&c.out, kStream, c.stream_received);
        PutWindowUpdate(&c.out, 0, c.conn_received);
        c.stream_received = c.conn_received = 0;
      }
      return true;
    }
    case kHeaders:
      if (stream == kStream && (flags & kEndStream)) {
        Fail(c, "the tracker ended its stream (its status is in the trailers, not decoded here)");
        return false;
      }
      return true;  // the response's headers: not needed
    case kRstStream:
      if (stream != kStream) return true;
      Fail(c, absl::StrCat("the tracker reset its stream (RST_STREAM, error ",
                           length >= 4 ? GetU32(payload) : 0, ")"));
      return false;
    case kSettings:
      if (flags & kAck) return true;
      for (size_t i = 0; i + 6 <= length; i += 6) {
        const uint16_t id = static_cast<uint16_t>(static_cast<unsigned char>(payload[i]) << 8 |
                                                  static_cast<unsigned char>(payload[i + 1]));
        const uint32_t value = GetU32(payload + i + 2);
        if (id == kSettingsInitialWindow) {
          c.stream_window += static_cast<int64_t>(value) - c.initial_window;
          c.initial_window = value;
        } else if (id == kSettingsMaxFrameSize) {
          if (value < 16384 || value > 16777215) {
            Fail(c, absl::StrCat("the tracker set SETTINGS_MAX_FRAME_SIZE to ", value,
                                 ", outside 16384..16777215"));
            return false;
          }
          c.max_frame = value;
        }
      }
      PutFrameHeader(&c.out, 0, kSettings, kAck, 0);
      MoveToWire(c);
      return true;
    case kPing:
      if (flags & kAck) return true;
      PutFrameHeader(&c.out, length, kPing, kAck, 0);
      c.out.append(payload, length);
      return true;
    case kGoaway:
      Fail(c,
           absl::StrCat("the tracker sent GOAWAY (error ", length >= 8 ? GetU32(payload + 4) : 0,
                        length > 8 ? absl::StrCat(": ", absl::string_view(payload + 8, length - 8))
                                   : std::string(),
                        ")"));
      return false;
    case kWindowUpdate: {
      const int64_t increment = length >= 4 ? GetU32(payload) & 0x7fffffff : 0;
      if (stream == 0) {
        c.conn_window += increment;
      } else if (stream == kStream) {
        c.stream_window += increment;
      }
      MoveToWire(c);
      return true;
    }
    default:
      return true;  // PRIORITY, CONTINUATION of headers not read, unknown types: ignored
  }
}

int WireAgents::TakeMessages(Conn& c) {
  size_t at = 0;
  int taken = 0;
  while (c.messages.size() - at >= 5) {
    if (c.messages[at] != 0) {
      Fail(c, "the tracker sent a compressed message (none was asked for)");
      return -1;
    }
    const uint32_t length = GetU32(c.messages.data() + at + 1);
    if (c.messages.size() - at - 5 < length) break;
    if (!in_.ParseFromArray(c.messages.data() + at + 5, static_cast<int>(length))) {
      Fail(c, "the tracker sent a TrackerMessage that does not parse");
      return -1;
    }
    at += 5 + length;
    ++taken;
    Handle(c);
  }
  c.messages.erase(0, at);
  return taken;
}

void WireAgents::Handle(Conn& c) {
  const Steady::time_point now = Steady::now();
  const int64_t acks = in_.acks_size() + (in_.has_result_ack() ? 1 : 0);
  if (in_.has_registered()) {
    c.batched_results = options_.batched_offers && in_.registered().batched_results();
  }
  std::vector<std::pair<std::string, int32_t>> offers;
  auto take = [&](const v1::JobOffer& offer) {
    offers.emplace_back(offer.job_id(), offer.attempt());
    if (static_cast<int>(c.offered_boards.size()) < boards_ &&
        c.offered_boards.insert(offer.board_id()).second) {
      ++boards_offered_;
    }
  };
  if (in_.has_offer()) {
    take(in_.offer());
    for (const v1::JobOffer& offer : in_.offers()) take(offer);
  }
  if (acks > 0 || in_.has_registered() || !offers.empty()) {
    absl::MutexLock lock(&board_->mu);
    board_->acked += acks;
    if (in_.has_registered()) ++board_->registered;
    if (board_->record_offers) {
      for (const auto& [job_id, attempt] : offers) board_->offered[job_id] = now;
    }
  }
  if (offers.empty()) return;
  if (paused_) {
    for (auto& offer : offers) c.held.push_back(std::move(offer));
  } else {
    Answer(c, offers);
  }
}

void WireAgents::Answer(Conn& c, const std::vector<std::pair<std::string, int32_t>>& offers) {
  out_.Clear();
  for (const auto& [job_id, attempt] : offers) {
    v1::JobResult* r = c.batched_results ? out_.add_results() : out_.mutable_result();
    r->set_job_id(job_id);
    r->set_attempt(attempt);
    r->mutable_result()->add_costs_s(1e-3);
    if (!c.batched_results) {
      SendMessage(c);
      out_.Clear();
    }
  }
  if (c.batched_results) SendMessage(c);
}

// out_ as a gRPC message (a flag byte, no compression; its length; its bytes), sent as far as
// the tracker's windows allow.
void WireAgents::SendMessage(Conn& c) {
  const size_t length = out_.ByteSizeLong();
  c.pending.push_back('\0');
  PutU32(&c.pending, static_cast<uint32_t>(length));
  const size_t at = c.pending.size();
  c.pending.resize(at + length);
  out_.SerializeWithCachedSizesToArray(reinterpret_cast<uint8_t*>(&c.pending[at]));
  MoveToWire(c);
}

// Frames what is pending as DATA, within the tracker's windows and frame size.
void WireAgents::MoveToWire(Conn& c) {
  size_t at = 0;
  while (at < c.pending.size() && c.conn_window > 0 && c.stream_window > 0) {
    const size_t n = std::min({c.pending.size() - at, static_cast<size_t>(c.conn_window),
                               static_cast<size_t>(c.stream_window), c.max_frame});
    PutFrameHeader(&c.out, n, kData, 0, kStream);
    c.out.append(c.pending, at, n);
    at += n;
    c.conn_window -= static_cast<int64_t>(n);
    c.stream_window -= static_cast<int64_t>(n);
  }
  c.pending.erase(0, at);
}

void WireAgents::Flush(Conn& c) {
  while (c.out_sent < c.out.size()) {
    const ssize_t n =
        send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN) {
        Fail(c, absl::StrCat("writing its connection: ", strerror(errno)));
        return;
      }
      WantOut(c, true);
      return;
    }
    c.out_sent += static_cast<size_t>(n);
  }
  c.out.clear();
  c.out_sent = 0;
  WantOut(c, false);
}

void WireAgents::WantOut(Conn& c, bool want) {
  if (c.want_out == want) return;
  epoll_event event{};
  event.events = want ? EPOLLIN | EPOLLOUT : EPOLLIN;
  event.data.u64 = c.tag;
  epoll_ctl(epoll_, EPOLL_CTL_MOD, c.fd, &event);
  c.want_out = want;
}

void WireAgents::Fail(Conn& c, const std::string& why) {
  if (c.fd >= 0) close(c.fd);
  c.fd = -1;
  if (stopping_) return;
  std::fprintf(stderr, "WireAgents: %s: %s\n", c.id.c_str(), why.c_str());
  absl::MutexLock lock(&board_->mu);
  if (board_->failure.empty()) board_->failure = absl::StrCat(c.id, ": ", why);
}

}  // namespace benchfarm::bench
