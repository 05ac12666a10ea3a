#!/usr/bin/env python3
"""benchfarm's chaos run (issue 16): a tracker and an agent with several host-process boards
measure trials while faults are injected on a schedule, then every trial is accounted for.

    ./farm chaos [--trials N] [--minutes M]          # the long run (README "Chaos")
    bazel test //tests:chaos_test                    # the short one: --short
    bazel test //tests:chaos_standby_test            # the short one with --standby

The farm. The tracker (SQLite database on a small tmpfs of its own, lease shortened) and the
agent (--boards host-process boards) run under a supervisor with systemd's Restart=always
semantics: a daemon that exits is started again after --restart-sec, with the same flags, port,
database and spool; a daemon that is alive but unhealthy (stopped, hung) is never touched.

The trials. Each trial runs the user operator tests/chaos_op (chaos_log), whose kernel and
reference write a record to the board's stderr on every call; the agent appends a host-process
board's stderr to <scratch_dir>/<board>.board.log. Trial k has the argument shapes
[k // 100 + 1], [k % 100 + 1], [1], so every record names its trial. Every measurement starts
with one output check, which calls the reference once: the "check" records of a trial are the
number of times a board measured it.

The faults, one at a time, each followed by a wait until the farm has recovered:
  agent-kill    kill -9 the agent; the supervisor starts it again
  tracker-kill  kill -9 the tracker; the supervisor starts it again (same port and database).
                With --standby, two trackers share the database (the second waits for its
                leader lock) and the agent and client are given both addresses: the serving one
                is killed, the fault clears when the standby serves, and the killed one,
                restarted, becomes the standby
  agent-stop    SIGSTOP the agent for lease + --stop-extra seconds, then SIGCONT. A pause is the
                agent's failure, not its boards': no board may be QUARANTINED (or health
                checked) for it, and every board must be IDLE or BUSY again within
                --serving-within seconds of the SIGCONT
  agent-revoke  pki.sh revoke-cert the agent's certificate while it works: the tracker must end
                its stream within --revoke-within seconds (the agent logs the UNAUTHENTICATED
                end) and re-queue what it held; then the agent is re-enrolled (a new
                certificate, the same grant) and restarted, as an operator would
  board-kill    kill -9 the process of a busy board (the agent restarts boards itself)
  disk-full     fill the database's tmpfs until ENOSPC, hold --disk-full-seconds, free it
  link-drop     drop bytes on every board's link (--link-drop-rate per byte, both directions):
                each board's BoardConfig.link_fault_file (in <work>/link-faults) is written,
                held --link-drop-seconds, removed; the agent reopens a board's link with or
                without the fault injector at the board's next trial round
Time to recover = from the injection until, after the fault cleared, (1) a result was stored
(a job seen unfinished after the fault cleared is DONE), (2) every board is IDLE or BUSY at the
tracker, and (3) every board measured a trial it started after the fault cleared (post hoc,
from the results; n/a when no work was left for it).

The accounting, at the end, from the tracker's API (ListResults, GetJob) and the call logs:
  submitted          trials the tracker acknowledged (SubmitTrials returned their job ids;
                     retried with the same request id until it did)
  finished           DONE with a result (by error code)
  lost               acknowledged, but the tracker does not have the job, or it is CANCELLED
                     (nobody cancels) or DONE without a result                    must be 0
  results per job>1  a job whose stored result changed after it was first seen DONE, or that
                     went back to the queue after it finished                    must be 0
  unmeasured result  DONE with costs, but no board ever ran its output check     must be 0
  measured > once    trials whose output check ran more than once (reported; target <= 1 %)
  stuck              not DONE when nothing finished for --stall-seconds after the faults
                     ended                                                       must be 0
Exit status 1 on any lost, doubled, unmeasured or stuck trial, a fault that never cleared (a
daemon not restarted, no standby taking over), or a farm that never started; 0 otherwise.
"""

import argparse
import collections
import errno
import os
import re
import signal
import subprocess
import sys
import threading
import time

import grpc

import benchfarm
from benchfarm import benchfarm_pb2 as pb

KIND = "host-process"
OP = "chaos_log"
ALL_FAULTS = ["agent-kill", "tracker-kill", "agent-stop", "agent-revoke", "board-kill", "disk-full",
              "link-drop"]
AGENT_ID = "chaos-agent"
AGENT_GRANT = "hp-*=" + KIND
# A failed RPC worth trying again (the tracker is restarting, its disk is full, ...).
RETRYABLE = {
    grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED, grpc.StatusCode.INTERNAL, grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.ABORTED, grpc.StatusCode.CANCELLED,
}
CHECK_RECORD = re.compile(rb"^chaos-log: (check|call) (\d+) (\d+)$")

_t_start = time.time()


def log(message):
    print("chaos %7.1fs: %s" % (time.time() - _t_start, message), file=sys.stderr, flush=True)


def rel(t):
    """Seconds since the run started, for the tables."""
    return t - _t_start


