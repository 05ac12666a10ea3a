"""benchfarm.Client: the tracker's client service (benchfarm.v1.Tracker) from Python.

    import benchfarm
    trials = [benchfarm.trial("matmul", "host-process", knobs={"tile_m": m}) for m in (4, 8, 16)]
    with benchfarm.Client() as farm:              # $BENCHFARM_TRACKER, else localhost:7070;
                                                  # TLS with $BENCHFARM_CA and $BENCHFARM_TOKEN
        for r in farm.measure_batch(trials):      # AutoTVM's runner shape: list in, list out
            print(r.error_no, r.costs)            # seconds per call; (1e9,) on error
        for job in farm.measure_jobs(trials):     # the same, as finished Jobs with their quality
            s = job.result.stats                  # CostStats, computed by the tracker
            print(s.median_s, s.rel_half_width, s.unstable, benchfarm.cost_text(job))

A result's quality: every Job that get, watch, results and measure_jobs return carries
job.result.stats (count, mean_s, median_s, min_s, max_s, stddev_s, cv, the median's interval
ci_low_s..ci_high_s at ci_level, rel_half_width: the "+- x %", unstable past the tracker's
unstable_threshold), job.result.measured (number, repeats, rounds, stop: "fixed", "target",
"budget" or "max_repeat"), job.result.cpu_hz (cycles = median_s * cpu_hz; for an emulated board
under QEMU -icount, job.result.emulation "qemu-icount", it counts instructions per second instead)
and wall_over_cpu. An emulated board under the cycle model (emulation "qemu-cycles", timer
"cycle-model") also gives each cost's modeled cycles and instructions per call
(job.result.model_cycles, job.result.model_instructions).
Rank candidates by stats.median_s; distrust the order of UNSTABLE ones.

Every RPC failure raises TrackerError with the tracker's gRPC status code and message (for a
refused submission the message names the trial and field: "trials[1].board_kind: unknown board
kind ..."). Arguments that cannot become a request at all (a trial dict with an unknown field, an
op.json that is not JSON) raise ValueError before anything is sent.
"""

import collections
import getpass
import glob
import json
import math
import os
import socket
import ssl
import time
import uuid
import weakref

import grpc
from google.protobuf import json_format

from benchfarm._stubs import benchfarm_pb2 as pb
from benchfarm._stubs import benchfarm_pb2_grpc as pb_grpc
from benchfarm._stubs import knobs_pb2

DEFAULT_ADDRESS = "localhost:7070"
DEFAULT_TIMEOUT_S = 60.0
# AutoTVM's cost for a failed measurement (and benchfarm's AutoTVM export).
FAILED_COST = 1e9
# AutoTVM's MeasureErrorNo.UNKNOWN_ERROR: a job that ended without a result (cancelled).
_UNKNOWN_ERROR_NO = 8
_FINISHED = (pb.DONE, pb.CANCELLED_STATE)
_MAX_MESSAGE_BYTES = 64 << 20


class TrackerError(Exception):
    """An RPC to the tracker failed.

    code: the grpc.StatusCode (INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE, ...)
    message: the tracker's message ("trials[1].board_kind: unknown board kind \"x\"")
    rpc: the method ("SubmitTrials"); address: the tracker's address.
    """

    def __init__(self, code, message, rpc=None, address=None):
        self.code = code
        self.message = message
        self.rpc = rpc
        self.address = address
        super().__init__(code, message)

    @property
    def code_name(self):
        """The status code's name: "INVALID_ARGUMENT"."""
        return getattr(self.code, "name", str(self.code))

    def __str__(self):
        where = "%s: " % self.rpc if self.rpc else ""
        return "%s%s: %s" % (where, self.code_name, self.message)


class MeasureResult(collections.namedtuple(
        "MeasureResult", ["costs", "error_no", "all_cost", "timestamp", "error_msg"])):
    """One trial's outcome, shaped like AutoTVM's MeasureResult.

    costs: tuple of seconds per call (one per repeat); (1e9,) when the trial failed.
    error_no: AutoTVM's MeasureErrorNo (0 ok, 1 instantiation, 3 compile device, 4 runtime
        device, 5 wrong answer, 6 build timeout, 7 run timeout, 8 unknown).
    all_cost: seconds the farm spent on it (build + flash + handshake + measure).
    timestamp: when it finished (Unix seconds).
    error_msg: "" on success, else benchfarm's finer code and the message
        ("RUNTIME_DEVICE: killed by signal 11 (Segmentation fault)").
    """

    __slots__ = ()


