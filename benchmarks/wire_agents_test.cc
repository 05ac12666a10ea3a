// WireAgents against a tracker played by the test, frame by frame: what a gRPC server's ordinary
// traffic never makes them do (a shut window, padded and split DATA, PING, GOAWAY) beside the
// registration, the offers and the acknowledgements. The smoke test of tracker_bench runs them
// against the real tracker.
#include "benchmarks/wire_agents.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace benchfarm::bench {
namespace {

struct Frame {
  uint8_t type = 0, flags = 0;
  uint32_t stream = 0;
  std::string payload;
};

uint32_t U32(const std::string& s, size_t at) {
  const auto* u = reinterpret_cast<const unsigned char*>(s.data() + at);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | uint32_t{u[3]};
}

std::string Be32(uint32_t v) {
  return std::string{static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
}

std::string FrameBytes(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
  const size_t n = payload.size();
  std::string f{static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n),
                static_cast<char>(type), static_cast<char>(flags)};
  return f + Be32(stream) + payload;
}

std::string GrpcMessage(const google::protobuf::Message& m) {
  const std::string bytes = m.SerializeAsString();
  return std::string(1, '\0') + Be32(static_cast<uint32_t>(bytes.size())) + bytes;
}

// The tracker's side of one connection.
class FakeTracker {
 public:
  FakeTracker() {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in at{};
    at.sin_family = AF_INET;
    at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof at;
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&at), len), 0);
    EXPECT_EQ(listen(listener_, 4), 0);
    EXPECT_EQ(getsockname(listener_, reinterpret_cast<sockaddr*>(&at), &len), 0);
    address_ = absl::StrCat("127.0.0.1:", ntohs(at.sin_port));
  }
  ~FakeTracker() {
    if (fd_ >= 0) close(fd_);
    close(listener_);
  }
  const std::string& address() const { return address_; }

  void Accept() {
    fd_ = accept(listener_, nullptr, nullptr);
    ASSERT_GE(fd_, 0);
    timeval timeout{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }
  // Exactly n bytes, or fewer after 10 s without any.
  std::string ReadBytes(size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      const ssize_t r = read(fd_, &out[got], n - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    out.resize(got);
    return out;
  }
  Frame ReadFrame() {
    Frame f;
    const std::string h = ReadBytes(9);
    if (h.size() != 9) {
      ADD_FAILURE() << "no frame within 10 s";
      f.type = 0xff;
      return f;
    }
    const size_t n = size_t{static_cast<unsigned char>(h[0])} << 16 |
                     size_t{static_cast<unsigned char>(h[1])} << 8 |
                     static_cast<unsigned char>(h[2]);
    f.type = static_cast<uint8_t>(h[3]);
    f.flags = static_cast<uint8_t>(h[4]);
    f.stream = U32(h, 5) & 0x7fffffff;
    f.payload = ReadBytes(n);
    return f;
  }
  // Whether nothing arrives within `wait`.
  bool Quiet(absl::Duration wait) {
    timeval t{0, static_cast<suseconds_t>(absl::ToInt64Microseconds(wait))};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
    char c;
    const ssize_t r = recv(fd_, &c, 1, MSG_PEEK);
    timeval back{10, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &back, sizeof back);
    return r < 0;
  }
  void Write(const std::string& bytes) {
    ASSERT_EQ(write(fd_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }

 private:
  int listener_ = -1;
  int fd_ = -1;
  std::string address_;
};

// An HPACK integer with an N-bit prefix (RFC 7541 5.1) at `*at`, which moves past it.
size_t HpackInt(const std::string& block, size_t* at, int prefix_bits) {
  const size_t max = (size_t{1} << prefix_bits) - 1;
  size_t value = static_cast<unsigned char>(block[(*at)++]) & max;
  if (value < max) return value;
  for (int shift = 0; *at < block.size(); shift += 7) {
    const unsigned char b = static_cast<unsigned char>(block[(*at)++]);
    value += size_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) break;
  }
  return value;
}

// A header block of literals without indexing, new names, not Huffman-coded (what WireAgents
// sends): its fields in order, or an empty list if it is anything else.
std::vector<std::pair<std::string, std::string>> DecodeLiterals(const std::string& block) {
  std::vector<std::pair<std::string, std::string>> fields;
  size_t at = 0;
  while (at < block.size()) {
    if (block[at++] != '\0') return {};
    std::string strings[2];
    for (std::string& str : strings) {
      if (at >= block.size() || (static_cast<unsigned char>(block[at]) & 0x80) != 0) return {};
      const size_t n = HpackInt(block, &at, 7);
      if (block.size() - at < n) return {};
      str = block.substr(at, n);
      at += n;
    }
    fields.emplace_back(strings[0], strings[1]);
  }
  return fields;
}

// The two WINDOW_UPDATE frames a message read is followed by: the stream's and the connection's,
// each granting `bytes` back.
void ExpectWindowUpdates(FakeTracker* tracker, uint32_t bytes) {
  for (uint32_t stream : {1u, 0u}) {
    Frame update = tracker->ReadFrame();
    EXPECT_EQ(update.type, 0x8);
    EXPECT_EQ(update.stream, stream);
    ASSERT_EQ(update.payload.size(), 4u);
    EXPECT_EQ(U32(update.payload, 0), bytes) << "stream " << stream;
  }
}

// Waits (up to 10 s) for the board to satisfy `done`.
template <typename F>
bool AwaitBoard(Board* board, F done) {
  absl::MutexLock lock(&board->mu);
  auto condition = [board, &done]()
                       ABSL_EXCLUSIVE_LOCKS_REQUIRED(board->mu) { return done(*board); };
  return board->mu.AwaitWithTimeout(absl::Condition(&condition), absl::Seconds(10));
}

TEST(WireAgents, RegistersAnswersOffersWithinTheWindowAndReportsGoaway) {
  FakeTracker tracker;
  Board board;
  WireAgents agents(&board, {});
  ASSERT_TRUE(agents.Start(tracker.address(), 1, 2).ok());
  tracker.Accept();

  // The preface, then SETTINGS, the connection's window raised, the request's headers, and the
  // registration.
  EXPECT_EQ(tracker.ReadBytes(24), "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
  Frame settings = tracker.ReadFrame();
  EXPECT_EQ(settings.type, 0x4);
  EXPECT_EQ(settings.stream, 0u);
  // ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 2^31 - 1.
  EXPECT_EQ(settings.payload, std::string({0, 2, 0, 0, 0, 0, 0, 4}) + Be32(0x7fffffff));
  Frame window = tracker.ReadFrame();
  EXPECT_EQ(window.type, 0x8);
  EXPECT_EQ(window.stream, 0u);
  EXPECT_EQ(U32(window.payload, 0), 0x7fffffffu - 65535);
  Frame headers = tracker.ReadFrame();
  EXPECT_EQ(headers.type, 0x1);
  EXPECT_EQ(headers.stream, 1u);
  EXPECT_EQ(headers.flags, 0x4);  // END_HEADERS
  const std::vector<std::pair<std::string, std::string>> want = {
      {":method", "POST"},
      {":scheme", "http"},
      {":path", "/benchfarm.v1.TrackerAgent/Connect"},
      {":authority", tracker.address()},
      {"content-type", "application/grpc"},
      {"te", "trailers"},
      {"user-agent", "benchfarm-wire-agents"},
  };
  EXPECT_EQ(DecodeLiterals(headers.payload), want);
  Frame hello = tracker.ReadFrame();
  ASSERT_EQ(hello.type, 0x0);
  ASSERT_GE(hello.payload.size(), 5u);
  v1::AgentMessage registration;
  ASSERT_TRUE(registration.ParseFromString(hello.payload.substr(5)));
  EXPECT_EQ(registration.register_().agent_id(), "agent-0");
  ASSERT_EQ(registration.register_().boards_size(), 2);
  EXPECT_EQ(registration.register_().boards(1).board_id(), "agent-0-board1");
  EXPECT_TRUE(registration.register_().batched_acks());
  EXPECT_TRUE(registration.register_().batched_offers());

  // The tracker's SETTINGS leave the stream 10 bytes of window; they are acknowledged. A PING is
  // answered with its payload.
  const uint32_t window_left = 10;
  // The stream's window is the initial one less the registration sent: R + 10 leaves 10.
  tracker.Write(FrameBytes(
      0x4, 0, 0,
      std::string{0, 4} + Be32(static_cast<uint32_t>(hello.payload.size()) + window_left)));
  Frame settings_ack = tracker.ReadFrame();
  EXPECT_EQ(settings_ack.type, 0x4);
  EXPECT_EQ(settings_ack.flags, 0x1);
  tracker.Write(FrameBytes(0x6, 0, 0, "12345678"));
  Frame pong = tracker.ReadFrame();
  EXPECT_EQ(pong.type, 0x6);
  EXPECT_EQ(pong.flags, 0x1);
  EXPECT_EQ(pong.payload, "12345678");

  v1::TrackerMessage registered;
  registered.mutable_registered()->set_batched_results(true);
  const std::string registered_bytes = GrpcMessage(registered);
  tracker.Write(FrameBytes(0x0, 0, 1, registered_bytes));
  ASSERT_TRUE(AwaitBoard(&board, [](Board& b) { return b.registered == 1; }));
  ExpectWindowUpdates(&tracker, static_cast<uint32_t>(registered_bytes.size()));

  // Two offers in one message, split over two DATA frames, the first padded.
  v1::TrackerMessage offers;
  offers.mutable_offer()->set_job_id("job-a");
  offers.mutable_offer()->set_attempt(1);
  offers.mutable_offer()->set_board_id("agent-0-board");
  v1::JobOffer* second = offers.add_offers();
  second->set_job_id("job-b");
  second->set_attempt(3);
  second->set_board_id("agent-0-board1");
  const std::string message = GrpcMessage(offers);
  const std::string padded = std::string(1, '\3') + message.substr(0, 7) + "pad";
  tracker.Write(FrameBytes(0x0, 0x8, 1, padded));
  tracker.Write(FrameBytes(0x0, 0, 1, message.substr(7)));

  // The answer: one message of both results, its first 10 bytes as far as the window goes, the
  // rest once the tracker grants more; after it, the two frames' bytes (the padding too) granted
  // back.
  Frame first = tracker.ReadFrame();
  ASSERT_EQ(first.type, 0x0);
  EXPECT_EQ(first.payload.size(), window_left);
  ExpectWindowUpdates(&tracker, static_cast<uint32_t>(padded.size() + message.size() - 7));
  EXPECT_TRUE(tracker.Quiet(absl::Milliseconds(200)));
  tracker.Write(FrameBytes(0x8, 0, 1, Be32(1000)));
  std::string answer = first.payload;
  const uint32_t length = U32(answer, 1);
  while (answer.size() < 5 + length) {
    Frame more = tracker.ReadFrame();
    ASSERT_EQ(more.type, 0x0);
    answer += more.payload;
  }
  v1::AgentMessage results;
  ASSERT_TRUE(results.ParseFromString(answer.substr(5)));
  ASSERT_EQ(results.results_size(), 2);
  EXPECT_EQ(results.results(0).job_id(), "job-a");
  EXPECT_EQ(results.results(0).attempt(), 1);
  EXPECT_EQ(results.results(1).job_id(), "job-b");
  EXPECT_EQ(results.results(1).attempt(), 3);
  EXPECT_EQ(results.results(1).result().costs_s(0), 1e-3);
  EXPECT_EQ(agents.BoardsOffered(), 2);
  {
    absl::MutexLock lock(&board.mu);
    EXPECT_EQ(board.offered.count("job-a"), 1u);
    EXPECT_EQ(board.offered.count("job-b"), 1u);
  }

  // Paused, an offer is held until Resume.
  agents.Pause();
  v1::TrackerMessage acks_and_offer;
  acks_and_offer.add_acks()->set_job_id("job-a");
  acks_and_offer.add_acks()->set_job_id("job-b");
  acks_and_offer.mutable_offer()->set_job_id("job-c");
  acks_and_offer.mutable_offer()->set_attempt(1);
  acks_and_offer.mutable_offer()->set_board_id("agent-0-board");
  const std::string acks_and_offer_bytes = GrpcMessage(acks_and_offer);
  tracker.Write(FrameBytes(0x0, 0, 1, acks_and_offer_bytes));
  ASSERT_TRUE(AwaitBoard(&board, [](Board& b) { return b.acked == 2; }));
  ExpectWindowUpdates(&tracker, static_cast<uint32_t>(acks_and_offer_bytes.size()));
  EXPECT_TRUE(tracker.Quiet(absl::Milliseconds(200)));
  agents.Resume();
  Frame held = tracker.ReadFrame();
  ASSERT_EQ(held.type, 0x0);
  v1::AgentMessage held_result;
  ASSERT_TRUE(held_result.ParseFromString(held.payload.substr(5)));
  ASSERT_EQ(held_result.results_size(), 1);
  EXPECT_EQ(held_result.results(0).job_id(), "job-c");

  // GOAWAY ends the agent, said with its debug data.
  tracker.Write(FrameBytes(0x7, 0, 0, Be32(1) + Be32(0) + "draining"));
  ASSERT_TRUE(AwaitBoard(&board, [](Board& b) { return !b.failure.empty(); }));
  absl::MutexLock lock(&board.mu);
  EXPECT_TRUE(absl::StrContains(board.failure, "agent-0: the tracker sent GOAWAY"));
  EXPECT_TRUE(absl::StrContains(board.failure, "draining"));
}

// A registration larger than the connection's and the stream's first windows (65,535 bytes each)
// goes out in frames of at most 16,384 bytes until both are spent, and the rest only once the
// tracker has granted more on both.
TEST(WireAgents, ALargeRegistrationWaitsForBothWindowsInFramesOfTheMaximumSize) {
  FakeTracker tracker;
  Board board;
  WireAgents agents(&board, {});
  ASSERT_TRUE(agents.Start(tracker.address(), 1, 3000).ok());
  tracker.Accept();
  ASSERT_EQ(tracker.ReadBytes(24).size(), 24u);
  for (int i = 0; i < 3; ++i) tracker.ReadFrame();  // SETTINGS, WINDOW_UPDATE, HEADERS
  std::string registration;
  while (registration.size() < 65535) {
    Frame data = tracker.ReadFrame();
    ASSERT_EQ(data.type, 0x0);
    EXPECT_LE(data.payload.size(), 16384u);
    registration += data.payload;
  }
  EXPECT_EQ(registration.size(), 65535u);
  EXPECT_TRUE(tracker.Quiet(absl::Milliseconds(200)));
  tracker.Write(FrameBytes(0x8, 0, 1, Be32(1 << 20)));  // the stream's window: not enough
  EXPECT_TRUE(tracker.Quiet(absl::Milliseconds(200)));
  tracker.Write(FrameBytes(0x8, 0, 0, Be32(1 << 20)));  // and the connection's
  ASSERT_GE(registration.size(), 5u);
  const size_t length = 5 + U32(registration, 1);
  ASSERT_GT(length, 65535u);
  while (registration.size() < length) {
    Frame data = tracker.ReadFrame();
    ASSERT_EQ(data.type, 0x0);
    EXPECT_LE(data.payload.size(), 16384u);
    registration += data.payload;
  }
  v1::AgentMessage m;
  ASSERT_TRUE(m.ParseFromString(registration.substr(5)));
  EXPECT_EQ(m.register_().boards_size(), 3000);
  EXPECT_EQ(m.register_().boards(2999).board_id(), "agent-0-board2999");
}

// A tracker's setting out of HTTP/2's range fails the agent rather than being obeyed.
TEST(WireAgents, AMaxFrameSizeOutOfRangeIsRefused) {
  FakeTracker tracker;
  Board board;
  WireAgents agents(&board, {});
  ASSERT_TRUE(agents.Start(tracker.address(), 1, 1).ok());
  tracker.Accept();
  tracker.Write(FrameBytes(0x4, 0, 0, std::string{0, 5} + Be32(0)));
  ASSERT_TRUE(AwaitBoard(&board, [](Board& b) { return !b.failure.empty(); }));
  absl::MutexLock lock(&board.mu);
  EXPECT_TRUE(absl::StrContains(board.failure, "SETTINGS_MAX_FRAME_SIZE to 0")) << board.failure;
}

TEST(WireAgents, ATrackerThatEndsTheStreamOrIsAbsentIsSaid) {
  {
    FakeTracker tracker;
    Board board;
    WireAgents agents(&board, {});
    ASSERT_TRUE(agents.Start(tracker.address(), 1, 1).ok());
    tracker.Accept();
    // Trailers: HEADERS with END_STREAM.
    tracker.Write(FrameBytes(0x1, 0x5, 1, std::string()));
    ASSERT_TRUE(AwaitBoard(&board, [](Board& b) { return !b.failure.empty(); }));
    absl::MutexLock lock(&board.mu);
    EXPECT_TRUE(absl::StrContains(board.failure, "ended its stream")) << board.failure;
  }
  Board board;
  WireAgents agents(&board, {});
  std::string address;
  {
    FakeTracker gone;  // its port, closed
    address = gone.address();
  }
  const absl::Status s = agents.Start(address, 1, 1);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  // Once only, even after a failed start.
  EXPECT_TRUE(absl::IsFailedPrecondition(agents.Start(address, 1, 1)));
  WireAgents unstarted(&board, {});
  EXPECT_TRUE(absl::IsInvalidArgument(unstarted.Start("localhost", 1, 1)));
}

}  // namespace
}  // namespace benchfarm::bench
