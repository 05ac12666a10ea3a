/*
 * rpc_server_fuzz: libFuzzer target for the board's whole input path —
 * unframer -> session -> MinRPC server -> TVMFuncCall — as crt_rpc_server_t
 * runs it on a board, with the host platform (crt/host/platform.c, a 4 MiB
 * pool) and the sample system library (crt/ops).
 *
 * Every input starts from a freshly initialised server (crt_rpc_server_init
 * re-initialises the runtime, the registries and the session); the pool is
 * static and shared by all inputs, so each input must leave it as it found it.
 *
 * Input: [mode] ...
 *   mode bit 0 clear: raw. [n] [n split bytes] [stream...]: the stream is fed
 *     to crt_rpc_server_receive in the fuzzed pieces, as a UART would. The
 *     server's nonce seed is fixed (see below), so a stream can hold an Init
 *     and Normal messages with the right session id.
 *   mode bit 0 set: structured. A host-side crt_session (as rpc_server_test.cc
 *     drives it) does the handshake, then the rest is a list of records
 *       [flags] [param] [len u16 LE] [MinRPC packet body, len bytes]
 *     each sent with crt_session_send(kCrtSessionNormal), so the MinRPC parser
 *     is reached with valid framing and session ids. flags:
 *       bit 0  overwrite the body's first 8 bytes with packet_nbytes = len - 8
 *       bit 1  replace every 8-byte placeholder A1 A1 A1 A1 A1 A1 A1 <i> with the
 *              address of the (i mod count)-th tensor the server allocated so
 *              far in this input (i < 0x80), so requests can name real device
 *              memory, or with the (i mod count)-th packed function handle a
 *              CallFunc returned (i >= 0x80): time evaluator handles count up
 *              across sessions, so they differ from input to input
 *       bit 2  the board's transport fails after param * 4 bytes of the reply
 *       bit 3  the wire bytes reach the board in two pieces, split at param / 256
 *              of the way
 *       bit 4  one byte of the packet is corrupted, so its CRC fails
 *       bit 5  restart the session (a new Init) before this record, which
 *              frees the server's allocations: later placeholders name freed memory
 *
 * Checked (abort on violation):
 *   - ASan/UBSan everywhere, including the pool: this harness poisons every
 *     pool byte not inside a live block, so a read or write through a stale or
 *     out-of-range tensor pointer is reported like a heap overflow;
 *   - structured mode: every request gets exactly one reply (none for a
 *     Shutdown or a packet with a bad CRC), whose envelope is consistent
 *     (packet_nbytes, a reply code, an Exception's string length; CopyAck only
 *     for CopyFromRemote); crt_rpc_server_receive returns only the documented
 *     codes;
 *   - at the end of every input, a new session (the host's Init) must be
 *     answered — the server never wedges — and must leave no server
 *     allocation, no live time evaluator, and the pool's live blocks and
 *     pages exactly as after the input's first handshake (raw mode: after
 *     crt_rpc_server_init), which must in turn equal the pool at start-up.
 *     After a Shutdown (no new session is possible) the harness frees the
 *     server's allocations itself.
 *
 * Platform changes, through the linker's --wrap (build.sh), so that inputs
 * replay exactly and the time evaluator's waits cannot stall the fuzzer:
 *   - TVMPlatformGenerateRandom returns a fixed byte (the server's nonce seed);
 *   - TVMPlatformTimerStop keeps its state checks but reports a fake elapsed
 *     time: 0.1 s, or 0 s every fourth stop (so the zero-time path is
 *     reachable). runtime.RPCTimeEvaluator accepts cooldown_interval_ms and
 *     min_repeat_ms up to 3600000 (a literal in time_evaluator.c, not a
 *     crt_config.h macro); with a real clock one call could wait an hour.
 *   - TVMPlatformMemoryAllocate / TVMPlatformMemoryFree keep the poisoning above.
 */
