#!/usr/bin/env bash
# farmctl's board commands as a user runs them, against host-process boards (pipes and pty), and
# one without benchfarm's extras (//crt/host:board_tvm_only: as TVM v0.18's own CRT).
set -euo pipefail
farmctl="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}/farmctl/farmctl"
out="$TEST_TMPDIR/out"
fail() { echo "FAIL: $*" >&2; cat "$out" >&2 || true; exit 1; }

"$farmctl" board info --host-process >"$out" || fail "board info"
grep -q '^board_kind *host-process$' "$out" || fail "info table lacks board_kind"
grep -q '^firmware_hash *[0-9a-f]\{16\}$' "$out" || fail "info table lacks firmware_hash"

"$farmctl" board info --host-process --pty --json >"$out" || fail "board info --pty --json"
grep -q '"board": "host-process (pty)"' "$out" || fail "json lacks board"
grep -q '"max_packet_size": "2037"' "$out" || fail "json lacks max_packet_size"

for op in add matmul conv2d; do
  "$farmctl" board time --host-process --op "$op" --number 5 --repeat 3 >"$out" || fail "time $op"
  grep -q "^check    ok" "$out" || fail "$op output not checked ok"
  [[ $(grep -c '^  [0-9] ' "$out") -eq 3 ]] || fail "$op: expected 3 repeats"
done

"$farmctl" board time --host-process --pty --op matmul --shape 8x4,4x6,8x6 --min-repeat-ms 2 \
  --json >"$out" || fail "time --json over pty"
grep -q '"op": "matmul", "shapes": "8x4,4x6,8x6"' "$out" || fail "json op/shapes"
grep -q '"check": "ok"' "$out" || fail "json check"
grep -Eq '"costs": \[[0-9.e-]+, [0-9.e-]+, [0-9.e-]+\]' "$out" || fail "json costs"

# Every statistic of the costs, the median's interval and its +-, and how they were taken.
"$farmctl" board time --host-process --op add --number 5 --repeat 8 >"$out" || fail "time stats"
for stat in count mean median min max stddev cv; do
  grep -q "^  $stat  *[0-9]" "$out" || fail "no $stat line"
done
grep -Eq '^  interval \[[0-9.]+, [0-9.]+\] us at [0-9.]+ %: \+-[0-9.]+ %' "$out" || fail "interval line"
grep -Eq '^result   [0-9.]+ (ns|us|ms) \+-[0-9.]+ %' "$out" || fail "result line"
grep -q '^repeats  8 in 1 round, stopped: fixed$' "$out" || fail "fixed repeats line"
grep -Eq '^wall/cpu [0-9.]+ ' "$out" || fail "host-process boards time with a CPU clock: wall/cpu"

# Adaptive mode: calibrated number, repeats until the target (or the caps), why it stopped.
"$farmctl" board time --host-process --op add --target 5 --max-repeat 20 --budget-ms 3000 \
  >"$out" || fail "time --target"
grep -q '^measure  adaptive: target +-5 %  budget 3000 ms  max_repeat 20' "$out" || fail "adaptive measure line"
grep -Eq '^number   [0-9]+ calls per repeat \(calibrated\)$' "$out" || fail "calibrated number"
grep -Eq '^repeats  ([1-9]|1[0-9]|20) in [0-9]+ rounds?, stopped: (target|budget|max_repeat)$' "$out" \
  || fail "adaptive repeats line"
"$farmctl" board time --host-process --op add --target 5 --max-repeat 20 --json >"$out" \
  || fail "time --target --json"
python3 - "$out" <<'PY' || fail "adaptive json"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["target_rel_ci"] == 0.05 and d["max_repeat"] == 20, d
m = d["measured"]
assert m["stop"] in ("target", "budget", "max_repeat"), m
assert m["repeats"] == d["count"] == len(d["costs"]) <= 20, d
assert m["number"] >= 1 and m["rounds"] >= 1, m
# The interval covers a re-measurement (the spread between rounds too), so it may reach past the
# costs seen in this one: never narrower than the within-run interval.
assert 0 < d["ci_low"] <= d["median"] <= d["ci_high"], d
assert d["rel_half_width"] >= d["within_rel_half_width"] - 1e-12, d
assert d["min"] <= d["median"] <= d["max"], d
assert isinstance(d["unstable"], bool) and d["rel_half_width"] >= 0, d
PY
if "$farmctl" board time --host-process --op add --budget-ms 100 2>"$out"; then fail "--budget-ms without --target"; fi
grep -q -- "--budget-ms: only with --target" "$out" || fail "--budget-ms message"
if "$farmctl" board time --host-process --op add --target 80 2>"$out"; then fail "--target 80"; fi
grep -q -- "--target: 80 is not in 0..50" "$out" || fail "--target message"

# A board that speaks TVM's protocol without benchfarm's extras (no benchfarm.DeviceInfo, no
# PrepareArgs/CheckCall/...: TVM v0.18's own CRT as it is) is a board: info says what is unknown, and
# operators are timed with their data made and checked on the host.
tvm_only="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}/crt/host/board_tvm_only"
"$farmctl" board info --host-process --board_binary "$tvm_only" >"$out" || fail "board info without DeviceInfo"
grep -q '^benchfarm *no (no global function benchfarm.DeviceInfo' "$out" || fail "info does not say it lacks DeviceInfo"
grep -q '^max_packet_size *2037$' "$out" || fail "info lacks the board's packet size"
grep -q '^unknown *board_kind, firmware_hash, crt_version, timer, timer_resolution_s, cpu_hz$' "$out" || fail "info does not say what is unknown"
"$farmctl" board info --host-process --pty --board_binary "$tvm_only" --json >"$out" || fail "board info --json without DeviceInfo"
grep -q '"unknown": "board_kind, firmware_hash' "$out" || fail "json lacks unknown"
for op in add matmul; do
  "$farmctl" board time --host-process --board_binary "$tvm_only" --op "$op" --number 5 --repeat 3 >"$out" ||
    fail "time $op without DeviceInfo"
  grep -q "^board    host-process (pipes) (no benchfarm.DeviceInfo: unknown board_kind" "$out" || fail "$op: board line"
  grep -q "^check    ok" "$out" || fail "$op without DeviceInfo: output not checked ok"
  [[ $(grep -c '^  [0-9] ' "$out") -eq 3 ]] || fail "$op without DeviceInfo: expected 3 repeats"
done
"$farmctl" board time --host-process --board_binary "$tvm_only" --op matmul --shape 8x4,4x6,8x6 --json >"$out" ||
  fail "time --json without DeviceInfo"
grep -q '"benchfarm": false' "$out" && grep -q '"check": "ok"' "$out" || fail "json without DeviceInfo"

"$farmctl" board call --host-process tvm.rpc.server.GetCRTMaxPacketSize >"$out" || fail "call"
[[ "$(cat "$out")" == "2037" ]] || fail "call result"

# Errors: clear message, non-zero status, no hang.
if "$farmctl" board time --host-process --op nosuchop --shape 4,4,4 2>"$out"; then fail "unknown op accepted"; fi
grep -q "nosuchop" "$out" || fail "unknown op message"
if "$farmctl" board info --port /dev/ttyBENCHFARM_NONE 2>"$out"; then fail "missing port accepted"; fi
grep -q "ttyBENCHFARM_NONE" "$out" || fail "missing port message"
if "$farmctl" board info 2>"$out"; then fail "no board accepted"; fi
if "$farmctl" board call --host-process add int:1 2>"$out"; then fail "bad call accepted"; fi
grep -q "bf_ops_add" "$out" || fail "device error text"
echo PASS
