#!/usr/bin/env bash
# //python:client_test: python/client_test.py with Debian's python3 (python3-grpcio,
# python3-protobuf). In runfiles, python/ holds the package (benchfarm/) and the generated stubs
# (proto/, from //python:stubs) side by side: that directory is the whole PYTHONPATH. -P keeps the
# script's own (source) directory off sys.path, so only the runfiles are imported.
set -euo pipefail
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
"$python" -c 'import grpc, google.protobuf' || {
  echo "client_test: $python has no grpc/protobuf: apt-get install python3-grpcio python3-protobuf" >&2
  exit 1
}
export PYTHONPATH="$PWD/python"
exec "$python" -P python/client_test.py "$@"
