// Tests of session.c: TVM v0.18's tests/crt/session_test.cc with its golden bytes
// (reference sections 2.5 and 6.2), the nonce rule, and benchfarm's fixes (reference
// section 9, docs/wire-protocol.md "Fixed, not imitated"): wrong-id traffic dropped without
// wedging, no stale bytes after a bad or aborted packet, duplicate Reply ignored, Init
// while established renegotiates once, version always checked, over-long messages
// refused and counted, a streaming body sink, and each layer's own error codes.

#include "tvm/runtime/crt/link/session.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

namespace {

using Bytes = std::vector<uint8_t>;

// "FF FD 03" -> {0xFF, 0xFD, 0x03}
Bytes Hex(const std::string& text) {
  Bytes out;
  unsigned value = 0;
  int digits = 0;
  for (char c : text) {
    if (c == ' ') continue;
    value = value * 16 +
            static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c))
                                      ? c - '0'
                                      : std::toupper(static_cast<unsigned char>(c)) - 'A' + 10);
    if (++digits == 2) {
      out.push_back(static_cast<uint8_t>(value));
      value = 0;
      digits = 0;
    }
  }
  return out;
}

Bytes Concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes Str(const std::string& s) { return Bytes(s.begin(), s.end()); }

struct Message {
  crt_session_message_type_t type;
  std::string body;
  bool operator==(const Message& o) const { return type == o.type && body == o.body; }
};

std::ostream& operator<<(std::ostream& os, const Message& m) {
  return os << "{type=" << static_cast<int>(m.type) << " body=\"" << m.body << "\"}";
}

// One end of the link: a session writing into a byte vector, recording its callbacks.
class Endpoint {
 public:
  explicit Endpoint(size_t rx_size = 300) : rx_(rx_size) {
    crt_session_init(&session, &Write, this, rx_.data(), rx_.size(), &OnMessage, this);
  }
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  // Takes what this end has written so far.
  Bytes TakeOutput() {
    Bytes b = out;
    out.clear();
    return b;
  }
  // Feeds bytes, re-feeding after each (non-fatal) error; returns the errors seen.
  std::vector<tvm_crt_error_t> Receive(const Bytes& bytes) {
    std::vector<tvm_crt_error_t> errors;
    size_t at = 0;
    while (at < bytes.size()) {
      size_t consumed = 0;
      const tvm_crt_error_t err =
          crt_session_receive(&session, bytes.data() + at, bytes.size() - at, &consumed);
      if (err != kTvmErrorNoError) errors.push_back(err);
      EXPECT_LE(consumed, bytes.size() - at);
      if (err == kTvmErrorNoError) {
        EXPECT_EQ(consumed, bytes.size() - at);
      }
      at += consumed;
      if (errors.size() > bytes.size() + 1) break;  // no progress: fail rather than hang
    }
    return errors;
  }
  tvm_crt_error_t Send(crt_session_message_type_t type, const std::string& body) {
    return crt_session_send(&session, type, reinterpret_cast<const uint8_t*>(body.data()),
                            body.size());
  }
  const crt_session_counters_t& Counters() const { return *crt_session_counters(&session); }
  int CountOf(crt_session_message_type_t type) const {
    int n = 0;
    for (const Message& m : messages) n += m.type == type ? 1 : 0;
    return n;
  }

  crt_session_t session;
  Bytes out;
  std::vector<Message> messages;
  tvm_crt_error_t write_error = kTvmErrorNoError;

 private:
  static tvm_crt_error_t Write(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<Endpoint*>(ctx);
    if (self->write_error != kTvmErrorNoError) return self->write_error;
    self->out.insert(self->out.end(), data, data + n);
    return kTvmErrorNoError;
  }
  static tvm_crt_error_t OnMessage(void* ctx, crt_session_message_type_t type, const uint8_t* body,
                                   size_t body_len) {
    auto* self = static_cast<Endpoint*>(ctx);
    self->messages.push_back(
        {type, body_len ? std::string(reinterpret_cast<const char*>(body), body_len) : ""});
    return kTvmErrorNoError;
  }
  std::vector<uint8_t> rx_;
};

