#!/usr/bin/env bash
# The friction a new user met (issue 36 §4), end to end with farmctl against a tracker and an
# agent with one host-process board:
#   cancel   a trial whose kernel spins forever, with a timeout of 5 minutes, cancelled while its
#            call is on the board: the board is free for the next trial within seconds (the call
#            abandoned, the board process stopped and restarted), and farmctl prints CANCELLED.
#   versions an earlier source of deploy/examples/ops/gemv added again after a buggy one is the
#            latest again; `farmctl op retire` hides a version from new trials (submit and tune
#            refuse it, naming why) while its result keeps it; only the owner retires; every
#            version retired: no new trial; --version is in submit's and tune's --help.
#   op add   an operator that does not compile (a ';' missing) or whose entry does not exist is
#            refused by farmctl with the compiler's error at the user's path; nothing is stored.
set -euo pipefail

TEST_NAME=friction
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/friction"
rm -rf "$work" && mkdir -p "$work"
# wait_get JOB REGEX [SECONDS]: waits until `farmctl get JOB` prints a line matching REGEX.
wait_get() {
  local limit=$((${3:-60} * 10))
  for _ in $(seq "$limit"); do
    if ctl get "$1" 2>/dev/null | grep -qE "$2"; then return 0; fi
    sleep 0.1
  done
  ctl get "$1" >&2 || true
  tail -20 "$work/agent.err" >&2
  fail "job $1: no line matching '$2' in farmctl get within ${3:-60} s"
}

start_host_farm erin friction-agent

# ---- cancel reaches the board -----------------------------------------------------------------
cat >"$work/spin.c" <<'C'
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
BF_OPS_DECLARE_PACKED(spin);
BF_OPS_DECLARE_PACKED(spin) {
  for (;;) {
  }
}
BF_OPS_DECLARE_PACKED(spin_ref);
BF_OPS_DECLARE_PACKED(spin_ref) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t i;
  for (i = 0; i < x->shape[0]; ++i) ((float*)y->data)[i] = ((const float*)x->data)[i];
  return 0;
}
C
# A first trial warms the board (its runtime built, the board started).
warm=$(ctl submit --kind host-process --op add --shape 64,64,64)
ctl watch "$warm" | tail -1 | grep -q DONE || fail "the first trial did not finish"
builds=$(metric 'benchfarm_agent_builds_total{result="OK"}')
spin=$(ctl submit --kind host-process --c-source "$work/spin.c" --entry spin --reference spin_ref \
  --shape 64,64 --timeout-ms 300000)
wait_get "$spin" "^state +RUNNING"
# Its image is built: the call goes to the board a moment later (a start and a handshake).
for _ in $(seq 600); do
  [[ "$(metric 'benchfarm_agent_builds_total{result="OK"}')" != "$builds" ]] && break
  sleep 0.1
done
[[ "$(metric 'benchfarm_agent_builds_total{result="OK"}')" != "$builds" ]] || fail "the spin trial's image was not built"
sleep 2
ctl get "$spin" | grep -qE "^state +RUNNING" || { ctl get "$spin" >&2; fail "the spin trial is not running"; }
ctl cancel "$spin" >"$work/cancel.out"
grep -qx "$spin CANCELLED" "$work/cancel.out" || { cat "$work/cancel.out" >&2; fail "farmctl cancel prints CANCELLED"; }
cancelled_at=$(date +%s.%N)
next=$(ctl submit --kind host-process --op add --shape 64,64,64)
ctl watch "$next" >"$work/next.watch" &
watcher=$!
for _ in $(seq 300); do kill -0 "$watcher" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$watcher" 2>/dev/null; then
  kill "$watcher"
  tail -20 "$work/agent.err" >&2
  fail "the board was still busy with the cancelled trial 30 s later (its timeout is 300 s)"
