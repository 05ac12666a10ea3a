#!/usr/bin/env bash
# Boards die with their agent (issue 16): a real agent with two host-process boards (one on its
# pty, one on pipes) runs trials; kill -9 of the agent takes every board process (the board
# executable and both of its bwrap processes) along. An agent that starts again on the same
# scratch_dir ends what a killed predecessor left running (a process recorded in
# <scratch_dir>/processes and everything in its session), removes stale links into sandboxes,
# leaves unrelated processes alone, and a second agent on the same scratch_dir is refused.
set -euo pipefail

TEST_NAME=agent_kill
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/agent_kill"
rm -rf "$work" && mkdir -p "$work"
scratch="$work/agent/scratch"
port=$(free_port)

# Process ids of this run's board executables (/bf/image in its sandbox, stderr into this run's
# board logs) and of their sandboxes' bwrap processes (the ancestors below the agent).
board_pids() {
  local dir pid target
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [[ "$(tr '\0' ' ' 2>/dev/null <"$dir/cmdline")" == "/bf/image "* ]] || continue
    target=$(readlink "$dir/fd/2" 2>/dev/null) || continue
    [[ "$target" == "$scratch/"*.board.log ]] || continue
    echo "$pid"
    # Its sandbox: the init (pid 1 inside) and the bwrap the agent started.
    local p=$pid
    for _ in 1 2 3 4; do
      p=$(awk '{print $4}' "/proc/$p/stat" 2>/dev/null) || break
      [[ "$p" -gt 1 && "$(cat "/proc/$p/comm" 2>/dev/null)" == bwrap ]] || break
      echo "$p"
    done
  done | sort -u
}
alive() { [[ -e "/proc/$1" ]] && [[ "$(awk '{print $22}' "/proc/$1/stat" 2>/dev/null)" == "$2" ]]; }
start_time() { awk '{print $22}' "/proc/$1/stat"; }

tracker/tracker --insecure --listen "127.0.0.1:$port" --database "$work/tracker.db" --metrics off \
  >"$work/tracker.out" 2>"$work/tracker.err" &
pids+=($!)
wait_line "$work/tracker.out" "listening on" >/dev/null

cat >"$work/agent.textproto" <<CONFIG
agent_id: "kill-agent"
tracker_address: "127.0.0.1:$port"
scratch_dir: "$scratch"
cache_dir: "$work/agent/cache"
spool_dir: "$work/agent/spool"
credentials { insecure: true }
boards { id: "hp-pty" kind: "host-process" host_process { use_pty: true } build_template: "agent/templates/host-process" }
boards { id: "hp-pipe" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }
CONFIG
agent/agent --config "$work/agent.textproto" --metrics off >"$work/agent.out" 2>"$work/agent.err" &
agent=$!
wait_line "$work/agent.out" "serving 2 boards" "$agent" >/dev/null

# ---- a second agent on the same directories is refused ---------------------------------------
if agent/agent --config "$work/agent.textproto" --metrics off >"$work/agent2.out" 2>"$work/agent2.err"; then
  fail "a second agent on the same scratch_dir started"
fi
grep -q "another agent (pid $agent)" "$work/agent2.err" || { cat "$work/agent2.err" >&2; fail "no 'another agent' message"; }

# ---- both boards run; kill -9 the agent; every board process goes with it ---------------------
for board in hp-pty hp-pipe; do
  farmctl/farmctl submit --tracker "127.0.0.1:$port" --insecure --kind host-process --board "$board" \
    --op add >/dev/null
done
for _ in $(seq 1200); do
  [[ $(board_pids | wc -l) -ge 6 ]] && break  # two boards: executable, init, bwrap each
  kill -0 "$agent" 2>/dev/null || { cat "$work/agent.err" >&2; fail "the agent died"; }
  sleep 0.1
done
mapfile -t running < <(board_pids)
[[ ${#running[@]} -ge 6 ]] || { cat "$work/agent.err" >&2; fail "the boards did not start: ${running[*]}"; }
declare -A starts
for pid in "${running[@]}"; do starts[$pid]=$(start_time "$pid"); done
say "board processes before kill -9 of the agent: ${running[*]}"

kill -KILL "$agent"
wait "$agent" 2>/dev/null || true
for _ in $(seq 300); do
  left=()
  for pid in "${running[@]}"; do alive "$pid" "${starts[$pid]}" && left+=("$pid"); done
  [[ ${#left[@]} -eq 0 ]] && break
  sleep 0.1
done
[[ ${#left[@]} -eq 0 ]] || { ps -o pid,ppid,pgid,sid,cmd -p "${left[*]// /,}" >&2 || true; fail "board processes outlived the agent: ${left[*]}"; }
say "all ${#running[@]} board processes ended with the agent"

# ---- a predecessor's leftovers: ended at the next start -------------------------------------
# What escaped a killed agent looks like this: a process in the session of a recorded child.
setsid sleep 600 </dev/null >/dev/null 2>&1 &
leftover=$!
setsid sleep 600 </dev/null >/dev/null 2>&1 &
unrelated=$!
sleep 0.2
echo "$(start_time "$leftover")" >"$scratch/processes/$leftover"
echo 1 >"$scratch/processes/$unrelated"  # its pid reused since: another start time
ln -s /proc/999999999/root/dev/pts/0 "$scratch/m3-0.tty"
leftover_start=$(start_time "$leftover")
unrelated_start=$(start_time "$unrelated")

agent/agent --config "$work/agent.textproto" --metrics off >"$work/agent3.out" 2>"$work/agent3.err" &
agent=$!
pids+=($agent)
wait_line "$work/agent3.out" "serving 2 boards" "$agent" >/dev/null
! alive "$leftover" "$leftover_start" || fail "the predecessor's leftover $leftover still runs"
alive "$unrelated" "$unrelated_start" || fail "an unrelated process ($unrelated) was killed"
kill "$unrelated"
[[ ! -e "$scratch/processes/$leftover" && ! -e "$scratch/processes/$unrelated" ]] || fail "records left: $(ls "$scratch/processes")"
[[ ! -L "$scratch/m3-0.tty" ]] || fail "the stale sandbox link is still there"
grep -q "a previous agent's processes were still running.*$leftover (sleep 600)" "$work/agent3.err" || {
  cat "$work/agent3.err" >&2; fail "the agent did not log the leftover it killed"; }

stop_daemons
say "PASS"