def knob_text(value):
    """A knob value as the tracker takes it: 8 -> "8", 8.0 -> "8", "ikj" -> "ikj"."""
    if isinstance(value, bool):
        raise ValueError("knob value %r: use a number or a string" % (value,))
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _shape(shape, index):
    if isinstance(shape, str):
        try:
            return [int(d) for d in shape.lower().split("x")]
        except ValueError:
            raise ValueError("shapes[%d]: %r is not like \"32x32\"" % (index, shape)) from None
    return [int(d) for d in shape]


def trial(op, kind, knobs=None, shapes=None, *, dtypes=None, number=10, repeat=3, min_repeat_ms=0,
          cooldown_ms=0, timeout_ms=0, check=True, seed=1, priority=0, board=None, labels=None,
          version=None, image_pool=None, target_rel_ci=0.0, budget_ms=0, max_repeat=0):
    """A Trial of template operator `op` (built-in: add, matmul, conv2d; or one added with
    add_op) on board kind `kind`.

    knobs: {name: value}; a knob left out takes its default. shapes: one per argument, inputs then
    output, as [32, 32] or "32x32"; None: the op's default shapes. dtypes: with shapes, one dtype
    for every argument or a list of one each ("int8", "uint8", "int16", "uint16", "int32",
    "uint32", "float16", "float32", "float64"); None: the op's. number/repeat/min_repeat_ms/
    cooldown_ms/timeout_ms: the on-board time evaluator (0: the agent's default).
    target_rel_ci: adaptive mode when > 0 (0.01: repeat until the median's 95 % interval is
    within +-1 %; number is calibrated, number/repeat are ignored), bounded by budget_ms of timing
    and max_repeat costs (0: the agent's defaults). check: compare the output with the op's
    reference first. board, labels: pin to a board id / labels.
    version: the op's catalog version (None: the latest). image_pool: the other candidates of the
    run ({knob: value} dicts or "k=v,k=v" strings) for the flash economy.
    """
    t = pb.Trial(board_kind=kind, seed=seed, check_outputs=check, priority=priority)
    template = t.op.template_op
    template.op = op
    for name, value in (knobs or {}).items():
        template.knobs[name] = knob_text(value)
    if version:
        template.version = version
    for candidate in image_pool or ():
        if not isinstance(candidate, str):
            candidate = ",".join("%s=%s" % (k, knob_text(v)) for k, v in candidate.items())
        template.image_pool.append(candidate)
    shapes = list(shapes or ())
    if dtypes is not None and not shapes:
        raise ValueError("dtypes: give shapes too")
    if isinstance(dtypes, str):
        dtypes = [dtypes] * len(shapes)
    if dtypes is not None and len(dtypes) != len(shapes):
        raise ValueError("dtypes: %d for %d shapes (give one, or one each)"
                         % (len(dtypes), len(shapes)))
    for i, shape in enumerate(shapes):
        t.args.add(shape=_shape(shape, i), dtype=dtypes[i] if dtypes else "")
    t.measure.number = number
    t.measure.repeat = repeat
    t.measure.min_repeat_ms = min_repeat_ms
    t.measure.cooldown_ms = cooldown_ms
    t.measure.timeout_ms = timeout_ms
    if target_rel_ci < 0 or target_rel_ci >= 1:
        raise ValueError("target_rel_ci %r: in [0, 1) (0.01: +-1 %%; 0: the fixed mode)"
                         % (target_rel_ci,))
    if not target_rel_ci and (budget_ms or max_repeat):
        raise ValueError("budget_ms and max_repeat bound the adaptive mode: give target_rel_ci")
    t.measure.target_rel_ci = target_rel_ci
    t.measure.budget_ms = budget_ms
    t.measure.max_repeat = max_repeat
    if board:
        t.board_id = board
    for key, value in (labels or {}).items():
        t.labels[key] = value
    return t


def _as_trial(value, index):
    if isinstance(value, pb.Trial):
        return value
    if isinstance(value, dict):
        try:
            return json_format.ParseDict(value, pb.Trial())
        except json_format.ParseError as err:
            raise ValueError("trials[%d]: %s" % (index, err)) from None
    raise TypeError("trials[%d]: a benchfarm_pb2.Trial or a dict, not %s"
                    % (index, type(value).__name__))


