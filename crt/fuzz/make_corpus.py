#!/usr/bin/env python3
"""Writes the seed corpora of crt/fuzz (corpus/<target>/<name>) and rpc_server_fuzz.dict.

usage: crt/fuzz/make_corpus.py [OUT_DIR]   (default: crt/fuzz, beside this file)

Seeds are tiny valid wire captures and MinRPC requests, built here from the
wire format (framing.h, session.h, rpc_server.h); each target's input layout
is described at the top of its .c file. The board's boot Terminate is checked
against its golden bytes (FE FF FD 03 00 00 00 00 00 02 66 77), so a framing
mistake here fails loudly instead of producing useless seeds. The checked-in
corpus is this script's output: rerun it after a format change.
"""

import os
import struct
import sys

# ---- framing (framing.h) and session (session.h) ---------------------------------------------


def crc16(data, crc=0xFFFF):
    """CRC-16/CCITT-FALSE, bitwise."""
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc


def escape(data):
    return b"".join(b"\xff\xff" if b == 0xFF else bytes([b]) for b in data)


def frame(payload, preamble=False):
    covered = b"\xff\xfd" + escape(struct.pack("<I", len(payload))) + escape(payload)
    return (b"\xfe" if preamble else b"") + covered + escape(struct.pack("<H", crc16(covered)))


def next_nonce(n):
    n = (((n << 5) | (n >> 5)) + 1) & 0xFF
    return 1 if n == 0 else n


INIT, REPLY, TERMINATE, LOG, NORMAL = 0x00, 0x01, 0x02, 0x03, 0x10


def message(session_id, msg_type, body=b""):
    return struct.pack("<HB", session_id, msg_type) + body


# The host's and the board's nonces as the harnesses fix them (rpc_server_fuzz.c:
# HOST_NONCE_SEED, RANDOM_BYTE); the first nonce is next_nonce(seed).
HOST_NONCE = next_nonce(0x11)
BOARD_NONCE = next_nonce(0x5A)
SESSION_ID = HOST_NONCE | (BOARD_NONCE << 8)

BOOT = frame(message(0, TERMINATE), preamble=True)
assert BOOT == bytes.fromhex("fefffd03000000000002" "6677"), BOOT.hex()
HANDSHAKE = BOOT + frame(message(HOST_NONCE, INIT, b"\x01"))

# ---- MinRPC (rpc_server.h; reference section 3) -----------------------------------------------

INT, FLOAT, OPAQUE, NULL, DTYPE, DEVICE, TENSOR, MODULE, FUNC, STR, BYTES = 0, 2, 3, 4, 5, 6, 7, 9, 10, 11, 12
(SHUTDOWN, INIT_SERVER, CALL_FUNC, COPY_FROM, COPY_TO, GET_GLOBAL, FREE_HANDLE, ALLOC, FREE_DATA,
 STREAM_SYNC, COPY_AMONG, ALLOC_SCOPE, CREATE_STREAM, FREE_STREAM, SET_STREAM) = (
     1, 2, 3, 6, 7, 9, 10, 13, 14, 15, 16, 17, 18, 19, 20)

SYSTEM_LIB, MODULE_GET_FUNCTION, TIME_EVALUATOR, MAX_PACKET, = (0x80028000, 0x80028001, 0x80028002,
                                                              0x80028003)
RANDOM_FILL, DEVICE_INFO = 0x80028004, 0x80028005
PREPARE_ARGS, CHECK_CALL, TIME_ARGS, RELEASE_ARGS = 0x80028006, 0x80028007, 0x80028008, 0x80028009
ADD = 0x80008000  # the system library's first function, once runtime.SystemLib registered it
LIB = 0x8000
FIRST_EVALUATOR = 0xFFFF8001


def placeholder(i):
    """rpc_server_fuzz replaces this with the address of the i-th tensor the server allocated
    (i < 0x80), or with the (i - 0x80)-th packed function handle a CallFunc returned."""
    return b"\xa1" * 7 + bytes([i])


# The first time evaluator an input creates: its handle counts up across sessions.
FIRST_EVALUATOR_PLACEHOLDER = placeholder(0x80)


def request(code, payload=b""):
    return struct.pack("<QI", len(payload) + 4, code) + payload


