#!/usr/bin/env bash
# `./farm install-bin PREFIX` and ./farm's run commands keep the user's working directory.
#
# ./farm runs here for real, with stand-ins for `bazel` (it builds nothing; bazel-bin is a tree
# of links to this test's binaries laid out as Bazel lays them out) and `dpkg-query` (every
# package installed).
# 1. `./farm install-bin PREFIX` installs farmctl, the tracker, the agent and the host-process
#    board into a temporary PREFIX. Run with no runfiles in the environment, no Bazel on PATH
#    (a `bazel` that records any call) and from a directory outside the repository, the
#    installed programs must: create the tracker's relative --database there; read the agent's
#    relative --config and create its relative scratch/cache/spool there, with its
#    build_template and crt tree from PREFIX/share/benchfarm (the agent fails without them);
#    submit a relative --file and measure it; write `farmctl tune --out DIR` there; run
#    `farmctl board info --host-process` (the wrapper's BENCHFARM_BOARD) and time an operator on
#    an emulated Cortex-M3 under the cycle model (the plugin from PREFIX/share/benchfarm).
# 2. `./farm tracker` started from another directory creates its default benchfarm-tracker.db
#    there; `./farm agent --config REL` and `./farm ctl submit --file REL` read their relative
#    files there.
set -euo pipefail

ws="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}"
work="${TEST_TMPDIR:?}/install"
rm -rf "$work" && mkdir -p "$work"
TEST_NAME=install_test
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

# A `bazel` for the installed programs: it must never run; it leaves a mark and fails.
never="$work/never"
mkdir -p "$never"
cat >"$never/bazel" <<STUB
#!/bin/sh
echo "bazel \$*" >>"$work/bazel-called"
exit 97
STUB
chmod +x "$never/bazel"

# ./farm's stand-ins: bazel builds nothing (logging its calls) and names a bazel-bin of links to
# this test's binaries, agent.runfiles included; dpkg-query says every package is installed.
fakebin="$work/bazel-bin"
for f in farmctl/farmctl tracker/tracker agent/agent crt/host/board; do
  mkdir -p "$fakebin/$(dirname "$f")"
  ln -s "$ws/$f" "$fakebin/$f"
done
mkdir -p "$fakebin/python"
ln -s "$ws/python/proto" "$fakebin/python/proto"  # //python:stubs
mkdir -p "$fakebin/agent/agent.runfiles"
ln -s "$ws" "$fakebin/agent/agent.runfiles/benchfarm"
fake="$work/fake"
mkdir -p "$fake"
cat >"$fake/bazel" <<STUB
#!/bin/sh
echo "bazel \$* (in \$PWD)" >>"$work/fake-bazel.log"
case "\$1" in
  build) exit 0 ;;
  info) echo "$fakebin"; exit 0 ;;
esac
exit 97
STUB
cat >"$fake/dpkg-query" <<'STUB'
#!/bin/sh
printf 'install ok installed'
STUB
chmod +x "$fake/bazel" "$fake/dpkg-query"
farm=(env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE -u TEST_SRCDIR -u JAVA_RUNFILES
  PATH="$fake:/usr/local/bin:/usr/bin:/bin" HOME="$work" "$ws/farm")

# The environment of a user's shell: no Bazel runfiles variables, no bazel on PATH.
user_env=(env -u RUNFILES_DIR -u RUNFILES_MANIFEST_FILE -u TEST_SRCDIR -u JAVA_RUNFILES
  -u RUNFILES_MANIFEST_ONLY -u BENCHFARM_BOARD -u BENCHFARM_TRACKER
  PATH="$work/prefix/bin:$never:/usr/local/bin:/usr/bin:/bin")

# A trial file, a relative path for `farmctl submit --file`.
write_trials() {
  cat >"$1" <<'TRIALS'
client_id: "install-test"
trials {
  board_kind: "host-process"
  op { template_op { op: "add" knobs { key: "unroll" value: "4" } } }
  measure { number: 5 repeat: 2 }
  check_outputs: true
}
TRIALS
}

# An agent config with relative paths only: its state in the working directory, the template
# found beside the binary (or in the runfiles).
write_agent_config() {
  cat >"$1" <<CONFIG
agent_id: "$2"
tracker_address: "$3"
scratch_dir: "agent-state/scratch"
cache_dir: "agent-state/cache"
spool_dir: "agent-state/spool"
metrics_address: ""
${4:-}
boards { id: "$2-hp" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }
CONFIG
}