def trial_shapes(k):
    return [[k // 100 + 1], [k % 100 + 1], [1]]


def trial_index(i, j):
    return (i - 1) * 100 + (j - 1)


# ---- a supervisor like systemd's Restart=always -------------------------------------------------

class Supervisor:
    """Runs argv; when it exits (for whatever reason) starts it again after restart_sec, with
    the same command line. Never restarts a process that is still alive. stdout and stderr are
    appended to NAME.out and NAME.err in log_dir."""

    def __init__(self, name, argv, log_dir, restart_sec):
        self.name = name
        self.argv = argv
        self.out_path = os.path.join(log_dir, name + ".out")
        self.err_path = os.path.join(log_dir, name + ".err")
        self.restart_sec = restart_sec
        self.starts = []     # (time, stdout offset) of every start
        self.err_offsets = []  # stderr offset of every start
        self.exits = []      # (time, returncode) of every exit
        self.asked = []      # when the harness asked it to exit (SIGTERM) for a restart
        self._proc = None
        self._stopping = False
        self._cv = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="supervise-" + name, daemon=True)

    def start(self):
        self._thread.start()

    def _run(self):
        while True:
            with self._cv:
                if self._stopping:
                    return
                offset = os.path.getsize(self.out_path) if os.path.exists(self.out_path) else 0
                self.err_offsets.append(
                    os.path.getsize(self.err_path) if os.path.exists(self.err_path) else 0)
                with open(self.out_path, "ab") as out, open(self.err_path, "ab") as err:
                    self._proc = subprocess.Popen(self.argv, stdout=out, stderr=err,
                                                  stdin=subprocess.DEVNULL,
                                                  start_new_session=True)
                self.starts.append((time.time(), offset))
                self._cv.notify_all()
                proc = self._proc
            rc = proc.wait()
            with self._cv:
                self.exits.append((time.time(), rc))
                self._proc = None
                self._cv.notify_all()
                if self._stopping:
                    return
                self._cv.wait(self.restart_sec)  # RestartSec (stop() cuts it short)

    def running_start(self):
        """The index in starts of the process running now, or None."""
        with self._cv:
            return len(self.starts) - 1 if self._proc is not None else None

    @property
    def pid(self):
        with self._cv:
            return self._proc.pid if self._proc else None

    def wait_start_after(self, t, timeout):
        """The time of the first start after t, or None after timeout seconds."""
        deadline = time.time() + timeout
        with self._cv:
            while True:
                later = [s for s, _ in self.starts if s > t]
                if later:
                    return later[0]
                left = deadline - time.time()
                if left <= 0:
                    return None
                self._cv.wait(min(left, 0.5))

    @staticmethod
    def scan(path, offset, pattern, timeout):
        """Waits for a line matching pattern in the file at path from byte offset on (a file not
        there yet reads as empty); returns it, or None after timeout seconds (0: looks once)."""
        deadline = time.time() + timeout
        while True:
            if os.path.exists(path):
                with open(path, "rb") as f:
                    f.seek(offset)
                    for line in f.read().decode(errors="replace").splitlines():
                        if re.search(pattern, line):
                            return line
            if time.time() >= deadline:
                return None
            time.sleep(0.1)

    def out_size(self):
        return os.path.getsize(self.out_path) if os.path.exists(self.out_path) else 0

    def wait_err(self, pattern, timeout):
        """Waits for a line matching pattern in the process's stderr (its log) since its last
        start; returns it, or None after timeout seconds."""
        deadline = time.time() + timeout
        with self._cv:
            while not self.err_offsets and time.time() < deadline:
                self._cv.wait(0.5)
            if not self.err_offsets:
                return None
            offset = self.err_offsets[-1]
        return self.scan(self.err_path, offset, pattern, max(0, deadline - time.time()))

    def wait_line(self, pattern, since_start, timeout):
        """Waits for a stdout line matching pattern written by the process started at
        starts[since_start]; returns it, or None after timeout seconds (0: looks once)."""
        deadline = time.time() + timeout
        with self._cv:
            while len(self.starts) <= since_start and time.time() < deadline:
                self._cv.wait(0.5)
            if len(self.starts) <= since_start:
                return None
            offset = self.starts[since_start][1]
        return self.scan(self.out_path, offset, pattern, max(0, deadline - time.time()))

    def stop(self, timeout=30):
        """SIGTERM (after SIGCONT, in case it is stopped), SIGKILL after timeout; no restart.
        Returns the exit code of the last run (None if it was not running)."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
            proc = self._proc
        if proc is None:
            self._thread.join(timeout)
            return None
        for sig in (signal.SIGCONT, signal.SIGTERM):
            try:
                proc.send_signal(sig)
            except ProcessLookupError:
                pass
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            log("%s did not exit %ds after SIGTERM: SIGKILL" % (self.name, timeout))
            proc.kill()
            proc.wait()
        self._thread.join(5)
        return proc.returncode


# ---- what the harness knows about each trial ----------------------------------------------------

class Ledger:
    """Acknowledged jobs and what was seen of them, shared by the submitter, the monitor and the
    fault loop."""

    def __init__(self):
        self.lock = threading.Lock()
        self.index_of = {}          # job id -> trial index
        self.acked_at = {}          # job id -> time its submission was acknowledged
        self.pending = set()        # acknowledged, not yet seen DONE
        self.last_unfinished = {}   # job id -> last poll (start time) that listed it unfinished
        self.done_at = {}           # job id -> poll (start time) that first saw it DONE
        self.first_result = {}      # job id -> result key when first seen DONE
        self.reopened = set()       # seen DONE, later listed QUEUED/RUNNING again
        self.cancelled = set()
        self.submit_retries = 0
        self.submitted_all = False

    def acked(self, job_ids, indices, t):
        with self.lock:
            for job_id, k in zip(job_ids, indices):
                if job_id not in self.index_of:
                    self.index_of[job_id] = k
                    self.acked_at[job_id] = t
                    self.pending.add(job_id)

    def outstanding(self):
        with self.lock:
            return len(self.pending)


def result_key(job):
    r = job.result
    return (r.board_id, r.finished_at.seconds, r.finished_at.nanos, r.error_code,
            tuple(r.costs_s))


def ts(timestamp):
    return timestamp.seconds + timestamp.nanos * 1e-9


# ---- the farm -----------------------------------------------------------------------------------

class Farm:
    def __init__(self, args):
        self.args = args
        self.work = os.path.abspath(args.work)
        self.db_dir = os.path.join(self.work, "db")
        self.pki = os.path.join(self.work, "pki")
        self.scratch = os.path.join(self.work, "agent", "scratch")
        self.boards = ["hp-%d" % i for i in range(args.boards)]
        # BoardConfig.link_fault_file of each board (only with the link-drop fault).
        self.link_faults = os.path.join(self.work, "link-faults")
        self.tmpfs = False
        self.tmpfs_note = ""
        self.trackers = []  # with --standby: two, sharing the database; one serves
        self.agent = None
        self.client = None
        self.ports = []

    def pki_sh(self, *argv, stdout=None):
        subprocess.run(["bash", self.args.pki_sh] + list(argv), check=True, stdout=stdout)

    def mount_db_disk(self):
        os.makedirs(self.db_dir, exist_ok=True)
        if os.geteuid() != 0:
            self.tmpfs_note = "not root: cannot mount a tmpfs for the database"
            return
        size = "%dm" % self.args.db_disk_mb
        run = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "chaos-db", self.db_dir],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if run.returncode != 0:
            self.tmpfs_note = "mount -t tmpfs failed: " + run.stdout.decode(errors="replace").strip()
            return
        self.tmpfs = True
        log("database disk: a %s tmpfs at %s" % (size, self.db_dir))

    def unmount_db_disk(self):
        if self.tmpfs:
            subprocess.run(["umount", "-l", self.db_dir])
            self.tmpfs = False

    def start(self):
        a = self.args
        os.makedirs(self.work, exist_ok=True)
        self.mount_db_disk()
        for name in ["tracker", "tracker-standby"][:2 if a.standby else 1]:
            port = free_port()
            config = os.path.join(self.work, name + ".textproto")
            with open(config, "w") as f:
                f.write('listen_address: "127.0.0.1:%d"\n' % port)
                f.write('database_path: "%s/tracker.db"\n' % self.db_dir)
                f.write("lease_seconds: %d\nheartbeat_seconds: %d\n" % (a.lease, a.heartbeat))
                f.write('security { state_dir: "%s" }\n' % self.pki)
            tracker = Supervisor(name, [a.tracker_bin, "--config", config, "--metrics", "off"],
                                 self.work, a.restart_sec)
            self.ports.append(port)
            self.trackers.append(tracker)
            tracker.start()
            # The first serves; a standby waits for the database's leader lock, not listening.
            if not (tracker.wait_line(r"listening on", 0, 60) if len(self.trackers) == 1
                    else tracker.wait_err(r"standby: ", 60)):
                raise RuntimeError("the %s did not start (see %s)" % (name, tracker.err_path))
        address = ",".join("127.0.0.1:%d" % port for port in self.ports)
        token = os.path.join(self.pki, "chaos.token")
        with open(token, "w") as f:
            self.pki_sh("token", self.pki, "chaos", stdout=f)
        self.pki_sh("agent", self.pki, AGENT_ID, AGENT_GRANT, stdout=subprocess.DEVNULL)
        with open(os.path.join(self.work, "agent.textproto"), "w") as f:
            f.write('agent_id: "%s"\ntracker_address: "%s"\n' % (AGENT_ID, address))
            f.write('credentials { ca_cert: "%s/ca.pem" cert: "%s" key: "%s" }\n' % (
                self.pki, self.agent_cert(), self.agent_cert()[:-len(".pem")] + ".key"))
            for d in ("scratch", "cache", "spool"):
                f.write('%s_dir: "%s/agent/%s"\n' % (d, self.work, d))
            if "link-drop" in a.faults:
                os.makedirs(self.link_faults, exist_ok=True)
            for i, board in enumerate(self.boards):
                # One board reached through its pty like a USB-serial port, the others over pipes.
                link_fault = (' link_fault_file: "%s"' % self.link_fault_file(board)
                              if "link-drop" in a.faults else "")
                f.write('boards { id: "%s" kind: "%s" host_process { use_pty: %s } '
                        'build_template: "agent/templates/host-process" batch_size: %d%s }\n'
                        % (board, KIND, "true" if i == 0 else "false", a.batch_size, link_fault))
        self.agent = Supervisor("agent", [a.agent_bin, "--config",
                                          os.path.join(self.work, "agent.textproto")],
                                self.work, a.restart_sec)
        self.agent.start()
        if not self.agent.wait_line(r"serving %d boards" % len(self.boards), 0, 120):
            raise RuntimeError("the agent did not start (see %s)" % self.agent.err_path)
        self.client = benchfarm.Client(address, ca=os.path.join(self.pki, "ca.pem"),
                                       token_file=token, timeout=10)
        op = retry(lambda: self.client.add_op(a.op_dir), "AddOperator", 60)
        log("farm up: tracker %s%s (lease %d s, heartbeat %d s), agent with %d host-process "
            "boards, operator %s version %s" % (address, " (the second a standby)" if a.standby
                                                else "", a.lease, a.heartbeat, len(self.boards),
                                                op.name, op.version))

    def serving_tracker(self):
        """The tracker whose current process is listening (serving), or None."""
        for tracker in self.trackers:
            current = tracker.running_start()
            if current is not None and tracker.wait_line(r"listening on", current, 0):
                return tracker
        return None

    def agent_cert(self):
        return os.path.join(self.pki, "agents", AGENT_ID + ".pem")

    def link_fault_file(self, board):
        return os.path.join(self.link_faults, board + ".fault")

    def stop(self):
        codes = {}
        for daemon in [self.agent] + self.trackers:
            if daemon is not None:
                codes[daemon.name] = daemon.stop()
        if self.client is not None:
            self.client.close()
        return codes

    def board_processes(self):
        """{board id: [pid, ...]} of the board executables (/bf/image in their sandboxes) whose
        stderr is this run's board log."""
        found = collections.defaultdict(list)
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                cmdline = open("/proc/%s/cmdline" % entry, "rb").read().split(b"\0")
                target = os.readlink("/proc/%s/fd/2" % entry)
            except OSError:
                continue
            if not cmdline or cmdline[0] != b"/bf/image":
                continue
            for board in self.boards:
                if target == os.path.join(self.scratch, board + ".board.log"):
                    found[board].append(int(entry))
        return found


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def retry(call, what, timeout):
    """call() until it succeeds or fails with a non-retryable error; timeout in seconds."""
    deadline = time.time() + timeout
    while True:
        try:
            return call()
        except benchfarm.TrackerError as err:
            if err.code not in RETRYABLE or time.time() > deadline:
                raise
            time.sleep(0.5)


# ---- the submitter and the monitor --------------------------------------------------------------

def submitter(farm, ledger, stop, run_id):
    """Submits the trials in batches, paced over the fault phase, never more than --high-water
    unfinished at once; retries each batch with its request id until it is acknowledged."""
    a = farm.args
    n, batch = a.trials, a.submit_batch
    pace_s = max(1.0, a.minutes * 60 * 0.8)
    k = 0
    while k < n and not stop.is_set():
        due = n * min(1.0, (time.time() - farm.t_faults) / pace_s) if farm.t_faults else batch
        if k >= max(due, batch) or ledger.outstanding() + batch > a.high_water:
            time.sleep(0.2)
            continue
        indices = list(range(k, min(n, k + batch)))
        trials = [benchfarm.trial(OP, KIND, shapes=trial_shapes(i), number=1, repeat=1, check=True,
                                  seed=i + 1) for i in indices]
        request_id = "%s-%d" % (run_id, k // batch)
        while not stop.is_set():
            try:
                job_ids = farm.client.submit(trials, request_id=request_id)
                ledger.acked(job_ids, indices, time.time())
                break
            except benchfarm.TrackerError as err:
                if err.code not in RETRYABLE:
                    log("submission %s refused: %s" % (request_id, err))
                    farm.fatal = "submission refused: %s" % err
                    stop.set()
                    return
                ledger.submit_retries += 1
                time.sleep(0.5)
        k += len(indices)
    ledger.submitted_all = k >= n


class Monitor:
    """Polls the tracker every --poll seconds: the unfinished jobs (ListResults QUEUED and
    RUNNING), GetJob for each acknowledged job that left that list, and ListBoards."""

    Sample = collections.namedtuple("Sample", "t reachable boards_ok states")

    def __init__(self, farm, ledger, stop):
        self.farm = farm
        self.ledger = ledger
        self.stop = stop
        self.samples = []
        self.last_progress = time.time()
        self.thread = threading.Thread(target=self._run, name="monitor", daemon=True)

    def _run(self):
        while not self.stop.is_set():
            self.poll()
            self.stop.wait(self.farm.args.poll)

    def poll(self):
        t = time.time()
        c = self.farm.client
        with self.ledger.lock:
            pending = set(self.ledger.pending)
            done = set(self.ledger.done_at)
        step = "ListResults"
        try:
            unfinished = set()
            for state in ("RUNNING", "QUEUED"):
                unfinished.update(j.job_id for j in c.results(op=OP, state=state, limit=None))
            step = "ListBoards"
            boards = c.boards(kind=KIND)
            gone = pending - unfinished
            fetched = {}
            step = "GetJob"
            for job_id in gone:
                try:
                    fetched[job_id] = c.get(job_id)
                except benchfarm.TrackerError as err:
                    if err.code != grpc.StatusCode.NOT_FOUND:
                        raise
                    fetched[job_id] = None
        except benchfarm.TrackerError as err:
            self.samples.append(self.Sample(t, False, False, {}))
            self.slow(t, "%s failed: %s" % (step, err))
            return
        self.slow(t, "%d GetJob" % len(gone))
        states = {b.board_id: pb.BoardState.Name(b.state) for b in boards}
        boards_ok = (sorted(states) == sorted(self.farm.boards)
                     and all(s in ("IDLE", "BUSY") for s in states.values()))
        self.samples.append(self.Sample(t, True, boards_ok, states))
        with self.ledger.lock:
            for job_id in unfinished:
                if job_id in self.ledger.index_of:
                    self.ledger.last_unfinished[job_id] = t
                    if job_id in done:
                        self.ledger.reopened.add(job_id)
            for job_id, job in fetched.items():
                if job is None:
                    continue  # not (or no longer) known to the tracker: "lost" if so at the end
                if job.state == pb.DONE:
                    self.ledger.pending.discard(job_id)
                    self.ledger.done_at[job_id] = t
                    self.ledger.first_result[job_id] = result_key(job)
                    self.last_progress = t
                elif job.state == pb.CANCELLED_STATE:
                    self.ledger.pending.discard(job_id)
                    self.ledger.cancelled.add(job_id)

    def slow(self, t, what):
        """Says so when a poll took long (the tracker answers slowly or not at all)."""
        took = time.time() - t
        if took > 5:
            log("monitor: a poll took %.1f s (%s)" % (took, what))

    def results_since(self, t1):
        """The first poll time at which a job known unfinished at or after t1 (listed QUEUED or
        RUNNING, or acknowledged then) was seen DONE: a result stored after t1."""
        with self.ledger.lock:
            times = []
            for j, done in self.ledger.done_at.items():
                u = max(self.ledger.last_unfinished.get(j, 0), self.ledger.acked_at[j])
                if u >= t1 and done > u:
                    times.append(done)
        return min(times) if times else None

    def boards_ok_since(self, t1):
        for s in list(self.samples):
            if s.t >= t1 and s.boards_ok:
                return s.t
        return None


# ---- the faults ---------------------------------------------------------------------------------

class Fault:
    def __init__(self, name):
        self.name = name
        self.t0 = None        # injected
        self.t1 = None        # cleared (the process back, SIGCONT, the disk freed)
        self.skipped = ""     # why it was not injected
        self.detail = ""
        self.recovered = None  # time, or None
        self.recovery_note = ""
        self.limited_by = ""     # which condition came last: results, boards, board <id>
        self.failure = ""        # a rule of the fault itself that was broken (fails the run)


def kill_daemon(farm, daemon, fault):
    pid = daemon.pid
    if pid is None:
        fault.skipped = "%s not running" % daemon.name
        return
    fault.t0 = time.time()
    os.kill(pid, signal.SIGKILL)
    fault.t1 = daemon.wait_start_after(fault.t0, 60)
    fault.detail = "kill -9 %d; supervisor started it again after %.1f s" % (
        pid, (fault.t1 or fault.t0) - fault.t0) if fault.t1 else "kill -9 %d; not restarted" % pid


def kill_tracker(farm, fault):
    """kill -9 the serving tracker. Alone, it is back when the supervisor has started it again;
    with a standby, when the standby serves (the killed one, restarted, becomes the standby)."""
    serving = farm.serving_tracker()
    if serving is None:
        fault.skipped = "no tracker serving"
        return
    others = [t for t in farm.trackers if t is not serving]
    if not others:
        kill_daemon(farm, serving, fault)
        return
    standby = others[0]
    pid = serving.pid
    if pid is None or standby.pid is None:
        fault.skipped = "%s not running" % (serving.name if pid is None else standby.name)
        return
    since = standby.out_size()  # the standby's "listening on" must come after the kill
    fault.t0 = time.time()
    os.kill(pid, signal.SIGKILL)
    if Supervisor.scan(standby.out_path, since, r"listening on", 60):
        fault.t1 = time.time()
        fault.detail = "kill -9 %s (pid %d); %s serving %.1f s later" % (
            serving.name, pid, standby.name, fault.t1 - fault.t0)
    else:
        fault.detail = "kill -9 %s (pid %d); %s did not take over within 60 s" % (
            serving.name, pid, standby.name)


def stop_agent(farm, fault):
    pid = farm.agent.pid
    if pid is None:
        fault.skipped = "agent not running"
        return
    hold = farm.args.lease + farm.args.stop_extra
    fault.t0 = time.time()
    os.kill(pid, signal.SIGSTOP)
    time.sleep(hold)
    os.kill(pid, signal.SIGCONT)
    fault.t1 = time.time()
    restarted = [s for s, _ in farm.agent.starts if s > fault.t0]
    fault.detail = "SIGSTOP %d for %.0f s (lease %d s), SIGCONT%s" % (
        pid, hold, farm.args.lease, "; RESTARTED (must not be)" if restarted else "")


def revoke_agent(farm, fault):
    """Revokes the working agent's certificate; once the tracker has ended its stream, enrols
    it again (a new certificate with the same grant, at the same path) and restarts it."""
    pid = farm.agent.pid
    if pid is None:
        fault.skipped = "agent not running"
        return
    since = os.path.getsize(farm.agent.err_path)
    fault.t0 = time.time()
    farm.pki_sh("revoke-cert", farm.pki, farm.agent_cert())
    a = farm.args
    ended = Supervisor.scan(farm.agent.err_path, since, r"ended the stream: .*\(code 16\)",
                            a.revoke_within)
    took = time.time() - fault.t0
    farm.pki_sh("agent", farm.pki, AGENT_ID, AGENT_GRANT, stdout=subprocess.DEVNULL)
    t_restart = time.time()
    farm.agent.asked.append(t_restart)
    os.kill(pid, signal.SIGTERM)
    fault.t1 = farm.agent.wait_start_after(t_restart, 60)
    if ended:
        fault.detail = "revoke-cert; the tracker ended the agent's stream %.1f s later" % took
    else:
        fault.detail = "revoke-cert; the agent's stream was NOT ended within %.0f s" % a.revoke_within
        fault.failure = "a revoked agent kept its stream %.0f s" % a.revoke_within
    fault.detail += "; re-enrolled, restarted%s" % ("" if fault.t1 else " (NOT started again)")


def check_pause(farm, monitor, fault):
    """After an agent-stop: no board quarantined or health checked from the SIGSTOP until it
    recovered, and every board IDLE or BUSY within --serving-within s of the SIGCONT."""
    end = fault.recovered or (fault.t1 + farm.args.recovery_timeout)
    quarantined = sorted({b for s in list(monitor.samples) if fault.t0 <= s.t <= end
                          for b, state in s.states.items()
                          if state in ("QUARANTINED", "HEALTH_CHECK")})
    ok = monitor.boards_ok_since(fault.t1)
    fault.detail += "; boards serving %s after SIGCONT" % (
        "%.1f s" % (ok - fault.t1) if ok else "never")
    if quarantined:
        fault.failure = "a pause quarantined boards %s" % ", ".join(quarantined)
    elif ok is None or ok - fault.t1 > farm.args.serving_within:
        fault.failure = "boards not serving within %.0f s of SIGCONT" % farm.args.serving_within


def kill_board(farm, monitor, fault):
    """kill -9 the process of a board that holds jobs (waits up to 15 s for one), else of any
    board that has a process."""
    deadline = time.time() + 15
    while True:
        processes = farm.board_processes()
        states = monitor.samples[-1].states if monitor.samples else {}
        busy = [b for b in farm.boards if states.get(b) == "BUSY" and processes.get(b)]
        if busy or time.time() > deadline:
            break
        time.sleep(0.2)
    candidates = busy or [b for b in farm.boards if processes.get(b)]
    if not candidates:
        fault.skipped = "no board process found"
        return
    board = candidates[int(time.time()) % len(candidates)]
    pid = processes[board][0]
    fault.t0 = fault.t1 = time.time()
    os.kill(pid, signal.SIGKILL)
    fault.board = board
    fault.detail = "kill -9 %d (/bf/image of %s, %s)" % (pid, board, "busy" if busy else "idle")


def fill_disk(farm, fault):
    if not farm.tmpfs:
        fault.skipped = farm.tmpfs_note or "no tmpfs"
        return
    filler = os.path.join(farm.db_dir, "chaos-filler")
    fault.t0 = time.time()
    written = 0
    with open(filler, "wb") as f:
        for chunk in (1 << 20, 4096, 1):
            block = b"\0" * chunk
            try:
                while True:
                    written += os.write(f.fileno(), block)
            except OSError as err:
                if err.errno != errno.ENOSPC:
                    raise
    st = os.statvfs(farm.db_dir)
    time.sleep(farm.args.disk_full_seconds)
    os.remove(filler)
    fault.t1 = time.time()
    fault.detail = "filled %.1f MiB until ENOSPC (%d bytes left), held %d s, freed" % (
        written / 2**20, st.f_bavail * st.f_frsize, farm.args.disk_full_seconds)


def drop_link_bytes(farm, fault):
    """Writes every board's link fault file (drop_rate per byte, a seed per board and fault),
    holds --link-drop-seconds, removes them. Each file is written whole and renamed into place,
    so the agent never reads half of one."""
    a = farm.args
    if not os.path.isdir(farm.link_faults):
        fault.skipped = "the agent's boards have no link_fault_file"
        return
    drop_link_bytes.count = getattr(drop_link_bytes, "count", 0) + 1
    fault.t0 = time.time()
    for i, board in enumerate(farm.boards):
        path = farm.link_fault_file(board)
        with open(path + ".new", "w") as f:
            f.write("drop_rate=%g seed=%d\n" % (a.link_drop_rate,
                                                 1000 * drop_link_bytes.count + i + 1))
        os.rename(path + ".new", path)
    time.sleep(a.link_drop_seconds)
    for board in farm.boards:
        os.remove(farm.link_fault_file(board))
    fault.t1 = time.time()
    fault.detail = "drop_rate=%g per byte on the links of %d boards for %.0f s, removed" % (
        a.link_drop_rate, len(farm.boards), a.link_drop_seconds)


def inject(farm, monitor, fault):
    if fault.name == "agent-kill":
        kill_daemon(farm, farm.agent, fault)
    elif fault.name == "tracker-kill":
        kill_tracker(farm, fault)
    elif fault.name == "agent-stop":
        stop_agent(farm, fault)
    elif fault.name == "agent-revoke":
        revoke_agent(farm, fault)
    elif fault.name == "board-kill":
        kill_board(farm, monitor, fault)
    elif fault.name == "disk-full":
        fill_disk(farm, fault)
    elif fault.name == "link-drop":
        drop_link_bytes(farm, fault)


def wait_recovered(farm, monitor, ledger, fault, timeout):
    """Waits until results flow again and every board is IDLE or BUSY (or nothing is left to
    do); sets fault.recovered (live part; the per-board part is added after the run)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        flow = monitor.results_since(fault.t1)
        ok = monitor.boards_ok_since(fault.t1)
        idle = ledger.submitted_all and ledger.outstanding() == 0
        if ok and (flow or idle):
            fault.recovered = max(ok, flow or ok)
            fault.limited_by = "results" if flow and flow >= ok else "boards"
            return
        time.sleep(0.5)
    states = monitor.samples[-1].states if monitor.samples else {}
    fault.recovery_note = "not recovered within %d s (results since it cleared: %s; boards: %s)" % (
        timeout, "yes" if monitor.results_since(fault.t1) else "none",
        ", ".join("%s %s" % kv for kv in sorted(states.items())) or "tracker unreachable")


def served_after(results, board, t1):
    """When `board` finished the first trial it started after t1 (agent clock), or None."""
    times = [ts(j.result.finished_at) for j in results
             if j.result.board_id == board and ts(j.result.started_at) >= t1]
    return min(times) if times else None


# ---- the run ------------------------------------------------------------------------------------

def read_call_logs(scratch):
    """(checks, calls): Counter of trial index -> reference calls (measurements), kernel calls."""
    checks, calls = collections.Counter(), collections.Counter()
    for name in sorted(os.listdir(scratch)) if os.path.isdir(scratch) else []:
        if not name.endswith(".board.log"):
            continue
        with open(os.path.join(scratch, name), "rb") as f:
            for line in f:
                m = CHECK_RECORD.match(line.rstrip(b"\n"))
                if m:
                    k = trial_index(int(m.group(2)), int(m.group(3)))
                    (checks if m.group(1) == b"check" else calls)[k] += 1
    return checks, calls


def run(args):
    farm = Farm(args)
    farm.fatal = ""
    farm.t_faults = None
    ledger = Ledger()
    stop = threading.Event()
    monitor = Monitor(farm, ledger, stop)
    faults = []
    run_id = "chaos-%d" % int(time.time())
    try:
        farm.start()
        monitor.thread.start()
        sub = threading.Thread(target=submitter, args=(farm, ledger, stop, run_id), daemon=True)
        farm.t_faults = time.time()
        sub.start()
        # Warm up: the first results (the runtime build, the first image) before any fault.
        while monitor.results_since(0) is None and time.time() - farm.t_faults < 180 and not stop.is_set():
            time.sleep(0.5)
        log("first results after %.1f s; faults for %.1f min: %s" % (
            time.time() - farm.t_faults, args.minutes, ", ".join(args.faults)))
        fault_end = time.time() + args.minutes * 60
        cycle = 0
        while not stop.is_set() and (cycle == 0 or time.time() < fault_end):
            for name in args.faults:
                if stop.is_set() or (cycle > 0 and time.time() >= fault_end):
                    break
                fault = Fault(name)
                inject(farm, monitor, fault)
                faults.append(fault)
                if fault.skipped:
                    if cycle == 0:
                        log("%s: SKIPPED: %s" % (name, fault.skipped))
                    continue
                if fault.t1 is None:
                    fault.recovery_note = "did not clear"
                    continue
                wait_recovered(farm, monitor, ledger, fault, args.recovery_timeout)
                if fault.name == "agent-stop":
                    check_pause(farm, monitor, fault)
                log("%s: %s; %s" % (name, fault.detail, "recovered %.1f s after injection" % (
                    fault.recovered - fault.t0) if fault.recovered else fault.recovery_note))
                time.sleep(args.gap)
            cycle += 1
        t_last_clear = max([f.t1 for f in faults if f.t1] or [time.time()])
        log("faults done (%d injected); submitting the rest and draining" % sum(
            1 for f in faults if f.t0))
        # Drain: until every trial is submitted and DONE, or nothing finished for
        # --stall-seconds (then the rest is stuck).
        monitor.last_progress = max(monitor.last_progress, t_last_clear)
        while ((sub.is_alive() or ledger.outstanding() > 0)
               and time.time() - monitor.last_progress < args.stall_seconds):
            time.sleep(1)
        stop.set()
        sub.join(30)
        monitor.thread.join(30)
        monitor.poll()
        final = retry(lambda: farm.client.results(op=OP, limit=None), "ListResults", 60)
        missing = {}
        by_id = {j.job_id: j for j in final}
        for job_id in ledger.index_of:
            if job_id not in by_id:
                try:
                    by_id[job_id] = retry(lambda: farm.client.get(job_id), "GetJob", 30)
                except benchfarm.TrackerError as err:
                    missing[job_id] = err.code_name
        board_pids = farm.board_processes()
    except BaseException as err:  # the farm did not start, the harness broke, or ^C: fail
        stop.set()
        log("FAIL: %s: %s" % (type(err).__name__, err))
        farm.stop()
        farm.unmount_db_disk()
        return 1
    farm.stop_time = time.time()
    codes = farm.stop()
    leftover = {b: [p for p in pids if os.path.exists("/proc/%d" % p)]
                for b, pids in farm.board_processes().items()}
    leftover = {b: p for b, p in leftover.items() if p}
    for pids in leftover.values():
        for p in pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    farm.unmount_db_disk()
    return report(args, farm, ledger, monitor, faults, by_id, missing, codes, leftover, board_pids)


def report(args, farm, ledger, monitor, faults, by_id, missing, codes, leftover, board_pids):
    checks, calls = read_call_logs(farm.scratch)
    acked = ledger.index_of
    finished, by_code, stuck, lost, doubled, unmeasured = [], collections.Counter(), [], [], [], []
    for job_id, k in acked.items():
        job = by_id.get(job_id)
        if job is None:
            lost.append((job_id, "tracker: %s" % missing.get(job_id, "?")))
        elif job.state == pb.CANCELLED_STATE:
            lost.append((job_id, "CANCELLED"))
        elif job.state == pb.DONE and not job.HasField("result"):
            lost.append((job_id, "DONE without a result"))
        elif job.state == pb.DONE:
            finished.append(job_id)
            by_code[pb.ErrorCode.Name(job.result.error_code)] += 1
            if job.result.costs_s and checks[k] == 0:
                unmeasured.append(job_id)
        else:
            stuck.append((job_id, pb.JobState.Name(job.state), len(job.attempts), job.board_id))
        first = ledger.first_result.get(job_id)
        if job_id in ledger.reopened or (first and job is not None and job.HasField("result")
                                         and result_key(job) != first):
            doubled.append(job_id)
    measured = [k for k in (acked[j] for j in finished) if checks[k] > 0]
    twice = [k for k in measured if checks[k] > 1]
    never_acked = sorted(set(checks) - set(acked.values()))
    results = [by_id[j] for j in finished]
    # What the trials started while bytes were dropped ended with.
    for f in faults:
        if f.name == "link-drop" and f.t0 and f.t1:
            during = collections.Counter(
                pb.ErrorCode.Name(j.result.error_code) for j in results
                if f.t0 <= ts(j.result.started_at) <= f.t1)
            f.detail += "; trials started meanwhile: %d (%s)" % (sum(during.values()), ", ".join(
                "%s %d" % kv for kv in sorted(during.items())) or "none")
    # Recovery, with the per-board condition: every board measured a trial started after t1.
    for f in faults:
        if not f.t0 or not f.recovered:
            continue
        served = [served_after(results, b, f.t1) for b in farm.boards]
        if all(s is not None for s in served):
            last = max(served)
            if last > f.recovered:
                f.recovered = last
                f.limited_by = "board %s" % farm.boards[served.index(last)]
        else:
            f.recovery_note = "%d board(s) got no trial after it (no work left)" % sum(
                s is None for s in served)

    out = []
    w = out.append
    w("")
    w("chaos: %d host-process boards, lease %d s, %d trials asked, %.1f min of faults" % (
        len(farm.boards), args.lease, args.trials, args.minutes))
    w("")
    w("%-44s %10s  %s" % ("accounting", "count", "rule"))
    w("%-44s %10d" % ("submitted (acknowledged by the tracker)", len(acked)))
    w("%-44s %10d" % ("  submissions retried", ledger.submit_retries))
    w("%-44s %10d" % ("finished (DONE with a result)", len(finished)))
    for code, n in sorted(by_code.items(), key=lambda kv: -kv[1]):
        w("%-44s %10d" % ("  " + code, n))
    w("%-44s %10d  must be 0" % ("lost", len(lost)))
    w("%-44s %10d  must be 0" % ("results per job > 1", len(doubled)))
    w("%-44s %10d  must be 0" % ("results no board measured", len(unmeasured)))
    w("%-44s %10d  must be 0" % ("stuck (not DONE %ds after the last progress)" % args.stall_seconds,
                                 len(stuck)))
    share = 100.0 * len(twice) / len(finished) if finished else 0.0
    w("%-44s %10d  %.2f %% of finished (target <= 1 %%)" % ("measured more than once", len(twice),
                                                           share))
    w("%-44s %10d" % ("  measured at least once (output checks)", len(measured)))
    w("%-44s %10d" % ("  most measurements of one trial", max([checks[k] for k in measured] or [0])))
    w("%-44s %10d" % ("  kernel calls logged", sum(calls.values())))
    if never_acked:
        w("%-44s %10d" % ("  measured but never acknowledged", len(never_acked)))
    w("%-44s %10s" % ("supervisor restarts (tracker / agent)", "%d / %d" % (
        sum(len(t.starts) - 1 for t in farm.trackers), len(farm.agent.starts) - 1)))
    crashed = [(d.name, rel(t), rc) for d in farm.trackers + [farm.agent] for t, rc in d.exits
               if (rc not in (-signal.SIGKILL, 0) or (rc == 0 and t < farm.stop_time))
               and not (rc == 0 and any(a <= t <= a + 60 for a in d.asked))]
    if crashed:
        w("%-44s %10d  %s" % ("  exits the harness did not cause", len(crashed), ", ".join(
            "%s at %.0fs (%s)" % c for c in crashed)))
    names = [t.name for t in farm.trackers] + ["agent"]
    w("%-44s %10s" % ("exit codes at the end (%s)" % " / ".join(names), " / ".join(
        str(codes.get(n)) for n in names)))
    w("%-44s %10d" % ("board processes left after the agent stopped", sum(map(len, leftover.values()))))
    w("")
    w("%-13s %8s %8s %11s  %s" % ("fault", "at (s)", "held (s)", "recover (s)", "what"))
    for f in faults:
        if f.skipped:
            w("%-13s %8s %8s %11s  SKIPPED: %s" % (f.name, "-", "-", "-", f.skipped))
            continue
        held = "%.1f" % (f.t1 - f.t0) if f.t1 else "-"
        recover = "%.1f" % (f.recovered - f.t0) if f.recovered else "NO"
        note = ("; " + f.recovery_note) if f.recovery_note else ""
        if f.limited_by:
            note += "; last to recover: " + f.limited_by
        if f.failure:
            note += "; FAILED: " + f.failure
        w("%-13s %8.1f %8s %11s  %s%s" % (f.name, rel(f.t0), held, recover, f.detail, note))
    recovered = collections.defaultdict(list)
    for f in faults:
        if f.recovered:
            recovered[f.name].append(f.recovered - f.t0)
    if recovered:
        w("")
        w("time to recover per fault: " + "; ".join(
            "%s max %.1f s (n=%d)" % (n, max(v), len(v)) for n, v in recovered.items()))
    for title, rows in (("lost", lost), ("results per job > 1", [(j,) for j in doubled]),
                        ("results no board measured", [(j,) for j in unmeasured]),
                        ("stuck", stuck)):
        if rows:
            w("")
            w("%s (first 10 of %d):" % (title, len(rows)))
            for row in rows[:10]:
                job = by_id.get(row[0])
                attempts = ""
                if job is not None:
                    attempts = " attempts: " + "; ".join(
                        "%s %s %s" % (a.board_id, pb.ErrorCode.Name(a.error_code), a.message[:80])
                        for a in job.attempts)
                w("  %s trial %d %s%s" % (row[0], acked[row[0]], " ".join(map(str, row[1:])), attempts))
    failures = []
    if farm.fatal:
        failures.append(farm.fatal)
    if not ledger.submitted_all:
        failures.append("only %d of %d trials submitted" % (len(acked), args.trials))
    for what, rows in (("lost", lost), ("doubled", doubled), ("unmeasured", unmeasured),
                       ("stuck", stuck)):
        if rows:
            failures.append("%d %s" % (len(rows), what))
    failures.extend("%s: %s" % (f.name, f.failure) for f in faults if f.failure)
    uncleared = [f.name for f in faults if f.t0 and not f.t1]
    if uncleared:  # e.g. no standby took over, or the supervisor could not restart a daemon
        failures.append("%d fault(s) did not clear: %s" % (len(uncleared), ", ".join(uncleared)))
    w("")
    if failures:
        w("chaos: FAIL: %s (measured more than once: %d, %.2f %%; logs in %s)" % (
            ", ".join(failures), len(twice), share, farm.work))
    else:
        w("chaos: PASS: %d submitted, %d finished, 0 lost, 0 doubled, 0 stuck; measured more "
          "than once: %d (%.2f %%)" % (len(acked), len(finished), len(twice), share))
    print("\n".join(out), flush=True)
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=2000)
    p.add_argument("--minutes", type=float, default=5, help="how long faults are injected")
    p.add_argument("--short", action="store_true",
                   help="the test's schedule: 300 trials, one cycle of faults in about a "
                   "minute, lease 4 s")
    p.add_argument("--faults", default=",".join(ALL_FAULTS),
                   help="comma-separated, from: " + ", ".join(ALL_FAULTS))
    p.add_argument("--standby", action="store_true",
                   help="two trackers on the database, one serving, one standby; tracker-kill "
                   "kills the serving one (the agent and client are given both addresses)")
    p.add_argument("--boards", type=int, default=3)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lease", type=int, default=10)
    p.add_argument("--heartbeat", type=int, default=2)
    p.add_argument("--restart-sec", type=float, default=1.0, help="the supervisor's RestartSec")
    p.add_argument("--stop-extra", type=float, default=5, help="SIGSTOP lasts lease + this")
    p.add_argument("--serving-within", type=float, default=5,
                   help="after SIGCONT, every board must serve again within this")
    p.add_argument("--revoke-within", type=float, default=10,
                   help="after revoke-cert, the tracker must end the agent's stream within this")
    p.add_argument("--disk-full-seconds", type=int, default=10)
    p.add_argument("--db-disk-mb", type=int, default=256)
    p.add_argument("--link-drop-rate", type=float, default=1e-3,
                   help="link-drop: probability that a byte on a board link is dropped")
    p.add_argument("--link-drop-seconds", type=float, default=10, help="link-drop lasts this")
    p.add_argument("--gap", type=float, default=5, help="seconds between a recovery and the next fault")
    p.add_argument("--recovery-timeout", type=float, default=120)
    p.add_argument("--stall-seconds", type=float, default=120,
                   help="stuck: nothing finished for this long after the faults ended")
    p.add_argument("--submit-batch", type=int, default=50)
    p.add_argument("--high-water", type=int, default=400, help="most unfinished trials at once")
    p.add_argument("--poll", type=float, default=1.0)
    p.add_argument("--work", required=True)
    p.add_argument("--tracker-bin", required=True)
    p.add_argument("--agent-bin", required=True)
    p.add_argument("--pki-sh", required=True)
    p.add_argument("--op-dir", required=True)
    args = p.parse_args()
    if args.short:
        args.trials, args.minutes, args.lease, args.heartbeat = 300, 0.75, 4, 1
        args.stop_extra, args.disk_full_seconds, args.db_disk_mb, args.gap = 3, 5, 64, 2
        args.link_drop_seconds = 5
        args.recovery_timeout, args.stall_seconds, args.high_water = 25, 30, 200
        args.submit_batch = 25
    args.faults = [f for f in args.faults.split(",") if f]
    unknown = [f for f in args.faults if f not in ALL_FAULTS]
    if unknown:
        p.error("unknown fault(s): %s" % ", ".join(unknown))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