// Delivers everything `from` has written to `to`; expects no receive error.
void Deliver(Endpoint* from, Endpoint* to) {
  const std::vector<tvm_crt_error_t> errors = to->Receive(from->TakeOutput());
  EXPECT_TRUE(errors.empty()) << "first error 0x" << std::hex << (errors.empty() ? 0 : errors[0]);
}

// A framed packet (no FE preamble) carrying an arbitrary session payload.
Bytes Frame(const Bytes& payload) {
  Bytes wire;
  crt_framer_t f;
  crt_framer_init(
      &f,
      [](void* ctx, const uint8_t* d, size_t n) {
        auto* out = static_cast<Bytes*>(ctx);
        out->insert(out->end(), d, d + n);
        return kTvmErrorNoError;
      },
      &wire);
  EXPECT_EQ(crt_framer_write_packet(&f, payload.data(), payload.size()), kTvmErrorNoError);
  return Bytes(wire.begin() + 1, wire.end());  // drop the FE preamble
}

const Bytes kTerminateFresh = Hex("FE FF FD 03 00 00 00 00 00 02 66 77");
const Bytes kAliceInit = Hex("FF FD 04 00 00 00 82 00 00 01 7B E9");
const Bytes kBobReply = Hex("FF FD 04 00 00 00 82 66 01 01 81 F3");
const Bytes kHello = Hex("FF FD 08 00 00 00 82 66 10 68 65 6C 6C 6F 90 28");
const Bytes kOlleh = Hex("FF FD 08 00 00 00 82 66 10 6F 6C 6C 65 68 4C 76");
const Bytes kLog1 = Hex("FF FD 07 00 00 00 00 00 03 6C 6F 67 31 F0 D4");
const Bytes kLogZero = Hex("FF FD 07 00 00 00 00 00 03 7A 65 72 6F B2 68");
const Bytes kBobInit = Hex("FF FD 04 00 00 00 66 00 00 01 60 A7");
const Bytes kAliceReplyToBob = Hex("FF FD 04 00 00 00 66 45 01 01 0C 62");
const Bytes kInitFrom82Regen = Hex("FF FD 04 00 00 00 45 00 00 01 F2 0B");

class SessionTest : public ::testing::Test {
 protected:
  void InitializeBoth() {
    ASSERT_EQ(crt_session_initialize(&alice_.session, 0x3C), kTvmErrorNoError);
    ASSERT_EQ(crt_session_initialize(&bob_.session, 0xAB), kTvmErrorNoError);
    EXPECT_EQ(alice_.TakeOutput(), kTerminateFresh);
    EXPECT_EQ(bob_.TakeOutput(), kTerminateFresh);
  }
  // TVM's handshake: Alice initiates, Bob replies; session id 0x6682.
  void Establish() {
    InitializeBoth();
    ASSERT_EQ(crt_session_start(&alice_.session), kTvmErrorNoError);
    ASSERT_EQ(alice_.out, kAliceInit);
    Deliver(&alice_, &bob_);
    ASSERT_EQ(bob_.out, kBobReply);
    Deliver(&bob_, &alice_);
    ASSERT_TRUE(crt_session_is_established(&alice_.session));
    ASSERT_TRUE(crt_session_is_established(&bob_.session));
  }

  Endpoint alice_;
  Endpoint bob_;
};

// ---- TVM's cases (reference 6.2)
// -----------------------------------------------------------------

TEST_F(SessionTest, NormalExchange) {
  InitializeBoth();
  ASSERT_EQ(crt_session_start(&alice_.session), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, kAliceInit);
  EXPECT_EQ(crt_session_state(&alice_.session), kCrtSessionStartSessionSent);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.out, kBobReply);
  EXPECT_TRUE(crt_session_is_established(&bob_.session));
  Deliver(&bob_, &alice_);
  EXPECT_TRUE(crt_session_is_established(&alice_.session));
  EXPECT_EQ(alice_.messages, (std::vector<Message>{{kCrtSessionStartSessionReply, ""}}));
  EXPECT_EQ(bob_.messages, (std::vector<Message>{{kCrtSessionStartSessionReply, ""}}));
  EXPECT_EQ(crt_session_id(&alice_.session), 0x6682);
  EXPECT_EQ(crt_session_id(&bob_.session), 0x6682);

  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "hello"), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, kHello);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "hello"}));

  ASSERT_EQ(bob_.Send(kCrtSessionNormal, "olleh"), kTvmErrorNoError);
  EXPECT_EQ(bob_.out, kOlleh);
  Deliver(&bob_, &alice_);
  EXPECT_EQ(alice_.messages.back(), (Message{kCrtSessionNormal, "olleh"}));

  ASSERT_EQ(alice_.Send(kCrtSessionLog, "log1"), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, kLog1);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionLog, "log1"}));

  ASSERT_EQ(bob_.Send(kCrtSessionLog, "zero"), kTvmErrorNoError);
  EXPECT_EQ(bob_.out, kLogZero);
  Deliver(&bob_, &alice_);
  EXPECT_EQ(alice_.messages.back(), (Message{kCrtSessionLog, "zero"}));

  EXPECT_EQ(alice_.messages.size(), 3u);
  EXPECT_EQ(bob_.messages.size(), 3u);
}