# ---- 1. ./farm install-bin PREFIX -----------------------------------------------------------
prefix="$work/prefix"
mkdir -p "$work/elsewhere"
(cd "$work/elsewhere" && "${farm[@]}" install-bin ../prefix) >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; fail "./farm install-bin failed"; }
grep -q "^bazel build .*-c opt.*//farmctl:farmctl //tracker:tracker //agent:agent" "$work/fake-bazel.log" ||
  fail "./farm install-bin did not build the binaries with -c opt: $(cat "$work/fake-bazel.log")"
for f in bin/farmctl bin/benchfarm-tracker bin/benchfarm-agent libexec/benchfarm/farmctl \
  libexec/benchfarm/board share/benchfarm/agent/templates/host-process/build; do
  [[ -x "$prefix/$f" && ! -L "$prefix/$f" ]] || fail "$prefix/$f: not an installed executable"
done
[[ -f "$prefix/share/benchfarm/crt/ops/knobs.json" ]] || fail "crt tree not installed"
[[ -f "$prefix/share/benchfarm/cyclemodel/libbenchfarm_cyclemodel.so" ]] ||
  fail "the cycle model's plugin is not installed"
# The Python client, and the PYTHONPATH that finds it, said at the end of the install.
for f in share/benchfarm/python/benchfarm/client.py share/benchfarm/python/proto/benchfarm_pb2.py \
  share/benchfarm/deploy/pki.sh; do
  [[ -f "$prefix/$f" ]] || fail "$prefix/$f: not installed"
