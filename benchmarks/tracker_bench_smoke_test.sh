#!/usr/bin/env bash
# Smoke test for tracker_bench: a --quick --repeat=2 run exits 0 and prints the table's rows (each
# its median round, with the rounds' range) under their topologies' names, --only with
# --agents-per-connection prints that row alone, --only=submit:100 prints that row alone,
# --vs-tvm without TVM's tracker says so and prints benchfarm's side, a --quick --flood run prints
# its baseline and flood rows, the flood's with the dashboard's walks, and a --quick --restart run
# its rows, --submitting runs a row's latency samples beside a submitting client, and the lean
# agents (WireAgents: HTTP/2 framed by hand) register, take offers and have their results
# acknowledged (a row whose agent fails, or whose boards are not all offered work, fails the run).
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
# dispatch without and with the submissions, shares, latencies. Without a number of clients
# given, a row's trials are as few clients' as the per-client cap allows: one in these small rows.
# Each row under its topology's name: one connection per agent (1, 4, 16 boards per agent), and
# the multiplexed one labelled as such.
# under_topology OUT ROW TOPOLOGY: ROW (a regex) is a row with its figures, under TOPOLOGY's line.
under_topology() {
  awk -v row="^$2" -v topology="$3:" '
    /^[a-z].*:$/ && !/^(disk|tmpfs|pg) / { current = $0 }
    $0 ~ row && $0 ~ /[0-9]+ +[0-9.]+ us +[0-9.]+ us +[0-9]+% +[0-9]+% +[0-9.]+ ms +[0-9.]+ ms .* [0-9.]+-[0-9.]+ us$/ &&
      current == topology { found = 1 }
    END { exit !found }' "$1"
}
one="one connection per agent, 1 board per agent"
for row in "disk +10 +1 +100 +1 +500 " "disk +20 +1 +1000 +1 +500 " "disk +20 +1 +1000 +3 +500 " \
  "tmpfs +10 +1 +100 +1 +500 " "pg +10 +1 +100 +1 +500 "; do
  under_topology "$out" "$row" "$one" ||
    fail "no dispatch row '$row' with figures and its rounds' range under '$one'"
done
under_topology "$out" "disk +5 +4 +100 +1 +500 " "one connection per agent, 4 boards per agent" ||
  fail "no dispatch row of 4 boards per agent"
under_topology "$out" "disk +2 +16 +100 +1 +500 " "one connection per agent, 16 boards per agent" ||
  fail "no dispatch row of 16 boards per agent"
lean="one connection per agent, 1 board per agent, lean agents (HTTP/2 framed by hand, as lean as tvmgen)"
under_topology "$out" "disk +10 +1 +100 +1 +500 " "$lean" || fail "no dispatch row of lean agents"
mux="multiplexed: 50 agents per connection (not how a farm connects)"
under_topology "$out" "disk +60 +1 +100 +1 +500 " "$mux" || fail "no multiplexed dispatch row"
[[ $(grep -c "clients, round 2/2: done" "$out") -eq 9 ]] ||
  fail "--repeat=2 did not run every dispatch row twice"
# One dispatch row alone, its agents multiplexed (A/B runs of a topology).
only="$dir/tracker_bench_only.txt"
run "$only" "$bin" --quick --only=disk:60:100 --agents-per-connection=50
under_topology "$only" "disk +60 +1 +100 +1 +500 " "$mux" ||
  fail "--only=disk:60:100 --agents-per-connection=50 did not print that multiplexed row"
[[ $(grep -cE "^(disk|tmpfs|pg) " "$only") -eq 1 ]] || fail "--only printed more than its row"
if "$bin" --quick --agents-per-connection=50 >/dev/null 2>&1; then
  fail "--agents-per-connection without a dispatch --only row was accepted"
fi
# One row of lean agents alone; lean agents are one connection each, and only in a dispatch row.
lean_only="$dir/tracker_bench_lean.txt"
run "$lean_only" "$bin" --quick --only=disk:20:100:2 --lean-agents
under_topology "$lean_only" "disk +20 +2 +100 +1 +500 " \
  "one connection per agent, 2 boards per agent, lean agents (HTTP/2 framed by hand, as lean as tvmgen)" ||
  fail "--only=disk:20:100:2 --lean-agents did not print that row"
for bad in "--lean-agents" "--only=submit:100 --lean-agents" \
  "--only=disk:60:100 --agents-per-connection=50 --lean-agents"; do
  # shellcheck disable=SC2086
  if "$bin" --quick $bad >/dev/null 2>&1; then fail "'$bad' was accepted"; fi
done
# --vs-tvm without the peer: it says so and runs benchfarm's side alone (the tests do not need
# TVM's tracker or python3-tornado).
vs="$dir/tracker_bench_vs_tvm.txt"
run "$vs" "$bin" --quick --vs-tvm=/nonexistent/tvm-tracker
grep -q "no TVM tracker at /nonexistent/tvm-tracker" "$vs" || fail "--vs-tvm did not say the peer is absent"
for boards in 10 50; do
  for side in "benchfarm" "benchfarm, lean agents"; do
    grep -qE "^$boards +$side +[0-9]+ +[0-9.]+ ms +[0-9.]+ us +[0-9.]+ us +[0-9.]+-[0-9.]+$" "$vs" ||
      fail "no --vs-tvm '$side' row for $boards boards with figures"
  done
  grep -q "load [0-9.]* at the start" "$vs" || fail "--vs-tvm did not print the load at a start"
done
if grep -q "TVM + TCP_NODELAY  " "$vs"; then fail "--vs-tvm printed TVM rows without TVM"; fi
# --submitting: the row's latency samples taken while another client submits batches in a loop
# (here 5 ms apart); it says how many batches went in meanwhile (at least one).
busy="$dir/tracker_bench_submitting.txt"
run "$busy" "$bin" --quick --only=disk:10:100 --submitting=50:5
under_topology "$busy" "disk +10 +1 +100 +1 +500 " "$one" ||
  fail "--submitting=50:5 did not print its dispatch row"
grep -qE "^--submitting=50:5: .*batches of 50 trials in a loop, 5 ms apart" "$busy" ||
  fail "--submitting=50:5 printed no legend"
grep -qE "batches per row: [1-9][0-9]*$" "$busy" || fail "--submitting=50:5 submitted no batch"
for bad in 0 50:x 50:1:2 50:-1; do
  if "$bin" --quick --only=disk:10:100 --submitting=$bad >/dev/null 2>&1; then
    fail "--submitting=$bad was accepted"
  fi
done
# One submission row alone (A/B runs): that row, no dispatch rows.
submit="$dir/tracker_bench_submit.txt"
run "$submit" "$bin" --quick --only=submit:100
if ! grep -qE "^submit, batches of 100 +[0-9]+ +[0-9.]+ +[0-9]+ +[0-9.]+ us$" "$submit" ||
  grep -q "batches of 1000" "$submit" || grep -qE "^(disk|tmpfs|pg) " "$submit"; then
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