TEST_F(SessionTest, LogBeforeSessionStart) {
  ASSERT_EQ(alice_.Send(kCrtSessionLog, "log1"), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, Concat(Bytes{0xFE}, kLog1));
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages, (std::vector<Message>{{kCrtSessionLog, "log1"}}));

  ASSERT_EQ(bob_.Send(kCrtSessionLog, "zero"), kTvmErrorNoError);
  EXPECT_EQ(bob_.out, Concat(Bytes{0xFE}, kLogZero));
  Deliver(&bob_, &alice_);
  EXPECT_EQ(alice_.messages, (std::vector<Message>{{kCrtSessionLog, "zero"}}));
  EXPECT_EQ(crt_session_state(&alice_.session), kCrtSessionReset);
}

TEST_F(SessionTest, DoubleStart) {
  InitializeBoth();
  ASSERT_EQ(crt_session_start(&alice_.session), kTvmErrorNoError);
  ASSERT_EQ(crt_session_start(&bob_.session), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, kAliceInit);
  EXPECT_EQ(bob_.out, kBobInit);

  // 0x82 > 0x66: Bob ignores Alice's Init.
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.out, kBobInit);  // still only his own Init
  EXPECT_FALSE(crt_session_is_established(&bob_.session));
  EXPECT_EQ(bob_.Counters().ignored_handshake, 1u);

  // Bob's Init wins; the trailing NUL (TVM's test sends the C string's) is junk.
  Deliver(&bob_, &alice_);  // (bob_.out holds kBobInit)
  EXPECT_TRUE(alice_.Receive({0x00}).empty());
  EXPECT_EQ(alice_.out, kAliceReplyToBob);
  EXPECT_TRUE(crt_session_is_established(&alice_.session));
  EXPECT_EQ(crt_session_id(&alice_.session), 0x4566);

  Deliver(&alice_, &bob_);
  EXPECT_TRUE(crt_session_is_established(&bob_.session));
  EXPECT_EQ(crt_session_id(&bob_.session), 0x4566);
  EXPECT_EQ(alice_.CountOf(kCrtSessionStartSessionReply), 1);
  EXPECT_EQ(bob_.CountOf(kCrtSessionStartSessionReply), 1);
}

// Reference 2.5: the bytes of a run of TVM's device server (seed 0x5A) with a host (seed 0x11).
TEST_F(SessionTest, DeviceAndHostHandshakeFromE2eRun) {
  Endpoint device;
  Endpoint host;
  ASSERT_EQ(crt_session_initialize(&device.session, 0x5A), kTvmErrorNoError);
  EXPECT_EQ(device.TakeOutput(), kTerminateFresh);  // the boot signature
  ASSERT_EQ(crt_session_initialize(&host.session, 0x11), kTvmErrorNoError);
  ASSERT_EQ(crt_session_start(&host.session), kTvmErrorNoError);
  EXPECT_EQ(host.out,
            Hex("FE FF FD 03 00 00 00 00 00 02 66 77 FF FD 04 00 00 00 21 00 00 01 D1 98"));
  Deliver(&host, &device);
  EXPECT_EQ(device.out, Hex("FF FD 04 00 00 00 21 43 01 01 1D EF"));
  Deliver(&device, &host);
  EXPECT_EQ(crt_session_id(&host.session), 0x4321);
  EXPECT_EQ(crt_session_id(&device.session), 0x4321);
}