def u64(v):
    return struct.pack("<Q", v & 0xFFFFFFFFFFFFFFFF)


def tensor_fields(data, shape, byte_offset=0, dtype=(2, 32, 1)):
    """u64 data, DLDevice (CPU 0), u32 ndim, dtype, shape, u64 byte_offset; no strides."""
    data = data if isinstance(data, bytes) else u64(data)
    return (data + struct.pack("<iiIBBH", 1, 0, len(shape), *dtype) +
            b"".join(struct.pack("<q", d) for d in shape) + u64(byte_offset))


def args(*values):
    """A packed sequence of (type code, value bytes)."""
    return (struct.pack("<I", len(values)) + b"".join(struct.pack("<i", t) for t, _ in values) +
            b"".join(v for _, v in values))


def Int(v): return (INT, struct.pack("<q", v))
def Float(v): return (FLOAT, struct.pack("<d", v))
def Bytes(b): return (BYTES, u64(len(b)) + b)
def Func(h): return (FUNC, u64(h))
def Str(s): return (STR, u64(len(s)) + s)
def Module(h): return (MODULE, u64(h))
def Opaque(h): return (OPAQUE, h if isinstance(h, bytes) else u64(h))
def Device(): return (DEVICE, struct.pack("<ii", 1, 0))
def DType(): return (DTYPE, struct.pack("<BBHI", 2, 32, 1, 0))
def Tensor(data, shape): return (TENSOR, tensor_fields(data, shape))


def call(handle, *values):
    return request(CALL_FUNC, (handle if isinstance(handle, bytes) else u64(handle)) + args(*values))


def get_global(name):
    return request(GET_GLOBAL, args(Str(name)))


def alloc_tensor(shape, scope=None):
    if scope is None:
        return request(ALLOC_SCOPE, struct.pack("<Iii", 2, TENSOR, NULL) + tensor_fields(0, shape))
    return request(ALLOC_SCOPE, struct.pack("<Iii", 2, TENSOR, STR) + tensor_fields(0, shape) +
                   u64(len(scope)) + scope)


def copy_to(i, values):
    data = b"".join(struct.pack("<f", v) for v in values)
    return request(COPY_TO, tensor_fields(placeholder(i), [len(values)]) + u64(len(data)) + data)


def copy_from(i, n):
    return request(COPY_FROM, tensor_fields(placeholder(i), [n]) + u64(4 * n))


def evaluator(name, number=1, repeat=2, min_repeat_ms=0, cooldown_ms=0):
    return call(TIME_EVALUATOR, Module(LIB), Str(name), Int(1), Int(0), Int(number), Int(repeat),
                Int(min_repeat_ms), Int(100), Int(cooldown_ms), Int(1), Int(0), Str(b""))


SESSION_REQUESTS = [
    get_global(b"runtime.SystemLib"),
    call(SYSTEM_LIB),
    call(MODULE_GET_FUNCTION, Module(LIB), Str(b"add"), Int(1)),
    call(MAX_PACKET),
    call(DEVICE_INFO),
    request(INIT_SERVER, u64(0) + args()),
]

ADD_ROUND_TRIP = [
    call(SYSTEM_LIB),
    alloc_tensor([4]), alloc_tensor([4]), alloc_tensor([4]),
    copy_to(0, [1, 2, 3, 4]),
    copy_to(1, [10, 20, 30, 40]),
    call(ADD, Tensor(placeholder(0), [4]), Tensor(placeholder(1), [4]),
         Tensor(placeholder(2), [4])),
    copy_from(2, 4),
    call(RANDOM_FILL, Tensor(placeholder(2), [4])),
    call(RANDOM_FILL),
    copy_from(2, 4),
    request(FREE_DATA, args(Device(), Opaque(placeholder(0)))),
    request(ALLOC, args(Device(), Int(64), Int(64), DType())),
]