fi
wait "$watcher" || true
free_s=$(python3 -c "import sys, time; print(round(time.time() - float(sys.argv[1]), 1))" "$cancelled_at")
tail -1 "$work/next.watch" | grep -qE " DONE host-process/add on hp0 attempt 1 [0-9.]+ (ns|us|ms) " || { cat "$work/next.watch" >&2; fail "the next trial did not succeed"; }
say "the next trial finished ${free_s} s after the cancel"
python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 15 else 1)" "$free_s" || fail "the board took ${free_s} s to be free"
grep -q "job $spin: cancelled: its call was abandoned" "$work/agent.err" "$work/agent.out" || { tail -20 "$work/agent.err" >&2; fail "the agent did not abandon the call"; }
ctl get "$spin" >"$work/spin.get"
grep -qE "^state +CANCELLED$" "$work/spin.get" || { cat "$work/spin.get" >&2; fail "farmctl get prints CANCELLED"; }
ctl results >"$work/results.txt"
grep -E "^$spin " "$work/results.txt" | grep -q " CANCELLED " || { cat "$work/results.txt" >&2; fail "farmctl results prints CANCELLED"; }
ctl watch "$spin" | grep -q " $spin CANCELLED host-process/" || fail "farmctl watch prints CANCELLED"
if grep -q "CANCELLED_STATE" "$work/spin.get" "$work/results.txt"; then fail "the enum's name was printed"; fi

# ---- an earlier source added again is the latest again; a retired version runs no new trial -----
cp -rL deploy/examples/ops/gemv "$work/gemv" && chmod -R u+w "$work/gemv"
version_of() { awk '{print $3}' "$1" | tr -d :; }
ctl op add "$work/gemv" >"$work/add1.out" && v1=$(version_of "$work/add1.out")
cp "$work/gemv/gemv.c" "$work/gemv.c.good"
sed -i 's/for (; j < k; ++j) s0 += row\[j\] \* x\[j\];//' "$work/gemv/gemv.c"  # a bug
ctl op add "$work/gemv" >"$work/add2.out" && v2=$(version_of "$work/add2.out")
[[ -n "$v1" && -n "$v2" && "$v1" != "$v2" ]] || fail "two versions of gemv: '$v1' '$v2'"
cp "$work/gemv.c.good" "$work/gemv/gemv.c"
ctl op add "$work/gemv" >"$work/add3.out"
grep -qx "gemv version $v1: already in the catalog; the latest again" "$work/add3.out" || { cat "$work/add3.out" >&2; fail "adding v1 again"; }
ctl ops --op gemv --all-versions >"$work/ops.txt"
grep -qE "^gemv +$v1 \(latest\) " "$work/ops.txt" || { cat "$work/ops.txt" >&2; fail "v1 is not listed as the latest"; }
job=$(ctl submit --kind host-process --op gemv --knob unroll=4 --request-id gemv-latest)
ctl get "$job" | grep -qE "^trial +host-process/gemv@$v1$" || { ctl get "$job" >&2; fail "a trial naming no version did not run v1"; }
ctl watch "$job" | tail -1 | grep -q " DONE .* [0-9.]* [nu]s " || fail "v1's trial did not succeed"
old=$(ctl submit --kind host-process --op gemv --version "$v2" --knob unroll=8 --shape 64x100,100,64 --request-id gemv-v2)
ctl watch "$old" | tail -1 | grep -q "WRONG_ANSWER" || fail "v2's planted bug was not caught"

# Retire v2: new trials may not name it; its result stays. Only the owner (or an admin) retires.
use_token "$work/pki" mallory
if ctl op retire gemv --version "$v2" >"$work/mallory.out" 2>&1; then fail "mallory retired erin's gemv"; fi
grep -q "operator gemv belongs to erin: only its owner (or an admin) may retire versions of it" "$work/mallory.out" \
  || { cat "$work/mallory.out" >&2; fail "mallory's refusal"; }