#include <crt_config.h>
#include <sanitizer/asan_interface.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/host_platform.h>
#include <tvm/runtime/crt/link/session.h>
#include <tvm/runtime/crt/platform.h>
#include <tvm/runtime/crt/rpc_server.h>
#include <tvm/runtime/crt/time_evaluator.h>
#include <tvm/runtime/crt/wire.h>

#include "fuzz_common.h"

#define RANDOM_BYTE 0x5Au      /* the server's nonce seed */
#define HOST_NONCE_SEED 0x11u  /* the host session's, as in rpc_server_test.cc */
#define PLACEHOLDER_BYTE 0xA1u /* 7 of these + an index byte name an allocation */
#define MAX_TRACKED_BLOCKS 4096u

static const crt_board_info_t kInfo = {"fuzz-board", "0123456789abcdef", 1e-9, 72000000u, "fake"};
static const DLDevice kCpu = {kDLCPU, 0};

static crt_rpc_server_t g_server; /* large: static storage, as on a board */
static bool g_verbose;

/* ---- the wrapped platform ---------------------------------------------------------------------
 */

tvm_crt_error_t __real_TVMPlatformTimerStop(double* elapsed_time_seconds);
tvm_crt_error_t __real_TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr);
tvm_crt_error_t __real_TVMPlatformMemoryFree(void* ptr, DLDevice dev);
tvm_crt_error_t __wrap_TVMPlatformGenerateRandom(uint8_t* buffer, size_t num_bytes);
tvm_crt_error_t __wrap_TVMPlatformTimerStop(double* elapsed_time_seconds);
tvm_crt_error_t __wrap_TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr);
tvm_crt_error_t __wrap_TVMPlatformMemoryFree(void* ptr, DLDevice dev);

static uint32_t g_timer_stops;

tvm_crt_error_t __wrap_TVMPlatformGenerateRandom(uint8_t* buffer, size_t num_bytes) {
  if (buffer == NULL && num_bytes > 0u) {
    return kTvmErrorFunctionCallInvalidArg;
  }
  if (num_bytes > 0u) {
    memset(buffer, RANDOM_BYTE, num_bytes);
  }
  return kTvmErrorNoError;
}

tvm_crt_error_t __wrap_TVMPlatformTimerStop(double* elapsed_time_seconds) {
  tvm_crt_error_t err = __real_TVMPlatformTimerStop(elapsed_time_seconds);
  if (err == kTvmErrorNoError) {
    *elapsed_time_seconds = (++g_timer_stops % 4u) == 0u ? 0.0 : 0.1;
  }
  return err;
}

/* Live pool blocks and their requested sizes, to poison a block again when it is freed. */
static struct {
  uint8_t* ptr;
  size_t nbytes;
} g_blocks[MAX_TRACKED_BLOCKS];
static size_t g_num_blocks;

tvm_crt_error_t __wrap_TVMPlatformMemoryAllocate(size_t num_bytes, DLDevice dev, void** out_ptr) {
  tvm_crt_error_t err = __real_TVMPlatformMemoryAllocate(num_bytes, dev, out_ptr);
  if (err == kTvmErrorNoError && out_ptr != NULL && *out_ptr != NULL) {
    CRT_FUZZ_CHECK(g_num_blocks < MAX_TRACKED_BLOCKS, "harness block table full");
    g_blocks[g_num_blocks].ptr = (uint8_t*)*out_ptr;
    g_blocks[g_num_blocks].nbytes = num_bytes;
    g_num_blocks++;
    ASAN_UNPOISON_MEMORY_REGION(*out_ptr, num_bytes);
  }
  return err;
}

tvm_crt_error_t __wrap_TVMPlatformMemoryFree(void* ptr, DLDevice dev) {
  tvm_crt_error_t err = __real_TVMPlatformMemoryFree(ptr, dev);
  if (err == kTvmErrorNoError && ptr != NULL) {
    size_t i;
    for (i = 0; i < g_num_blocks && g_blocks[i].ptr != (uint8_t*)ptr; i++) {
    }
    CRT_FUZZ_CHECK(i < g_num_blocks, "the pool freed a block it never handed out");
    ASAN_POISON_MEMORY_REGION(ptr, g_blocks[i].nbytes);
    g_blocks[i] = g_blocks[--g_num_blocks];
  }
  return err;
}

