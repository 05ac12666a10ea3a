#!/usr/bin/env bash
# The friction a new user met (issue 36 §4), end to end with farmctl against a tracker and an
# agent with one host-process board:
#   cancel   a trial whose kernel spins forever, with a timeout of 5 minutes, cancelled while its
#            call is on the board: the board is free for the next trial within seconds (the call
#            abandoned, the board process stopped and restarted), and farmctl prints CANCELLED.
set -euo pipefail

TEST_NAME=friction
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/friction"
rm -rf "$work" && mkdir -p "$work"
agent_metrics=$(free_port)
root=$PWD
ctl() { "$root/farmctl/farmctl" --tracker "127.0.0.1:$tracker_port" "$@"; }
metric() {  # the value of one agent series, e.g. metric 'benchfarm_agent_builds_total{result="ok"}'
  http_get "http://127.0.0.1:$agent_metrics/metrics" | awk -v name="$1" '$1 == name { print $2 }'
}
# wait_get JOB REGEX [SECONDS]: waits until `farmctl get JOB` prints a line matching REGEX.
wait_get() {
  local limit=$((${3:-60} * 10))
  for _ in $(seq "$limit"); do
    if ctl get "$1" 2>/dev/null | grep -qE "$2"; then return 0; fi
    sleep 0.1
  done
  ctl get "$1" >&2 || true
  tail -20 "$work/agent.err" >&2
  fail "job $1: no line matching '$2' in farmctl get within ${3:-60} s"
}

agent_extra="metrics_address: \"127.0.0.1:$agent_metrics\""
start_host_farm "$work" friction-agent erin 'hp*=host-process' \
  'boards { id: "hp0" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }'

# ---- cancel reaches the board -----------------------------------------------------------------
cat >"$work/spin.c" <<'C'
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
BF_OPS_DECLARE_PACKED(spin);
BF_OPS_DECLARE_PACKED(spin) {
  for (;;) {
  }
}
BF_OPS_DECLARE_PACKED(spin_ref);
BF_OPS_DECLARE_PACKED(spin_ref) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t i;
  for (i = 0; i < x->shape[0]; ++i) ((float*)y->data)[i] = ((const float*)x->data)[i];
  return 0;
}
C
# A first trial warms the board (its runtime built, the board started).
warm=$(ctl submit --kind host-process --op add --shape 64,64,64)
ctl watch "$warm" | tail -1 | grep -q DONE || fail "the first trial did not finish"
builds=$(metric 'benchfarm_agent_builds_total{result="ok"}')
spin=$(ctl submit --kind host-process --c-source "$work/spin.c" --entry spin --reference spin_ref \
  --shape 64,64 --timeout-ms 300000)
wait_get "$spin" "^state +RUNNING"
# Its image is built: the call goes to the board a moment later (a start and a handshake).
for _ in $(seq 600); do
  [[ "$(metric 'benchfarm_agent_builds_total{result="ok"}')" != "$builds" ]] && break
  sleep 0.1
done
[[ "$(metric 'benchfarm_agent_builds_total{result="ok"}')" != "$builds" ]] || fail "the spin trial's image was not built"
sleep 2
ctl get "$spin" | grep -qE "^state +RUNNING" || { ctl get "$spin" >&2; fail "the spin trial is not running"; }
ctl cancel "$spin" >"$work/cancel.out"
grep -qx "$spin CANCELLED" "$work/cancel.out" || { cat "$work/cancel.out" >&2; fail "farmctl cancel prints CANCELLED"; }
cancelled_at=$(date +%s.%N)
next=$(ctl submit --kind host-process --op add --shape 64,64,64)
ctl watch "$next" >"$work/next.watch" &
watcher=$!
for _ in $(seq 300); do kill -0 "$watcher" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$watcher" 2>/dev/null; then
  kill "$watcher"
  tail -20 "$work/agent.err" >&2
  fail "the board was still busy with the cancelled trial 30 s later (its timeout is 300 s)"
fi
wait "$watcher" || true
free_s=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$cancelled_at")
tail -1 "$work/next.watch" | grep -qE " DONE host-process/add on hp0 attempt 1 [0-9.]+ (ns|us|ms) " || { cat "$work/next.watch" >&2; fail "the next trial did not succeed"; }
say "the next trial finished ${free_s} s after the cancel"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 15 else 1)" "$free_s" || fail "the board took ${free_s} s to be free"
grep -q "job $spin cancelled: its call was abandoned" "$work/agent.err" "$work/agent.out" || { tail -20 "$work/agent.err" >&2; fail "the agent did not abandon the call"; }
ctl get "$spin" >"$work/spin.get"
grep -qE "^state +CANCELLED$" "$work/spin.get" || { cat "$work/spin.get" >&2; fail "farmctl get prints CANCELLED"; }
ctl results >"$work/results.txt"
grep -E "^$spin " "$work/results.txt" | grep -q " CANCELLED " || { cat "$work/results.txt" >&2; fail "farmctl results prints CANCELLED"; }
ctl watch "$spin" | grep -q " $spin CANCELLED host-process/" || fail "farmctl watch prints CANCELLED"
if grep -q "CANCELLED_STATE" "$work/spin.get" "$work/results.txt"; then fail "the enum's name was printed"; fi

stop_daemons
say "PASS"