TEST(SessionNonceTest, UpdateRuleIsTvms) {
  auto sequence = [](uint8_t seed, int n) {
    std::vector<int> out;
    for (int i = 0; i < n; i++) out.push_back(seed = crt_session_next_nonce(seed));
    return out;
  };
  EXPECT_EQ(sequence(0x3C, 6), (std::vector<int>{0x82, 0x45, 0xA3, 0x66, 0xC4, 0x87}));
  EXPECT_EQ(sequence(0xAB, 1), (std::vector<int>{0x66}));
  EXPECT_EQ(sequence(0x5A, 1), (std::vector<int>{0x43}));
  EXPECT_EQ(sequence(0x11, 1), (std::vector<int>{0x21}));
  EXPECT_EQ(sequence(0x00, 6), (std::vector<int>{0x01, 0x21, 0x22, 0x42, 0x43, 0x63}));
  for (int n = 0; n < 256; n++) EXPECT_NE(crt_session_next_nonce(static_cast<uint8_t>(n)), 0);
}

// Equal nonces on a simultaneous start: the receiver picks a new one and sends Init again.
TEST_F(SessionTest, EqualNonceInitRestartsWithNewNonce) {
  InitializeBoth();
  ASSERT_EQ(crt_session_start(&alice_.session), kTvmErrorNoError);
  alice_.TakeOutput();
  EXPECT_TRUE(alice_.Receive(kAliceInit).empty());  // an Init carrying her own nonce 0x82
  EXPECT_EQ(alice_.out, kInitFrom82Regen);
  EXPECT_EQ(crt_session_state(&alice_.session), kCrtSessionStartSessionSent);
}

// ---- benchfarm's fixes
// -----------------------------------------------------------------------------

// TVM: one wrong-id message left the receive buffer busy and wedged the device until reset.
TEST_F(SessionTest, WrongSessionIdDroppedAndNextMessageDelivered) {
  Establish();
  for (int i = 0; i < 5; i++) {
    EXPECT_TRUE(bob_.Receive(Frame(Concat(Hex("34 12 10"), Str("intruder")))).empty());
    EXPECT_TRUE(bob_.Receive(Frame(Concat(Hex("34 12 03"), Str("foreign log")))).empty());
  }
  EXPECT_EQ(bob_.Counters().dropped_wrong_session, 10u);
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "fine"), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "fine"}));
  // A Log may carry the current session id as well as 0.
  EXPECT_TRUE(bob_.Receive(Frame(Concat(Hex("82 66 03"), Str("ours")))).empty());
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionLog, "ours"}));
  EXPECT_EQ(bob_.Counters().messages_delivered, 2u);
}

TEST_F(SessionTest, NormalWithoutSessionDropped) {
  InitializeBoth();
  EXPECT_TRUE(bob_.Receive(kHello).empty());
  EXPECT_TRUE(bob_.messages.empty());
  EXPECT_EQ(bob_.Counters().dropped_wrong_session, 1u);
  // Sending one is the session's own error, not a write-stream error.
  EXPECT_EQ(bob_.Send(kCrtSessionNormal, "x"), kTvmErrorSessionInvalidState);
  EXPECT_TRUE(bob_.out.empty());
}

// TVM delivered a corrupted "corrupt" followed by "fine" as one message: corrupt + 82 66 10 + fine.
TEST_F(SessionTest, BadCrcLeavesNoStaleBytes) {
  Establish();
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "corrupt"), kTvmErrorNoError);
  Bytes corrupted = alice_.TakeOutput();
  corrupted.back() ^= 0x55;
  EXPECT_TRUE(bob_.Receive(corrupted).empty());
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "fine"), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "fine"}));
  EXPECT_EQ(bob_.CountOf(kCrtSessionNormal), 1);
  EXPECT_EQ(crt_session_unframer_counters(&bob_.session)->crc_failures, 1u);
}