/* ---- the harness ------------------------------------------------------------------------------
 */

typedef struct {
  crt_session_t host;
  uint8_t host_rx[256]; /* Logs from the board; Normal replies go to the body sink */
  /* Board -> host transport. */
  bool fail_armed;
  uint64_t write_budget;
  uint64_t written;
  bool write_failed;
  /* Host -> board bytes not yet delivered. */
  uint8_t* to_board;
  size_t to_board_len;
  size_t to_board_cap;
  /* Replies (the host's body sink). */
  uint32_t replies;
  uint32_t reply_len;
  uint32_t reply_got;
  uint8_t reply_head[200];
  uint32_t last_reply_len;
  uint8_t last_reply_head[200];
  /* Tensors and function handles the server handed out in this input (placeholders name them). */
  uint64_t handles[64];
  size_t num_handles;
  uint64_t functions[64];
  size_t num_functions;
  bool shutdown;
  crt_page_allocator_stats_t pool_at_start; /* after the first handshake (raw: after init) */
} Harness;

static Harness g_h;

/* Feeds the host session, passing the rest in again after errors (as rpc_server_test.cc). */
static void HostReceive(Harness* h, const uint8_t* data, size_t n) {
  size_t pos = 0;
  while (pos < n) {
    size_t consumed = 0;
    (void)crt_session_receive(&h->host, data + pos, n - pos, &consumed);
    pos += consumed == 0u ? 1u : consumed;
  }
}

/*
 * The board's transport: bytes go straight into the host session (the host
 * only queues what it sends, so there is no re-entry into the server). An
 * armed failure sends the bytes up to the budget, then fails.
 */
static tvm_crt_error_t ToHost(void* ctx, const uint8_t* data, size_t n) {
  Harness* h = (Harness*)ctx;
  CRT_FUZZ_CHECK(n >= 1u && data != NULL, "board wrote 0 bytes");
  if (h->fail_armed && h->written + n > h->write_budget) {
    size_t ok = h->written >= h->write_budget ? 0u : (size_t)(h->write_budget - h->written);
    h->written += ok;
    h->write_failed = true;
    HostReceive(h, data, ok);
    return kTvmErrorWriteStreamShortWrite;
  }
  h->written += n;
  HostReceive(h, data, n);
  return kTvmErrorNoError;
}

static tvm_crt_error_t ToBoard(void* ctx, const uint8_t* data, size_t n) {
  Harness* h = (Harness*)ctx;
  if (h->to_board_len + n > h->to_board_cap) {
    size_t cap = (h->to_board_len + n) * 2u;
    uint8_t* grown = (uint8_t*)realloc(h->to_board, cap);
    CRT_FUZZ_CHECK(grown != NULL, "out of host memory");
    h->to_board = grown;
    h->to_board_cap = cap;
  }
  memcpy(h->to_board + h->to_board_len, data, n);
  h->to_board_len += n;
  return kTvmErrorNoError;
}

static tvm_crt_error_t OnHostMessage(void* ctx, crt_session_message_type_t type,
                                     const uint8_t* body, size_t n) {
  (void)ctx;
  (void)type;
  (void)body;
  (void)n;
  return kTvmErrorNoError; /* Logs, handshake events: nothing to check */
}

static bool ReplyBegin(void* ctx, uint32_t len) {
  Harness* h = (Harness*)ctx;
  h->reply_len = len;
  h->reply_got = 0;
  return true;
}

static tvm_crt_error_t ReplyChunk(void* ctx, const uint8_t* data, size_t n) {
  Harness* h = (Harness*)ctx;
  size_t i;
  for (i = 0; i < n; i++, h->reply_got++) {
    if (h->reply_got < sizeof(h->reply_head)) {
      h->reply_head[h->reply_got] = data[i];
    }
  }
  return kTvmErrorNoError;
}

