#!/usr/bin/env bash
# Compile options and faults that name their line (issue 36 §3), as a user meets them with farmctl
# against a tracker and an agent with a host-process board and an emulated Cortex-M3:
#   - options outside the allow-list — ones that would run code or read files at build time among
#     them — refused at the door with the cause named, in an op.json (its cflags and a cflag knob's
#     values), in `submit --cflags` and in a submission file farmctl passes on as it is (the
#     tracker's own check); nothing is stored;
#   - an operator with options of its own and a knob `opt` choosing -O2/-O3/-Os: `op show` shows
#     them; -O3 and -Os are two images (two firmware hashes), and AutoTVM records carry the knob;
#   - a NULL write on each board — a C source trial with its own options, and a user operator's
#     candidate on the Cortex-M3 — ends in a message naming the faulting function, file and line
#     (`farmctl get` shows it), and the Cortex-M3's fault line is in the job's log (`farmctl logs`,
#     README "Per-job logs") after the flash that put the image on the board.
set -euo pipefail

TEST_NAME=cflags
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/cflags"
rm -rf "$work" && mkdir -p "$work"

# gemv_opt: deploy/examples/ops/gemv with options of its own and a knob choosing -O2, -O3 or -Os.
# manifest DIR [CFLAGS_JSON [OPT_VALUES_JSON]]
manifest() {
  mkdir -p "$1" && cp deploy/examples/ops/gemv/gemv.c "$1/"
  python3 - "$1/op.json" "${2:-[\"-fno-strict-aliasing\"]}" "${3:-[\"-O2\", \"-O3\", \"-Os\"]}" <<'PY'
import json, sys
op = json.load(open("deploy/examples/ops/gemv/op.json"))
op["op"] = "gemv_opt"
op["cflags"] = json.loads(sys.argv[2])
op["knobs"].append({"name": "opt", "values": json.loads(sys.argv[3]), "default": "-O2", "cflag": True})
json.dump(op, open(sys.argv[1], "w"))
PY
}
# op add fails naming WANT: refuse_op WANT CFLAGS_JSON [OPT_VALUES_JSON]
refuse_op() {
  local want=$1
  rm -rf "$work/bad" && manifest "$work/bad" "$2" "${3:-}"
  if ctl op add "$work/bad" >"$work/bad.out" 2>&1; then fail "op add took cflags $2 ${3:-}"; fi
  grep -qF -- "$want" "$work/bad.out" || { cat "$work/bad.out" >&2; fail "op add $2 ${3:-}: not '$want'"; }
}

start_tracker erin
cat >"$work/agent.textproto" <<CONFIG
$(agent_config cflags-agent 'hp*=host-process' 'm3-*=qemu-mps2-an385')
boards { id: "hp0" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }
boards { id: "m3-0" kind: "qemu-mps2-an385" serial {} qemu { machine: "mps2-an385" timing: CYCLES }
         build_template: "agent/templates/qemu-mps2-an385" build_time_limit_seconds: 300 }
CONFIG
start_agent 2

# ---- refused at the door, the cause named, nothing stored ----------------------------------------
refuse_op 'op.spec.cflags[0]: "-fplugin=evil.so" is refused: it loads a compiler plugin (code run at build time)' '["-fplugin=evil.so"]'
refuse_op 'op.spec.cflags[0]: "@/etc/passwd" is refused: it reads options from a file' '["@/etc/passwd"]'
refuse_op 'op.spec.cflags[1]: "-B/tmp/evil" is refused: it names where the compiler finds its programs' '["-O3", "-B/tmp/evil"]'
refuse_op 'op.spec.cflags[0]: "-specs=evil.specs" is refused: it reads a specs file, which can run programs' '["-specs=evil.specs"]'
refuse_op 'op.spec.cflags[0]: "-wrapper" is refused: it runs the compiler'"'"'s programs through another program' '["-wrapper"]'
refuse_op 'op.spec.cflags[0]: "-fprofile-use=/tmp/p" is refused: it reads or writes profile files' '["-fprofile-use=/tmp/p"]'
refuse_op 'op.spec.cflags[0]: "-I/etc" is refused: it reads files (an include path)' '["-I/etc"]'
refuse_op 'op.spec.knobs[2].values[1]: "-fplugin=x.so" is refused' '[]' '["-O2", "-O3 -fplugin=x.so"]'
ctl ops >"$work/ops.txt"
if grep -q "^gemv_opt " "$work/ops.txt"; then fail "a refused operator is in the catalog"; fi

null_write_c bad_write >"$work/bad.c"
n=$(jobs_stored)
if ctl submit --kind host-process --c-source "$work/bad.c" --entry bad_write --no-check --shape 4,4 \
     --cflags "-O1 -fplugin=evil.so" >"$work/sub.out" 2>&1; then fail "submit --cflags took a plugin"; fi
grep -qF -- '--cflags: "-fplugin=evil.so" is refused: it loads a compiler plugin' "$work/sub.out" || { cat "$work/sub.out" >&2; fail "submit --cflags refusal"; }
# A submission file goes to the tracker as written: the tracker's own check.
python3 - "$work/bad.c" >"$work/trials.json" <<'PY'
import json, sys
print(json.dumps({"trials": [{"board_kind": "host-process", "args": [{"shape": [4]}, {"shape": [4]}],
    "op": {"c_source": open(sys.argv[1]).read(), "entry_function": "bad_write", "cflags": ["-O1", "-B/tmp/evil"]}}]}))