TEST_F(SessionTest, AbortedPacketLeavesNoStaleBytes) {
  Establish();
  const std::string big(200, 'x');  // longer than TVM's 128-byte forwarding chunk
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, big), kTvmErrorNoError);
  Bytes cut = alice_.TakeOutput();
  cut.resize(150);
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "fine"), kTvmErrorNoError);
  const std::vector<tvm_crt_error_t> errors = bob_.Receive(Concat(cut, alice_.TakeOutput()));
  EXPECT_EQ(errors, (std::vector<tvm_crt_error_t>{kTvmErrorFramingShortPacket}));
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "fine"}));
  EXPECT_EQ(bob_.CountOf(kCrtSessionNormal), 1);
}

// TVM: a duplicated Reply broke the established session (state kReset).
TEST_F(SessionTest, DuplicateReplyWhileEstablishedIgnored) {
  Establish();
  EXPECT_TRUE(alice_.Receive(kBobReply).empty());
  EXPECT_TRUE(crt_session_is_established(&alice_.session));
  EXPECT_EQ(crt_session_id(&alice_.session), 0x6682);
  EXPECT_EQ(alice_.CountOf(kCrtSessionStartSessionReply), 1);
  EXPECT_EQ(alice_.Counters().ignored_handshake, 1u);
  EXPECT_TRUE(alice_.out.empty());
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "hello"), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, kHello);
}

// TVM fired the established callback twice here.
TEST_F(SessionTest, InitWhileEstablishedStartsNewSessionAndNotifiesOnce) {
  Establish();
  ASSERT_EQ(crt_session_start(&alice_.session), kTvmErrorNoError);  // e.g. the host restarted
  EXPECT_EQ(alice_.out, kInitFrom82Regen);
  EXPECT_FALSE(crt_session_is_established(&alice_.session));
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.out, Frame(Hex("45 C4 01 01")));            // Bob's nonce 0x66 -> 0xC4
  EXPECT_EQ(bob_.CountOf(kCrtSessionStartSessionReply), 2);  // one per session
  EXPECT_EQ(crt_session_id(&bob_.session), 0xC445);
  Deliver(&bob_, &alice_);
  EXPECT_EQ(alice_.CountOf(kCrtSessionStartSessionReply), 2);
  EXPECT_EQ(crt_session_id(&alice_.session), 0xC445);

  // Traffic of the old session is now foreign.
  EXPECT_TRUE(bob_.Receive(kHello).empty());
  EXPECT_EQ(bob_.Counters().dropped_wrong_session, 1u);
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "new"), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "new"}));
}

// TVM did not check the version of an Init received while idle.
TEST_F(SessionTest, BadVersionRejected) {
  InitializeBoth();
  EXPECT_TRUE(bob_.Receive(Frame(Hex("82 00 00 02"))).empty());
  EXPECT_TRUE(bob_.out.empty());
  EXPECT_FALSE(crt_session_is_established(&bob_.session));
  EXPECT_EQ(bob_.Counters().dropped_bad_version, 1u);

  ASSERT_EQ(crt_session_start(&alice_.session), kTvmErrorNoError);
  EXPECT_TRUE(alice_.Receive(Frame(Hex("82 66 01 02"))).empty());  // Reply, version 2
  EXPECT_FALSE(crt_session_is_established(&alice_.session));
  EXPECT_EQ(alice_.Counters().dropped_bad_version, 1u);
  EXPECT_TRUE(alice_.messages.empty());
}

TEST_F(SessionTest, OverLongMessageDroppedAndCounted) {
  Establish();
  // Exactly the receive buffer: delivered.
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, std::string(300, 'a')), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, std::string(300, 'a')}));
  // One byte more: refused with the session's own code, counted, nothing delivered.
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, std::string(301, 'b')), kTvmErrorNoError);
  EXPECT_EQ(bob_.Receive(alice_.TakeOutput()),
            (std::vector<tvm_crt_error_t>{kTvmErrorSessionReceiveBufferShortWrite}));
  EXPECT_EQ(bob_.Counters().dropped_oversized, 1u);
  EXPECT_EQ(bob_.CountOf(kCrtSessionNormal), 1);
  // Same for a Log, then normal service.
  ASSERT_EQ(alice_.Send(kCrtSessionLog, std::string(1000, 'c')), kTvmErrorNoError);
  EXPECT_EQ(bob_.Receive(alice_.TakeOutput()),
            (std::vector<tvm_crt_error_t>{kTvmErrorSessionReceiveBufferShortWrite}));
  EXPECT_EQ(bob_.Counters().dropped_oversized, 2u);
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "fine"), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "fine"}));
}