static tvm_crt_error_t ReplyFinish(void* ctx) {
  Harness* h = (Harness*)ctx;
  h->replies++;
  h->last_reply_len = h->reply_len;
  memcpy(h->last_reply_head, h->reply_head, sizeof(h->reply_head));
  return kTvmErrorNoError;
}

static void ReplyDiscard(void* ctx) { (void)ctx; }

/*
 * Delivers the queued host bytes to the board: in one piece, or split at
 * `split` (0: no split). Returns the last code crt_rpc_server_receive gave.
 */
static tvm_crt_error_t PumpToBoard(Harness* h, size_t split) {
  tvm_crt_error_t last = kTvmErrorNoError;
  while (h->to_board_len > 0u) {
    size_t len = h->to_board_len;
    uint8_t* wire = crt_fuzz_copy(h->to_board, len);
    size_t first = split > 0u && split < len ? split : len;
    h->to_board_len = 0;
    last = crt_rpc_server_receive(&g_server, wire, first);
    if (first < len && last == kTvmErrorNoError) {
      uint8_t* rest = crt_fuzz_copy(wire + first, len - first);
      last = crt_rpc_server_receive(&g_server, rest, len - first);
      free(rest);
    }
    free(wire);
    if (last == kTvmErrorPlatformShutdown) {
      h->shutdown = true;
    }
    split = 0;
  }
  return last;
}

/* A new session from the host (Init); true when the board answered it. */
static bool Handshake(Harness* h) {
  if (crt_session_state(&h->host) == kCrtSessionReset) {
    CRT_FUZZ_CHECK(crt_session_initialize(&h->host, HOST_NONCE_SEED) == kTvmErrorNoError, "init");
  }
  CRT_FUZZ_CHECK(crt_session_start(&h->host) == kTvmErrorNoError, "host Init");
  (void)PumpToBoard(h, 0);
  return crt_session_is_established(&h->host);
}

/* Checks the envelope of the reply to a request with code `request_code`, and records handles. */
static void CheckReply(Harness* h, int64_t request_code) {
  uint32_t len = h->last_reply_len;
  crt_wire_reader_t r; /* reads past the captured head return 0 */
  uint32_t code;
  uint32_t num;
  uint32_t tcode;
  CRT_FUZZ_CHECK(len >= 12u, "reply shorter than its envelope");
  crt_wire_reader_init(&r, h->last_reply_head,
                       len < sizeof(h->last_reply_head) ? len : sizeof(h->last_reply_head));
  CRT_FUZZ_CHECK(crt_wire_read_u64(&r) == (uint64_t)len - 8u,
                 "reply packet_nbytes does not match its body");
  code = crt_wire_read_u32(&r);
  CRT_FUZZ_CHECK(code == kCrtRpcReturn || code == kCrtRpcException || code == kCrtRpcCopyAck,
                 "reply code is not Return, Exception or CopyAck");
  num = crt_wire_read_u32(&r);
  tcode = crt_wire_read_u32(&r); /* the first value's */
  if (code == kCrtRpcException) {
    CRT_FUZZ_CHECK(
        len >= 28u && num == 1u && tcode == kTVMStr && crt_wire_read_u64(&r) == (uint64_t)len - 28u,
        "malformed Exception reply");
  }
  if (code == kCrtRpcCopyAck) {
    CRT_FUZZ_CHECK(request_code == kCrtRpcCopyFromRemote, "CopyAck for another request");
  }
  if (code == kCrtRpcReturn &&
      (request_code == kCrtRpcDevAllocData || request_code == kCrtRpcDevAllocDataWithScope)) {
    CRT_FUZZ_CHECK(len == 28u && num == 1u && tcode == kTVMOpaqueHandle,
                   "DevAllocData returned something other than a handle");
    if (h->num_handles < sizeof(h->handles) / sizeof(h->handles[0])) {
      h->handles[h->num_handles++] = crt_wire_read_u64(&r);
    }
  }
  /* CallFunc's [kDLInt original type code][value]: remember packed function handles. */
  if (code == kCrtRpcReturn && request_code == kCrtRpcCallFunc && len == 40u && num == 2u) {
    (void)crt_wire_read_u32(&r); /* the type code the value is sent with */
    if (crt_wire_read_i64(&r) == kTVMPackedFuncHandle &&
        h->num_functions < sizeof(h->functions) / sizeof(h->functions[0])) {
      h->functions[h->num_functions++] = crt_wire_read_u64(&r);
    }
  }
}

