# Shared by the multi-process shell tests (source it after setting TEST_NAME):
#   fail MESSAGE / say MESSAGE     the test's verdict and notes on stderr, prefixed by TEST_NAME
#   pids+=($!)                      daemons started in the background; killed (TERM) on exit
#   free_port                       a free TCP port on 127.0.0.1
#   wait_line FILE REGEX [PID]      waits up to 60 s for a line of FILE matching REGEX and prints
#                                   it; fails early if process PID died, and shows FILE (and
#                                   FILE's .err beside a .out) on failure
#   http_get URL                    the body of a GET
#   null_write_c NAME               a C source trial whose entry NAME writes to address 0 on line
#                                   7 (a board fault: SIGSEGV, a Cortex-M MemManage fault)
#   stop_daemons                    TERM to every daemon, and fails unless each exits cleanly
# A secure farm in the directory $work (set it first; below, "a secure farm"):
#   start_tracker USER              a tracker on a free port ($tracker_port; /metrics on
#                                   $tracker_metrics), its database and PKI in $work, and
#                                   farmctl calling it as USER
#   ctl ARGS...                     farmctl against that tracker (from any directory)
#   jobs_stored                     how many jobs the tracker keeps
#   agent_config ID GRANT...        an agent config's first lines: its id, the tracker, its
#                                   directories under $work/agent, its credentials for GRANTs
#   start_agent N                   the agent of $work/agent.textproto, once it serves N boards
#   start_host_farm USER AGENT [FIELDS]
#                                   start_tracker USER and an agent AGENT serving one
#                                   host-process board hp0 (FIELDS: more of its config, e.g.
#                                   "batch_size: 8"), its /metrics on $agent_metrics
#   metric SERIES                   the value of one series on that agent's /metrics, e.g.
#                                   metric 'benchfarm_agent_builds_total{result="OK"}'

fail() { echo "${TEST_NAME:?}: FAIL: $*" >&2; exit 1; }
say() { echo "${TEST_NAME:?}: $*" >&2; }

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_line() {
  for _ in $(seq 600); do
    if grep -m1 -E "$2" "$1" 2>/dev/null; then return 0; fi
    if [[ -n "${3:-}" ]] && ! kill -0 "$3" 2>/dev/null; then break; fi
    sleep 0.1
  done
  echo "--- $1" >&2; cat "$1" >&2 || true
  if [[ "$1" == *.out && -f "${1%.out}.err" ]]; then echo "--- ${1%.out}.err" >&2; cat "${1%.out}.err" >&2; fi
  fail "no line matching '$2' in $1"
}

http_get() {
  python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "$1"
}

null_write_c() {
  cat <<C
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
BF_OPS_DECLARE_PACKED($1);
BF_OPS_DECLARE_PACKED($1) {
  volatile float* p = (volatile float*)0;
  (void)args;
  *p = 1.0f;
  return 0;
}
C
}

stop_daemons() {
  for pid in "${pids[@]}"; do kill -TERM "$pid"; done
  for pid in "${pids[@]}"; do wait "$pid" || fail "a daemon did not exit cleanly (pid $pid)"; done
  pids=()
}

# ---- a secure farm, the default way (README "Security") ----------------------------------------
# After the tracker started with --state_dir DIR (it made its CA there on first start):
#   use_token DIR NAME      issues a user token for NAME (deploy/pki.sh token) and exports
#                           BENCHFARM_CA and BENCHFARM_TOKEN_FILE, so farmctl calls as NAME
#   agent_credentials DIR AGENT_ID GRANT...  (GRANT: GLOB=KIND[:SLOTS], deploy/pki.sh)
#                           makes the agent's certificate (deploy/pki.sh agent) and prints the
#                           `credentials { ... }` block of its config
pki_sh() { bash "$(dirname "${BASH_SOURCE[0]}")/../deploy/pki.sh" "$@"; }
use_token() {
  pki_sh token "$1" "$2" >"$1/$2.token"
  export BENCHFARM_CA="$1/ca.pem" BENCHFARM_TOKEN_FILE="$1/$2.token"
  unset BENCHFARM_TOKEN BENCHFARM_INSECURE
}
agent_credentials() {
  local dir=$1 id=$2
  shift 2
  pki_sh agent "$dir" "$id" "$@" >/dev/null
  echo "credentials { ca_cert: \"$dir/ca.pem\" cert: \"$dir/agents/$id.pem\" key: \"$dir/agents/$id.key\" }"
}

# ---- a secure farm in $work ----------------------------------------------------------------------
farm_root=$PWD  # the runfiles root: farmctl, tracker and agent are below it
start_tracker() {
  tracker_port=$(free_port)
  tracker_metrics=$(free_port)  # not the default :9470, which another test may hold
  "$farm_root/tracker/tracker" --listen "127.0.0.1:$tracker_port" --database "${work:?}/tracker.db" \
    --state_dir "$work/pki" --metrics "127.0.0.1:$tracker_metrics" >"$work/tracker.out" \
    2>"$work/tracker.err" &
  pids+=($!)
  wait_line "$work/tracker.out" "listening on" >/dev/null
  use_token "$work/pki" "$1"
}
ctl() { "$farm_root/farmctl/farmctl" --tracker "127.0.0.1:${tracker_port:?}" "$@"; }
jobs_stored() {
  ctl results --json | python3 -c 'import json, sys; print(len(json.load(sys.stdin).get("jobs", [])))'
}
agent_config() {
  local id=$1
  shift
  cat <<CONFIG
agent_id: "$id"
tracker_address: "127.0.0.1:$tracker_port"
scratch_dir: "$work/agent/scratch"
cache_dir: "$work/agent/cache"
spool_dir: "$work/agent/spool"
$(agent_credentials "$work/pki" "$id" "$@")
CONFIG
}
start_agent() {
  "$farm_root/agent/agent" --config "$work/agent.textproto" >"$work/agent.out" 2>"$work/agent.err" &
  pids+=($!)
  wait_line "$work/agent.out" "serving $1 boards" >/dev/null
}
start_host_farm() {
  agent_metrics=$(free_port)
  start_tracker "$1"
  cat >"$work/agent.textproto" <<CONFIG
$(agent_config "$2" 'hp*=host-process')
metrics_address: "127.0.0.1:$agent_metrics"
boards { id: "hp0" kind: "host-process" host_process {} build_template: "agent/templates/host-process"${3:+ $3} }
CONFIG
  start_agent 1
}
metric() {
  http_get "http://127.0.0.1:${agent_metrics:?}/metrics" | awk -v name="$1" '$1 == name { print $2 }'
}