TEST_F(SessionTest, MalformedTrafficDroppedAndCounted) {
  Establish();
  const std::vector<Bytes> bad = {
      Frame(Hex("82 66")),           // shorter than the header
      Frame(Hex("82 66 42 00")),     // unknown type
      Frame(Hex("00 00 00 01")),     // Init with nonce 0
      Frame(Hex("82 00 00")),        // Init without version byte
      Frame(Hex("82 00 00 01 01")),  // Init with a longer body
      Frame(Hex("82 00 01 01")),     // Reply with responder nonce 0
      Frame(Hex("00 00 02 00")),     // Terminate with a body
      Frame(Hex("82 66 02")),        // Terminate with an id
  };
  for (const Bytes& packet : bad) EXPECT_TRUE(bob_.Receive(packet).empty());
  EXPECT_EQ(bob_.Counters().dropped_malformed, bad.size());
  EXPECT_TRUE(bob_.out.empty());
  EXPECT_TRUE(crt_session_is_established(&bob_.session));
  EXPECT_EQ(crt_session_id(&bob_.session), 0x6682);
  EXPECT_EQ(bob_.messages.size(), 1u);
}

TEST_F(SessionTest, TerminateEndsSession) {
  Establish();
  ASSERT_EQ(crt_session_terminate(&alice_.session), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, Hex("FF FD 03 00 00 00 00 00 02 66 77"));
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionTerminateSession, ""}));
  EXPECT_FALSE(crt_session_is_established(&bob_.session));
  EXPECT_EQ(crt_session_id(&bob_.session), 0);
  EXPECT_EQ(bob_.Send(kCrtSessionNormal, "x"), kTvmErrorSessionInvalidState);
  // A Terminate while not established (e.g. the peer's boot message) changes nothing.
  EXPECT_TRUE(bob_.Receive(kTerminateFresh).empty());
  EXPECT_EQ(bob_.CountOf(kCrtSessionTerminateSession), 1);
}

TEST_F(SessionTest, SendMisuseReturnsSessionErrors) {
  EXPECT_EQ(crt_session_start(&alice_.session), kTvmErrorSessionInvalidState);  // no initialize
  EXPECT_EQ(alice_.Send(kCrtSessionStartSessionInit, "\x01"), kTvmErrorSessionInvalidState);
  EXPECT_EQ(alice_.Send(kCrtSessionTerminateSession, ""), kTvmErrorSessionInvalidState);
  EXPECT_TRUE(alice_.out.empty());
}

TEST_F(SessionTest, TransportErrorsPassThroughUnchanged) {
  InitializeBoth();
  alice_.write_error = kTvmErrorWriteStreamShortWrite;
  EXPECT_EQ(crt_session_start(&alice_.session), kTvmErrorWriteStreamShortWrite);
  EXPECT_EQ(crt_session_state(&alice_.session), kCrtSessionNoSessionEstablished);
  // A Reply that cannot be sent: reported, and no session is claimed.
  EXPECT_EQ(alice_.Receive(Frame(Hex("10 00 00 01"))),
            (std::vector<tvm_crt_error_t>{kTvmErrorWriteStreamShortWrite}));
  EXPECT_FALSE(crt_session_is_established(&alice_.session));
  EXPECT_TRUE(alice_.messages.empty());
}

TEST_F(SessionTest, StreamedSendMatchesWholeSend) {
  Establish();
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "hello"), kTvmErrorNoError);
  const Bytes whole = alice_.TakeOutput();
  ASSERT_EQ(crt_session_start_message(&alice_.session, kCrtSessionNormal, 5), kTvmErrorNoError);
  ASSERT_EQ(
      crt_session_send_body_chunk(&alice_.session, reinterpret_cast<const uint8_t*>("hel"), 3),
      kTvmErrorNoError);
  EXPECT_EQ(crt_session_finish_message(&alice_.session), kTvmErrorFramingPayloadIncomplete);
  ASSERT_EQ(crt_session_send_body_chunk(&alice_.session, reinterpret_cast<const uint8_t*>("lo"), 2),
            kTvmErrorNoError);
  ASSERT_EQ(crt_session_finish_message(&alice_.session), kTvmErrorNoError);
  EXPECT_EQ(alice_.out, whole);
}

