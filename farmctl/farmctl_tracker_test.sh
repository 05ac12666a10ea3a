#!/usr/bin/env bash
# farmctl's tracker commands as a user runs them: flag wiring, exit codes (0 ok, 1 failure,
# 2 usage), a tracker that is down, and a live tracker daemon with no agents. The commands with
# agents and results are covered by tracker_commands_test.
set -euo pipefail
ws="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}"
export BENCHFARM_INSECURE=1  # the tracker below runs --insecure (tests/security_test.sh covers TLS)
farmctl="$ws/farmctl/farmctl"
tracker="$ws/tracker/tracker"
out="$TEST_TMPDIR/out"
err="$TEST_TMPDIR/err"
fail() { echo "FAIL: $*" >&2; cat "$out" "$err" >&2 || true; exit 1; }

# Runs farmctl with the given arguments; stdout to $out, stderr to $err; sets $rc.
run() { rc=0; "$farmctl" "$@" >"$out" 2>"$err" || rc=$?; }

# ---- a tracker that is down: a clear message and exit status 1, never a crash ----
for cmd in boards queue results "watch" "cancel j-1" "submit --kind k --op matmul"; do
  # shellcheck disable=SC2086
  run $cmd --tracker 127.0.0.1:1
  [[ $rc -eq 1 ]] || fail "$cmd against a down tracker: exit $rc, want 1"
  grep -q "^farmctl: cannot reach tracker at 127.0.0.1:1" "$err" || fail "$cmd: no clear message"
done
BENCHFARM_TRACKER=127.0.0.1:1 run queue
[[ $rc -eq 1 ]] && grep -q "cannot reach tracker at 127.0.0.1:1" "$err" || fail "BENCHFARM_TRACKER ignored"

# ---- usage errors: exit status 2, before any tracker is asked ----
run frobnicate;                          [[ $rc -eq 2 ]] || fail "unknown command: exit $rc"
grep -q 'unknown command "frobnicate"' "$err" || fail "unknown command message"
run cancel;                              [[ $rc -eq 2 ]] || fail "cancel without ids: exit $rc"
run submit --op matmul;                  [[ $rc -eq 2 ]] || fail "submit without --kind: exit $rc"
run results --json --autotvm;            [[ $rc -eq 2 ]] || fail "--json --autotvm: exit $rc"
run boards --knob tile_m=8;              [[ $rc -eq 2 ]] || fail "--knob outside submit: exit $rc"
run queue extra;                         [[ $rc -eq 2 ]] || fail "stray argument: exit $rc"
run;                                     [[ $rc -eq 2 ]] || fail "no command: exit $rc"
grep -q "^  boards \[--kind K\] \[--json\]" "$err" && grep -q "^  results \[--client C\]" "$err" || fail "usage text"
# Bad trial flags fail (exit 1) without reaching the (down) tracker.
run submit --kind k --op matmul --knob tile_m=3 --knob order=ikj --tracker 127.0.0.1:1
[[ $rc -eq 1 ]] && grep -q "tile_m=3: not one of 1, 2, 4, 8, 16, 32" "$err" || fail "bad knob value"
run submit --kind k --op matmul --knobs tile_m=8,bogus=1 --tracker 127.0.0.1:1
[[ $rc -eq 1 ]] && grep -q 'matmul has no knob "bogus"' "$err" || fail "unknown knob"
run submit --kind k --op matmul --target 0.5 --max-repeat 5000 --tracker 127.0.0.1:1
[[ $rc -eq 1 ]] && grep -q -- "--max_repeat: 5000 is not in 0..1024" "$err" || fail "bad --max-repeat"
run submit --kind k --op matmul --budget-ms 100 --tracker 127.0.0.1:1
[[ $rc -eq 1 ]] && grep -q -- "--budget-ms: only with --target" "$err" || fail "--budget-ms without --target"
run tune --op matmul --kind k --max-repeat 50 --tracker 127.0.0.1:1
[[ $rc -eq 1 ]] && grep -q -- "--max-repeat: only with --target" "$err" || fail "tune --max-repeat without --target"
run get;                                 [[ $rc -eq 2 ]] || fail "get without ids: exit $rc"
printf 'trials { nope: 1 }\n' >"$TEST_TMPDIR/bad.textproto"
run submit --file "$TEST_TMPDIR/bad.textproto" --tracker 127.0.0.1:1
[[ $rc -eq 1 ]] && grep -q "bad.textproto:1:" "$err" || fail "bad --file"

# ---- a live tracker with no agents ----
"$tracker" --database="$TEST_TMPDIR/tracker.db" --listen=127.0.0.1:0 --metrics=off --insecure \
  >"$TEST_TMPDIR/tracker.out" 2>"$TEST_TMPDIR/tracker.err" &
tracker_pid=$!
trap 'kill "$tracker_pid" 2>/dev/null || true; wait "$tracker_pid" 2>/dev/null || true' EXIT
address=""
for _ in $(seq 200); do
  address="$(sed -n 's/^tracker: listening on \([^ ]*\).*/\1/p' "$TEST_TMPDIR/tracker.out")"
  [[ -n "$address" ]] && break
  kill -0 "$tracker_pid" 2>/dev/null || fail "tracker exited: $(cat "$TEST_TMPDIR/tracker.err")"
  sleep 0.1
done
[[ -n "$address" ]] || fail "tracker did not start"
export BENCHFARM_TRACKER="$address"

run boards;  [[ $rc -eq 0 ]] || fail "boards: exit $rc"
grep -q "^BOARD  *KIND  *CPU  *TIMING  *LABELS  *STATE  *AGENT  *JOB  *JOBS/SLOTS  *FLASHES  *FAILS$" "$out" || fail "boards header"
run queue --json; [[ $rc -eq 0 ]] || fail "queue --json: exit $rc"
python3 -m json.tool "$out" >/dev/null || fail "queue --json is not JSON"
run results --json --kind host-process; [[ $rc -eq 0 ]] || fail "results --json: exit $rc"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["jobs"] == [], d' "$out" \
  || fail "results --json"
run results --autotvm; [[ $rc -eq 0 && ! -s "$out" ]] || fail "results --autotvm on nothing"
# No board of this kind has ever registered: the tracker's own message, exit 1.
run submit --kind host-process --op matmul --knob tile_m=8 --label usb=1 --client ci --request-id r1
[[ $rc -eq 1 ]] && grep -q 'trials\[0\].board_kind: unknown board kind "host-process"' "$err" \
  || fail "submit to an unknown kind"
run watch j-no-such-job; [[ $rc -eq 1 ]] && grep -q "GetJob j-no-such-job" "$err" || fail "watch unknown job"
run get j-no-such-job; [[ $rc -eq 1 ]] && grep -q "GetJob j-no-such-job" "$err" || fail "get unknown job"
run cancel j-no-such-job; [[ $rc -eq 1 ]] && grep -q "CancelJob j-no-such-job" "$err" || fail "cancel unknown job"
echo PASS
