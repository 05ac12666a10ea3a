#!/usr/bin/env bash
# End to end, as a user runs it: a tracker, an agent with two host-process boards (one reached
# through its pty like a USB-serial port) and an emulated Cortex-M3 (QEMU mps2-an385, its UART on
# a pty), and a real Prometheus server (Debian's) scraping both. A small tuning job runs through
# `farmctl tune` on each kind (on the Cortex-M3 in image rounds that one image holds: one build and
# one flash per round); the test checks their results and the AutoTVM log export, asks Prometheus's HTTP API for `up` and the queue and job series, and runs
# `promtool check metrics` on the tracker's and the agent's /metrics.
set -euo pipefail

TEST_NAME=e2e
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/e2e"
rm -rf "$work" && mkdir -p "$work"

tracker_port=$(free_port)
tracker_metrics=$(free_port)
agent_metrics=$(free_port)
prom_port=$(free_port)

# ---- tracker and agent ---------------------------------------------------------------------
# Secure, the default way: the tracker makes its CA on first start; the agent has a certificate
# of it, farmctl a user token.
tracker/tracker --listen "127.0.0.1:$tracker_port" --database "$work/tracker.db" --state_dir "$work/pki" \
  --metrics "127.0.0.1:$tracker_metrics" >"$work/tracker.out" 2>"$work/tracker.err" &
pids+=($!)
wait_line "$work/tracker.out" "listening on" >/dev/null
use_token "$work/pki" e2e

cat >"$work/agent.textproto" <<CONFIG
agent_id: "e2e-agent"
tracker_address: "127.0.0.1:$tracker_port"
scratch_dir: "$work/agent/scratch"
cache_dir: "$work/agent/cache"
spool_dir: "$work/agent/spool"
metrics_address: "127.0.0.1:$agent_metrics"
$(agent_credentials "$work/pki" e2e-agent 'hp-*=host-process' 'm3-*=qemu-mps2-an385')
boards { id: "hp-pty" kind: "host-process" host_process { use_pty: true } build_template: "agent/templates/host-process" }
boards { id: "hp-pipe" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }
boards { id: "m3-0" kind: "qemu-mps2-an385" serial {} qemu { machine: "mps2-an385" timing: CYCLES }
         build_template: "agent/templates/qemu-mps2-an385" image_candidates: 32 build_time_limit_seconds: 300 }
CONFIG
agent/agent --config "$work/agent.textproto" >"$work/agent.out" 2>"$work/agent.err" &
pids+=($!)
wait_line "$work/agent.out" "serving 3 boards" >/dev/null

# ---- Prometheus ----------------------------------------------------------------------------
cat >"$work/prometheus.yml" <<CONFIG
global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: benchfarm-tracker
    static_configs: [{targets: ["127.0.0.1:$tracker_metrics"]}]
  - job_name: benchfarm-agent
    static_configs: [{targets: ["127.0.0.1:$agent_metrics"]}]
CONFIG
promtool check config "$work/prometheus.yml" >/dev/null || fail "promtool check config"
prometheus --config.file="$work/prometheus.yml" --storage.tsdb.path="$work/prometheus-data" \
  --web.listen-address="127.0.0.1:$prom_port" >"$work/prometheus.log" 2>&1 &
pids+=($!)
for _ in $(seq 300); do
  http_get "http://127.0.0.1:$prom_port/-/ready" >/dev/null 2>&1 && break
  sleep 0.1
done
http_get "http://127.0.0.1:$prom_port/-/ready" >/dev/null || { cat "$work/prometheus.log" >&2; fail "prometheus not ready"; }

# ---- the boards are registered ---------------------------------------------------------------
farmctl/farmctl boards --tracker "127.0.0.1:$tracker_port" >"$work/boards.txt"
grep -q "hp-pty" "$work/boards.txt" && grep -q "hp-pipe" "$work/boards.txt" && grep -q "m3-0" "$work/boards.txt" || {
  cat "$work/boards.txt" >&2; fail "farmctl boards does not list the three boards"; }
# Each board's core, from its template's board package (crt/boards/mps2-an385/board.conf).
grep -qE "^m3-0 +qemu-mps2-an385 +cortex-m3 " "$work/boards.txt" &&
  grep -qE "^hp-pty +host-process +- " "$work/boards.txt" || {
  cat "$work/boards.txt" >&2; fail "farmctl boards: each board's core (CPU)"; }

