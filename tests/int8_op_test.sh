#!/usr/bin/env bash
# Quantized kernels end to end, as a user runs them with farmctl: deploy/examples/ops/dwconv_s8
# (int8 input and weights, int32 accumulation, two knobs: 8 configs) registered with `farmctl op
# add`, tuned on a host-process board and on the emulated Cortex-M3 (one image and one flash for
# the whole grid), its AutoTVM records naming int8 and int32 tensors; a planted off-by-one caught
# as WRONG_ANSWER naming the element and both values as integers; an int8 range outside the dtype
# and an int16 C source trial's tolerance refused at the door; every dtype round-trips (filled,
# copied by the kernel, checked) on both boards; a float32 output within the manifest's tolerance
# passes where the default tolerance fails.
set -euo pipefail

TEST_NAME=int8_op
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/int8_op"
rm -rf "$work" && mkdir -p "$work"
start_tracker dana
cat >"$work/agent.textproto" <<CONFIG
$(agent_config int8-agent 'hp*=host-process' 'm3-*=qemu-mps2-an385')
boards { id: "hp0" kind: "host-process" host_process {} build_template: "agent/templates/host-process" batch_size: 8 }
boards { id: "m3-0" kind: "qemu-mps2-an385" serial {} qemu { machine: "mps2-an385" timing: CYCLES }
         build_template: "agent/templates/qemu-mps2-an385" image_candidates: 8 batch_size: 8
         build_time_limit_seconds: 300 }
CONFIG
start_agent 2

# ---- register and show it ------------------------------------------------------------------------
cp -rL deploy/examples/ops/dwconv_s8 "$work/dwconv_s8" && chmod -R u+w "$work/dwconv_s8"
ctl op add "$work/dwconv_s8" >"$work/add.out" || { cat "$work/add.out" >&2; fail "op add"; }
ctl op show dwconv_s8 >"$work/show.txt"
grep -q "arg:       input input int8 \[H, W, C\]$" "$work/show.txt" &&
  grep -q "arg:       weight input int8 \[KH, KW, C\] in \[-127, 127\]" "$work/show.txt" &&
  grep -q "arg:       output output int32 \[OH, OW, C\]" "$work/show.txt" || { cat "$work/show.txt" >&2; fail "op show: dtypes and range"; }

# ---- tune it on both boards: the grid of 8, one flash each ---------------------------------------
for kind in host-process qemu-mps2-an385; do
  (cd "$work" && ctl tune --op dwconv_s8 --kind "$kind" --strategy grid --trials 8 --batch 8 \
     --number 3 --repeat 2 --out "tune-$kind" >"tune-$kind.out" 2>"tune-$kind.err") || {
    cat "$work/tune-$kind.out" "$work/tune-$kind.err" >&2; tail -20 "$work/agent.err" >&2; fail "tune on $kind"; }
  cat "$work/tune-$kind.out" >&2
  grep -q "best configurations of dwconv_s8 on $kind (8 trials, 0 failed" "$work/tune-$kind.out" || fail "tune table on $kind"
  grep -q "flashes: 1 for the 8 trials" "$work/tune-$kind.out" || fail "one flash for the grid on $kind"
  log="$work/tune-$kind/dwconv_s8.autotvm.log"
  [[ $(wc -l <"$log") -eq 8 ]] || fail "$kind: want 8 records"
  grep -q '\[\["TENSOR", \[16, 16, 8\], "int8"\], \["TENSOR", \[3, 3, 8\], "int8"\], \["TENSOR", \[14, 14, 8\], "int32"\]\]' "$log" \
    || { head -1 "$log" >&2; fail "$kind: records name the tensors' dtypes"; }
done
grep -q "cycles" "$work/tune-qemu-mps2-an385.out" || fail "the Cortex-M3's costs in cycles"

# ---- a planted off-by-one: WRONG_ANSWER with integer values ---------------------------------------
sed -i '0,/for (j = 0; j < v->kw; ++j) {/s//for (j = 0; j < v->kw - 1; ++j) {/' "$work/dwconv_s8/dwconv_s8.c"
ctl op add "$work/dwconv_s8" >/dev/null
for kind in host-process qemu-mps2-an385; do
  bug=$(ctl submit --kind "$kind" --op dwconv_s8 --knob unroll_c=4)
  ctl watch "$bug" >/dev/null
  ctl get "$bug" >"$work/bug-$kind.txt"
  grep -q "WRONG_ANSWER" "$work/bug-$kind.txt" || { cat "$work/bug-$kind.txt" >&2; fail "$kind: the off-by-one passed"; }
  grep -qE "output element [0-9]+ is -?[0-9]+, the reference dwconv_s8_reference gives -?[0-9]+ \([0-9]+ of 1568 elements differ" \
    "$work/bug-$kind.txt" || { cat "$work/bug-$kind.txt" >&2; fail "$kind: the mismatch names the element and both integers"; }
done