EVALUATOR = [
    call(SYSTEM_LIB),
    alloc_tensor([2, 2]), alloc_tensor([2, 2]), alloc_tensor([2, 2]),
    evaluator(b"matmul", number=2, repeat=3, min_repeat_ms=1),
    call(FIRST_EVALUATOR_PLACEHOLDER, Tensor(placeholder(0), [2, 2]), Tensor(placeholder(1), [2, 2]),
         Tensor(placeholder(2), [2, 2])),
    request(FREE_HANDLE, args(Opaque(FIRST_EVALUATOR_PLACEHOLDER), Int(FUNC))),
]

# A conv2d through the time evaluator, with a cooldown between repeats.
CONV2D = [
    call(SYSTEM_LIB),
    alloc_tensor([1, 1, 4, 4]), alloc_tensor([1, 1, 3, 3]), alloc_tensor([1, 1, 2, 2]),
    evaluator(b"conv2d", number=1, repeat=2, min_repeat_ms=0, cooldown_ms=1),
    call(FIRST_EVALUATOR_PLACEHOLDER, Tensor(placeholder(0), [1, 1, 4, 4]),
         Tensor(placeholder(1), [1, 1, 3, 3]), Tensor(placeholder(2), [1, 1, 2, 2])),
]



def prepare_spec(*args):
    """benchfarm.PrepareArgs's spec (board_data.h): float32 arguments of these shapes in [-1, 1]."""
    return bytes([len(args)]) + b"".join(
        struct.pack("<BBHB", 2, 32, 1, len(shape)) + b"".join(struct.pack("<q", d) for d in shape) +
        struct.pack("<dd", -1, 1) for shape in args)


# A measurement's data on the board: prepared with add's reference, checked, timed, released.
PREPARE_CHECK_TIME = [
    call(SYSTEM_LIB),
    call(PREPARE_ARGS, Int(7), Float(1e-4), Float(1e-4), Str(b"add_reference"),
         Bytes(prepare_spec([4], [4], [4]))),
    call(CHECK_CALL, Func(ADD)),
    call(TIME_ARGS, Str(b"add"), Int(2), Int(2), Int(0), Int(100), Int(0), Int(1)),
    call(RELEASE_ARGS),
]

# Copies between two tensors, and the stream syscalls (no-ops on the board).
AMONG_AND_STREAMS = [
    alloc_tensor([4], scope=b"global"), alloc_tensor([4]),
    copy_to(0, [5, 6, 7, 8]),
    request(COPY_AMONG, args(Tensor(placeholder(0), [4]), Tensor(placeholder(1), [4]), Opaque(0))),
    copy_from(1, 4),
    request(CREATE_STREAM, args(Device())),
    request(STREAM_SYNC, args(Device(), Opaque(0))),
    request(SET_STREAM, args(Device(), Opaque(0))),
    request(FREE_STREAM, args(Device(), Opaque(0))),
]

# One allocation more than the server's table holds (TVM_CRT_MAX_RPC_ALLOCATIONS = 16).
MANY_ALLOCATIONS = [request(ALLOC, args(Device(), Int(8), Int(8), DType()))] * 17

# One time evaluator more than the table holds (TVM_CRT_MAX_TIME_EVALUATORS = 4): the oldest retires.
MANY_EVALUATORS = [call(SYSTEM_LIB)] + [evaluator(b"add", repeat=1 + i % 4) for i in range(5)]

# ---- the targets' input layouts -----------------------------------------------------------------


def splits(*sizes):
    """[n][n split bytes]: pieces of size + 1 bytes (fuzz_common.h)."""
    return bytes([len(sizes)]) + bytes(s - 1 for s in sizes)


def structured(requests, flags=0x03):
    """rpc_server_fuzz structured mode: [1] then [flags][param][len u16][body] records."""
    return b"\x01" + b"".join(bytes([flags, 0]) + struct.pack("<H", len(r)) + r for r in requests)


def normal_wire(requests):
    return b"".join(frame(message(SESSION_ID, NORMAL, r)) for r in requests)