/* CRT_FUZZ_VERBOSE=1: one line per request, to check what a seed does. */
static void PrintReply(const Harness* h, int64_t request_code) {
  const uint8_t* r = h->last_reply_head;
  uint32_t code = crt_wire_load_u32(r + 8);
  fprintf(stderr, "request %lld -> reply %u (%u bytes)", (long long)request_code, code,
          h->last_reply_len);
  if (code == kCrtRpcException) {
    size_t n = (size_t)crt_wire_load_u64(r + 20);
    if (n > sizeof(h->last_reply_head) - 28u) {
      n = sizeof(h->last_reply_head) - 28u;
    }
    fprintf(stderr, ": %.*s", (int)n, (const char*)r + 28);
  } else if (h->last_reply_len >= 28u) {
    fprintf(stderr, ": tcode %u value 0x%llx", crt_wire_load_u32(r + 16),
            (unsigned long long)crt_wire_load_u64(r + 20));
  }
  fprintf(stderr, "\n");
}

/* Replaces each placeholder in body with the address of a tensor the server handed out. */
static void SubstitutePlaceholders(const Harness* h, uint8_t* body, size_t len) {
  size_t i = 0;
  while (i + 8u <= len) {
    size_t k;
    uint8_t index = body[i + 7u];
    for (k = 0; k < 7u && body[i + k] == PLACEHOLDER_BYTE; k++) {
    }
    if (k == 7u && index < 0x80u && h->num_handles > 0u) {
      crt_wire_store_u64(body + i, h->handles[index % h->num_handles]);
      i += 8u;
    } else if (k == 7u && index >= 0x80u && h->num_functions > 0u) {
      crt_wire_store_u64(body + i, h->functions[(index - 0x80u) % h->num_functions]);
      i += 8u;
    } else {
      i++;
    }
  }
}

/* Makes the queued packet's CRC fail without touching any FF (so no framing byte changes). */
static void CorruptQueuedPacket(Harness* h) {
  size_t i = h->to_board_len;
  while (i > 0u && h->to_board[i - 1u] == 0xFFu) {
    i--;
  }
  CRT_FUZZ_CHECK(i > 7u, "no payload byte to corrupt");
  h->to_board[i - 1u] ^= h->to_board[i - 1u] == 0xFEu ? 0x02u : 0x01u;
}

static void RunRaw(Harness* h, const uint8_t* data, size_t size) {
  crt_fuzz_splits_t splits;
  size_t pos = 0;
  crt_fuzz_splits_take(&splits, &data, &size);
  while (pos < size && !h->shutdown) {
    size_t len = crt_fuzz_splits_next(&splits, size - pos);
    uint8_t* piece = crt_fuzz_copy(data + pos, len);
    tvm_crt_error_t err = crt_rpc_server_receive(&g_server, piece, len);
    free(piece);
    CRT_FUZZ_CHECK(err == kTvmErrorNoError || err == kTvmErrorPlatformShutdown,
                   "crt_rpc_server_receive failed on a working transport");
    h->shutdown = err == kTvmErrorPlatformShutdown;
    pos += len;
  }
}

