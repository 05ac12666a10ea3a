/*
 * rpc_server.h: the board's MinRPC server — what a benchfarm firmware runs in
 * its main loop. It owns the link's session (crt/link: framing + session) and
 * answers MinRPC requests (docs/microtvm-reference.md section 3; "reference"
 * below) carried in Normal messages,
 * byte-compatible with TVM v0.18's CRT on the good path.
 *
 * Event-driven: the firmware feeds received bytes with crt_rpc_server_receive;
 * replies and logs leave through the write callback given at init, from
 * inside that call. Nothing blocks, nothing allocates beyond crt's pool.
 *
 *   static crt_rpc_server_t server;               // large: keep it static
 *   crt_rpc_server_init(&server, uart_write, NULL, &board_info);
 *   for (;;) {
 *     n = uart_read(buf, sizeof(buf));
 *     if (crt_rpc_server_receive(&server, buf, n) == kTvmErrorPlatformShutdown) break;
 *   }
 *
 * What it serves: CallFunc; CopyToRemote (streamed straight into the tensor as
 * it arrives, so its size is not bounded by the receive buffer); CopyFromRemote;
 * the syscalls GetGlobalFunc, FreeHandle, DevAllocData, DevAllocDataWithScope,
 * DevFreeData, CopyAmongRemote, DevStreamSync/DevCreateStream/DevFreeStream/
 * DevSetStream (no-ops; CreateStream returns 0); InitServer with no arguments;
 * Shutdown (no reply; the server then refuses everything with
 * kTvmErrorPlatformShutdown).
 *
 * Globals it registers, in this order after TVMInitializeRuntime's two (so
 * their handles are TVM's: 0x80028002, 0x80028003, 0x80028004):
 *   2 runtime.RPCTimeEvaluator          (time_evaluator.h)
 *   3 tvm.rpc.server.GetCRTMaxPacketSize  () -> int: TVM_CRT_MAX_PACKET_SIZE_BYTES - 11
 *   4 tvm.contrib.random.random_fill    (tensor) -> none: random_fill.h
 *   5 benchfarm.DeviceInfo              () -> str: "key=value\n" lines, see below
 *   6-9 benchfarm.PrepareArgs, CheckCall, TimeArgs, ReleaseArgs: board_data.h
 * (TVM's CRT has tvm.aot_executor.create at 5; benchfarm serves no AOT executor.)
 *
 * Fixed relative to TVM (docs/wire-protocol.md, "Fixed, not imitated"): every
 * protocol violation — unknown RPC code, code 0/4/5/8 sent to the server, bad
 * or unknown type code, wrong argument count or types for a syscall, a packet
 * truncated or longer than its arguments, packet_nbytes not matching the
 * message body, a request larger than the receive buffer — is answered with an
 * Exception reply carrying a message; the device never hangs and the next
 * request is served normally. Pointers from the wire are never trusted: every
 * tensor a request names (CallFunc arguments, copies) must lie inside memory
 * this server allocated (DevAllocData*) and has not freed, and freeing
 * anything else is an Exception. A new session (host reconnect) frees every
 * allocation, time evaluator and set of prepared arguments left by the previous one.
 *
 * At most one server per process (the globals find it through a static
 * pointer). Thread-safety: none.
 */
#ifndef TVM_RUNTIME_CRT_RPC_SERVER_H_
#define TVM_RUNTIME_CRT_RPC_SERVER_H_

#include <crt_config.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <tvm/runtime/c_runtime_api.h>
#include <tvm/runtime/crt/error_codes.h>
#include <tvm/runtime/crt/link/session.h>
#include <tvm/runtime/crt/platform.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MinRPC codes (reference 3.2). */
typedef enum {
  kCrtRpcNone = 0,
  kCrtRpcShutdown = 1,
  kCrtRpcInitServer = 2,
  kCrtRpcCallFunc = 3,
  kCrtRpcReturn = 4,
  kCrtRpcException = 5,
  kCrtRpcCopyFromRemote = 6,
  kCrtRpcCopyToRemote = 7,
  kCrtRpcCopyAck = 8,
  kCrtRpcGetGlobalFunc = 9,
  kCrtRpcFreeHandle = 10,
  kCrtRpcDevSetDevice = 11,
  kCrtRpcDevGetAttr = 12,
  kCrtRpcDevAllocData = 13,
  kCrtRpcDevFreeData = 14,
  kCrtRpcDevStreamSync = 15,
  kCrtRpcCopyAmongRemote = 16,
  kCrtRpcDevAllocDataWithScope = 17,
  kCrtRpcDevCreateStream = 18,
  kCrtRpcDevFreeStream = 19,
  kCrtRpcDevSetStream = 20,
  kCrtRpcDevGetCurrentStream = 21,
} crt_rpc_code_t;

/*
 * What benchfarm.DeviceInfo reports, one "key=value" line each:
 *   board_kind=<board_kind>
 *   firmware_hash=<firmware_hash>
 *   crt_version=<CRT_RPC_SERVER_VERSION>
 *   max_packet_size=<TVM_CRT_MAX_PACKET_SIZE_BYTES - 11>
 *   timer_resolution_s=<timer_resolution_s, %g>
 *   cpu_hz=<cpu_hz>
 *   timer=<timer_source>   ("unknown" when NULL)
 * Strings must not contain newlines. Borrowed for the server's life.
 */
typedef struct crt_board_info {
  const char* board_kind;    /* e.g. "host-process", "stm32f746-disco" */
  const char* firmware_hash; /* content hash of the running image, hex */
  double timer_resolution_s; /* smallest step of TVMPlatformTimerStop, seconds */
  uint64_t cpu_hz;           /* core clock, Hz (0 if unknown) */
  /* What TVMPlatformTimerStart/Stop count: "dwt" (the Cortex-M DWT cycle counter), "systick"
   * (SysTick at the core clock, extended past 24 bits), "monotonic" (a host OS clock). */
  const char* timer_source;
} crt_board_info_t;

