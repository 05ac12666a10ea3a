#!/usr/bin/env bash
# //tests:chaos_test: the short chaos run (tests/chaos.py --short): a tracker and an agent with
# three host-process boards under a supervisor, 300 trials of the call-logging kernel
# (tests/chaos_op), one cycle of faults (kill -9 agent, kill -9 tracker, SIGSTOP agent past the
# lease — no board quarantined, serving within 5 s of SIGCONT —, the agent's certificate revoked
# mid-run — its stream ended within 10 s — then re-enrolled, kill -9 a board process, a full
# database disk, bytes dropped on every board link for 5 s), then exact accounting. Fails on any
# lost, doubled, unmeasured or stuck trial, or a fault's own rule broken. Needs root for the
# database's tmpfs (otherwise that fault is skipped, visibly) and Debian's python3-grpcio.
set -euo pipefail
python=/usr/bin/python3
[[ -x "$python" ]] || python=python3
"$python" -c 'import grpc, google.protobuf' || {
  echo "chaos_test: $python has no grpc/protobuf: apt-get install python3-grpcio python3-protobuf" >&2
  exit 1
}
export PYTHONPATH="$PWD/python"
exec "$python" -P tests/chaos.py --short --work "${TEST_TMPDIR:?}/chaos" \
  --tracker-bin "$PWD/tracker/tracker" --agent-bin "$PWD/agent/agent" \
  --pki-sh "$PWD/deploy/pki.sh" --op-dir "$PWD/tests/chaos_op" "$@"
