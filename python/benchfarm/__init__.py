"""benchfarm: a Python client for benchfarm's tracker (benchfarm.v1.Tracker over gRPC).

    import benchfarm
    with benchfarm.Client() as farm:   # $BENCHFARM_TRACKER, else localhost:7070; TLS verified
                                       # with $BENCHFARM_CA, as the user of $BENCHFARM_TOKEN
        print([b.board_id for b in farm.boards()])
        results = farm.measure_batch([benchfarm.trial("matmul", "host-process", knobs={"tile_m": 16})])
        jobs = farm.measure_jobs([benchfarm.trial("matmul", "host-process", target_rel_ci=0.01)])
    print(benchfarm.cost_text(jobs[0]), jobs[0].result.stats.median_s)   # "12.3 us +-0.4 %"

Needs Debian's python3-grpcio and python3-protobuf, and the generated modules on the path:
`python/build_stubs.sh OUT_DIR`, then PYTHONPATH=python:OUT_DIR (README.md, "Python client").
The messages are benchfarm.benchfarm_pb2 (Trial, Job, Result, Board, Operator, ...) and
benchfarm.knobs_pb2 (OpTemplate).
"""

from benchfarm._stubs import benchfarm_pb2, benchfarm_pb2_grpc, knobs_pb2
from benchfarm.client import (
    DEFAULT_ADDRESS,
    FAILED_COST,
    Client,
    MeasureResult,
    TrackerError,
    cost_text,
    knob_text,
    load_op,
    kendall_tau,
    measure_result,
    stats_of,
    trial,
)

__all__ = [
    "Client",
    "DEFAULT_ADDRESS",
    "FAILED_COST",
    "MeasureResult",
    "TrackerError",
    "benchfarm_pb2",
    "benchfarm_pb2_grpc",
    "cost_text",
    "knob_text",
    "knobs_pb2",
    "load_op",
    "kendall_tau",
    "measure_result",
    "stats_of",
    "trial",
]