#define CRT_RPC_SERVER_VERSION "benchfarm-crt-0.3"
/* Longest Exception message the server composes itself (bytes, with NUL). */
#define CRT_RPC_SERVER_MESSAGE_BYTES 160u
/* Bytes of the session's own receive buffer (Log messages from the host; Normal bodies are
 * streamed into the request buffer instead). */
#define CRT_RPC_SERVER_LOG_BUFFER_BYTES 64u

/* What the server did since init (cumulative, wrapping). */
typedef struct crt_rpc_server_counters {
  uint32_t requests;       /* MinRPC requests acted on (answered or Shutdown) */
  uint32_t exceptions;     /* of which answered with an Exception */
  uint32_t discarded;      /* Normal messages dropped before completion (bad CRC, abort) */
  uint32_t sessions;       /* sessions established */
  uint32_t receive_errors; /* errors crt_session_receive reported (framing, oversized) */
} crt_rpc_server_counters_t;

/* One live allocation handed out by DevAllocData*. */
typedef struct crt_rpc_allocation {
  uint8_t* data;
  size_t nbytes;
} crt_rpc_allocation_t;

/* The server. Fields are private. Large (two packet buffers): give it static storage. */
typedef struct crt_rpc_server {
  crt_session_t session;
  const crt_board_info_t* info;
  crt_rpc_server_counters_t counters;
  bool shutdown;
  /* The Normal message being received. */
  uint8_t mode; /* private enum in rpc_server.c */
  uint32_t body_len;
  uint32_t request_len; /* bytes buffered in request[] */
  uint8_t* copy_dst;    /* CopyToRemote: where the next payload byte goes */
  uint64_t copy_remaining;
  char message[CRT_RPC_SERVER_MESSAGE_BYTES]; /* a pending Exception composed during receive */
  crt_rpc_allocation_t allocations[TVM_CRT_MAX_RPC_ALLOCATIONS];
  /* Decoded arguments of the request being served. */
  TVMValue values[TVM_CRT_MAX_ARGS];
  int type_codes[TVM_CRT_MAX_ARGS];
  DLTensor tensors[TVM_CRT_MAX_ARGS];
  int64_t shapes[TVM_CRT_MAX_ARGS][TVM_CRT_MAX_NDIM];
  TVMByteArray byte_args[TVM_CRT_MAX_ARGS];
  char device_info[256];
  uint8_t log_buffer[CRT_RPC_SERVER_LOG_BUFFER_BYTES];
  uint8_t request[TVM_CRT_MAX_PACKET_SIZE_BYTES];
} crt_rpc_server_t;

/*
 * Initialises the runtime (TVMInitializeRuntime), registers the globals above
 * and the time evaluator, takes one random byte from TVMPlatformGenerateRandom
 * as the session nonce seed, and sends the boot Terminate (the first bytes a
 * booting board transmits: FE FF FD 03 00 00 00 00 00 02 66 77). The platform
 * must be initialised first (TVMPlatformInitialize).
 *   write, write_ctx  the transport (framing.h contract: all bytes or an error).
 *   info              what benchfarm.DeviceInfo reports; borrowed; required.
 * Returns kTvmErrorNoError, or the first error of the runtime, a registration,
 * the random source or the write (the server is unusable then).
 */
tvm_crt_error_t crt_rpc_server_init(crt_rpc_server_t* server, crt_framer_write_fn write,
                                    void* write_ctx, const crt_board_info_t* info);

/*
 * Feeds n received bytes. Requests completed by these bytes are served and
 * answered (through the write callback) before it returns; a long-running
 * call (a time evaluator) runs inside it.
 * Returns kTvmErrorNoError when all bytes were used — also when they carried
 * garbage, a bad packet or a protocol violation (those are dropped and
 * counted, or answered with an Exception); kTvmErrorPlatformShutdown once a
 * Shutdown request was served (the remaining bytes are ignored, and every
 * later call returns it too); or the write callback's error if a reply could
 * not be sent (the link is then reset: the next packet carries FE).
 */
tvm_crt_error_t crt_rpc_server_receive(crt_rpc_server_t* server, const uint8_t* data, size_t n);

/*
 * Sends a Log message (any session state) formatted with
 * TVMPlatformFormatMessage into a 256-byte buffer, one trailing newline
 * removed. Returns kTvmErrorNoError or the write error.
 */
tvm_crt_error_t crt_rpc_server_logf(crt_rpc_server_t* server, const char* fmt, ...)
    TVM_CRT_PRINTF_LIKE(2, 3);

/* Counters of this server, and of its session and framing layers. */
const crt_rpc_server_counters_t* crt_rpc_server_counters(const crt_rpc_server_t* server);
const crt_session_t* crt_rpc_server_session(const crt_rpc_server_t* server);

/* Live allocations (for tests and diagnostics). */
size_t crt_rpc_server_live_allocations(const crt_rpc_server_t* server);

/*
 * Memory the board makes for the host (board_data.h): nbytes (64-byte
 * aligned) in the server's table as DevAllocData's are, so the host may name
 * it in calls and copies and a new session frees it. NULL when the table is
 * full, the pool is out of memory, or no server runs.
 */
void* crt_rpc_server_allocate(size_t nbytes, DLDataType dtype);

/* Frees memory from crt_rpc_server_allocate (or DevAllocData); anything else is ignored. */
void crt_rpc_server_release(void* data);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TVM_RUNTIME_CRT_RPC_SERVER_H_ */