# ---- refused at the door -------------------------------------------------------------------------
sed 's/"range": \[-127, 127\]/"range": [-200, 127]/' "$work/dwconv_s8/op.json" >"$work/bad.json"
cp "$work/bad.json" "$work/dwconv_s8/op.json"
if ctl op add "$work/dwconv_s8" >"$work/bad.out" 2>&1; then fail "a range outside int8 was added"; fi
grep -q "op.spec.args\[1\].range: \[-200, 127\] is not a range of int8" "$work/bad.out" || { cat "$work/bad.out" >&2; fail "range refusal"; }

# ---- every dtype round-trips on both boards; tolerances ------------------------------------------
cat >"$work/copy.c" <<'C'
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
#include <string.h>
/* out = in, whatever the dtype; copy_off adds 0.001 to every float32 element. */
static int copy(TVMValue* args, int off) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t n = x->shape[0], i;
  memcpy(y->data, x->data, (size_t)(n * ((x->dtype.bits + 7) / 8)));
  if (off) for (i = 0; i < n; ++i) ((float*)y->data)[i] += 0.001f;
  return 0;
}
BF_OPS_DECLARE_PACKED(copy_of);
BF_OPS_DECLARE_PACKED(copy_of) { return copy(args, 0); }
BF_OPS_DECLARE_PACKED(copy_ref);
BF_OPS_DECLARE_PACKED(copy_ref) { return copy(args, 0); }
BF_OPS_DECLARE_PACKED(copy_off);
BF_OPS_DECLARE_PACKED(copy_off) { return copy(args, 1); }
/* copy_over writes one element past the end of its output. */
BF_OPS_DECLARE_PACKED(copy_over);
BF_OPS_DECLARE_PACKED(copy_over) {
  DLTensor* y = (DLTensor*)args[1].v_handle;
  copy(args, 0);
  ((signed char*)y->data)[y->shape[0]] = 42;
  return 0;
}
C
ids=()
for kind in host-process qemu-mps2-an385; do
  for dtype in int8 uint8 int16 uint16 int32 uint32 float16 float32 float64; do
    ids+=("$(ctl submit --kind "$kind" --c-source "$work/copy.c" --entry copy_of --reference copy_ref \
            --shape 257,257 --dtype "$dtype" --seed 5 --request-id "copy-$kind-$dtype")")
  done
done
ctl watch "${ids[@]}" >/dev/null
ctl results --json >"$work/results.json"
python3 - "$work/results.json" "${ids[@]}" <<'PY' || fail "every dtype round-trips on both boards"
import json, sys
jobs = {j["job_id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
for i in sys.argv[2:]:
    r = jobs[i]["result"]
    assert r.get("error_code", "NO_ERROR") == "NO_ERROR", (jobs[i]["trial"]["args"], r)
    assert r["costs_s"], r
PY
# float32 within the trial's tolerance, and outside the default one.
loose=$(ctl submit --kind host-process --c-source "$work/copy.c" --entry copy_off --reference copy_ref \
          --shape 64,64 --atol 0.01)
tight=$(ctl submit --kind host-process --c-source "$work/copy.c" --entry copy_off --reference copy_ref \
          --shape 64,64)
ctl watch "$loose" "$tight" >/dev/null
ctl get "$loose" | grep -q "DONE" || fail "0.001 off within atol 0.01"
ctl get "$tight" >"$work/tight.txt"
grep -q "WRONG_ANSWER" "$work/tight.txt" || { cat "$work/tight.txt" >&2; fail "0.001 off passed the default 1e-4"; }
if ctl submit --kind host-process --c-source "$work/copy.c" --entry copy_of --reference copy_ref \
     --shape 64,64 --dtype int16 --atol 1 >"$work/int-tol.out" 2>&1; then fail "a tolerance on an int16 output"; fi
grep -q "op.atol: the output is int16: integer outputs must equal the reference's" "$work/int-tol.out" \
  || { cat "$work/int-tol.out" >&2; fail "int16 tolerance refusal"; }

# A kernel that writes past the end of its output (the candidate, or the reference): failed with
# the cause named, on both boards.
over=()
for kind in host-process qemu-mps2-an385; do
  over+=("$(ctl submit --kind "$kind" --c-source "$work/copy.c" --entry copy_over --reference copy_ref \
             --shape 64,64 --dtype int8)")
  over+=("$(ctl submit --kind "$kind" --c-source "$work/copy.c" --entry copy_of --reference copy_over \
             --shape 64,64 --dtype int8)")
done
ctl watch "${over[@]}" >/dev/null
for i in 0 1 2 3; do
  ctl get "${over[$i]}" >"$work/over-$i.txt"
  want="the candidate wrote past the end of its output"
  [[ $((i % 2)) -eq 1 ]] && want="the reference copy_over wrote past the end of its output"
  grep -q "RUNTIME_DEVICE" "$work/over-$i.txt" && grep -q "$want" "$work/over-$i.txt" ||
    { cat "$work/over-$i.txt" >&2; fail "a write past the output ($i): want '$want'"; }
done

stop_daemons
say "PASS"
