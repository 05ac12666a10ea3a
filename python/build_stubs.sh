#!/usr/bin/env bash
# python/build_stubs.sh OUT_DIR: generates the Python protobuf and gRPC modules of benchfarm's
# contract into OUT_DIR/proto/ — benchfarm_pb2.py, benchfarm_pb2_grpc.py, knobs_pb2.py and an
# __init__.py that makes `proto` a regular package — with Debian's protoc and grpc_python_plugin
# (packages protobuf-compiler, protobuf-compiler-grpc). The benchfarm package (python/benchfarm)
# imports them as `proto.benchfarm_pb2`, so put both directories on the path:
#
#   python/build_stubs.sh build/py
#   PYTHONPATH=python:build/py /usr/bin/python3 my_tuner.py
#
# Bazel's //python:stubs runs this same script (into bazel-bin/python). The stubs are generated,
# never checked in: they always match proto/*.proto. Override the tools with $PROTOC and
# $GRPC_PYTHON_PLUGIN.
set -euo pipefail

if [[ $# -ne 1 || -z "$1" ]]; then
  echo "usage: python/build_stubs.sh OUT_DIR" >&2
  exit 2
fi
protoc="${PROTOC:-protoc}"
plugin="${GRPC_PYTHON_PLUGIN:-/usr/bin/grpc_python_plugin}"
command -v "$protoc" >/dev/null || { echo "build_stubs: no $protoc (apt-get install protobuf-compiler)" >&2; exit 1; }
[[ -x "$plugin" ]] || { echo "build_stubs: no $plugin (apt-get install protobuf-compiler-grpc)" >&2; exit 1; }

mkdir -p "$1"
out="$(cd "$1" && pwd)"
# The workspace root: the protos are named by workspace path ("proto/knobs.proto"), as
# benchfarm.proto imports them, so the generated modules are proto/*_pb2.py.
cd "$(dirname "${BASH_SOURCE[0]}")/.."

"$protoc" --proto_path=. --proto_path=/usr/include --python_out="$out" \
  proto/knobs.proto proto/benchfarm.proto
"$protoc" --proto_path=. --proto_path=/usr/include \
  --plugin=protoc-gen-grpc_python="$plugin" --grpc_python_out="$out" proto/benchfarm.proto
echo '"""benchfarm'"'"'s generated protobuf and gRPC modules (python/build_stubs.sh)."""' \
  >"$out/proto/__init__.py"
