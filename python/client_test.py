"""The Python client against a real farm: the tracker binary (//tracker:tracker, a temporary
database) and the agent binary (//agent:agent) with one host-process board, both started here as
child processes, plus a second agent whose board is registered and then left OFFLINE (its kind
keeps jobs QUEUED, for cancel).

Run by //python:client_test (python/client_test.sh). By hand, from the workspace root after
`bazel build //tracker //agent //python:stubs`:

    PYTHONPATH=python:bazel-bin/python BENCHFARM_TRACKER_BIN=bazel-bin/tracker/tracker \\
        BENCHFARM_AGENT_BIN=bazel-bin/agent/agent /usr/bin/python3 -P python/client_test.py

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
                                os.path.join(self.work, "tracker.db"), "--metrics", "off"])
        self.wait_line("tracker", "listening on")

    def start_agent(self, name, board_id, kind):
        root = os.path.join(self.work, name)
        config = os.path.join(self.work, name + ".textproto")
        with open(config, "w") as f:
            f.write('agent_id: "%s"\ntracker_address: "%s"\n' % (name, self.address))
            f.write('scratch_dir: "%s/scratch"\ncache_dir: "%s/cache"\nspool_dir: "%s/spool"\n'
                    % (root, root, root))
            f.write('boards { id: "%s" kind: "%s" host_process {} '
                    'build_template: "agent/templates/host-process" }\n' % (board_id, kind))
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
        FARM.start_agent(AGENT, BOARD, KIND)
        FARM.start_agent("parked-agent", PARKED_BOARD, PARKED_KIND)
        FARM.wait_line(AGENT, r"serving 1 boards")
        FARM.wait_line("parked-agent", r"serving 1 boards")
        client = benchfarm.Client(FARM.address, timeout=10)
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
    client_id = "py-test"

    def setUp(self):
        self.farm = benchfarm.Client(FARM.address, client_id=self.client_id, timeout=30)
        self.addCleanup(self.farm.close)

    def assertCode(self, cm, code, *fragments):
        err = cm.exception
        self.assertEqual(err.code, code, str(err))
        self.assertIn(code.name, str(err))
        for fragment in fragments:
            self.assertIn(fragment, err.message)

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
        self.assertEqual(done.trial.op.template_op.knobs["tile_m"], "16")
        self.assertEqual(self.farm.get(ids[0]).state, pb.DONE)
        # A finished job: watch yields its state at once and ends.
        self.assertEqual([e.state for e in self.farm.watch(ids[0], timeout=10)], [pb.DONE])

        found = [j for j in self.farm.results(op="matmul", kind=KIND) if j.job_id == ids[0]]
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0].state, pb.DONE)
        self.assertEqual(list(found[0].result.costs_s), list(r.costs_s))
        self.assertIn(ids[0], _ids(self.farm.results(state="DONE", client_id=self.client_id)))
        self.assertIn(ids[0], _ids(self.farm.results(state=pb.DONE)))
        self.assertNotIn(ids[0], _ids(self.farm.results(op="add")))
        self.assertNotIn(ids[0], _ids(self.farm.results(kind=PARKED_KIND)))
        self.assertNotIn(ids[0], _ids(self.farm.results(state="QUEUED")))

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

    def test_invalid_trial_raises(self):
        farm = benchfarm.Client(FARM.address, client_id="py-invalid", timeout=30)
        self.addCleanup(farm.close)
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
        self.assertEqual(farm.results(client_id="py-invalid"), [], "a refused batch queues nothing")
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
        farm = benchfarm.Client(FARM.address, client_id="py-paging", timeout=30)
        self.addCleanup(farm.close)
        ids = farm.submit([benchfarm.trial("matmul", PARKED_KIND, seed=s) for s in range(5)])
        self.addCleanup(lambda: [farm.cancel(i) for i in ids])
        all_at_once = farm.results(client_id="py-paging")
        self.assertEqual(_ids(all_at_once), ids)
        self.assertEqual(_ids(farm.results(client_id="py-paging", page_size=2)), ids)
        self.assertEqual(_ids(farm.results(client_id="py-paging", page_size=1, limit=None)), ids)
        self.assertEqual(_ids(farm.results(client_id="py-paging", page_size=2, limit=3)), ids[:3])
        self.assertEqual(farm.results(client_id="py-paging", limit=0), [])


def _ids_of_boards(boards):
    return [b.board_id for b in boards]


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
        self.assertEqual({a.dtype for a in t.args}, {"float32"})
        self.assertEqual((t.measure.number, t.measure.repeat, t.measure.min_repeat_ms,
                          t.measure.timeout_ms), (5, 4, 20, 5000))
        self.assertEqual((t.check_outputs, t.seed, t.priority, t.board_id), (False, 7, 3, "m3-0"))
        self.assertEqual(dict(t.labels), {"core": "cortex-m3"})
        self.assertEqual(t.op.template_op.version, "0123456789abcdef")
        self.assertEqual(list(t.op.template_op.image_pool), ["tile_oc=8", "tile_oc=4"])
        default = benchfarm.trial("matmul", "host-process")
        self.assertEqual(len(default.args), 0, "the op's default shapes")
        self.assertTrue(default.check_outputs)
        self.assertEqual(benchfarm.knob_text(8.0), "8")
        with self.assertRaises(ValueError):
            benchfarm.trial("matmul", "host-process", shapes=["32by32"])

    def test_bad_trial_dict_is_value_error(self):
        farm = benchfarm.Client("127.0.0.1:1")
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

    def test_unreachable_tracker(self):
        farm = benchfarm.Client("127.0.0.1:%d" % _free_port(), timeout=5)
        self.addCleanup(farm.close)
        with self.assertRaises(benchfarm.TrackerError) as cm:
            farm.boards()
        self.assertEqual(cm.exception.code, grpc.StatusCode.UNAVAILABLE)
        self.assertIn("cannot reach tracker at 127.0.0.1:", str(cm.exception))

    def test_address_from_environment(self):
        old = os.environ.get("BENCHFARM_TRACKER")
        try:
            os.environ["BENCHFARM_TRACKER"] = "farm.example:7171"
            self.assertEqual(benchfarm.Client().address, "farm.example:7171")
            self.assertEqual(benchfarm.Client("other:1").address, "other:1")
            del os.environ["BENCHFARM_TRACKER"]
            self.assertEqual(benchfarm.Client().address, "localhost:7070")
        finally:
            if old is not None:
                os.environ["BENCHFARM_TRACKER"] = old

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