static void RunStructured(Harness* h, const uint8_t* data, size_t size) {
  CRT_FUZZ_CHECK(Handshake(h), "the board did not answer the first Init");
  CRT_FUZZ_CHECK(crt_host_platform_get_memory_stats(&h->pool_at_start) == kTvmErrorNoError,
                 "memory stats");
  while (size >= 4u && !h->shutdown) {
    uint8_t flags = crt_fuzz_take_byte(&data, &size);
    uint8_t param = crt_fuzz_take_byte(&data, &size);
    size_t len = crt_fuzz_take_byte(&data, &size);
    uint8_t* body;
    uint32_t replies_before;
    int64_t request_code;
    bool is_shutdown;
    size_t split = 0;
    tvm_crt_error_t err;

    len |= (size_t)crt_fuzz_take_byte(&data, &size) << 8;
    if (len > size) {
      len = size;
    }
    body = crt_fuzz_copy(data, len);
    data += len;
    size -= len;
    if ((flags & 0x20u) != 0u) {
      CRT_FUZZ_CHECK(Handshake(h), "the board did not answer an Init");
    }
    if ((flags & 0x01u) != 0u && len >= 8u) {
      crt_wire_store_u64(body, (uint64_t)len - 8u);
    }
    if ((flags & 0x02u) != 0u) {
      SubstitutePlaceholders(h, body, len);
    }
    request_code = len >= 12u ? (int64_t)(int32_t)crt_wire_load_u32(body + 8) : -1;
    is_shutdown = len == 12u && crt_wire_load_u64(body) == 4u && request_code == kCrtRpcShutdown;

    CRT_FUZZ_CHECK(crt_session_send(&h->host, kCrtSessionNormal, body, len) == kTvmErrorNoError,
                   "host send");
    if ((flags & 0x10u) != 0u) {
      CorruptQueuedPacket(h);
    }
    if ((flags & 0x08u) != 0u) {
      split = 1u + (h->to_board_len * param) / 256u;
    }
    h->write_failed = false;
    h->fail_armed = (flags & 0x04u) != 0u;
    h->write_budget = h->written + 4u * (uint64_t)param;
    replies_before = h->replies;
    err = PumpToBoard(h, split);
    h->fail_armed = false;

    if (h->write_failed) {
      CRT_FUZZ_CHECK(err == kTvmErrorWriteStreamShortWrite, "a failed write was not reported");
      CRT_FUZZ_CHECK(h->replies == replies_before, "a reply arrived though its write failed");
    } else if ((flags & 0x10u) != 0u) {
      CRT_FUZZ_CHECK(err == kTvmErrorNoError, "a bad packet was an error of the call");
      CRT_FUZZ_CHECK(h->replies == replies_before, "a packet with a bad CRC was answered");
    } else if (is_shutdown) {
      CRT_FUZZ_CHECK(err == kTvmErrorPlatformShutdown && h->replies == replies_before,
                     "Shutdown was answered or not reported");
    } else {
      CRT_FUZZ_CHECK(err == kTvmErrorNoError, "crt_rpc_server_receive failed on a request");
      CRT_FUZZ_CHECK(h->replies == replies_before + 1u, "a request did not get exactly one reply");
      CheckReply(h, request_code);
      if (g_verbose) {
        PrintReply(h, request_code);
      }
    }
    free(body);
  }
}

/*
 * Makes every pool page that is not in a live block unaddressable: the whole
 * page area is taken as one block (the pool is empty at start-up), then freed,
 * which the wrapper poisons.
 */
