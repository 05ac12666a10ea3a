#!/usr/bin/env bash
# Active/standby as a user runs it, with the real daemons and TLS: two trackers on one SQLite
# database (the second waits as a standby), a real agent with one host-process board, and
# `farmctl tune`, both given the two addresses. The serving tracker is killed with SIGKILL while
# the tune runs; the standby takes over, and the tune finishes without anyone being restarted:
# every trial has exactly one result.
set -euo pipefail

TEST_NAME=standby
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/standby"
rm -rf "$work" && mkdir -p "$work"
port_a=$(free_port)
port_b=$(free_port)
trackers="127.0.0.1:$port_a,127.0.0.1:$port_b"

tracker/tracker --listen "127.0.0.1:$port_a" --database "$work/tracker.db" --state_dir "$work/pki" \
  --metrics off >"$work/a.out" 2>"$work/a.err" &
leader=$!
wait_line "$work/a.out" "listening on" >/dev/null
tracker/tracker --listen "127.0.0.1:$port_b" --database "$work/tracker.db" --state_dir "$work/pki" \
  --metrics off >"$work/b.out" 2>"$work/b.err" &
pids+=($!)
wait_line "$work/b.err" "standby: tracker pid $leader serves" >/dev/null
use_token "$work/pki" standby

cat >"$work/agent.textproto" <<CONFIG
agent_id: "standby-agent"
tracker_address: "$trackers"
scratch_dir: "$work/agent/scratch"
cache_dir: "$work/agent/cache"
spool_dir: "$work/agent/spool"
$(agent_credentials "$work/pki" standby-agent 'hp-*=host-process')
boards { id: "hp-0" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }
CONFIG
agent/agent --config "$work/agent.textproto" >"$work/agent.out" 2>"$work/agent.err" &
pids+=($!)
wait_line "$work/agent.out" "serving 1 boards" >/dev/null

say "tuning matmul: 32 trials in batches of 4, the serving tracker killed after the first results"
farmctl/farmctl tune --tracker "$trackers" --op matmul --kind host-process --strategy random \
  --trials 32 --batch 4 --out "$work/tune" >"$work/tune.out" 2>"$work/tune.err" &
tune=$!
log="$work/tune/matmul.autotvm.log"
measured() { [[ -f "$log" ]] && wc -l <"$log" || echo 0; }
for _ in $(seq 600); do
  [[ $(measured) -ge 8 ]] && break
  sleep 0.1
done
[[ $(measured) -ge 8 ]] || { cat "$work/tune.err" >&2; fail "no results before the kill"; }
kill -KILL "$leader"
wait "$leader" 2>/dev/null || true
killed=$(date +%s.%N)
wait_line "$work/b.out" "listening on" >/dev/null
say "the standby took over in $(python3 -c "import time,sys; print('%.2f s' % (time.time() - float(sys.argv[1])))" "$killed")"
wait "$tune" || { cat "$work/tune.out" "$work/tune.err" "$work/agent.err" >&2; fail "farmctl tune failed across the switch"; }

# Every trial once, every one measured: the results as the new leader has them.
farmctl/farmctl results --tracker "$trackers" --op matmul --kind host-process --json >"$work/results.json"
python3 - "$work/results.json" "$log" <<'PY' || fail "the results are not one per trial"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
ids = [j["job_id"] for j in jobs]
assert len(ids) == 32, "%d jobs, want 32" % len(ids)
assert len(set(ids)) == 32, "a job listed twice"
bad = [j["job_id"] for j in jobs if j["state"] != "DONE" or j["result"]["error_code"] != "NO_ERROR"]
assert not bad, "not measured: %s" % bad[:5]
records = [l for l in open(sys.argv[2]) if l.strip()]
assert len(records) == 32, "the tune logged %d records, want 32" % len(records)
PY
stop_daemons
say "PASS"
