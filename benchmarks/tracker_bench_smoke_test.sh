#!/usr/bin/env bash
# Smoke test for tracker_bench: a --quick --repeat=2 run exits 0 and prints the table's rows (each
# its median round, with the rounds' range), --only=submit:100 prints that row alone, and a
# --quick --flood run prints its baseline and flood rows, the flood's with the dashboard's walks,
# and a --quick --restart run its rows.
# Usage: tracker_bench_smoke_test.sh BINARY
set -euo pipefail
bin="$1"
dir="${TEST_TMPDIR:-$(mktemp -d)}"
source "$(dirname "$0")/smoke_lib.sh"
out="$dir/tracker_bench.txt"
run "$out" "$bin" --quick --repeat=2
# Submission rows: trials, seconds, trials/s, the tracker's CPU per trial.
for row in "submit, batches of 100 " "submit, batches of 1000 "; do
  grep -qE "^$row +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ us$" "$out" ||
    fail "no '$row' row with figures in the table"
done
# Dispatch rows: store, agents, boards per agent, queued, clients, dispatches, per s, CPU per
# dispatch, shares, latencies. Without a number of clients given, a row's trials are as few
# clients' as the per-client cap allows: one in these small rows.
for row in "disk +10 +1 +100 +1 +500 " "disk +20 +1 +1000 +1 +500 " "disk +20 +1 +1000 +3 +500 " \
  "disk +5 +4 +100 +1 +500 " "tmpfs +10 +1 +100 +1 +500 " "pg +10 +1 +100 +1 +500 "; do
  grep -qE "^$row+[0-9]+ +[0-9.]+ us +[0-9]+% +[0-9]+% +[0-9.]+ ms +[0-9.]+ ms .* [0-9.]+-[0-9.]+ us$" "$out" ||
    fail "no dispatch row '$row' with figures and its rounds' range in the table"
done
[[ $(grep -c "clients, round 2/2: done" "$out") -eq 6 ]] ||
  fail "--repeat=2 did not run every dispatch row twice"
# One submission row alone (A/B runs): that row, no dispatch rows.
one="$dir/tracker_bench_submit.txt"
run "$one" "$bin" --quick --only=submit:100
if ! grep -qE "^submit, batches of 100 +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ us$" "$one" ||
  grep -q "batches of 1000" "$one" || grep -qE "^(disk|tmpfs|pg) " "$one"; then
  fail "--only=submit:100 did not print that row alone"
fi
if "$bin" --quick --only=submit:0 >/dev/null 2>&1; then
  fail "--only=submit:0 was accepted"
fi
# More clients than trials: refused, not a row of clients with nothing queued.
if "$bin" --quick --only=disk:1:0:1:100000 >/dev/null 2>&1; then
  fail "--only=disk:1:0:1:100000 (more clients than trials) was accepted"
fi
flood="$dir/tracker_bench_flood.txt"
run "$flood" "$bin" --quick --flood
for row in "baseline " "flood "; do
  grep -qE "^$row +[0-9.]+ +[0-9]+ +[0-9.]+ ms +[0-9.]+ ms +[0-9]+ " "$flood" ||
    fail "no '$row' row with figures in the --flood table"
done
# The dashboard walked the table while the flood's trials ran (a failed walk fails the run).
awk '$1 == "flood" && $8 > 0 { found = 1 } END { exit !found }' "$flood" ||
  fail "the flood row shows no dashboard walks"
# --restart: agents reconnect to a restarted tracker holding their trials (the run fails if a
# trial is offered again, i.e. an attempt was lost); a row per farm size with its four times.
restart="$dir/tracker_bench_restart.txt"
run "$restart" "$bin" --quick --restart
for agents in 20 50; do
  grep -qE "^$agents +[0-9.]+ s +[0-9.]+ s +[0-9.]+ s +[0-9.]+ s$" "$restart" ||
    fail "no --restart row for $agents agents with figures"
done
echo "PASS: tracker_bench tables printed"
