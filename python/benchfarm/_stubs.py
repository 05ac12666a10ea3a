"""The generated protobuf and gRPC modules of proto/benchfarm.proto and proto/knobs.proto.

They are not checked in: `python/build_stubs.sh OUT_DIR` (or `bazel build //python:stubs`, into
bazel-bin/python) writes them as the package `proto` (OUT_DIR/proto/benchfarm_pb2.py, ...), and
OUT_DIR goes on sys.path next to python/. This module imports them once, with a message that says
what to do when they are missing.
"""

try:
    import grpc  # noqa: F401  (checked here for the message below)
except ImportError as err:  # pragma: no cover - depends on the machine
    raise ImportError(
        "benchfarm needs gRPC for Python: apt-get install python3-grpcio python3-protobuf, and run "
        "Debian's python3 (/usr/bin/python3): %s" % err) from err

try:
    from proto import benchfarm_pb2, benchfarm_pb2_grpc, knobs_pb2
except ImportError as err:
    raise ImportError(
        "benchfarm: the generated modules proto/benchfarm_pb2.py, proto/benchfarm_pb2_grpc.py and "
        "proto/knobs_pb2.py are not on sys.path (%s). Generate them with "
        "`python/build_stubs.sh OUT_DIR` (or `bazel build //python:stubs`: bazel-bin/python) and "
        "run with PYTHONPATH=python:OUT_DIR." % err) from err

__all__ = ["benchfarm_pb2", "benchfarm_pb2_grpc", "knobs_pb2"]
