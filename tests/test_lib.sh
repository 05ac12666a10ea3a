# Shared by the multi-process shell tests (source it after setting TEST_NAME):
#   fail MESSAGE / say MESSAGE     the test's verdict and notes on stderr, prefixed by TEST_NAME
#   pids+=($!)                      daemons started in the background; killed (TERM) on exit
#   free_port                       a free TCP port on 127.0.0.1
#   wait_line FILE REGEX [PID]      waits up to 60 s for a line of FILE matching REGEX and prints
#                                   it; fails early if process PID died, and shows FILE (and
#                                   FILE's .err beside a .out) on failure
#   http_get URL                    the body of a GET
#   stop_daemons                    TERM to every daemon, and fails unless each exits cleanly
#   start_host_farm DIR AGENT USER GRANT BOARD...
#                                   a secure tracker ($tracker_port, state in DIR) and an agent
#                                   serving the BOARD config lines, farmctl calling as USER

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

# start_host_farm DIR AGENT_ID USER GRANT BOARD...: a tracker on a free port ($tracker_port; its
# database and CA in DIR; no /metrics, so such tests run side by side) and the agent AGENT_ID
# (config DIR/agent.textproto, state in DIR/agent, logs DIR/agent.out and .err; its certificate
# grants GRANT, e.g. 'hp*=host-process') serving the BOARD lines (`boards { ... }`), plus
# $agent_extra (more config lines: metrics_address, ...); farmctl then calls as USER
# (use_token). Run from the runfiles root.
start_host_farm() {
  local dir=$1 agent_id=$2 user=$3 grant=$4
  shift 4
  tracker_port=$(free_port)
  tracker/tracker --listen "127.0.0.1:$tracker_port" --database "$dir/tracker.db" --state_dir "$dir/pki" \
    --metrics off \
    >"$dir/tracker.out" 2>"$dir/tracker.err" &
  pids+=($!)
  wait_line "$dir/tracker.out" "listening on" >/dev/null
  use_token "$dir/pki" "$user"
  {
    echo "agent_id: \"$agent_id\""
    echo "tracker_address: \"127.0.0.1:$tracker_port\""
    echo "scratch_dir: \"$dir/agent/scratch\" cache_dir: \"$dir/agent/cache\" spool_dir: \"$dir/agent/spool\""
    agent_credentials "$dir/pki" "$agent_id" "$grant"
    echo "${agent_extra:-}"
    printf '%s\n' "$@"
  } >"$dir/agent.textproto"
  agent/agent --config "$dir/agent.textproto" >"$dir/agent.out" 2>"$dir/agent.err" &
  pids+=($!)
  wait_line "$dir/agent.out" "serving $# boards" >/dev/null
}