def corpora():
    unframer = {
        "boot_terminate": b"\x00\xff\x00" + splits() + BOOT,
        "boot_terminate_bytewise": b"\x00\xff\x00" + splits(1) + BOOT,
        "handshake_get_global": b"\x00\xff\x00" + splits(3, 7) + HANDSHAKE +
                                normal_wire([get_global(b"runtime.SystemLib")]),
        "escapes": b"\x00\xff\x00" + splits(2) + frame(b"\xff\xfe\xfd\xff\xff"),
        "bad_crc_then_good": b"\x00\xff\x00" + splits() + BOOT[:-1] + b"\x00" + BOOT[1:],
        "aborted_then_good": b"\x00\xff\x00" + splits() + BOOT[:6] + BOOT[1:],
        "oversized_refused": b"\x00\x01\x00" + splits() + HANDSHAKE +
                             normal_wire([get_global(b"runtime.SystemLib")]),
        "payload_fails": b"\x02\xff\x05" + splits(4) + HANDSHAKE +
                         normal_wire([get_global(b"runtime.SystemLib")]),
        "round_trip": b"\x01\x00\x00" + splits(5, 1) + b"\x03abc\x00\x02\xff\xfd",
    }
    session = {
        "handshake_normal_log": b"\x01\x40\x00\x22" + splits() + HANDSHAKE +
                                frame(message(0, LOG, b"hello")) +
                                normal_wire([get_global(b"runtime.SystemLib")]),
        "handshake_buffered_echo": b"\x10\x40\x00\x22" + splits(2, 9) + HANDSHAKE +
                                   normal_wire(SESSION_REQUESTS[:3]),
        "reinit_and_terminate": b"\x09\x10\x04\x22" + splits() + HANDSHAKE +
                                frame(message(HOST_NONCE, INIT, b"\x01")) + BOOT[1:],
    }
    rpc_server = {
        "raw_boot_init": b"\x00" + splits() + HANDSHAKE,
        "raw_get_global": b"\x00" + splits(5) + HANDSHAKE +
                          normal_wire([get_global(b"runtime.SystemLib")]),
        "raw_session": b"\x00" + splits() + HANDSHAKE + normal_wire(SESSION_REQUESTS),
        "raw_shutdown": b"\x00" + splits() + HANDSHAKE + normal_wire([request(SHUTDOWN)]),
        "structured_session": structured(SESSION_REQUESTS),
        "structured_add": structured(ADD_ROUND_TRIP),
        "structured_evaluator": structured(EVALUATOR),
        "structured_prepare_check_time": structured(PREPARE_CHECK_TIME),
        "structured_conv2d": structured(CONV2D),
        "structured_among_streams": structured(AMONG_AND_STREAMS),
        "structured_many_allocations": structured(MANY_ALLOCATIONS),
        "structured_many_evaluators": structured(MANY_EVALUATORS),
        "structured_shutdown": structured([get_global(b"runtime.SystemLib"), request(SHUTDOWN)]),
    }
    return {"unframer_fuzz": unframer, "session_fuzz": session, "rpc_server_fuzz": rpc_server}


def dict_entry(data):
    return '"' + "".join("\\x%02x" % b for b in data) + '"'


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    for target, seeds in corpora().items():
        d = os.path.join(out, "corpus", target)
        os.makedirs(d, exist_ok=True)
        for name in os.listdir(d):
            os.remove(os.path.join(d, name))
        for name, data in seeds.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
    tokens = [placeholder(0), placeholder(0x80), u64(LIB), u64(ADD), u64(FIRST_EVALUATOR), u64(SYSTEM_LIB),
              u64(MODULE_GET_FUNCTION), u64(TIME_EVALUATOR), u64(MAX_PACKET), u64(DEVICE_INFO),
              u64(RANDOM_FILL),
              b"runtime.SystemLib", b"tvm.rpc.server.ModuleGetFunction",
              b"runtime.RPCTimeEvaluator", b"tvm.rpc.server.GetCRTMaxPacketSize",
              b"benchfarm.DeviceInfo", b"tvm.contrib.random.random_fill",
              b"add", b"matmul", b"conv2d", b"add_reference",
              struct.pack("<BBH", 2, 32, 1), struct.pack("<H", SESSION_ID), b"\xff\xfd", b"\xff\xff"]
    with open(os.path.join(out, "rpc_server_fuzz.dict"), "w") as f:
        f.write("# libFuzzer dictionary for rpc_server_fuzz; written by make_corpus.py.\n")
        for i, t in enumerate(tokens):
            f.write("t%d=%s\n" % (i, dict_entry(t)))


if __name__ == "__main__":
    main()