static void PoisonPool(void) {
  crt_page_allocator_stats_t stats;
  void* all = NULL;
  CRT_FUZZ_CHECK(crt_host_platform_get_memory_stats(&stats) == kTvmErrorNoError, "stats");
  CRT_FUZZ_CHECK(stats.live_blocks == 0u, "pool in use at start-up");
  CRT_FUZZ_CHECK(__wrap_TVMPlatformMemoryAllocate(stats.pages_total * stats.page_bytes, kCpu,
                                                  &all) == kTvmErrorNoError,
                 "take the whole pool");
  CRT_FUZZ_CHECK(__wrap_TVMPlatformMemoryFree(all, kCpu) == kTvmErrorNoError, "pool free");
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static bool platform_ready;
  static crt_page_allocator_stats_t baseline;
  Harness* h = &g_h;
  crt_session_body_sink_t sink;
  crt_page_allocator_stats_t stats;
  uint8_t mode;
  uint8_t* to_board = h->to_board;
  size_t to_board_cap = h->to_board_cap;

  if (!platform_ready) {
    CRT_FUZZ_CHECK(TVMPlatformInitialize() == kTvmErrorNoError, "TVMPlatformInitialize");
    PoisonPool();
    CRT_FUZZ_CHECK(crt_host_platform_get_memory_stats(&baseline) == kTvmErrorNoError, "stats");
    g_verbose = getenv("CRT_FUZZ_VERBOSE") != NULL;
    platform_ready = true;
  }
  memset(h, 0, sizeof(*h));
  h->to_board = to_board; /* reused across inputs */
  h->to_board_cap = to_board_cap;
  g_timer_stops = 0;

  CRT_FUZZ_CHECK(crt_rpc_server_init(&g_server, ToHost, h, &kInfo) == kTvmErrorNoError,
                 "crt_rpc_server_init");
  crt_session_init(&h->host, ToBoard, h, h->host_rx, sizeof(h->host_rx), OnHostMessage, h);
  sink.begin = ReplyBegin;
  sink.chunk = ReplyChunk;
  sink.finish = ReplyFinish;
  sink.discard = ReplyDiscard;
  sink.ctx = h;
  crt_session_set_body_sink(&h->host, &sink);

  CRT_FUZZ_CHECK(crt_host_platform_get_memory_stats(&h->pool_at_start) == kTvmErrorNoError,
                 "memory stats");
  mode = crt_fuzz_take_byte(&data, &size);
  if ((mode & 1u) != 0u) {
    RunStructured(h, data, size);
  } else {
    RunRaw(h, data, size);
  }

  if (g_verbose) {
    const crt_rpc_server_counters_t* c = crt_rpc_server_counters(&g_server);
    fprintf(stderr, "server: %u requests, %u exceptions, %u sessions, %u receive errors%s\n",
            c->requests, c->exceptions, c->sessions, c->receive_errors,
            h->shutdown ? ", shut down" : "");
  }
  if (h->shutdown) {
    /* A shut-down server refuses everything (a board would now reboot), so no new session
     * can free what the host left behind: free it through the server's table. */
    size_t i;
    CRT_FUZZ_CHECK(
        crt_rpc_server_receive(&g_server, (const uint8_t*)"x", 1) == kTvmErrorPlatformShutdown,
        "a shut-down server accepted bytes");
    for (i = 0; i < TVM_CRT_MAX_RPC_ALLOCATIONS; i++) {
      if (g_server.allocations[i].data != NULL) {
        CRT_FUZZ_CHECK(TVMDeviceFreeDataSpace(kCpu, g_server.allocations[i].data) == 0, "free");
        g_server.allocations[i].data = NULL;
      }
    }
  } else {
    h->fail_armed = false;
    CRT_FUZZ_CHECK(Handshake(h), "the board did not answer a new session's Init (wedged)");
    CRT_FUZZ_CHECK(crt_rpc_server_live_allocations(&g_server) == 0u,
                   "a new session left server allocations live");
    CRT_FUZZ_CHECK(crt_time_evaluator_live_count() == 0, "a new session left time evaluators live");
  }
  CRT_FUZZ_CHECK(crt_host_platform_get_memory_stats(&stats) == kTvmErrorNoError, "stats");
  CRT_FUZZ_CHECK(stats.live_blocks == h->pool_at_start.live_blocks &&
                     stats.pages_used == h->pool_at_start.pages_used,
                 "pool blocks leaked across a session restart");
  CRT_FUZZ_CHECK(h->pool_at_start.live_blocks == baseline.live_blocks &&
                     h->pool_at_start.pages_used == baseline.pages_used,
                 "server init or the handshake left pool blocks behind");
  return 0;
}
