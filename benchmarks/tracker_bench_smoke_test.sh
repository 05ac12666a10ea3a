#!/usr/bin/env bash
# Smoke test for tracker_bench: a --quick --repeat=2 run exits 0 and prints the table's rows (each
# its median round, with the rounds' range), and so does a --quick --flood run (its baseline and
# flood rows).
# Usage: tracker_bench_smoke_test.sh BINARY
set -euo pipefail
bin="$1"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
out="$dir/tracker_bench.txt"
if ! "$bin" --quick --repeat=2 2>&1 | tee "$out"; then
  echo "FAIL: $bin --quick --repeat=2 exited non-zero" >&2
  exit 1
fi
for row in "submit, batches of 100 " "submit, batches of 1000 "; do
  if ! grep -q "^$row" "$out"; then
    echo "FAIL: no '$row' row in the table" >&2
    exit 1
  fi
done
# Dispatch rows: store, agents, boards per agent, queued, dispatches, per s, CPU per dispatch,
# shares, latencies.
for row in "disk +10 +1 +100 +500 " "disk +20 +1 +1000 +500 " "disk +5 +4 +100 +500 " \
  "tmpfs +10 +1 +100 +500 " "pg +10 +1 +100 +500 "; do
  if ! grep -qE "^$row+[0-9]+ +[0-9.]+ us +[0-9]+% +[0-9]+% +[0-9.]+ ms +[0-9.]+ ms .* [0-9.]+-[0-9.]+ us$" "$out"; then
    echo "FAIL: no dispatch row '$row' with figures and its rounds' range in the table" >&2
    exit 1
  fi
done
if [[ $(grep -c "queued, round 2/2: done" "$out") -ne 5 ]]; then
  echo "FAIL: --repeat=2 did not run every dispatch row twice" >&2
  exit 1
fi
flood="$dir/tracker_bench_flood.txt"
if ! "$bin" --quick --flood 2>&1 | tee "$flood"; then
  echo "FAIL: $bin --quick --flood exited non-zero" >&2
  exit 1
fi
for row in "baseline " "flood "; do
  if ! grep -qE "^$row +[0-9.]+ +[0-9]+ " "$flood"; then
    echo "FAIL: no '$row' row with figures in the --flood table" >&2
    exit 1
  fi
done
echo "PASS: tracker_bench tables printed"
