#!/usr/bin/env bash
# A user's own kernel, end to end, as a user runs it with farmctl: a tracker and an agent with
# one host-process board. The example operator deploy/examples/ops/gemv (two knobs: unroll x acc,
# 8 configs) is registered with `farmctl op add`, listed, tuned with `farmctl tune --strategy grid`
# (one build and one flash for the batch of 8), its AutoTVM records keyed by name, version and
# shapes; a planted bug in a new version is caught as WRONG_ANSWER while the old version's results
# keep theirs; a fresh tune with other shapes measures afresh, a rerun resubmits nothing, and
# `farmctl import-log` restores a run elsewhere; every kind of bad trial is refused at submission
# with nothing stored; a reused request id with other trials is refused; a one-off C source trial
# with its own reference runs.
set -euo pipefail

TEST_NAME=user_op
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/user_op"
rm -rf "$work" && mkdir -p "$work"

start_host_farm carol user-op-agent "batch_size: 8"

# ---- register it ---------------------------------------------------------------------------------
cp -r deploy/examples/ops/gemv "$work/gemv"
ctl op add "$work/gemv" >"$work/add.out" || { cat "$work/add.out" >&2; fail "op add"; }
grep -qE "^gemv version [0-9a-f]{16}: added$" "$work/add.out" || { cat "$work/add.out" >&2; fail "op add output"; }
v1=$(awk '{print $3}' "$work/add.out" | tr -d :)
ctl op add "$work/gemv/op.json" | grep -q "already in the catalog" || fail "adding the same content twice"
ctl ops >"$work/ops.txt"
for op in add matmul conv2d gemv; do grep -qE "^$op " "$work/ops.txt" || { cat "$work/ops.txt" >&2; fail "ops lists no $op"; }; done
grep -E "^gemv " "$work/ops.txt" | grep -q "unroll=1\*|2|4|8 acc=1\*|2" || { cat "$work/ops.txt" >&2; fail "gemv's knobs"; }
ctl op show gemv >"$work/show.txt"
grep -q "reference: gemv_reference" "$work/show.txt" && grep -q "file:      gemv.c" "$work/show.txt" \
  && grep -q "shapes:    64x128,128,64 (default)" "$work/show.txt" || { cat "$work/show.txt" >&2; fail "op show"; }

# ---- tune it: the whole space (8 configs) in one batch: one build, one flash ---------------------
builds0=$(metric 'benchfarm_agent_builds_total{result="OK"}')
(cd "$work" && ctl tune --op gemv --kind host-process --strategy grid --trials 8 --batch 8 \
   --number 3 --repeat 2 --out tune-gemv >tune.out 2>tune.err) || {
  cat "$work/tune.out" "$work/tune.err" "$work/agent.err" >&2; fail "farmctl tune --op gemv"; }
cat "$work/tune.out" >&2
grep -q "best configurations of gemv on host-process (8 trials, 0 failed" "$work/tune.out" || fail "tune table"
grep -q "flashes: 1 for the 8 trials" "$work/tune.out" || fail "one flash for the batch"
builds1=$(metric 'benchfarm_agent_builds_total{result="OK"}')
[[ $((${builds1%.*} - ${builds0%.*})) -eq 1 ]] || fail "builds for the tune: $builds0 -> $builds1 (want one)"
log="$work/tune-gemv/gemv.autotvm.log"
[[ $(wc -l <"$log") -eq 8 ]] || fail "tune log: want 8 records"
grep -q "\"benchfarm/gemv@$v1\", \[\[\"TENSOR\", \[64, 128\], \"float32\"\]" "$log" || { head -1 "$log" >&2; fail "record input: name, version, shapes"; }
# farmctl results --autotvm writes the same keys as the tune log.
ctl results --op gemv --autotvm >"$work/results.log"
diff <(python3 -c 'import json,sys; [print(json.dumps(json.loads(l)["input"]), json.dumps(json.loads(l)["config"]["entity"])) for l in open(sys.argv[1])]' "$log" | sort) \
     <(python3 -c 'import json,sys; [print(json.dumps(json.loads(l)["input"]), json.dumps(json.loads(l)["config"]["entity"])) for l in open(sys.argv[1])]' "$work/results.log" | sort) \
  || fail "results --autotvm and the tune log disagree on keys"