PY
if ctl submit --file "$work/trials.json" >"$work/file.out" 2>&1; then fail "the tracker took -B"; fi
grep -qF -- 'trials[0].op.cflags[1]: "-B/tmp/evil" is refused: it names where the compiler finds its programs' "$work/file.out" \
  || { cat "$work/file.out" >&2; fail "the tracker's refusal of -B"; }
[[ $(jobs_stored) -eq $n ]] || fail "a refused submission stored jobs"

# ---- an operator's own options and a knob of them: two images ------------------------------------
manifest "$work/gemv_opt"
ctl op add "$work/gemv_opt" >"$work/add.out" || { cat "$work/add.out" >&2; fail "op add gemv_opt"; }
ctl op show gemv_opt >"$work/show.txt"
grep -qF "knobs:     unroll=1*|2|4|8 acc=1*|2 opt=-O2*|-O3|-Os" "$work/show.txt" &&
  grep -qF "cflags:    -fno-strict-aliasing (every candidate), then knob opt's value" "$work/show.txt" \
  || { cat "$work/show.txt" >&2; fail "op show: knobs and cflags"; }
fast=$(ctl submit --kind host-process --op gemv_opt --knob opt=-O3 --number 3 --repeat 2)
ctl watch "$fast" >/dev/null
small=$(ctl submit --kind host-process --op gemv_opt --knob opt=-Os --number 3 --repeat 2)
ctl watch "$small" >/dev/null
ctl results --json >"$work/results.json"
python3 - "$work/results.json" "$fast" "$small" <<'PY' || fail "-O3 and -Os: two images"
import json, sys
jobs = {j["job_id"]: j for j in json.load(open(sys.argv[1]))["jobs"]}
fast, small = (jobs[i]["result"] for i in sys.argv[2:])
for r in (fast, small):
    assert r.get("error_code", "NO_ERROR") == "NO_ERROR", r
    assert r["costs_s"], r
assert fast["firmware_hash"] != small["firmware_hash"], (fast["firmware_hash"], small["firmware_hash"])
PY
ctl results --op gemv_opt --autotvm >"$work/records.log"
grep -qF '["opt", "ot", "-O3"]' "$work/records.log" && grep -qF '["opt", "ot", "-Os"]' "$work/records.log" \
  || { cat "$work/records.log" >&2; fail "AutoTVM records carry the options"; }

# ---- a fault names its function, file and line ---------------------------------------------------
m3=$(ctl submit --kind qemu-mps2-an385 --c-source "$work/bad.c" --entry bad_write --no-check --shape 4,4 --cflags -O1)
hp=$(ctl submit --kind host-process --c-source "$work/bad.c" --entry bad_write --no-check --shape 4,4 --cflags -O1)
ctl watch "$m3" "$hp" >/dev/null
ctl get "$m3" >"$work/m3.txt"
ctl get "$hp" >"$work/hp.txt"
cat "$work/m3.txt" "$work/hp.txt" >&2
grep -q "DEVICE_RESET" "$work/m3.txt" && grep -qE "^cflags +-O1$" "$work/m3.txt" || fail "the M3's fault"
grep -qE "fault: MemManage \(data access violation\) pc=0x[0-9a-f]{8} in bad_write \(trial\.c:7\) lr=0x[0-9a-f]{8} in " "$work/m3.txt" \
  || fail "the M3's fault does not name bad_write (trial.c:7)"
ctl logs "$m3" >"$work/m3.log"
cat "$work/m3.log" >&2
grep -qE "flash: image [0-9a-f]{16} put on qemu mps2-an385" "$work/m3.log" || fail "the M3's log has no flash"
grep -qE "the call failed: DEVICE_RESET: .*fault: MemManage \(data access violation\) pc=0x[0-9a-f]{8} in bad_write \(trial\.c:7\)" "$work/m3.log" \
  || fail "the M3's log has no fault line"
grep -q "reset: the board is restarted, or reconnected" "$work/m3.log" || fail "the M3's log has no reset"
grep -q "RUNTIME_DEVICE" "$work/hp.txt" || fail "the host-process board's crash"
grep -qE "killed by signal 11 .*fault: SIGSEGV \(address not mapped\) pc=0x[0-9a-f]+ in bad_write \(trial\.c:7\)" "$work/hp.txt" \
  || fail "the host-process board's crash does not name bad_write (trial.c:7)"

# A user operator's candidate: the candidate's function, in the operator's own file.
mkdir -p "$work/poke"
sed 's/bad_write/poke/g' "$work/bad.c" >"$work/poke/poke.c"  # the NULL write on line 7
cat >"$work/poke/op.json" <<'JSON'
{"op": "poke", "entry": "poke", "sources": ["poke.c"], "dims": {"N": 4},
 "args": [{"name": "x", "shape": ["N"]}, {"name": "y", "shape": ["N"]}],
 "knobs": [{"name": "opt", "values": ["-O1", "-Os"], "cflag": true}]}
JSON
ctl op add "$work/poke" >/dev/null
poke=$(ctl submit --kind qemu-mps2-an385 --op poke --knob opt=-Os --no-check)
ctl watch "$poke" >/dev/null
ctl get "$poke" >"$work/poke.txt"
cat "$work/poke.txt" >&2
grep -qE "DEVICE_RESET.*pc=0x[0-9a-f]{8} in bf_cand_poke_Os \(poke\.c:7\)" "$work/poke.txt" \
  || fail "the user operator's fault does not name its candidate (poke.c:7)"

stop_daemons
say "PASS"
