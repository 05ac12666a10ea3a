/*
 * link_test_c.c: proves every public header of //crt/link is valid C99.
 *
 * Includes them all and runs a small round trip from C: a Log message framed by
 * one session is received by another. crc16_test.cc calls
 * crt_link_headers_compile_as_c() and checks its result.
 */
#include <string.h>
#include <tvm/runtime/crt/link/crc16.h>
#include <tvm/runtime/crt/link/framing.h>
#include <tvm/runtime/crt/link/session.h>

/* Declared here only: the C++ test declares it the same way. */
int crt_link_headers_compile_as_c(void);

typedef struct {
  uint8_t bytes[64];
  size_t len;
} Wire;

typedef struct {
  int logs;
  uint16_t body_crc;
} Received;

static tvm_crt_error_t WireWrite(void* ctx, const uint8_t* data, size_t n) {
  Wire* w = (Wire*)ctx;
  if (n > sizeof(w->bytes) - w->len) {
    return kTvmErrorWriteStreamShortWrite;
  }
  memcpy(w->bytes + w->len, data, n);
  w->len += n;
  return kTvmErrorNoError;
}

static tvm_crt_error_t OnMessage(void* ctx, crt_session_message_type_t type, const uint8_t* body,
                                 size_t body_len) {
  Received* r = (Received*)ctx;
  if (type == kCrtSessionLog) {
    r->logs++;
    r->body_crc = crt_crc16(body, body_len);
  }
  return kTvmErrorNoError;
}

/*
 * Returns the CRC of "123456789" (0x29B1) when a Log "123456789" sent by one
 * session arrives intact at another; a negative number names the failed step.
 */
int crt_link_headers_compile_as_c(void) {
  static const uint8_t kText[] = "123456789";
  Wire wire;
  Received received;
  uint8_t rx[32];
  crt_session_t sender;
  crt_session_t receiver;
  size_t consumed = 0;

  memset(&wire, 0, sizeof(wire));
  memset(&received, 0, sizeof(received));
  crt_session_init(&sender, WireWrite, &wire, NULL, 0, OnMessage, NULL);
  crt_session_init(&receiver, WireWrite, &wire, rx, sizeof(rx), OnMessage, &received);
  if (crt_session_send(&sender, kCrtSessionLog, kText, sizeof(kText) - 1) != kTvmErrorNoError) {
    return -1;
  }
  if (crt_session_receive(&receiver, wire.bytes, wire.len, &consumed) != kTvmErrorNoError ||
      consumed != wire.len) {
    return -2;
  }
  if (received.logs != 1 || crt_session_unframer_counters(&receiver)->packets_ok != 1) {
    return -3;
  }
  return received.body_crc;
}