use_token "$work/pki" erin
ctl op retire gemv --version "$v2" >"$work/retire.out"
grep -qx "gemv version $v2: retired; new trials of gemv run version $v1 (the latest); its results stay" "$work/retire.out" \
  || { cat "$work/retire.out" >&2; fail "op retire's answer"; }
if ctl submit --kind host-process --op gemv --version "$v2" >"$work/refused.out" 2>&1; then fail "a retired version was submitted"; fi
grep -qF "trials[0].op.template_op.version: operator gemv version $v2 is retired" "$work/refused.out" \
  || { cat "$work/refused.out" >&2; fail "the refusal of a retired version"; }
if (cd "$work" && ctl tune --op gemv --version "$v2" --kind host-process --trials 2 >tune.out 2>&1); then fail "tune ran a retired version"; fi
grep -q "operator gemv version $v2 is retired" "$work/tune.out" || { cat "$work/tune.out" >&2; fail "tune's refusal"; }
ctl get "$old" | grep -qE "^trial +host-process/gemv@$v2$" || fail "the retired version's job lost its version"
ctl ops --op gemv --all-versions | grep -qE "^gemv +$v2 \(retired\) " || fail "ops does not mark v2 retired"
ctl op show gemv --version "$v2" | grep -q "^version:   $v2 (retired" || fail "op show does not say v2 is retired"
# Retiring the latest too: nothing is left for new trials, and farmctl says so.
ctl op retire gemv >"$work/retire2.out"
grep -qx "gemv version $v1: retired; every version of gemv is retired: new trials of it are refused until one's source is added again; its results stay" \
  "$work/retire2.out" || { cat "$work/retire2.out" >&2; fail "retiring the last version"; }
if ctl submit --kind host-process --op gemv --knob unroll=4 >"$work/none.out" 2>&1; then fail "a fully retired operator took a trial"; fi
grep -q "every version of operator gemv is retired" "$work/none.out" || { cat "$work/none.out" >&2; fail "the refusal names the retirement"; }
ctl op add "$work/gemv" | grep -qx "gemv version $v1: already in the catalog; the latest again" || fail "v1 not brought back"
# ---- op add compiles the operator for the host first: errors stay on the user's side ---------------
mkdir -p "$work/typo"
cp "$work/gemv/op.json" "$work/typo/op.json"
sed -e 's/s0 += row\[j\] \* x\[j\];/s0 += row[j] * x[j]/' "$work/gemv/gemv.c" >"$work/typo/gemv.c"  # a ';' missing
sed -i 's/"name": "gemv"/"name": "gemv_typo"/; s/"op": "gemv"/"op": "gemv_typo"/' "$work/typo/op.json"
if ctl op add "$work/typo" >"$work/typo.out" 2>&1; then fail "an operator that does not compile was added"; fi
grep -q "gemv_typo does not compile for the host (cc -std=c99 -O2 .*): 1 error:" "$work/typo.out" &&
  grep -qE "^  $work/typo/gemv.c:[0-9]+:[0-9]+: error: expected .;." "$work/typo.out" &&
  grep -q "nothing was sent to the tracker" "$work/typo.out" || { cat "$work/typo.out" >&2; fail "op add's compile errors"; }
cp "$work/gemv/gemv.c" "$work/typo/gemv.c"
sed -i 's/"entry": "gemv"/"entry": "gemv_fast"/' "$work/typo/op.json"
if ctl op add "$work/typo" >"$work/typo.out" 2>&1; then fail "an operator whose entry does not exist was added"; fi
grep -q "define no function named by op.json's entry \"gemv_fast\"" "$work/typo.out" || { cat "$work/typo.out" >&2; fail "op add's missing entry"; }
if ctl ops | grep -q "^gemv_typo "; then fail "a refused operator is in the catalog"; fi

for command in submit tune; do
  ctl "$command" --help >"$work/help.out" 2>&1 || true
  grep -qE "^  $command .*--version V" "$work/help.out" || { cat "$work/help.out" >&2; fail "$command --help does not show --version"; }
done

stop_daemons
say "PASS"
