"""The Python client against a real farm: the tracker binary (//tracker:tracker, a temporary
database) and the agent binary (//agent:agent) with one host-process board, both started here as
child processes, plus a second agent whose board is registered and then left OFFLINE (its kind
keeps jobs QUEUED, for cancel).

The farm is secure, as it is by default: the tracker creates its CA in a state directory here
(deploy/pki.sh init) and serves TLS; the agents connect with certificates of that CA
(`pki.sh agent`), the users alice, bob and carol with bearer tokens (`pki.sh token`). The cases
run as alice; SecurityFarmTest checks what a caller without credentials, another user and a
plain-text client may not do.

Run by //python:client_test (python/client_test.sh). By hand, from the workspace root after
`bazel build //tracker //agent //python:stubs`:

    PYTHONPATH=python:bazel-bin/python BENCHFARM_TRACKER_BIN=bazel-bin/tracker/tracker \\
        BENCHFARM_AGENT_BIN=bazel-bin/agent/agent /usr/bin/python3 -P python/client_test.py

(deploy/pki.sh is found from the workspace root, or set $BENCHFARM_PKI.)

Writes JUnit XML to $XML_OUTPUT_FILE (Bazel's test.xml) so each case counts on its own.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid
import xml.etree.ElementTree as ET

import grpc

import benchfarm
from benchfarm import benchfarm_pb2 as pb

KIND = "host-process"
BOARD = "hp0"
AGENT = "py-agent"
PARKED_KIND = "py-parked"  # registered once, then OFFLINE: its jobs stay QUEUED
PARKED_BOARD = "parked0"
TESTDATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "testdata")
WATCH_S = 120
HEX16 = re.compile(r"[0-9a-f]{16}")
USER = "alice"         # the cases run as alice
OTHER = "bob"          # another user, who may not touch alice's jobs
PAGING_USER = "carol"  # a user with no other jobs, for results' paging
# What Client reads from the environment: cleared, so each case says what it passes.
CREDENTIAL_ENV = ("BENCHFARM_CA", "BENCHFARM_TOKEN", "BENCHFARM_TOKEN_FILE", "BENCHFARM_CERT",
                  "BENCHFARM_KEY", "BENCHFARM_INSECURE")
for _name in CREDENTIAL_ENV:
    os.environ.pop(_name, None)


def _binary(env, *candidates):
    if os.environ.get(env):
        return os.environ[env]
    for path in candidates:
        if os.path.isfile(path):
            return path
    raise RuntimeError("no %s (set $%s)" % (" or ".join(candidates), env))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Farm:
    """The tracker and the agents as child processes, their output in files under `work`."""

    def __init__(self, work):
        self.work = work
        self.procs = {}
        self.tracker_bin = _binary("BENCHFARM_TRACKER_BIN", "tracker/tracker", "bazel-bin/tracker/tracker")
        self.agent_bin = _binary("BENCHFARM_AGENT_BIN", "agent/agent", "bazel-bin/agent/agent")
        self.pki_sh = _binary("BENCHFARM_PKI", "deploy/pki.sh")
        self.state_dir = os.path.join(work, "pki")  # the tracker's CA, certificate and tokens
        self.ca = os.path.join(self.state_dir, "ca.pem")
        self.tokens = {}  # user -> bearer token
        self.address = None

    def _start(self, name, argv):
        out = open(os.path.join(self.work, name + ".out"), "w")
        err = open(os.path.join(self.work, name + ".err"), "w")
        self.procs[name] = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                            start_new_session=True)
        out.close()
        err.close()

    def tail(self, name, lines=30):
        text = []
        for suffix in (".out", ".err"):
            try:
                with open(os.path.join(self.work, name + suffix)) as f:
                    text.append("".join(f.readlines()[-lines:]))
            except OSError:
                pass
        return "\n".join(text)

    def wait_line(self, name, pattern, timeout=60):
        path = os.path.join(self.work, name + ".out")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(path) as f:
                if re.search(pattern, f.read()):
                    return
            if self.procs[name].poll() is not None:
                raise RuntimeError("%s exited with %s before printing %r:\n%s" % (
                    name, self.procs[name].returncode, pattern, self.tail(name)))
            time.sleep(0.05)
        raise RuntimeError("%s printed no line matching %r in %d s:\n%s" % (
            name, pattern, timeout, self.tail(name)))

    def start_tracker(self):
        port = _free_port()
        self.address = "127.0.0.1:%d" % port
        self._start("tracker", [self.tracker_bin, "--listen", self.address, "--database",
                                os.path.join(self.work, "tracker.db"), "--state_dir",
                                self.state_dir, "--metrics", "off"])
        self.wait_line("tracker", "listening on")
        if not os.path.isfile(self.ca):
            raise RuntimeError("the tracker created no %s:\n%s" % (self.ca, self.tail("tracker")))

    def pki(self, *args):
        """deploy/pki.sh COMMAND STATE_DIR ARGS...; returns its stdout."""
        run = subprocess.run(["bash", self.pki_sh, args[0], self.state_dir] + list(args[1:]),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        if run.returncode != 0:
            raise RuntimeError("pki.sh %s exited with %d: %s" % (" ".join(args), run.returncode,
                                                                 run.stderr))
        return run.stdout.strip()

    def issue_token(self, user):
        self.tokens[user] = self.pki("token", user)
        return self.tokens[user]

    def client(self, user, **kwargs):
        """A Client verifying the tracker with the CA and calling as `user` (token)."""
        kwargs.setdefault("timeout", 30)
        return benchfarm.Client(self.address, ca=self.ca, token=self.tokens[user], **kwargs)

    def start_agent(self, name, board_id, kind):
        root = os.path.join(self.work, name)
        config = os.path.join(self.work, name + ".textproto")
        with open(config, "w") as f:
            f.write('agent_id: "%s"\ntracker_address: "%s"\n' % (name, self.address))
            f.write('scratch_dir: "%s/scratch"\ncache_dir: "%s/cache"\nspool_dir: "%s/spool"\n'
                    % (root, root, root))
            f.write('boards { id: "%s" kind: "%s" host_process {} '
                    'build_template: "agent/templates/host-process" }\n' % (board_id, kind))
            # Its certificate: the tracker lets it register as `name`, for this board only, as
            # its kind.
            self.pki("agent", name, "%s=%s" % (board_id, kind))
            certs = os.path.join(self.state_dir, "agents", name)
            f.write('credentials { ca_cert: "%s" cert: "%s.pem" key: "%s.key" }\n'
                    % (self.ca, certs, certs))
        self._start(name, [self.agent_bin, "--config", config, "--metrics", "off"])

    def stop(self, name, timeout=20):
        """SIGTERM, then SIGKILL after `timeout`; returns the exit status."""
        proc = self.procs.pop(name)
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        return proc.returncode

    def stop_all(self):
        for name in ["parked-agent", AGENT, "tracker"]:
            if name in self.procs:
                self.stop(name)


FARM = None


def _wait_for(what, predicate, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out waiting for " + what)


def setUpModule():
    global FARM
    work = tempfile.mkdtemp(prefix="py-client-", dir=os.environ.get("TEST_TMPDIR"))
    FARM = Farm(work)
    try:
        FARM.start_tracker()
        for user in (USER, OTHER, PAGING_USER):
            FARM.issue_token(user)
        FARM.start_agent(AGENT, BOARD, KIND)
        FARM.start_agent("parked-agent", PARKED_BOARD, PARKED_KIND)
        FARM.wait_line(AGENT, r"serving 1 boards")
        FARM.wait_line("parked-agent", r"serving 1 boards")
        client = FARM.client(USER, timeout=10)
        _wait_for("both boards registered",
                  lambda: {BOARD, PARKED_BOARD} <= {b.board_id for b in client.boards()})
        # The parked agent leaves; its board stays registered, OFFLINE, so kind py-parked is
        # known to the tracker but no board takes its jobs.
        status = FARM.stop("parked-agent")
        if status != 0:
            raise RuntimeError("parked agent exited with %s:\n%s" % (status, FARM.tail("parked-agent")))
        _wait_for("the parked board OFFLINE", lambda: [
            b for b in client.boards(kind=PARKED_KIND) if b.state == pb.OFFLINE])
        client.close()
    except BaseException:
        FARM.stop_all()
        raise


def tearDownModule():
    if FARM is None:
        return
    agent = FARM.stop(AGENT) if AGENT in FARM.procs else 0
    tracker = FARM.stop("tracker") if "tracker" in FARM.procs else 0
    FARM.stop_all()
    if agent != 0 or tracker != 0:
        raise RuntimeError("unclean exit: agent %s, tracker %s\n%s\n%s" % (
            agent, tracker, FARM.tail(AGENT), FARM.tail("tracker")))


def _ids(jobs):
    return [j.job_id for j in jobs]


class FarmCase(unittest.TestCase):
    client_id = USER  # the tracker derives it from the token

    def setUp(self):
        self.farm = FARM.client(USER)
        self.addCleanup(self.farm.close)
        self.assertEqual(self.farm.client_id, "", "with a credential the tracker names the caller")

    def assertCode(self, cm, code, *fragments):
        err = cm.exception
        self.assertEqual(err.code, code, str(err))
        self.assertIn(code.name, str(err))
        for fragment in fragments:
            self.assertIn(fragment, err.message)

    def assertQuality(self, job, repeats=None):
        """job.result.stats (filled by the tracker) agrees with the costs it summarizes."""
        r = job.result
        costs = sorted(r.costs_s)
        s = r.stats
        self.assertEqual(s.count, len(costs), r)
        if repeats is not None:
            self.assertEqual(s.count, repeats)
        self.assertEqual(s.min_s, costs[0])
        self.assertEqual(s.max_s, costs[-1])
        self.assertLessEqual(s.min_s, s.median_s)
        self.assertLessEqual(s.median_s, s.max_s)
        n = len(costs)
        median = costs[n // 2] if n % 2 else (costs[n // 2 - 1] + costs[n // 2]) / 2
        self.assertAlmostEqual(s.median_s, median, delta=1e-12)
        self.assertAlmostEqual(s.mean_s, sum(costs) / n, delta=1e-12)
        self.assertLessEqual(s.ci_low_s, s.median_s)
        self.assertGreaterEqual(s.ci_high_s, s.median_s)
        # The interval covers a re-measurement (the spread between rounds, and between a batch's
        # candidates, too), so it may reach past this run's costs; never narrower than the
        # interval inside the run.
        self.assertGreater(s.ci_low_s, 0.0)
        self.assertGreaterEqual(s.rel_half_width, s.within_rel_half_width - 1e-12)
        self.assertGreaterEqual(s.rel_half_width, 0.0)
        self.assertAlmostEqual(s.rel_half_width,
                               (s.ci_high_s - s.ci_low_s) / 2 / s.median_s, delta=1e-9)
        self.assertGreater(s.unstable_threshold, 0.0)
        if n >= 2:
            # UNSTABLE: wider than the threshold, rounds that disagree beyond their noise, or a
            # board that shared its CPU while timing.
            self.assertEqual(s.contended, r.wall_over_cpu > 1.10)
            self.assertEqual(s.unstable, s.rel_half_width > s.unstable_threshold
                             or s.rounds_disagree or s.contended)
        self.assertEqual(benchfarm.stats_of(job), s)
        text = benchfarm.cost_text(job)
        self.assertRegex(text, r"^[0-9.]+ (ns|us|ms|s) \+-([0-9.]+ %|\?)")
        self.assertEqual("UNSTABLE" in text, s.unstable)

    def assertMeasured(self, result, repeat):
        self.assertIsInstance(result, benchfarm.MeasureResult)
        self.assertEqual(result.error_no, 0, result.error_msg)
        self.assertEqual(result.error_msg, "")
        self.assertIsInstance(result.costs, tuple)
        self.assertEqual(len(result.costs), repeat, result)
        for cost in result.costs:
            self.assertIsInstance(cost, float)
            self.assertGreater(cost, 0.0)
            self.assertLess(cost, 1.0)
        self.assertGreater(result.all_cost, 0.0)
        self.assertLess(abs(result.timestamp - time.time()), 600)


class ClientFarmTest(FarmCase):
    """The job and board RPCs against the real tracker and agent."""

    def test_several_tracker_addresses(self):
        # Active/standby: the first address has nobody listening (a standby does not listen);
        # the channel reaches the tracker that serves, over TLS checked against the first name.
        standby = "127.0.0.1:%d" % _free_port()
        farm = benchfarm.Client("%s, %s" % (standby, FARM.address), ca=FARM.ca,
                                token=FARM.tokens[USER], timeout=30)
        self.addCleanup(farm.close)
        self.assertIn(BOARD, [b.board_id for b in farm.boards()])
        with self.assertRaisesRegex(ValueError, "is not HOST:PORT"):
            benchfarm.Client("127.0.0.1:1,nonsense", insecure=True)

    def test_boards(self):
        boards = {b.board_id: b for b in self.farm.boards()}
        self.assertIn(BOARD, boards)
        hp0 = boards[BOARD]
        self.assertEqual(hp0.kind, KIND)
        self.assertEqual(hp0.agent_id, AGENT)
        self.assertIn(hp0.state, (pb.IDLE, pb.BUSY))
        self.assertGreaterEqual(hp0.slots, 1)
        self.assertEqual(boards[PARKED_BOARD].state, pb.OFFLINE)
        self.assertEqual(_ids_of_boards(self.farm.boards(kind=KIND)), [BOARD])
        self.assertEqual(self.farm.boards(kind="no-such-kind"), [])

    def test_submit_watch_results(self):
        t = benchfarm.trial("matmul", KIND, knobs={"tile_m": 16, "tile_n": 8, "order": "ijk"},
                            repeat=2)
        request_id = "py-submit-" + uuid.uuid4().hex
        ids = self.farm.submit([t], request_id=request_id)
        self.assertEqual(len(ids), 1)
        self.assertEqual(self.farm.submit([t], request_id=request_id), ids, "a retry is idempotent")

        events = list(self.farm.watch(ids, timeout=WATCH_S))
        self.assertTrue(events)
        self.assertEqual({e.job_id for e in events}, set(ids))
        done = events[-1]
        self.assertEqual(pb.JobState.Name(done.state), "DONE", done)
        self.assertEqual([e.state for e in events].count(pb.DONE), 1)
        r = done.result
        self.assertEqual(pb.ErrorCode.Name(r.error_code), "NO_ERROR", r.message)
        self.assertEqual(r.autotvm_error_no, 0)
        self.assertEqual(len(r.costs_s), 2)
        self.assertTrue(all(0 < c < 1 for c in r.costs_s), r.costs_s)
        self.assertEqual(r.board_id, BOARD)
        self.assertQuality(done, repeats=2)
        self.assertEqual(r.measured.stop, "fixed")
        self.assertEqual(r.measured.repeats, 2)
        self.assertEqual(done.client_id, USER, "the tracker names the job after the token's user")
        self.assertEqual(done.trial.op.template_op.knobs["tile_m"], "16")
        self.assertEqual(self.farm.get(ids[0]).state, pb.DONE)
        # A finished job: watch yields its state at once and ends.
        self.assertEqual([e.state for e in self.farm.watch(ids[0], timeout=10)], [pb.DONE])

        found = [j for j in self.farm.results(op="matmul", kind=KIND) if j.job_id == ids[0]]
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0].state, pb.DONE)
        self.assertEqual(list(found[0].result.costs_s), list(r.costs_s))
        self.assertEqual(found[0].result.stats, r.stats, "results() carries the same stats")
        self.assertEqual(self.farm.get(ids[0]).result.stats, r.stats)
        self.assertIn(ids[0], _ids(self.farm.results(state="DONE", client_id=self.client_id)))
        self.assertIn(ids[0], _ids(self.farm.results(state=pb.DONE)))
        self.assertNotIn(ids[0], _ids(self.farm.results(op="add")))
        self.assertNotIn(ids[0], _ids(self.farm.results(kind=PARKED_KIND)))
        self.assertNotIn(ids[0], _ids(self.farm.results(state="QUEUED")))

        # The attempt's log came with its result: the build, the board, the result.
        [log] = self.farm.logs(ids[0])
        self.assertEqual((log.attempt, log.board_id), (1, BOARD))
        self.assertIn("build: ", log.text)
        self.assertIn("result: NO_ERROR: 2 cost(s)", log.text)
        self.assertEqual([l.text for l in self.farm.logs(ids[0], attempt=1)], [log.text])
        with self.assertRaises(benchfarm.TrackerError) as cm:
            self.farm.logs(ids[0], attempt=2)
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND, "has no log of attempt 2")
        with self.assertRaises(benchfarm.TrackerError) as cm:
            self.farm.logs(ids[0] + "0")
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND, "no job " + ids[0] + "0")
        bob = FARM.client(OTHER)
        self.addCleanup(bob.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            bob.logs(ids[0])
        # Answered as a job that does not exist: no one learns which job ids exist.
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND, "no job " + ids[0])

    def test_measure_batch_in_order(self):
        # Three configs, each with its own repeat count, so each result shows which trial it is.
        configs = [({"tile_m": 4, "order": "ijk"}, 1),
                   ({"tile_m": 8, "unroll": 2}, 2),
                   ({"tile_m": 16, "tile_k": 8, "order": "ikj"}, 3)]
        trials = [benchfarm.trial("matmul", KIND, knobs=k, repeat=r) for k, r in configs]
        started = time.time()
        results = self.farm.measure_batch(trials, timeout=WATCH_S)
        self.assertEqual(len(results), 3)
        for result, (_, repeat) in zip(results, configs):
            self.assertMeasured(result, repeat)
            self.assertGreaterEqual(result.timestamp, started - 1)
        # Dicts in the Trial JSON shape work as well.
        as_dict = {"op": {"template_op": {"op": "add", "knobs": {"unroll": "8"}}},
                   "board_kind": KIND, "measure": {"number": 5, "repeat": 2}, "check_outputs": True}
        [result] = self.farm.measure_batch([as_dict], timeout=WATCH_S)
        self.assertMeasured(result, 2)
        self.assertEqual(self.farm.measure_batch([]), [])

    def test_measure_jobs_carry_quality(self):
        trials = [benchfarm.trial("matmul", KIND, knobs={"tile_m": m}, repeat=r)
                  for m, r in ((4, 3), (16, 6))]
        jobs = self.farm.measure_jobs(trials, timeout=WATCH_S)
        self.assertEqual([j.trial.op.template_op.knobs["tile_m"] for j in jobs], ["4", "16"])
        for job, repeat in zip(jobs, (3, 6)):
            self.assertEqual(job.state, pb.DONE)
            self.assertQuality(job, repeats=repeat)
            # measure_batch's MeasureResult is the same measurement, AutoTVM's shape unchanged.
            result = benchfarm.measure_result(job)
            self.assertEqual(result._fields,
                             ("costs", "error_no", "all_cost", "timestamp", "error_msg"))
            self.assertEqual(result.costs, tuple(job.result.costs_s))
        self.assertEqual(self.farm.measure_jobs([]), [])

    def test_adaptive_measurement(self):
        # Repeats until the median is known to +-5 % (at most 30 costs, 3 s of timing).
        t = benchfarm.trial("add", KIND, target_rel_ci=0.05, budget_ms=3000, max_repeat=30)
        self.assertEqual((t.measure.target_rel_ci, t.measure.budget_ms, t.measure.max_repeat),
                         (0.05, 3000, 30))
        [job] = self.farm.measure_jobs([t], timeout=WATCH_S)
        r = job.result
        self.assertEqual(pb.ErrorCode.Name(r.error_code), "NO_ERROR", r.message)
        self.assertQuality(job)
        self.assertIn(r.measured.stop, ("target", "budget", "max_repeat"), r.measured)
        self.assertEqual(r.measured.repeats, len(r.costs_s))
        self.assertLessEqual(len(r.costs_s), 30)
        self.assertGreaterEqual(r.measured.number, 1)
        self.assertGreaterEqual(r.measured.rounds, 1)
        self.assertAlmostEqual(r.measured.target_rel_ci, 0.05)
        if r.measured.stop == "target":
            self.assertLessEqual(r.stats.rel_half_width, 0.05)
        [result] = self.farm.measure_batch([t], timeout=WATCH_S)
        self.assertEqual(result.error_no, 0, result.error_msg)
        self.assertLessEqual(len(result.costs), 30)

    def test_confirm_two_stage(self):
        # The screen: three configs measured quickly; the top two confirmed adaptively (on the
        # same kind here: the farm has one live kind; farmctl's tune_test confirms on another).
        screen = self.farm.measure_jobs(
            [benchfarm.trial("matmul", KIND, knobs={"tile_m": m}, repeat=3) for m in (1, 4, 16)],
            timeout=WATCH_S)
        c = self.farm.confirm(screen, KIND, top=2, target_rel_ci=0.05, budget_ms=2000,
                              max_repeat=20, timeout=WATCH_S)
        self.assertEqual(len(c["screen"]), 2)
        self.assertEqual(len(c["confirm"]), 2)
        self.assertLessEqual(c["screen_s"][0], c["screen_s"][1])  # the screen's best first
        for job, first in zip(c["confirm"], c["screen"]):
            self.assertEqual(job.trial.board_kind, KIND)
            self.assertAlmostEqual(job.trial.measure.target_rel_ci, 0.05)
            self.assertEqual(job.trial.op.template_op.knobs, first.trial.op.template_op.knobs)
            self.assertEqual(job.state, pb.DONE)
        self.assertEqual(sorted(c["confirm_rank"]), [1, 2])
        self.assertEqual(c["top1_held"], c["confirm_rank"][0] == 1)
        self.assertIn(c["kendall_tau"], (-1.0, 1.0))
        with self.assertRaises(ValueError):
            self.farm.confirm([], KIND)

    def test_invalid_trial_raises(self):
        farm = self.farm
        before = _ids(farm.results(limit=None))
        good = benchfarm.trial("matmul", KIND)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.measure_batch([good, benchfarm.trial("matmul", "no-such-kind")])
        self.assertCode(cm, grpc.StatusCode.INVALID_ARGUMENT, "trials[1].board_kind",
                        "no-such-kind")
        self.assertEqual(cm.exception.rpc, "SubmitTrials")
        self.assertEqual(cm.exception.address, FARM.address)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.submit([good, good, benchfarm.trial("matmul", KIND, priority=101)])
        self.assertCode(cm, grpc.StatusCode.INVALID_ARGUMENT, "trials[2].priority")
        self.assertEqual(_ids(farm.results(limit=None)), before, "a refused batch queues nothing")
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.cancel("j-0000000000000000")
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.get("j-0000000000000000")
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND)

    def test_cancel_queued_job(self):
        # No board of kind py-parked is connected: the job waits in the queue until cancelled.
        [job_id] = self.farm.submit(benchfarm.trial("matmul", PARKED_KIND))
        self.assertEqual(self.farm.get(job_id).state, pb.QUEUED)
        summary = {k.board_kind: k for k in self.farm.queue()}
        self.assertIn(PARKED_KIND, summary)
        self.assertEqual(summary[PARKED_KIND].boards_free, 0)
        self.assertGreaterEqual(sum(summary[PARKED_KIND].queued_by_priority.values()), 1)

        cancelled = self.farm.cancel(job_id)
        self.assertEqual(cancelled.job_id, job_id)
        self.assertEqual(pb.JobState.Name(cancelled.state), "CANCELLED_STATE")
        events = list(self.farm.watch([job_id], timeout=10))
        self.assertEqual(events[-1].state, pb.CANCELLED_STATE)
        result = benchfarm.measure_result(events[-1])
        self.assertEqual((result.costs, result.error_no), ((benchfarm.FAILED_COST,), 8))
        self.assertIn(job_id, _ids(self.farm.results(kind=PARKED_KIND, state="CANCELLED")))
        with self.assertRaises(benchfarm.TrackerError) as cm:
            self.farm.cancel(job_id)
        self.assertCode(cm, grpc.StatusCode.FAILED_PRECONDITION, "already finished")

    def test_results_paging(self):
        # carol has no other jobs: her results() (her own, the tracker's rule) are these five.
        farm = FARM.client(PAGING_USER)
        self.addCleanup(farm.close)
        ids = farm.submit([benchfarm.trial("matmul", PARKED_KIND, seed=s) for s in range(5)])
        self.addCleanup(lambda: [farm.cancel(i) for i in ids])
        all_at_once = farm.results()
        self.assertEqual(_ids(all_at_once), ids)
        self.assertEqual({j.client_id for j in all_at_once}, {PAGING_USER})
        self.assertEqual(_ids(farm.results(client_id=PAGING_USER)), ids)
        self.assertEqual(_ids(farm.results(page_size=2)), ids)
        self.assertEqual(_ids(farm.results(page_size=1, limit=None)), ids)
        self.assertEqual(_ids(farm.results(page_size=2, limit=3)), ids[:3])
        self.assertEqual(farm.results(limit=0), [])


def _ids_of_boards(boards):
    return [b.board_id for b in boards]


class _Environ:
    """Sets (value) or unsets (None) environment variables for a `with` block."""

    def __init__(self, **values):
        self.values = values
        self.saved = {}

    def __enter__(self):
        for name, value in self.values.items():
            self.saved[name] = os.environ.get(name)
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        return self

    def __exit__(self, *exc):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class SecurityFarmTest(FarmCase):
    """The tracker's rules through the client: no credential, no call; a user sees and touches
    only its own jobs; the client_id is the caller's; TLS only."""

    def parked_job(self, farm):
        """A job of `farm`'s user that stays QUEUED (no board of its kind is connected)."""
        [job_id] = farm.submit(benchfarm.trial("matmul", PARKED_KIND))

        def cancel():
            try:
                farm.cancel(job_id)
            except benchfarm.TrackerError:
                pass
        self.addCleanup(cancel)
        return job_id

    def test_without_credentials_is_unauthenticated(self):
        anonymous = benchfarm.Client(FARM.address, ca=FARM.ca, timeout=10)
        self.addCleanup(anonymous.close)
        for call in (anonymous.boards, anonymous.results,
                     lambda: anonymous.submit(benchfarm.trial("matmul", KIND))):
            with self.assertRaises(benchfarm.TrackerError) as cm:
                call()
            self.assertCode(cm, grpc.StatusCode.UNAUTHENTICATED, "no credential")
        forged = benchfarm.Client(FARM.address, ca=FARM.ca, token="bf_" + "0" * 48, timeout=10)
        self.addCleanup(forged.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            forged.boards()
        self.assertCode(cm, grpc.StatusCode.UNAUTHENTICATED, "unknown or revoked token")

    def test_credentials_say_what_is_wrong(self):
        """Issue 38 §2: the wrong transport, another farm's CA, an expired token: each says
        which, not "UNAVAILABLE: Socket closed"; whoami says who the tracker takes one for."""
        plain = benchfarm.Client(FARM.address, insecure=True, timeout=10)
        self.addCleanup(plain.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            plain.boards()
        self.assertCode(cm, grpc.StatusCode.UNAVAILABLE, "speaks TLS: pass ca=")
        other = os.path.join(FARM.work, "other-pki")
        subprocess.run(["bash", FARM.pki_sh, "init", other], check=True, capture_output=True,
                       timeout=60)
        foreign = benchfarm.Client(FARM.address, ca=os.path.join(other, "ca.pem"),
                                   token=FARM.tokens[USER], timeout=10)
        self.addCleanup(foreign.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            foreign.boards()
        self.assertCode(cm, grpc.StatusCode.UNAVAILABLE, "does not verify against the CA in",
                        "other-pki/ca.pem")

        me = self.farm.whoami()
        self.assertEqual((me.client_id, me.role, me.how), (USER, "user", "token"))
        self.assertTrue(me.HasField("expires_at"))  # pki.sh token: 365 days by default
        days = (me.expires_at.seconds - time.time()) / 86400
        self.assertTrue(364 < days <= 365, days)

        token = FARM.pki("token", "expiring", "--days", "2")
        tokens = os.path.join(FARM.state_dir, "tokens")
        with open(tokens) as f:
            text = f.read()
        # As if the two days had passed.
        with open(tokens + ".tmp", "w") as f:
            f.write(re.sub(r"( user expiring) \S+", r"\1 2021-01-01T00:00:00Z", text))
        os.replace(tokens + ".tmp", tokens)
        expired = benchfarm.Client(FARM.address, ca=FARM.ca, token=token, timeout=10)
        self.addCleanup(expired.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            expired.whoami()
        self.assertCode(cm, grpc.StatusCode.UNAUTHENTICATED,
                        "the token of expiring expired on 2021-01-01 00:00:00 UTC")

    def test_other_user_cannot_touch_jobs(self):
        job_id = self.parked_job(self.farm)
        bob = FARM.client(OTHER)
        self.addCleanup(bob.close)
        # Another user's job is answered exactly as a job that does not exist, so a user cannot
        # tell whether someone else's job id exists.
        missing = job_id + "0"
        for call in (bob.get, bob.cancel, lambda j: list(bob.watch([j], timeout=10))):
            answers = []
            for probe in (job_id, missing):
                with self.assertRaises(benchfarm.TrackerError) as cm:
                    call(probe)
                self.assertCode(cm, grpc.StatusCode.NOT_FOUND, probe)
                answers.append(cm.exception.message.replace(probe, "ID"))
            self.assertEqual(answers[0], answers[1])
        self.assertEqual(cm.exception.rpc, "WatchJobs")
        self.assertEqual(self.farm.get(job_id).state, pb.QUEUED, "bob's cancel changed nothing")

        # Each one's results() are its own jobs; asking for another's is refused.
        bobs = self.parked_job(bob)
        bob_results = _ids(bob.results(limit=None))
        self.assertIn(bobs, bob_results)
        self.assertNotIn(job_id, bob_results)
        self.assertNotIn(job_id, _ids(bob.results(kind=PARKED_KIND, state="QUEUED", limit=None)))
        self.assertEqual({j.client_id for j in bob.results(limit=None)}, {OTHER})
        alice_results = _ids(self.farm.results(limit=None))
        self.assertIn(job_id, alice_results)
        self.assertNotIn(bobs, alice_results)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            bob.results(client_id=USER)
        self.assertCode(cm, grpc.StatusCode.PERMISSION_DENIED)
        # And alice may still cancel her own.
        self.assertEqual(self.farm.cancel(job_id).state, pb.CANCELLED_STATE)

    def test_client_id_must_be_the_callers(self):
        posing = FARM.client(USER, client_id=OTHER)
        self.addCleanup(posing.close)
        self.assertEqual(posing.client_id, OTHER)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            posing.submit(benchfarm.trial("matmul", PARKED_KIND))
        self.assertCode(cm, grpc.StatusCode.PERMISSION_DENIED, "client_id", USER)
        self.assertEqual(cm.exception.rpc, "SubmitTrials")
        self.assertNotIn(OTHER, {j.client_id for j in self.farm.results(limit=None)})
        # Naming oneself is fine.
        named = FARM.client(USER, client_id=USER)
        self.addCleanup(named.close)
        self.assertEqual(named.get(self.parked_job(named)).client_id, USER)

    def test_malformed_and_oversized_requests(self):
        # Bytes that do not parse as the method's request: INVALID_ARGUMENT naming the message,
        # not UNIMPLEMENTED (which says the method does not exist).
        for method, message in (("GetJob", "GetJobRequest"), ("SubmitTrials", "SubmitTrialsRequest"),
                                ("WatchJobs", "WatchJobsRequest")):
            path = "/benchfarm.v1.Tracker/" + method
            raw = (self.farm._channel.unary_stream if method == "WatchJobs"
                   else self.farm._channel.unary_unary)(path)
            with self.assertRaises(grpc.RpcError) as cm:
                answer = raw(b"\xff\xff\xff", timeout=10)
                if method == "WatchJobs":
                    list(answer)
            self.assertEqual(cm.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, method)
            self.assertIn("benchfarm.v1." + message, cm.exception.details())
        unknown = self.farm._channel.unary_unary("/benchfarm.v1.Tracker/NoSuchMethod")
        with self.assertRaises(grpc.RpcError) as cm:
            unknown(b"", timeout=10)
        self.assertEqual(cm.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        # An oversized id is refused without being echoed back.
        huge = "j" * 100000
        for call in (self.farm.get, self.farm.cancel, lambda j: list(self.farm.watch([j], timeout=10))):
            with self.assertRaises(benchfarm.TrackerError) as cm:
                call(huge)
            self.assertCode(cm, grpc.StatusCode.INVALID_ARGUMENT, "longer than 128 bytes")
            self.assertLess(len(cm.exception.message), 200)

    def test_insecure_client_against_tls_tracker(self):
        plain = benchfarm.Client(FARM.address, insecure=True, timeout=10)
        self.addCleanup(plain.close)
        self.assertTrue(plain.insecure)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            plain.boards()
        self.assertCode(cm, grpc.StatusCode.UNAVAILABLE, "cannot reach tracker", "pass ca=")
        # The token does not help a plain-text client (it is never sent in the clear).
        with_token = benchfarm.Client(FARM.address, insecure=True, token=FARM.tokens[USER],
                                      timeout=10)
        self.addCleanup(with_token.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            with_token.boards()
        self.assertCode(cm, grpc.StatusCode.UNAVAILABLE)

    def test_wrong_ca_is_unavailable(self):
        # Another farm's CA: the tracker's certificate does not verify.
        other = os.path.join(FARM.work, "other-pki")
        subprocess.run(["bash", FARM.pki_sh, "init", other], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60)
        farm = benchfarm.Client(FARM.address, ca=os.path.join(other, "ca.pem"),
                                token=FARM.tokens[USER], timeout=10)
        self.addCleanup(farm.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.boards()
        self.assertCode(cm, grpc.StatusCode.UNAVAILABLE)

    def test_credentials_from_environment(self):
        token_file = os.path.join(FARM.work, "alice.token")
        with open(token_file, "w") as f:
            f.write(FARM.tokens[USER] + "\n")
        with _Environ(BENCHFARM_TRACKER=FARM.address, BENCHFARM_CA=FARM.ca,
                      BENCHFARM_TOKEN_FILE=token_file):
            farm = benchfarm.Client(timeout=10)
        self.addCleanup(farm.close)
        self.assertEqual((farm.address, farm.client_id, farm.insecure), (FARM.address, "", False))
        self.assertEqual(farm.get(self.parked_job(farm)).client_id, USER)
        with _Environ(BENCHFARM_CA=FARM.ca, BENCHFARM_TOKEN=FARM.tokens[OTHER]):
            bob = benchfarm.Client(FARM.address, timeout=10)
            # An argument wins over the environment.
            alice = benchfarm.Client(FARM.address, token=FARM.tokens[USER], timeout=10)
        self.addCleanup(bob.close)
        self.addCleanup(alice.close)
        self.assertEqual(bob.get(self.parked_job(bob)).client_id, OTHER)
        self.assertEqual(alice.get(self.parked_job(alice)).client_id, USER)

    def test_client_certificate(self):
        FARM.pki("user", "dave")
        base = os.path.join(FARM.state_dir, "users", "dave")
        with open(FARM.ca, "rb") as f:
            ca_pem = f.read()
        farm = benchfarm.Client(FARM.address, ca=ca_pem, cert=base + ".pem", key=base + ".key",
                                timeout=10)
        self.addCleanup(farm.close)
        self.assertIn(BOARD, _ids_of_boards(farm.boards()))
        job_id = self.parked_job(farm)
        self.assertEqual(farm.get(job_id).client_id, "dave")
        self.assertEqual(_ids(farm.results(limit=None)), [job_id])
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.get(self.parked_job(self.farm))
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND, "no job")


class CatalogFarmTest(FarmCase):
    """The operator catalog: ListOperators, GetOperator, AddOperator, and a user kernel measured."""

    def test_ops_lists_builtins(self):
        ops = {o.name: o for o in self.farm.ops()}
        for name in ("add", "matmul", "conv2d"):
            self.assertIn(name, ops)
            self.assertTrue(ops[name].builtin, name)
            self.assertTrue(ops[name].latest, name)
            self.assertRegex(ops[name].version, HEX16)
        self.assertEqual([k.name for k in ops["matmul"].spec.knobs],
                         ["tile_m", "tile_n", "tile_k", "unroll", "order"])
        self.assertEqual([o.name for o in self.farm.ops(name="matmul")], ["matmul"])

    def test_get_op(self):
        matmul = self.farm.get_op("matmul")
        self.assertEqual(matmul.name, "matmul")
        self.assertTrue(matmul.builtin)
        self.assertEqual(self.farm.get_op("matmul", version=matmul.version).version, matmul.version)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            self.farm.get_op("no_such_op")
        self.assertCode(cm, grpc.StatusCode.NOT_FOUND)

    def test_add_op_and_measure_user_kernel(self):
        directory = os.path.join(TESTDATA, "dot")
        added = self.farm.add_op(directory)
        self.assertEqual(added.name, "dot")
        self.assertRegex(added.version, HEX16)
        self.assertFalse(added.builtin)
        self.assertEqual(added.spec.entry, "my_dot")
        self.assertEqual([k.name for k in added.spec.knobs], ["unroll"])
        # The same content again (through the op.json path): the same version.
        self.assertEqual(self.farm.add_op(os.path.join(directory, "op.json")).version, added.version)
        stored = self.farm.get_op("dot", version=added.version)
        self.assertEqual(sorted(stored.files), ["dot.c", "dot_args.h"])
        with open(os.path.join(directory, "dot.c")) as f:
            self.assertEqual(stored.files["dot.c"], f.read())
        self.assertIn("dot", [o.name for o in self.farm.ops()])
        self.assertIn(added.version, [o.version for o in self.farm.ops(name="dot", all_versions=True)])

        trials = [benchfarm.trial("dot", KIND, knobs={"unroll": u}, repeat=r)
                  for r, u in enumerate([1, 2, 4], start=1)]
        results = self.farm.measure_batch(trials, timeout=WATCH_S)
        for result, repeat in zip(results, [1, 2, 3]):
            self.assertMeasured(result, repeat)
        jobs = self.farm.results(op="dot", kind=KIND, state="DONE")
        self.assertGreaterEqual(len(jobs), 3)
        self.assertTrue(all(j.trial.op.template_op.version == added.version for j in jobs),
                        "the tracker stores the version it resolved")

    def test_retire_op_and_add_it_back(self):
        work = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        versions = []
        for i in range(2):  # two versions of one name: the second differs by a comment
            d = os.path.join(work, "v%d" % i)
            shutil.copytree(os.path.join(TESTDATA, "dot"), d)
            with open(os.path.join(d, "op.json")) as f:
                manifest = f.read().replace('"op": "dot"', '"op": "dot_retire"')
            with open(os.path.join(d, "op.json"), "w") as f:
                f.write(manifest)
            with open(os.path.join(d, "dot.c"), "a") as f:
                f.write("/* version %d */\n" % i)
            versions.append(self.farm.add_op(d).version)
        retired = self.farm.retire_op("dot_retire")
        self.assertEqual(retired.op.version, versions[1])
        self.assertEqual(retired.latest.version, versions[0], "the version before is the latest")
        self.assertFalse(retired.already)
        self.assertTrue(self.farm.retire_op("dot_retire", version=versions[1]).already)
        self.assertEqual(self.farm.get_op("dot_retire").version, versions[0])
        self.assertEqual(self.farm.add_op(os.path.join(work, "v1")).version, versions[1])
        self.assertEqual(self.farm.get_op("dot_retire").version, versions[1], "added again: latest")

    def test_add_op_refused(self):
        bad = os.path.join(tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR")), "bad")
        shutil.copytree(os.path.join(TESTDATA, "dot"), bad)
        with open(os.path.join(bad, "op.json")) as f:
            manifest = f.read()
        with open(os.path.join(bad, "op.json"), "w") as f:
            f.write(manifest.replace('"default": 1', '"default": 3'))
        with self.assertRaises(benchfarm.TrackerError) as cm:
            self.farm.add_op(bad)
        self.assertCode(cm, grpc.StatusCode.INVALID_ARGUMENT, "knobs[0].default")


def _readme_example():
    """The README's Python example that tunes the dot kernel (section "Python client")."""
    readme = _binary("BENCHFARM_README", "README.md")
    with open(readme) as f:
        blocks = re.findall(r"```python\n(.*?)```", f.read(), re.S)
    found = [b for b in blocks if 'farm.add_op("my_ops/dot")' in b]
    if len(found) != 1:
        raise RuntimeError("%s: %d Python examples add my_ops/dot, want 1" % (readme, len(found)))
    return found[0]


class ReadmeExampleTest(FarmCase):
    """The README's example, run as a user runs it: a script in a directory holding my_ops/dot,
    the credentials in the environment. Its work done, it must exit within 5 s (grpcio 1.51 hung
    at interpreter exit in the channel's __del__, Ctrl-C ignored) with nothing on stderr."""

    EXIT_S = 5

    def run_script(self, source):
        work = tempfile.mkdtemp(prefix="readme-", dir=FARM.work)
        shutil.copytree(os.path.join(TESTDATA, "dot"), os.path.join(work, "my_ops", "dot"))
        with open(os.path.join(work, "example.py"), "w") as f:
            f.write(source)
        env = dict(os.environ, BENCHFARM_TRACKER=FARM.address, BENCHFARM_CA=FARM.ca,
                   BENCHFARM_TOKEN=FARM.tokens[USER], PYTHONUNBUFFERED="1")
        err_path = os.path.join(work, "stderr")
        with open(err_path, "w") as err:
            proc = subprocess.Popen([sys.executable, "example.py"], cwd=work, env=env,
                                    stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL,
                                    text=True)
        lines = []
        done = threading.Event()  # the script printed its last line

        def read():
            for line in proc.stdout:
                lines.append(line)
                if line.startswith("best "):
                    done.set()
        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        try:
            finished = done.wait(WATCH_S)
            self.assertTrue(finished or proc.poll() is not None, "no result in %d s" % WATCH_S)
            try:
                proc.wait(self.EXIT_S)
            except subprocess.TimeoutExpired:
                self.fail("the script did its work but had not exited %d s later:\n%s" % (
                    self.EXIT_S, "".join(lines)))
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        reader.join(5)
        with open(err_path) as f:
            stderr = f.read()
        out = "".join(lines)
        self.assertEqual(proc.returncode, 0, out + stderr)
        self.assertEqual(stderr.strip(), "", "stderr of the script")
        self.assertRegex(out, r"added dot version [0-9a-f]{16}")
        self.assertRegex(out, r"best \{'unroll': [124]\}: [0-9.]+ us per call")

    def test_readme_example_exits(self):
        source = _readme_example()
        self.assertIn("with benchfarm.Client() as farm:", source)
        self.run_script(source)

    def test_module_level_client_without_with_exits(self):
        # What the issue's users wrote: a module-level client, never closed.
        source = _readme_example().replace("with benchfarm.Client() as farm:",
                                           "farm = benchfarm.Client()\nif True:")
        self.assertIn("farm = benchfarm.Client()", source)
        self.run_script(source)


class ClientLocalTest(unittest.TestCase):
    """What the client does before anything is sent, and with what comes back."""

    def test_trial(self):
        t = benchfarm.trial("conv2d", "qemu-mps2-an385", knobs={"tile_oc": 8, "order": "reduction_outer"},
                            shapes=["1x4x16x16", [8, 4, 3, 3], (1, 8, 14, 14)], number=5, repeat=4,
                            min_repeat_ms=20, timeout_ms=5000, check=False, seed=7, priority=3,
                            board="m3-0", labels={"core": "cortex-m3"}, version="0123456789abcdef",
                            image_pool=[{"tile_oc": 8}, "tile_oc=4"])
        self.assertEqual(t.board_kind, "qemu-mps2-an385")
        self.assertEqual(t.op.template_op.op, "conv2d")
        self.assertEqual(dict(t.op.template_op.knobs), {"tile_oc": "8", "order": "reduction_outer"})
        self.assertEqual([list(a.shape) for a in t.args], [[1, 4, 16, 16], [8, 4, 3, 3], [1, 8, 14, 14]])
        self.assertEqual({a.dtype for a in t.args}, {""}, "the op's dtypes")
        q = benchfarm.trial("dwconv_s8", "host-process", shapes=["8x8x4", "3x3x4", "6x6x4"],
                            dtypes=["int8", "int8", "int32"])
        self.assertEqual([a.dtype for a in q.args], ["int8", "int8", "int32"])
        self.assertEqual({a.dtype for a in benchfarm.trial("x", "k", shapes=[[4], [4]],
                                                           dtypes="int16").args}, {"int16"})
        with self.assertRaisesRegex(ValueError, "dtypes: 2 for 3 shapes"):
            benchfarm.trial("x", "k", shapes=[[4], [4], [4]], dtypes=["int8", "int8"])
        with self.assertRaisesRegex(ValueError, "dtypes: give shapes too"):
            benchfarm.trial("x", "k", dtypes="int8")
        self.assertEqual((t.measure.number, t.measure.repeat, t.measure.min_repeat_ms,
                          t.measure.timeout_ms), (5, 4, 20, 5000))
        self.assertEqual((t.check_outputs, t.seed, t.priority, t.board_id), (False, 7, 3, "m3-0"))
        self.assertEqual(dict(t.labels), {"core": "cortex-m3"})
        self.assertEqual(t.op.template_op.version, "0123456789abcdef")
        self.assertEqual(list(t.op.template_op.image_pool), ["tile_oc=8", "tile_oc=4"])
        default = benchfarm.trial("matmul", "host-process")
        self.assertEqual(len(default.args), 0, "the op's default shapes")
        self.assertEqual((default.measure.target_rel_ci, default.measure.budget_ms,
                          default.measure.max_repeat), (0, 0, 0), "the fixed mode by default")
        adaptive = benchfarm.trial("matmul", "host-process", target_rel_ci=0.01, budget_ms=500,
                                   max_repeat=64)
        self.assertEqual((adaptive.measure.target_rel_ci, adaptive.measure.budget_ms,
                          adaptive.measure.max_repeat), (0.01, 500, 64))
        with self.assertRaisesRegex(ValueError, "target_rel_ci"):
            benchfarm.trial("matmul", "host-process", target_rel_ci=5)
        with self.assertRaisesRegex(ValueError, "give target_rel_ci"):
            benchfarm.trial("matmul", "host-process", max_repeat=10)
        self.assertTrue(default.check_outputs)
        self.assertEqual(benchfarm.knob_text(8.0), "8")
        with self.assertRaises(ValueError):
            benchfarm.trial("matmul", "host-process", shapes=["32by32"])

    def test_bad_trial_dict_is_value_error(self):
        farm = benchfarm.Client("127.0.0.1:1", insecure=True)
        self.addCleanup(farm.close)
        with self.assertRaisesRegex(ValueError, r"trials\[1\]"):
            farm.submit([{"board_kind": "host-process"}, {"board_kind": "x", "no_such_field": 1}])
        with self.assertRaises(TypeError):
            farm.submit(["matmul"])

    def test_load_op(self):
        directory = os.path.join(TESTDATA, "dot")
        for path in (directory, os.path.join(directory, "op.json")):
            op = benchfarm.load_op(path)
            self.assertEqual(op.name, "dot")
            self.assertEqual(op.spec.op, "dot")
            self.assertEqual(op.spec.reference_entry, "my_dot_ref")
            self.assertEqual(list(op.spec.sources), ["dot.c"])
            self.assertEqual(dict(op.spec.dims), {"N": 256, "ONE": 1})
            self.assertEqual([a.name for a in op.spec.args], ["A", "B", "C"])
            self.assertEqual([v.number_value for v in op.spec.knobs[0].values], [1, 2, 4])
            self.assertEqual(sorted(op.files), ["dot.c", "dot_args.h"])
            self.assertIn("BF_KNOB(unroll)", op.files["dot.c"])
            self.assertEqual(op.version, "", "the tracker computes the version")
        with self.assertRaisesRegex(ValueError, "sources: no file"):
            missing = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
            shutil.copy(os.path.join(directory, "op.json"), missing)
            benchfarm.load_op(missing)

    def test_close_once_and_as_context_manager(self):
        with benchfarm.Client("127.0.0.1:%d" % _free_port(), insecure=True) as farm:
            self.assertFalse(farm.closed)
        self.assertTrue(farm.closed)
        farm.close()  # again: nothing
        with self.assertRaises(ValueError):
            farm.boards()

    def test_unreachable_tracker(self):
        for kwargs in ({"insecure": True}, {"ca": FARM.ca, "token": "t"}):
            farm = benchfarm.Client("127.0.0.1:%d" % _free_port(), timeout=5, **kwargs)
            self.addCleanup(farm.close)
            with self.assertRaises(benchfarm.TrackerError) as cm:
                farm.boards()
            self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)
            self.assertIn("cannot reach tracker at 127.0.0.1:", str(cm.exception))

    def test_unavailable_is_retried_once_the_tracker_was_reached(self):
        class Unavailable(grpc.RpcError):
            def code(self):
                return grpc.StatusCode.UNAVAILABLE

            def details(self):
                return "Socket closed"

        class Stub:  # answers, then is unavailable twice (a standby taking over), then answers
            def __init__(self, failures):
                self.failures, self.calls = failures, 0

            def QueueSummary(self, request, timeout):
                self.calls += 1
                if 1 < self.calls <= 1 + self.failures:
                    raise Unavailable()
                return pb.QueueSummaryResponse()

        farm = benchfarm.Client("127.0.0.1:%d" % _free_port(), insecure=True, timeout=5)
        self.addCleanup(farm.close)
        farm._stub = Stub(failures=2)
        farm._call("QueueSummary", pb.QueueSummaryRequest())
        farm._call("QueueSummary", pb.QueueSummaryRequest())
        self.assertEqual(farm._stub.calls, 4)
        # Never reached: the first UNAVAILABLE is the answer.
        fresh = benchfarm.Client("127.0.0.1:%d" % _free_port(), insecure=True, timeout=5)
        self.addCleanup(fresh.close)
        fresh._stub = Stub(failures=2)
        fresh._stub.calls = 1
        with self.assertRaises(benchfarm.TrackerError) as cm:
            fresh._call("QueueSummary", pb.QueueSummaryRequest())
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertEqual(fresh._stub.calls, 2)

    def test_address_from_environment(self):
        with _Environ(BENCHFARM_TRACKER="farm.example:7171", BENCHFARM_INSECURE="1"):
            self.assertEqual(benchfarm.Client().address, "farm.example:7171")
            self.assertEqual(benchfarm.Client("other:1").address, "other:1")
            del os.environ["BENCHFARM_TRACKER"]
            self.assertEqual(benchfarm.Client().address, "localhost:7070")

    def test_no_ca_is_value_error(self):
        for kwargs in ({}, {"token": "t"}, {"insecure": False}):
            with self.assertRaisesRegex(ValueError, "pass ca= or set BENCHFARM_CA"):
                benchfarm.Client("127.0.0.1:1", **kwargs)
        with _Environ(BENCHFARM_INSECURE="1"):
            with self.assertRaisesRegex(ValueError, "BENCHFARM_CA"):
                benchfarm.Client("127.0.0.1:1", insecure=False)  # the argument wins
        with _Environ(BENCHFARM_INSECURE="0"):
            with self.assertRaisesRegex(ValueError, "BENCHFARM_CA"):
                benchfarm.Client("127.0.0.1:1")

    def test_insecure(self):
        with _Environ(BENCHFARM_INSECURE="1", LOGNAME="someone", USER="someone"):
            farm = benchfarm.Client("127.0.0.1:1")
        self.assertTrue(farm.insecure)
        self.assertEqual(farm.client_id, "someone", "plain text: $USER names the caller")
        self.assertIn("insecure=True", repr(farm))
        farm.close()
        farm = benchfarm.Client("127.0.0.1:1", client_id="me", insecure=True)
        self.assertEqual(farm.client_id, "me")
        farm.close()

    def test_bad_credentials_are_value_errors(self):
        with self.assertRaisesRegex(ValueError, "both cert= and key="):
            benchfarm.Client("127.0.0.1:1", ca=FARM.ca, cert=FARM.ca)
        with self.assertRaisesRegex(ValueError, "cannot read the CA certificate .*no-such.pem"):
            benchfarm.Client("127.0.0.1:1", ca=os.path.join(FARM.work, "no-such.pem"))
        with self.assertRaisesRegex(ValueError, "cannot read the token file"):
            benchfarm.Client("127.0.0.1:1", ca=FARM.ca, token_file=os.path.join(FARM.work, "none"))
        with _Environ(BENCHFARM_CERT=FARM.ca, BENCHFARM_KEY=None):
            with self.assertRaisesRegex(ValueError, "BENCHFARM_CERT and BENCHFARM_KEY"):
                benchfarm.Client("127.0.0.1:1", ca=FARM.ca)

    def test_kendall_tau(self):
        self.assertAlmostEqual(benchfarm.kendall_tau([1, 2, 3], [1, 2, 3]), 1.0)
        self.assertAlmostEqual(benchfarm.kendall_tau([1, 2, 3], [3, 2, 1]), -1.0)
        self.assertAlmostEqual(benchfarm.kendall_tau([1, 2, 3], [1, 3, 2]), 1 / 3)
        self.assertEqual(benchfarm.kendall_tau([1], [1]), 0.0)

    def test_cost_text(self):
        job = pb.Job(job_id="j-1", state=pb.DONE)
        self.assertEqual(benchfarm.cost_text(job), "-")
        job.result.costs_s.extend([1e-3, 1.01e-3, 1.02e-3])
        s = job.result.stats
        s.count, s.median_s, s.rel_half_width, s.unstable = 3, 1.01e-3, 0.0099, False
        self.assertEqual(benchfarm.cost_text(job), "1.01 ms +-1.0 %")
        self.assertEqual(benchfarm.stats_of(job), job.result.stats)
        self.assertEqual(benchfarm.stats_of(job.result).median_s, 1.01e-3)
        s.rel_half_width, s.unstable = 0.125, True
        job.result.cpu_hz = 168e6
        self.assertEqual(benchfarm.cost_text(job), "1.01 ms +-12 % UNSTABLE = 169,680 cycles")
        self.assertEqual(benchfarm.cost_text(job.result.stats), "1.01 ms +-12 % UNSTABLE")
        # QEMU -icount's clock counts instructions: never "cycles" of a pseudo clock.
        job.result.emulation = "qemu-icount"
        self.assertEqual(benchfarm.cost_text(job), "1.01 ms +-12 % UNSTABLE = 169,680 instructions")
        s.count, s.median_s = 1, 2.5e-8
        self.assertEqual(benchfarm.cost_text(s), "25 ns +-? UNSTABLE")

    def test_measure_result(self):
        job = pb.Job(job_id="j-1", state=pb.DONE)
        job.result.costs_s.extend([2e-5, 3e-5])
        job.result.stages.build_s = 0.5
        job.result.stages.measure_s = 0.25
        job.result.finished_at.seconds = 1700000000
        self.assertEqual(benchfarm.measure_result(job),
                         benchfarm.MeasureResult((2e-5, 3e-5), 0, 0.75, 1700000000.0, ""))
        failed = pb.Job(job_id="j-2", state=pb.DONE)
        failed.result.error_code = pb.DEVICE_RESET
        failed.result.autotvm_error_no = 4
        failed.result.message = "fault: MemManage"
        r = benchfarm.measure_result(failed)
        self.assertEqual((r.costs, r.error_no, r.error_msg),
                         ((1e9,), 4, "DEVICE_RESET: fault: MemManage"))


# ---- JUnit XML for Bazel ($XML_OUTPUT_FILE), one <testcase> per test ---------------------------

class _XmlResult(unittest.TextTestResult):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cases = []
        self._started = {}

    def startTest(self, test):
        self._started[test.id()] = time.monotonic()
        super().startTest(test)

    def _record(self, test, outcome, detail=""):
        began = self._started.get(test.id(), time.monotonic())
        self.cases.append((test.id(), outcome, detail, time.monotonic() - began))

    def addSuccess(self, test):
        super().addSuccess(test)
        self._record(test, "ok")

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._record(test, "failure", self.failures[-1][1])

    def addError(self, test, err):
        super().addError(test, err)
        self._record(test, "error", self.errors[-1][1])

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._record(test, "skipped", reason)


def _write_xml(path, cases):
    suite = ET.Element("testsuite", name="python/client_test", tests=str(len(cases)),
                       failures=str(sum(c[1] == "failure" for c in cases)),
                       errors=str(sum(c[1] == "error" for c in cases)),
                       skipped=str(sum(c[1] == "skipped" for c in cases)))
    for test_id, outcome, detail, seconds in cases:
        classname, _, name = test_id.rpartition(".")
        classname = classname.replace("__main__", "python.client_test")
        case = ET.SubElement(suite, "testcase", classname=classname, name=name,
                             time="%.3f" % seconds)
        if outcome != "ok":
            ET.SubElement(case, outcome, message=detail.strip().splitlines()[-1][:200]
                          if detail.strip() else outcome).text = detail
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main():
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    runner = unittest.TextTestRunner(verbosity=2, resultclass=_XmlResult)
    result = runner.run(suite)
    if os.environ.get("XML_OUTPUT_FILE"):
        _write_xml(os.environ["XML_OUTPUT_FILE"], result.cases)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