def _trial_list(trials):
    if isinstance(trials, (pb.Trial, dict)):
        trials = [trials]
    return [_as_trial(t, i) for i, t in enumerate(trials)]


def _job_state(state):
    if state is None:
        return pb.JOB_STATE_UNSPECIFIED
    if isinstance(state, str):
        name = state.upper()
        if name == "CANCELLED":
            name = "CANCELLED_STATE"
        try:
            return pb.JobState.Value(name)
        except ValueError:
            raise ValueError("state %r: one of %s" % (state, ", ".join(pb.JobState.keys()))) from None
    return int(state)


def _seconds(timestamp):
    return timestamp.seconds + timestamp.nanos * 1e-9


def load_op(path):
    """The Operator that add_op sends, read from a directory holding op.json and its files, or
    from an op.json path: spec = op.json (one op of crt/ops/knobs.json plus "sources"), files =
    each source it lists plus every *.h beside it, name = spec.op."""
    path = os.fspath(path)
    if os.path.isdir(path):
        directory, manifest = path, os.path.join(path, "op.json")
    else:
        directory, manifest = os.path.dirname(path) or ".", path
    try:
        with open(manifest, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as err:
        raise ValueError("%s: not JSON: %s" % (manifest, err)) from None
    spec = knobs_pb2.OpTemplate()
    try:
        json_format.ParseDict(data, spec, ignore_unknown_fields=True)
    except json_format.ParseError as err:
        raise ValueError("%s: %s" % (manifest, err)) from None
    if not spec.op:
        raise ValueError("%s: \"op\" (the operator's name) is required" % manifest)
    if not spec.sources:
        raise ValueError("%s: \"sources\" names no C file" % manifest)
    files = {}
    for name in spec.sources:
        source = os.path.join(directory, name)
        if not os.path.isfile(source):
            raise ValueError("%s: sources: no file %s" % (manifest, source))
        with open(source, encoding="utf-8") as f:
            files[name] = f.read()
    for header in sorted(glob.glob(os.path.join(glob.escape(directory), "*.h"))):
        name = os.path.basename(header)
        if name not in files:
            with open(header, encoding="utf-8") as f:
                files[name] = f.read()
    return pb.Operator(name=spec.op, spec=spec, files=files)


def stats_of(job_or_result):
    """The CostStats of a Job's result (or of a Result): the tracker's summary of its costs.
    count == 0 when there are no costs (a failed trial, or a result stored before stats
    existed)."""
    result = job_or_result.result if isinstance(job_or_result, pb.Job) else job_or_result
    return result.stats


def _seconds_text(seconds):
    a = abs(seconds)
    for scale, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if a >= scale or (unit == "us" and a == 0):
            return "%.4g %s" % (seconds / scale, unit)
    return "%.4g ns" % (seconds * 1e9)


def cost_text(value):
    """"1.234 ms +-0.4 %" (the median per call and its interval's relative half-width), with
    " UNSTABLE" past the tracker's threshold and " = 12,345 cycles" when the board's clock is
    known (" = 12,345 instructions" for QEMU -icount, whose clock counts instructions): what
    farmctl prints. value: a Job, Result or CostStats. "-" without costs."""
    result = None
    if isinstance(value, pb.Job):
        result = value.result
    elif isinstance(value, pb.Result):
        result = value
    stats = result.stats if result is not None else value
    if stats.count == 0:
        return "-"
    pct = stats.rel_half_width * 100
    pm = "+-?" if stats.count < 2 else ("+-%.0f %%" % pct if pct >= 10 else "+-%.1f %%" % pct)
    text = "%s %s%s" % (_seconds_text(stats.median_s), pm, " UNSTABLE" if stats.unstable else "")
    if result is not None and result.cpu_hz > 0:
        unit = "instructions" if result.emulation == "qemu-icount" else "cycles"
        text += " = {:,} {}".format(int(round(stats.median_s * result.cpu_hz)), unit)
    return text


def kendall_tau(a, b):
    """Kendall's tau-b between two lists of numbers (1: the same order, -1: reversed; 0 for fewer
    than two), as farmctl's recheck computes it (stats::KendallTau)."""
    if len(a) != len(b) or len(a) < 2:
        return 0.0
    concordant = discordant = ties_a = ties_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            da, db = a[i] - a[j], b[i] - b[j]
            if da == 0 and db == 0:
                continue
            if da == 0:
                ties_a += 1
            elif db == 0:
                ties_b += 1
            elif (da > 0) == (db > 0):
                concordant += 1
            else:
                discordant += 1
    n0 = concordant + discordant
    denom = math.sqrt((n0 + ties_a) * (n0 + ties_b))
    return (concordant - discordant) / denom if denom > 0 else 0.0


def measure_result(job):
    """A finished Job as an AutoTVM-shaped MeasureResult."""
    r = job.result
    all_cost = r.stages.build_s + r.stages.flash_s + r.stages.handshake_s + r.stages.measure_s
    timestamp = _seconds(r.finished_at) if r.HasField("finished_at") else time.time()
    if job.state != pb.DONE or not job.HasField("result"):
        return MeasureResult((FAILED_COST,), _UNKNOWN_ERROR_NO, all_cost, timestamp,
                             "%s: job %s ended without a result"
                             % (pb.JobState.Name(job.state), job.job_id))
    if r.error_code == pb.NO_ERROR and r.costs_s:
        return MeasureResult(tuple(r.costs_s), 0, all_cost, timestamp, "")
    error_no = r.autotvm_error_no or _UNKNOWN_ERROR_NO
    message = r.message if r.error_code != pb.NO_ERROR else "no costs reported"
    return MeasureResult((FAILED_COST,), error_no, all_cost, timestamp,
                         "%s: %s" % (pb.ErrorCode.Name(r.error_code), message))


def _target(address):
    """The gRPC target for ADDRESS: itself for one HOST:PORT; for several, comma-separated
    (active/standby trackers), one ipv4:/ipv6: target over every address (names resolved now),
    which gRPC's pick_first policy tries in order, so the channel follows the tracker that serves
    (a standby does not listen). As client/channel.h's TrackerTarget."""
    if "," not in address:
        return address
    v4, v6 = [], []
    for part in (p.strip() for p in address.split(",")):
        if not part:
            continue
        host, sep, port = part.rpartition(":")
        if not sep or not host or not port:
            raise ValueError(f"tracker address {address!r}: {part!r} is not HOST:PORT")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        if family == socket.AF_INET:
            v4.append(f"{sockaddr[0]}:{port}")
        else:
            v6.append(f"[{sockaddr[0]}]:{port}")
    if v4 and v6:
        raise ValueError(f"tracker address {address!r}: mixes IPv4 and IPv6 trackers")
    return "ipv4:" + ",".join(v4) if v4 else "ipv6:" + ",".join(v6)


def _env(name):
    return os.environ.get(name) or None


def _pem(value, what):
    """PEM bytes from a path (str or os.PathLike; ~ expanded) or from the PEM itself (bytes)."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    path = os.path.expanduser(os.fspath(value))
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as err:
        raise ValueError("cannot read %s %s: %s" % (what, path, err.strerror or err)) from None


def _diagnose_transport(address, insecure, ca, timeout=3.0):
    """Why a tracker never reached turned the client away, when the transport is at fault: one
    TCP connection and a TLS handshake that verifies nothing, then one that verifies against the
    CA (client/diagnose.h does the same for farmctl). One sentence, or "" (nothing listens there,
    or nothing wrong found)."""
    first = address.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    host = host.strip("[]")
    if not host or not port.isdigit():
        return ""

    def handshake(context):
        with socket.create_connection((host, int(port)), timeout=timeout) as sock:
            with context.wrap_socket(sock, server_hostname=host):
                return True

    where = "the tracker at %s:%s" % (host, port)
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError:
        return ""
    look = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    look.check_hostname = False
    look.verify_mode = ssl.CERT_NONE
    try:
        tls = handshake(look)
    except (ssl.SSLError, OSError):
        tls = False
    if tls and insecure:
        return (where + " speaks TLS: pass ca= (the tracker's ca.pem; BENCHFARM_CA) and a token "
                "or certificate, or drop insecure (BENCHFARM_INSECURE)")
    if not tls and not insecure:
        return (where + " does not speak TLS: if it was started with --insecure, pass "
                "insecure=True (BENCHFARM_INSECURE=1)")
    if not tls or not ca:
        return ""
    try:
        verify = ssl.create_default_context(
            cadata=_pem(ca, "the CA certificate").decode("ascii", "replace"))
        handshake(verify)
    except ssl.SSLCertVerificationError as err:
        shown = "the given CA" if isinstance(ca, (bytes, bytearray)) else "the CA in %s" % ca
        return ("the tracker's certificate does not verify against %s: %s — is it this farm's "
                "ca.pem? (the tracker logs where its ca.pem is)" % (shown, err.verify_message))
    except (ssl.SSLError, OSError, ValueError):
        return ""
    return ""


def _read_token(path):
    path = os.path.expanduser(os.fspath(path))
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as err:
        raise ValueError("cannot read the token file %s: %s" % (path, err.strerror or err)) from None
    if not token:
        raise ValueError("the token file %s is empty" % path)
    return token


def _ignore_state(_state):
    """A channel connectivity callback that only keeps the channel polled (Client.__init__)."""


def _close_channel(channel):
    """Ends a Client's channel: its connectivity subscription (a polling thread), then the
    channel. Client.close and, for a client still open then, interpreter exit call it (once: a
    weakref.finalize), so a script that never closes its client still exits: left to grpc's
    Channel.__del__ at interpreter shutdown, the polling thread hung the exit (Debian's grpcio
    1.51: "ValueError: Cannot monitor channel state: Channel deallocated!", Ctrl-C ignored)."""
    try:
        channel.unsubscribe(_ignore_state)
        # grpcio's polling thread notices within 0.2 s that nobody subscribes and ends; a channel
        # closed under it raises "Cannot monitor channel state: Channel closed!" in that thread.
        state = getattr(channel, "_connectivity_state", None)  # grpcio's own; absent: no wait
        deadline = time.monotonic() + 1.0
        while getattr(state, "polling", False) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        channel.close()


class Client:
    """A connection to a benchfarm tracker.

    address: HOST:PORT (None: $BENCHFARM_TRACKER, else localhost:7070). timeout: seconds for each
    unary RPC (watch and measure_batch take their own, default none).

    The tracker serves TLS and wants to know who calls (README.md, "Python client"); the
    credentials default from the same environment variables as farmctl:
      ca: the farm's CA certificate, to verify the tracker ($BENCHFARM_CA; the tracker logs
          where its ca.pem is). A path, or the PEM itself as bytes.
      token / token_file: a bearer token, or a file holding one ($BENCHFARM_TOKEN,
          $BENCHFARM_TOKEN_FILE; `deploy/pki.sh token STATE_DIR NAME` issues one).
      cert, key: a client certificate of the farm's CA and its key instead ($BENCHFARM_CERT,
          $BENCHFARM_KEY; `deploy/pki.sh user STATE_DIR NAME`). Paths, or PEM bytes.
      insecure: plain text and no credentials, for a tracker started with --insecure (None:
          $BENCHFARM_INSECURE set and not "0").
    client_id: who submits. With credentials the tracker derives it from them, so None means ""
    (the tracker fills in the token's or certificate's name; another name is PERMISSION_DENIED
    unless the caller is an admin). Insecure, None means $USER, else "benchfarm-python".

    Use it as a context manager (`with benchfarm.Client() as farm:`) or call close(); a client
    left open is closed when it is garbage-collected or, at the latest, at interpreter exit.
    Calls on a closed client raise ValueError.
    """

    def __init__(self, address=None, client_id=None, timeout=DEFAULT_TIMEOUT_S, ca=None,
                 token=None, token_file=None, cert=None, key=None, insecure=None):
        self.address = address or _env("BENCHFARM_TRACKER") or DEFAULT_ADDRESS
        if insecure is None:
            insecure = (_env("BENCHFARM_INSECURE") or "0") != "0"
        self.insecure = bool(insecure)
        self.timeout = timeout
        self._reached = False  # a call has reached the tracker (see _call)
        self._ca = ca if ca is not None else _env("BENCHFARM_CA")  # for _diagnose_transport
        options = [
            ("grpc.max_receive_message_length", _MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", _MAX_MESSAGE_BYTES),
            # A restarted tracker is found again within seconds (gRPC's own backoff grows to
            # two minutes).
            ("grpc.initial_reconnect_backoff_ms", 200),
            ("grpc.max_reconnect_backoff_ms", 5000),
        ]
        target = _target(self.address)
        if target != self.address:
            # Several trackers (active/standby): the certificate is checked against the first
            # one's name, whichever answers.
            options.append(("grpc.default_authority", self.address.split(",")[0].strip()))
        if self.insecure:
            # Plain text: nothing to prove who calls (a tracker started with --insecure).
            if client_id is None:
                try:
                    client_id = getpass.getuser()
                except Exception:  # no $USER and no passwd entry
                    client_id = ""
            self.client_id = client_id or "benchfarm-python"
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self.client_id = client_id or ""
            self._channel = grpc.secure_channel(
                target, self._credentials(ca, token, token_file, cert, key), options=options)
        self._stub = pb_grpc.TrackerStub(self._channel)
        # Watching the channel's state keeps gRPC polling it between calls, so a reconnect to a
        # restarted tracker (a TLS handshake, several round trips) completes in the background;
        # without it each round trip waited for the next call (17 s to get back here).
        self._channel.subscribe(_ignore_state)
        # Holds the channel, never self: the client can still be collected before exit.
        self._closer = weakref.finalize(self, _close_channel, self._channel)

    @staticmethod
    def _credentials(ca, token, token_file, cert, key):
        """TLS verified with the CA, plus a client certificate and/or a bearer token. The
        environment fills in what the arguments leave out, as farmctl does: the CA alone; the
        certificate and key as a pair; the token or token file as a pair."""
        if ca is None:
            ca = _env("BENCHFARM_CA")
        if cert is None and key is None:
            cert, key = _env("BENCHFARM_CERT"), _env("BENCHFARM_KEY")
        if token is None and token_file is None:
            token, token_file = _env("BENCHFARM_TOKEN"), _env("BENCHFARM_TOKEN_FILE")
        if not ca:
            raise ValueError(
                "no CA to verify the tracker: pass ca= or set BENCHFARM_CA to the farm's ca.pem "
                "(the tracker logs where its ca.pem is), or insecure=True for a tracker started "
                "with --insecure")
        if bool(cert) != bool(key):
            raise ValueError("a client certificate needs both cert= and key= "
                             "(or BENCHFARM_CERT and BENCHFARM_KEY)")
        creds = grpc.ssl_channel_credentials(
            root_certificates=_pem(ca, "the CA certificate"),
            private_key=_pem(key, "the key") if key else None,
            certificate_chain=_pem(cert, "the certificate") if cert else None)
        if not token and token_file:
            token = _read_token(token_file)
        if token:
            creds = grpc.composite_channel_credentials(
                creds, grpc.access_token_call_credentials(token.strip()))
        return creds

    def close(self):
        """Closes the channel; RPCs in flight end with CANCELLED. Calling it again does nothing."""
        self._closer()

    @property
    def closed(self):
        return not self._closer.alive

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return "benchfarm.Client(%r, client_id=%r%s)" % (
            self.address, self.client_id, ", insecure=True" if self.insecure else "")

    # ---- plumbing ----

    def _error(self, rpc, err):
        code = err.code() if hasattr(err, "code") else grpc.StatusCode.UNKNOWN
        message = (err.details() if hasattr(err, "details") else "") or str(err)
        if code == grpc.StatusCode.UNAVAILABLE:
            why = "" if self._reached else _diagnose_transport(self.address, self.insecure,
                                                                 self._ca)
            message = "cannot reach tracker at %s: %s" % (self.address, why or message)
            if self.insecure and not why:
                message += (" (insecure: if the tracker serves TLS, as it does unless started "
                            "with --insecure, pass ca= and a token instead)")
        return TrackerError(code, message, rpc, self.address)

    def _call(self, rpc, request, timeout=None):
        """One unary call. Once a call of this client has reached the tracker, an UNAVAILABLE
        answer (the tracker restarting, or a standby taking over) is tried again with backoff
        until the timeout: every call may be (submissions carry their request id). A tracker
        never reached fails at once, as farmctl does."""
        deadline = time.monotonic() + (self.timeout if timeout is None else timeout)
        backoff = 0.1
        while True:
            try:
                response = getattr(self._stub, rpc)(
                    request, timeout=max(0.001, deadline - time.monotonic()))
                self._reached = True
                return response
            except grpc.RpcError as err:
                code = err.code() if hasattr(err, "code") else None
                if code != grpc.StatusCode.UNAVAILABLE:
                    self._reached = True
                elif self._reached and time.monotonic() + backoff < deadline:
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 2.0)
                    continue
                raise self._error(rpc, err) from None

    # ---- jobs ----

    def submit(self, trials, request_id=None):
        """Queues trials (Trial messages or dicts in the Trial JSON shape, or one of them) in one
        SubmitTrials; returns their job ids in order. A retry with the same request_id returns
        the same jobs (default: a new id)."""
        request = pb.SubmitTrialsRequest(
            client_id=self.client_id, request_id=request_id or "py-" + uuid.uuid4().hex,
            trials=_trial_list(trials))
        return list(self._call("SubmitTrials", request).job_ids)

    def get(self, job_id):
        """The Job as the tracker has it now (a finished one with job.result.stats)."""
        return self._call("GetJob", pb.GetJobRequest(job_id=job_id))

    def watch(self, job_ids, timeout=None):
        """Yields a Job for each event of the named jobs (their current state first) until every
        one is DONE or CANCELLED. timeout: seconds for the whole watch (None: no limit); when it
        passes, TrackerError DEADLINE_EXCEEDED. An id the tracker does not know never finishes."""
        remaining = dict.fromkeys([job_ids] if isinstance(job_ids, str) else job_ids)
        deadline = None if timeout is None else time.monotonic() + timeout
        while remaining:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            call = self._stub.WatchJobs(pb.WatchJobsRequest(job_ids=list(remaining)), timeout=left)
            try:
                for event in call:
                    job = event.job
                    yield job
                    if job.state in _FINISHED and job.job_id in remaining:
                        del remaining[job.job_id]
                        if not remaining:
                            break
            except grpc.RpcError as err:
                raise self._error("WatchJobs", err) from None
            finally:
                call.cancel()
            # The stream ended early (it should not): catch up on what finished meanwhile and
            # watch the rest again.
            for job_id in list(remaining):
                job = self.get(job_id)
                if job.state in _FINISHED:
                    del remaining[job_id]
                    yield job
            if remaining:
                time.sleep(0.1)

    def cancel(self, job_id):
        """Cancels a queued or running job; returns it (state CANCELLED_STATE). TrackerError
        FAILED_PRECONDITION when it has already finished, NOT_FOUND when there is no such job."""
        return self._call("CancelJob", pb.CancelJobRequest(job_id=job_id)).job

    def logs(self, job_id, attempt=None):
        """The logs of a job's attempts (README "Per-job logs"): a list of AttemptLog (attempt,
        board_id, text: the build's command and compiler output, the flash, the link's events and
        fault lines, the result), by attempt; attempt N: only that one's. Only the job's owner and
        admins may read them: TrackerError PERMISSION_DENIED for another user's job, NOT_FOUND for
        a job that does not exist (or an attempt without a log)."""
        return list(self._call("GetJobLog", pb.GetJobLogRequest(
            job_id=job_id, attempt=attempt or 0)).logs)

    def results(self, op=None, kind=None, state=None, limit=1000, client_id=None, page_size=1000):
        """Jobs from ListResults, oldest first, following its pages: of template op `op`, board
        kind `kind`, JobState `state` ("DONE", pb.DONE, ...) and client (None: every one of each).
        A user sees only its own jobs: client_id None lists them, another client's id is
        PERMISSION_DENIED (an admin sees every client's, or the one named).
        limit: the most jobs returned (None: all of them)."""
        state_value = _job_state(state)
        if page_size < 1 or page_size > 10000:
            raise ValueError("page_size: must be in 1..10000")
        jobs = []
        token = ""
        while limit is None or len(jobs) < limit:
            want = page_size if limit is None else min(page_size, limit - len(jobs))
            response = self._call("ListResults", pb.ListResultsRequest(
                client_id=client_id or "", board_kind=kind or "", op=op or "",
                state=state_value, limit=want, page_token=token))
            jobs.extend(response.jobs)
            token = response.next_page_token
            if not token or not response.jobs:
                break
        return jobs

    def measure_jobs(self, trials, timeout=None):
        """Submits trials in one SubmitTrials, watches until every one is done, and returns the
        finished Jobs, one per trial, in order: each result with its costs and its quality
        (job.result.stats, .measured, .cpu_hz). timeout: seconds for the whole batch (None: no
        limit)."""
        trials = _trial_list(trials)
        if not trials:
            return []
        job_ids = self.submit(trials)
        final = {}
        for job in self.watch(job_ids, timeout=timeout):
            if job.state in _FINISHED:
                final[job.job_id] = job
        return [final[job_id] for job_id in job_ids]

    def measure_batch(self, trials, timeout=None):
        """Measures trials the way an AutoTVM runner does: submits them all in one SubmitTrials,
        watches until every one is done, and returns one MeasureResult per trial, in order
        (measure_jobs gives the Jobs, with their stats). timeout: seconds for the whole batch
        (None: no limit)."""
        return [measure_result(job) for job in self.measure_jobs(trials, timeout=timeout)]

    def confirm(self, screened, kind, top=5, target_rel_ci=0.01, budget_ms=0, max_repeat=0,
                timeout=None):
        """Two-stage tuning (farmctl tune --screen A --confirm B --top K): the best `top` of
        `screened` — finished Jobs of a search on fast boards (e.g. the cycle model's) — measured
        again on the target boards of `kind`, adaptive to +-target_rel_ci. Returns a dict:
        "screen" and "confirm", the top configs' Jobs on each kind (in the screen's order), their
        medians "screen_s" and "confirm_s" (inf for a failure), "confirm_rank" (each config's
        rank on the target, 1 = best; None if it failed there), "top1_held" (the screen's best is
        the target's best) and "kendall_tau" between the two rankings' medians."""
        if top < 1:
            raise ValueError("top: at least 1")
        measured = [j for j in screened if j.state == pb.DONE and j.result.stats.count > 0]
        measured.sort(key=lambda j: j.result.stats.median_s)
        first = measured[:top]
        if not first:
            raise ValueError("screened: no finished job with costs to confirm")
        trials = []
        for job in first:
            t = pb.Trial()
            t.CopyFrom(job.trial)
            t.board_kind = kind
            t.measure.target_rel_ci = target_rel_ci
            t.measure.budget_ms = budget_ms
            t.measure.max_repeat = max_repeat
            trials.append(t)
        second = self.measure_jobs(trials, timeout=timeout)
        median = lambda j: (j.result.stats.median_s
                            if j.state == pb.DONE and j.result.stats.count > 0 else math.inf)
        screen_s = [median(j) for j in first]
        confirm_s = [median(j) for j in second]
        order = sorted(range(len(second)), key=lambda i: confirm_s[i])
        rank = [None] * len(second)
        for r, i in enumerate(order):
            if math.isfinite(confirm_s[i]):
                rank[i] = r + 1
        both = [i for i in range(len(first)) if math.isfinite(confirm_s[i])]
        return {
            "screen": first, "confirm": second, "screen_s": screen_s, "confirm_s": confirm_s,
            "confirm_rank": rank, "top1_held": rank[0] == 1,
            "kendall_tau": kendall_tau([screen_s[i] for i in both], [confirm_s[i] for i in both]),
        }

    # ---- the farm ----

    def whoami(self):
        """A WhoAmIResponse: who the tracker takes this client for (client_id, role "user",
        "admin" or "agent", how: "token", "certificate" or "insecure") and when its credential
        expires (expires_at; unset: never)."""
        return self._call("WhoAmI", pb.WhoAmIRequest(client_id=self.client_id))

    def boards(self, kind=None):
        """Every registered Board (of one kind), with its state, slots and flashes, and its core
        (cpu: "cortex-m3" as -mcpu names it, from its board package's data; "" for a host-process
        board) — what farmctl's AutoTVM records name in their target."""
        return list(self._call("ListBoards", pb.ListBoardsRequest(board_kind=kind or "")).boards)

    def queue(self):
        """One KindSummary per board kind: boards total/free/quarantined, jobs queued by
        priority and running, and why queued jobs wait."""
        return list(self._call("QueueSummary", pb.QueueSummaryRequest()).kinds)

    # ---- the operator catalog ----

    def ops(self, name=None, all_versions=False):
        """Operators of the catalog (built-in and added), the latest version of each unless
        all_versions; files omitted."""
        return list(self._call("ListOperators", pb.ListOperatorsRequest(
            name=name or "", all_versions=all_versions)).ops)

    def get_op(self, name, version=None):
        """One Operator with its files (version None: the latest)."""
        return self._call("GetOperator", pb.GetOperatorRequest(name=name, version=version or ""))

    def add_op(self, path):
        """Adds a user operator from a directory holding op.json and its C files (or an op.json
        path) to the catalog; returns the Operator as stored, with its version. Adding the same
        content again returns the same version."""
        request = pb.AddOperatorRequest(op=load_op(path))
        return self._call("AddOperator", request).op

    def retire_op(self, name, version=None):
        """Hides a version (None: the latest) of an operator from new trials; its owner or an
        admin. Jobs and results that ran it keep it; adding its source again brings it back.
        Returns the RetireOperatorResponse: the retired op, the name's latest version now (unset
        when none is left) and whether it was retired already."""
        return self._call("RetireOperator",
                          pb.RetireOperatorRequest(name=name, version=version or ""))