# ---- a small tuning job ----------------------------------------------------------------------
say "tuning matmul: 24 trials in batches of 8"
farmctl/farmctl tune --tracker "127.0.0.1:$tracker_port" --op matmul --kind host-process \
  --strategy model --trials 24 --batch 8 --out "$work/tune" >"$work/tune.out" 2>"$work/tune.err" || {
  cat "$work/tune.out" "$work/tune.err" "$work/agent.err" >&2; fail "farmctl tune failed"; }
cat "$work/tune.out" >&2
grep -q "best configurations of matmul" "$work/tune.out" || fail "no best-configurations table"
grep -qE "^ *default +[0-9.]+ (ns|us|ms) \+-.* +1\.00x" "$work/tune.out" || fail "no default row with speed-up 1.00x"
grep -qE "^ +1 +[0-9.]+ (ns|us|ms) \+-.* [0-9.]+x" "$work/tune.out" || fail "no rank-1 row"
# Batching: at most one flash per batch per board (3 batches, 2 boards), not one per trial.
flashes=$(sed -nE 's/^flashes: ([0-9]+) for the 24 trials.*/\1/p' "$work/tune.out")
[[ -n "$flashes" && "$flashes" -ge 1 && "$flashes" -le 6 ]] || fail "flashes for 24 trials: '$flashes'"
[[ -s "$work/tune/tune-plot.svg" ]] && grep -q "<polyline" "$work/tune/tune-plot.svg" || fail "no plot"

# Every trial measured, outputs checked: 24 AutoTVM records, version 0.2, real costs.
python3 - "$work/tune/matmul.autotvm.log" <<'PY' || fail "AutoTVM log from tune"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
assert len(lines) == 24, f"{len(lines)} records"
for l in lines:
    r = json.loads(l)
    assert set(r) >= {"input", "config", "result", "version"}, r.keys()
    assert r["version"] == 0.2
    costs, error_no, all_cost, ts = r["result"]
    assert error_no == 0, r
    assert all(0 < c < 0.1 for c in costs), costs
    assert all_cost > 0 and ts > 1.6e9
    names = [e[0] for e in r["config"]["entity"]]
    assert names == ["tile_m", "tile_n", "tile_k", "unroll", "order"], names
    # A host-process board has no core: the plain C target.
    assert r["input"][0] == "c -keys=cpu -model=host-process", r["input"]
PY

# ---- the same on the emulated Cortex-M3: the learned model, 24 trials in 2 image rounds --------
say "tuning matmul on qemu-mps2-an385: 24 trials in 2 image rounds of 12 (--max-flashes 2)"
farmctl/farmctl tune --tracker "127.0.0.1:$tracker_port" --op matmul --kind qemu-mps2-an385 \
  --strategy gbt --trials 24 --max-flashes 2 --out "$work/tune-m3" >"$work/tune-m3.out" 2>"$work/tune-m3.err" || {
  cat "$work/tune-m3.out" "$work/tune-m3.err" "$work/agent.err" >&2; fail "farmctl tune on the Cortex-M3 failed"; }
cat "$work/tune-m3.out" >&2
grep -q "best configurations of matmul" "$work/tune-m3.out" || fail "no best-configurations table (m3)"
flashes=$(sed -nE 's/^flashes: ([0-9]+) for the 24 trials.*/\1/p' "$work/tune-m3.out")
[[ "$flashes" == 2 ]] || fail "flashes for the Cortex-M3 tuning run: '$flashes', want 2 (one per round)"
grep -q "^image rounds: 2 of 12 configs (--max-flashes 2); most flashes on one board: 2$" "$work/tune-m3.out" ||
  fail "the image rounds line"
python3 - "$work/tune-m3/matmul.autotvm.log" <<'PY' || fail "AutoTVM log from the Cortex-M3 tune"
import json, sys
lines = [l for l in open(sys.argv[1]) if l.strip()]
assert len(lines) == 24, f"{len(lines)} records"
for l in lines:
    r = json.loads(l)
    costs, error_no, all_cost, ts = r["result"]
    assert error_no == 0, l
    assert all(0 < c < 1 for c in costs), costs
    # The target names the board's core, as microTVM's did for a board.
    assert r["input"][0] == "c -keys=arm_cpu,cpu -mcpu=cortex-m3 -model=qemu-mps2-an385", r["input"]
PY
farmctl/farmctl results --tracker "127.0.0.1:$tracker_port" --kind qemu-mps2-an385 --json >"$work/results-m3.json"
python3 - "$work/results-m3.json" <<'PY' || fail "Cortex-M3 results do not say they are the cycle model's"
import json, sys
text = open(sys.argv[1]).read()
assert text.count('"emulation": "qemu-cycles"') >= 24, text[:2000]
assert text.count('"timer": "cycle-model"') >= 24, text[:2000]
PY
# The tune's table shows the costs at the Cortex-M3's 25 MHz, in cycles.
grep -qE "= [0-9,]+ cycles" "$work/tune-m3.out" || fail "the Cortex-M3 tune does not show cycles"