# ---- a rerun resubmits nothing; other shapes measure afresh --------------------------------------
n=$(jobs_stored)
(cd "$work" && ctl tune --op gemv --kind host-process --strategy grid --trials 8 --batch 8 \
   --number 3 --repeat 2 --out tune-gemv >rerun.out 2>rerun.err) || fail "rerun"
[[ $(jobs_stored) -eq $n ]] || fail "a rerun of a finished tune submitted jobs"
(cd "$work" && ctl tune --op gemv --kind host-process --strategy grid --trials 8 --batch 8 \
   --number 3 --repeat 2 --shape 32x96,96,32 --out tune-gemv >shape.out 2>shape.err) || {
  cat "$work/shape.err" >&2; fail "tune with other shapes"; }
grep -q "was of another run" "$work/shape.err" || { cat "$work/shape.err" >&2; fail "stale state not set aside"; }
[[ $(jobs_stored) -eq $((n + 8)) ]] || fail "other shapes: want 8 new jobs, have $(($(jobs_stored) - n))"
grep -c "\[32, 96\]" "$log" | grep -qx 8 || fail "records of the new shapes"

# ---- import-log: the first run's records restored elsewhere; its tune measures nothing ----------
(cd "$work" && ctl import-log tune-gemv/gemv.autotvm.log --op gemv --kind host-process \
   --number 3 --repeat 2 --out imported >import.out) || fail "import-log"
grep -q "import-log: 8 records of gemv@$v1 on host-process restored" "$work/import.out" || { cat "$work/import.out" >&2; fail "import-log count"; }
grep -q "8 of another operator, version, kind, core or shapes skipped" "$work/import.out" || { cat "$work/import.out" >&2; fail "import-log skips"; }
n=$(jobs_stored)
(cd "$work" && ctl tune --op gemv --kind host-process --strategy grid --trials 8 --batch 8 \
   --number 3 --repeat 2 --out imported >imported.out 2>imported.err) || fail "tune after import"
[[ $(jobs_stored) -eq $n ]] || fail "tune after import-log submitted jobs"
grep -q "best configurations of gemv" "$work/imported.out" || fail "tune after import: no table"