// ---- Streaming Normal bodies (the "Long Messages" hook)
// --------------------------------------------

class TensorSink {
 public:
  crt_session_body_sink_t Sink() { return {&Begin, &Chunk, &Finish, &Discard, this}; }
  static bool Begin(void* ctx, uint32_t body_len) {
    auto* self = static_cast<TensorSink*>(ctx);
    if (body_len < self->stream_from) return false;  // small messages: buffered path
    self->data.clear();
    self->begun++;
    return true;
  }
  static tvm_crt_error_t Chunk(void* ctx, const uint8_t* data, size_t n) {
    auto* self = static_cast<TensorSink*>(ctx);
    self->chunks++;
    self->data.append(reinterpret_cast<const char*>(data), n);
    return self->data.size() > self->fail_after ? kTvmErrorFunctionCallInvalidArg
                                                : kTvmErrorNoError;
  }
  static tvm_crt_error_t Finish(void* ctx) {
    static_cast<TensorSink*>(ctx)->finished++;
    return kTvmErrorNoError;
  }
  static void Discard(void* ctx) {
    auto* self = static_cast<TensorSink*>(ctx);
    self->discarded++;
    self->data.clear();
  }
  uint32_t stream_from = 64;
  size_t fail_after = SIZE_MAX;
  std::string data;
  int begun = 0, chunks = 0, finished = 0, discarded = 0;
};

TEST_F(SessionTest, BodySinkStreamsLargeNormalMessages) {
  Establish();
  TensorSink tensor;
  const crt_session_body_sink_t sink = tensor.Sink();
  crt_session_set_body_sink(&bob_.session, &sink);
  std::string big(5000, '\0');
  for (size_t i = 0; i < big.size(); i++) big[i] = static_cast<char>(i * 31);  // many FFs
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, big), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(tensor.begun, 1);
  EXPECT_EQ(tensor.finished, 1);
  EXPECT_GT(tensor.chunks, 1);
  EXPECT_EQ(tensor.data, big);
  EXPECT_EQ(bob_.CountOf(kCrtSessionNormal), 0);  // went to the sink, not the callback

  // Small bodies still take the buffered path.
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, "small"), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(bob_.messages.back(), (Message{kCrtSessionNormal, "small"}));
  EXPECT_EQ(bob_.Counters().messages_delivered, 2u);
}

TEST_F(SessionTest, BodySinkDiscardsOnBadCrcAndChunkError) {
  Establish();
  TensorSink tensor;
  const crt_session_body_sink_t sink = tensor.Sink();
  crt_session_set_body_sink(&bob_.session, &sink);
  const std::string big(1000, 'z');
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, big), kTvmErrorNoError);
  Bytes corrupt = alice_.TakeOutput();
  corrupt.back() ^= 1;
  EXPECT_TRUE(bob_.Receive(corrupt).empty());
  EXPECT_EQ(tensor.discarded, 1);
  EXPECT_EQ(tensor.finished, 0);

  tensor.fail_after = 500;
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, big), kTvmErrorNoError);
  EXPECT_EQ(bob_.Receive(alice_.TakeOutput()),
            (std::vector<tvm_crt_error_t>{kTvmErrorFunctionCallInvalidArg}));
  EXPECT_EQ(tensor.discarded, 2);
  EXPECT_EQ(tensor.finished, 0);

  tensor.fail_after = SIZE_MAX;
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, big), kTvmErrorNoError);
  Deliver(&alice_, &bob_);
  EXPECT_EQ(tensor.finished, 1);
  EXPECT_EQ(tensor.data, big);

  // A wrong-id message never reaches the sink.
  EXPECT_TRUE(bob_.Receive(Frame(Concat(Hex("34 12 10"), Str(std::string(100, 'q'))))).empty());
  EXPECT_EQ(tensor.begun, 3);
  crt_session_set_body_sink(&bob_.session, nullptr);
  ASSERT_EQ(alice_.Send(kCrtSessionNormal, big), kTvmErrorNoError);
  EXPECT_EQ(bob_.Receive(alice_.TakeOutput()),
            (std::vector<tvm_crt_error_t>{kTvmErrorSessionReceiveBufferShortWrite}));
}

}  // namespace
