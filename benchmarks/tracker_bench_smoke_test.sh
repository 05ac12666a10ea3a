#!/usr/bin/env bash
# Smoke test for tracker_bench: a --quick run exits 0 and prints the table's rows.
# Usage: tracker_bench_smoke_test.sh BINARY
set -euo pipefail
bin="$1"
out="${TEST_TMPDIR:-$(mktemp -d)}/tracker_bench.txt"
if ! "$bin" --quick 2>&1 | tee "$out"; then
  echo "FAIL: $bin --quick exited non-zero" >&2
  exit 1
fi
for row in "submit, batches of 100 " "submit, batches of 1000 " "dispatch, 10 agents" "dispatch, 20 agents"; do
  if ! grep -q "^$row" "$out"; then
    echo "FAIL: no '$row' row in the table" >&2
    exit 1
  fi
done
echo "PASS: tracker_bench table printed"