# ---- a planted bug in a new version: WRONG_ANSWER; old results keep their version ----------------
sed -i 's/for (; j < k; ++j) s0 += row\[j\] \* x\[j\];//' "$work/gemv/gemv.c"
ctl op add "$work/gemv" >"$work/add2.out"
v2=$(awk '{print $3}' "$work/add2.out" | tr -d :)
[[ "$v2" != "$v1" ]] || fail "a changed source kept version $v1"
ctl ops --op gemv --all-versions | grep -c "^gemv " | grep -qx 2 || fail "two versions listed"
bug=$(ctl submit --kind host-process --op gemv --knob unroll=8 --shape 64x100,100,64 --request-id bug)
ok=$(ctl submit --kind host-process --op gemv --knob unroll=4 --shape 64x100,100,64 --request-id ok)
ctl watch "$bug" "$ok" >/dev/null
ctl results --json >"$work/results.json"
python3 - "$work/results.json" "$bug" "$ok" "$v1" "$v2" <<'PY' || fail "planted bug / versions"
import json, sys
jobs = {j["job_id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
bug, ok, v1, v2 = sys.argv[2:]
assert jobs[bug]["result"]["error_code"] == "WRONG_ANSWER", jobs[bug]["result"]
assert jobs[ok]["result"]["error_code"] == "NO_ERROR", jobs[ok]["result"]
assert jobs[bug]["trial"]["op"]["template_op"]["version"] == v2
versions = {j["trial"]["op"]["template_op"].get("version") for j in jobs.values()
            if j["trial"]["op"].get("template_op", {}).get("op") == "gemv"}
assert versions == {v1, v2}, versions
PY

# ---- a pin to a registered board that is offline queues, and `farmctl queue` says why -----------
agent_credentials "$work/pki" parked-agent 'hp-off=host-process' >/dev/null
sed -e 's/user-op-agent/parked-agent/g' -e 's/"hp0"/"hp-off"/' -e '/metrics_address/d' \
    -e "s#$work/agent/#$work/agent2/#g" "$work/agent.textproto" >"$work/agent2.textproto"
agent/agent --config "$work/agent2.textproto" >"$work/agent2.out" 2>"$work/agent2.err" &
parked=$!
wait_line "$work/agent2.out" "serving 1 boards" "$parked" >/dev/null
kill -TERM "$parked" && wait "$parked" || fail "the second agent did not stop cleanly"
pinned=$(ctl submit --kind host-process --op gemv --board hp-off --request-id parked)
ctl queue >"$work/queue.txt"
grep -q "host-process: waiting: 1 job pinned to board hp-off (hp-off OFFLINE)" "$work/queue.txt" \
  || { cat "$work/queue.txt" >&2; fail "farmctl queue does not say why the pinned job waits"; }
ctl cancel "$pinned" | grep -q CANCELLED || fail "cancel the parked job"

# ---- refused at the door, nothing stored ---------------------------------------------------------
n=$(jobs_stored)
refuse() {  # refuse WANT ARGS...: farmctl submit fails naming WANT
  local want=$1; shift
  if ctl submit "$@" >"$work/refused.out" 2>"$work/refused.err"; then fail "accepted: $*"; fi
  grep -qF -- "$want" "$work/refused.err" || { cat "$work/refused.err" >&2; fail "refusal of '$*' does not say '$want'"; }
}
refuse 'trials[0].op.template_op.op: unknown operator "nope"' --kind host-process --op nope
refuse 'trials[0].op.template_op.version: operator gemv has no version "0000000000000000"' \
  --kind host-process --op gemv --version 0000000000000000
refuse 'gemv has no knob "tile"' --kind host-process --op gemv --knob tile=4
refuse 'knob unroll=3: not one of 1, 2, 4, 8' --kind host-process --op gemv --knob unroll=3
refuse 'trials[0].args[1].shape[0]: K is 128 in args[0], 64 here' --kind host-process --op gemv --shape 64x128,64,64
refuse 'trials[0].args: gemv takes 3 arguments, the trial gives 2' --kind host-process --op gemv --shape 64x128,128
refuse 'trials[0].board_kind: unknown board kind "stm32f9"' --kind stm32f9 --op gemv
refuse 'trials[0].board_id: no board "hp9" is registered' --kind host-process --op gemv --board hp9
refuse 'trials[0].labels: no registered board of kind host-process has rack=A' --kind host-process --op gemv --label rack=A
# 3 float32 arguments (320 MiB) and the reference's output (64 MiB), as issue 36 §1 counts them.
refuse 'the arguments take 402653184 bytes; the largest board of kind host-process holds 31457280' \
  --kind host-process --op matmul --shape 4096x8192,8192x4096,4096x4096
[[ $(jobs_stored) -eq $n ]] || fail "a refused submission stored jobs"
# A retried request id: the same trials get the same jobs; other trials are refused.
again=$(ctl submit --kind host-process --op gemv --knob unroll=4 --shape 64x100,100,64 --request-id ok)
[[ "$again" == "$ok" ]] || fail "a retried request id gave other jobs"
refuse 'request_id "ok" of client' --kind host-process --op gemv --knob unroll=2 --request-id ok
[[ $(jobs_stored) -eq $n ]] || fail "a conflicting request id stored jobs"

# ---- a one-off C source trial, its reference in the same file ------------------------------------
cat >"$work/scale.c" <<'C'
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
static int run(TVMValue* args, float factor) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t i;
  for (i = 0; i < x->shape[0]; ++i) ((float*)y->data)[i] = factor * ((const float*)x->data)[i];
  return 0;
}
BF_OPS_DECLARE_PACKED(my_scale);
BF_OPS_DECLARE_PACKED(my_scale) { return run(args, 2.0f); }
BF_OPS_DECLARE_PACKED(my_scale_ref);
BF_OPS_DECLARE_PACKED(my_scale_ref) { return run(args, 2.0f); }
C
one=$(ctl submit --kind host-process --c-source "$work/scale.c" --entry my_scale --reference my_scale_ref --shape 256,256)
ctl watch "$one" | tail -1 | grep -q "DONE" || fail "c-source trial did not finish"
ctl results --json | python3 -c "
import json, sys
j = [j for j in json.load(sys.stdin)['jobs'] if j['job_id'] == '$one'][0]
assert j['result'].get('error_code', 'NO_ERROR') == 'NO_ERROR', j['result']
assert j['result']['costs_s'], j['result']" || fail "c-source trial with its own reference"

stop_daemons
say "PASS"
