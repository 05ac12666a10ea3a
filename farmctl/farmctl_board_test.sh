#!/usr/bin/env bash
# farmctl's board commands as a user runs them, against host-process boards (pipes and pty).
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