done
pythonpath="$(sed -n 's/.*export PYTHONPATH="\([^"]*\)".*/\1/p' "$work/install.log")"
[[ "$pythonpath" -ef "$prefix/share/benchfarm/python" ]] ||
  { cat "$work/install.log" >&2; fail "install-bin does not print the PYTHONPATH of the Python client"; }
grep -q "share/benchfarm/deploy/pki.sh" "$work/install.log" || fail "install-bin does not say where pki.sh went"
if find "$prefix" -type l | grep -q .; then
  fail "links installed (into Bazel's tree?): $(find "$prefix" -type l | head -3)"
fi
# Installing again over an install works (files are replaced by rename).
(cd "$work/elsewhere" && "${farm[@]}" install-bin "$prefix") >"$work/install2.log" 2>&1 ||
  { cat "$work/install2.log" >&2; fail "./farm install-bin over an existing install failed"; }
say "installed in $prefix"

site="$work/site"
mkdir -p "$site"
cd "$site"

"${user_env[@]}" benchfarm-tracker --listen 127.0.0.1:0 --database tracker.db --metrics off \
  >"$site/tracker.out" 2>"$site/tracker.err" &
pids+=($!)
line="$(wait_line "$site/tracker.out" "^tracker: listening on" $!)"
address="$(sed -n 's/^tracker: listening on \([^ ]*\).*/\1/p' <<<"$line")"
[[ -f "$site/tracker.db" ]] || fail "benchfarm-tracker --database tracker.db: no $site/tracker.db"
grep -q "database $site/tracker.db;" "$site/tracker.err" || fail "the tracker's log does not name the absolute database path"
say "installed tracker on $address, database $site/tracker.db"

# Secure by default: the installed tracker made its CA with the installed deploy/pki.sh; the
# agent gets a certificate of it, farmctl the admin token.
pki="$site/tracker.db.pki"
[[ -f "$pki/ca.pem" && -f "$pki/admin.token" ]] || fail "the installed tracker made no CA in $pki"
bash "$prefix/share/benchfarm/deploy/pki.sh" agent "$pki" site 'site-*=host-process' >/dev/null ||
  fail "the installed pki.sh cannot make an agent certificate"
export BENCHFARM_CA="$pki/ca.pem" BENCHFARM_TOKEN_FILE="$pki/admin.token"
write_agent_config agent.textproto site "$address" \
  "credentials { ca_cert: \"$pki/ca.pem\" cert: \"$pki/agents/site.pem\" key: \"$pki/agents/site.key\" }"
"${user_env[@]}" benchfarm-agent --config agent.textproto --metrics off \
  >"$site/agent.out" 2>"$site/agent.err" &
pids+=($!)
wait_line "$site/agent.out" "^agent: site serving 1 boards" $! >/dev/null
for d in scratch cache spool; do
  [[ -d "$site/agent-state/$d" ]] || fail "agent: relative ${d}_dir not created in the working directory"
done
say "installed agent serving, its state in $site/agent-state"

"${user_env[@]}" farmctl boards --tracker "$address" >"$site/boards.out" 2>&1 || fail "farmctl boards: $(cat "$site/boards.out")"
grep -q "^site-hp  *host-process" "$site/boards.out" || fail "farmctl boards: no site-hp: $(cat "$site/boards.out")"

write_trials trials.textproto
"${user_env[@]}" farmctl submit --file trials.textproto --tracker "$address" >"$site/submit.out" 2>&1 ||
  fail "farmctl submit --file trials.textproto: $(cat "$site/submit.out")"
job="$(grep -o -m1 'j-[A-Za-z0-9_-]*' "$site/submit.out")" || fail "no job id in: $(cat "$site/submit.out")"
"${user_env[@]}" timeout 120 farmctl watch "$job" --tracker "$address" >"$site/watch.out" 2>&1 ||
  fail "farmctl watch $job: $(cat "$site/watch.out")"
"${user_env[@]}" farmctl results --json --tracker "$address" >"$site/results.json" 2>&1 || fail "farmctl results"
python3 - "$site/results.json" "$job" <<'PY' || fail "job $job has no measurement: $(cat "$site/results.json"; tail -5 "$site/agent.err")"
import json, sys
jobs = json.load(open(sys.argv[1]))["jobs"]
job = next(j for j in jobs if j.get("job_id", j.get("jobId")) == sys.argv[2])
result = job.get("result", {})
costs = result.get("costs_s", result.get("costsS", []))
assert costs and all(c > 0 for c in costs), job
PY
say "job $job measured on the installed agent (template and crt tree from $prefix/share/benchfarm)"

# The installed Python client, from the PYTHONPATH install-bin printed, in a script that exits.
"${user_env[@]}" PYTHONPATH="$pythonpath" timeout 30 /usr/bin/python3 -P - "$address" "$job" \
  >"$site/python.out" 2>&1 <<'PY' || fail "the installed Python client: $(cat "$site/python.out")"
import sys
import benchfarm
with benchfarm.Client(sys.argv[1]) as farm:
    assert farm.get(sys.argv[2]).result.costs_s, "no costs"
print("python ok")
PY
grep -q "python ok" "$site/python.out" || fail "the installed Python client: $(cat "$site/python.out")"

# The installed programs say what they are, under their installed names.
for p in benchfarm-tracker benchfarm-agent farmctl; do
  "${user_env[@]}" "$p" --version >"$site/version.out" 2>&1 || fail "$p --version: $(cat "$site/version.out")"
  grep -qE "^$p [0-9][0-9.]* \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$" "$site/version.out" ||
    fail "$p --version: $(cat "$site/version.out")"
  "${user_env[@]}" "$p" --help >"$site/help.out" 2>&1 || true
  grep -q -- "--insecure" "$site/help.out" || fail "$p --help lists no flags: $(head -5 "$site/help.out")"
done

"${user_env[@]}" farmctl tune --op add --kind host-process --strategy grid --trials 2 --batch 2 \
  --out tune-rel --tracker "$address" >"$site/tune.out" 2>&1 || fail "farmctl tune: $(cat "$site/tune.out")"
[[ -d "$site/tune-rel" && -n "$(ls -A "$site/tune-rel")" ]] || fail "farmctl tune --out tune-rel: nothing in $site/tune-rel"

"${user_env[@]}" farmctl board info --host-process >"$site/board.out" 2>&1 ||
  fail "installed farmctl board info --host-process: $(cat "$site/board.out")"
grep -q "host-process" "$site/board.out" || fail "board info: $(cat "$site/board.out")"
cp "$ws/tests/firmware/qemu-mps2-an385.elf" "$ws/tests/firmware/qemu-mps2-an385.elf.hash" \
  "$ws/tests/firmware/qemu-mps2-an385.elf.timing" "$site/"
(cd "$site" && "${user_env[@]}" farmctl board time --qemu mps2-an385 --image qemu-mps2-an385.elf \
  --op add --repeat 2) >"$site/time.out" 2>&1 || fail "installed farmctl board time --qemu: $(cat "$site/time.out")"
grep -q "cycle-model (qemu-cycles)" "$site/time.out" || fail "board time under the cycle model: $(cat "$site/time.out")"
grep -qE "= [0-9,]+ cycles at 25 MHz" "$site/time.out" || fail "board time: no cycles at 25 MHz: $(cat "$site/time.out")"
# op add compiles the operator for the host against the installed crt headers (the wrapper's
# BENCHFARM_CRT) before sending it: a compile error is refused there, naming the user's file.
mkdir -p "$site/broken_op"
cat >"$site/broken_op/op.json" <<'JSON'
{"op": "broken", "entry": "broken", "reference_entry": "broken_ref", "sources": ["broken.c"],
 "dims": {"N": 4}, "args": [{"name": "x", "shape": ["N"]}, {"name": "y", "role": "output", "shape": ["N"]}],
 "knobs": []}
JSON
printf '#include <benchfarm/ops/common.h>\nBF_OPS_DECLARE_PACKED(broken) { return nope; }\n' >"$site/broken_op/broken.c"
if (cd "$site" && "${user_env[@]}" farmctl op add broken_op --tracker "$address") >"$site/op.out" 2>&1; then
  fail "installed farmctl op add took an operator that does not compile: $(cat "$site/op.out")"
fi
grep -q "broken does not compile for the host" "$site/op.out" && grep -q "broken_op/broken.c:2:.*error: .nope. undeclared" "$site/op.out" ||
  fail "installed farmctl op add: $(cat "$site/op.out")"
say "installed farmctl: boards, submit --file, watch, results, tune --out, board info --host-process, board time --qemu (cycle model), op add compiled against the installed crt"

# Without PREFIX/share/benchfarm the agent has no template: it really comes from there. (Its
# directories are its own: two agents may not share a scratch_dir.)
mv "$prefix/share/benchfarm" "$prefix/share/benchfarm.hidden"
write_agent_config agent2.textproto site2 "$address"
sed -i 's|agent-state/|agent2-state/|' agent2.textproto
rc=0
"${user_env[@]}" benchfarm-agent --config agent2.textproto --metrics off >"$site/agent2.out" 2>"$site/agent2.err" || rc=$?
mv "$prefix/share/benchfarm.hidden" "$prefix/share/benchfarm"
[[ $rc -ne 0 ]] && grep -q "no template\|crt_dir: no crt source tree" "$site/agent2.err" ||
  fail "agent without PREFIX/share/benchfarm: exit $rc, $(cat "$site/agent2.err")"

[[ ! -e "$work/bazel-called" ]] || fail "an installed binary ran bazel: $(cat "$work/bazel-called")"
cleanup
pids=()

# ---- 2. ./farm ctl / tracker / agent run in the caller's directory -------------------------
: >"$work/fake-bazel.log"
caller="$work/caller"
mkdir -p "$caller"
cd "$caller"
# Here the point is the working directory: plain text on loopback (--insecure).
export BENCHFARM_INSECURE=1
"${farm[@]}" tracker --insecure --listen 127.0.0.1:0 --metrics off >"$caller/tracker.out" 2>"$caller/tracker.err" &
pids+=($!)
line="$(wait_line "$caller/tracker.out" "^tracker: listening on" $!)"
address="$(sed -n 's/^tracker: listening on \([^ ]*\).*/\1/p' <<<"$line")"
[[ -f "$caller/benchfarm-tracker.db" ]] ||
  fail "./farm tracker from $caller: its default database is not $caller/benchfarm-tracker.db ($(grep -o 'database [^;]*' "$caller/tracker.err"))"
grep -q "build.*//tracker:tracker" "$work/fake-bazel.log" || fail "./farm tracker did not build //tracker:tracker"
grep -q "(in $ws)" "$work/fake-bazel.log" || fail "./farm runs bazel outside the repository"

write_agent_config agent.textproto caller "$address" "credentials { insecure: true }"
"${farm[@]}" agent --config agent.textproto >"$caller/agent.out" 2>"$caller/agent.err" &
pids+=($!)
wait_line "$caller/agent.out" "^agent: caller serving 1 boards" $! >/dev/null
[[ -d "$caller/agent-state/spool" ]] || fail "./farm agent: relative spool_dir not in $caller"

write_trials trials.textproto
"${farm[@]}" ctl submit --file trials.textproto --tracker "$address" >"$caller/submit.out" 2>&1 ||
  fail "./farm ctl submit --file trials.textproto from $caller: $(cat "$caller/submit.out")"
grep -q 'j-' "$caller/submit.out" || fail "./farm ctl submit: no job id: $(cat "$caller/submit.out")"
say "./farm tracker, agent and ctl ran in $caller"
echo PASS