# The same results exported by the tracker: farmctl results --autotvm.
farmctl/farmctl results --tracker "127.0.0.1:$tracker_port" --op matmul --kind host-process --autotvm >"$work/results.log"
[[ $(grep -c '"version": *0.2' "$work/results.log") -eq 24 ]] || {
  head -3 "$work/results.log" >&2; fail "farmctl results --autotvm: want 24 records"; }
farmctl/farmctl results --tracker "127.0.0.1:$tracker_port" --op matmul --kind qemu-mps2-an385 --autotvm >"$work/results-m3.log"
[[ $(grep -c '"c -keys=arm_cpu,cpu -mcpu=cortex-m3 -model=qemu-mps2-an385"' "$work/results-m3.log") -eq 24 ]] || {
  head -3 "$work/results-m3.log" >&2; fail "farmctl results --autotvm on the Cortex-M3: want 24 records naming its core"; }
farmctl/farmctl results --tracker "127.0.0.1:$tracker_port" --op matmul --kind host-process >"$work/results.txt"
[[ $(grep -cE " DONE .* [0-9.]+ (ns|us|ms) \+-([0-9.]+ %|\?)( UNSTABLE)?( = [0-9,]+ cycles)?$" "$work/results.txt") -eq 24 ]] || { cat "$work/results.txt" >&2; fail "results table"; }

# ---- Prometheus saw both daemons and the farm's series ----------------------------------------
query() {  # prints the number of series and the first value
  python3 - "http://127.0.0.1:$prom_port/api/v1/query" "$1" <<'PY'
import json, sys, urllib.parse, urllib.request
url = sys.argv[1] + "?" + urllib.parse.urlencode({"query": sys.argv[2]})
data = json.load(urllib.request.urlopen(url, timeout=10))
assert data["status"] == "success", data
res = data["data"]["result"]
print(len(res), res[0]["value"][1] if res else "none")
PY
}
expect_query() {  # expect_query QUERY PYTHON-CONDITION-ON-n-AND-v
  local got
  for _ in $(seq 60); do
    got=$(query "$1")
    if python3 -c "import sys; n, v = sys.argv[1], sys.argv[2]; n = int(n); v = float(v) if v != 'none' else None; sys.exit(0 if ($2) else 1)" $got; then
      say "prometheus: $1 -> $got"
      return 0
    fi
    sleep 0.5
  done
  fail "prometheus: $1 gave '$got', wanted $2"
}
expect_query 'up{job="benchfarm-tracker"}' 'n == 1 and v == 1'
expect_query 'up{job="benchfarm-agent"}' 'n == 1 and v == 1'
expect_query 'sum(benchfarm_tracker_jobs_finished_total)' 'n == 1 and v >= 48'
expect_query 'sum(benchfarm_tracker_jobs_finished_total{error_code="NO_ERROR"})' 'n == 1 and v >= 48'
expect_query 'count(benchfarm_build_info == 1)' 'n == 1 and v == 2'
expect_query 'sum(benchfarm_tracker_queue_depth) or vector(0)' 'n == 1 and v == 0'
expect_query 'benchfarm_tracker_boards{state="IDLE"}' 'n == 1 and v == 3'
expect_query 'sum(benchfarm_tracker_trials_submitted_total)' 'n == 1 and v >= 24'
expect_query 'sum(benchfarm_agent_trials_total{error_code="NO_ERROR"})' 'n == 1 and v >= 48'
expect_query 'benchfarm_agent_tracker_connected' 'n == 1 and v == 1'
expect_query 'sum(benchfarm_agent_flashes_total)' 'n == 1 and v >= 3'
expect_query 'benchfarm_agent_flashes_total{board="m3-0"}' 'n == 1 and v == 2'

# ---- promtool check metrics on both daemons --------------------------------------------------
for target in "tracker:$tracker_metrics" "agent:$agent_metrics"; do
  name="${target%%:*}"; port="${target##*:}"
  http_get "http://127.0.0.1:$port/metrics" >"$work/$name.metrics"
  promtool check metrics <"$work/$name.metrics" >"$work/$name.promtool" 2>&1 || {
    cat "$work/$name.promtool" >&2; fail "promtool check metrics: $name"; }
  say "promtool check metrics: $name ok ($(grep -c '^benchfarm_' "$work/$name.metrics") samples)"
done

# ---- clean shutdown ---------------------------------------------------------------------------
stop_daemons
say "PASS"
