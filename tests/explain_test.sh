#!/usr/bin/env bash
# The daemons and farmctl explain themselves (issue 38 §3), with the binaries Bazel built:
# 1. `--help` of benchfarm-tracker, benchfarm-agent and farmctl (run under their installed names)
#    lists every flag their main file defines; `--version` prints "NAME VERSION (commit C)".
# 2. The stamp: bazel/workspace_status.sh says the commit of a fresh git clone and "unknown"
#    outside git; bazel/build_stamp.sh turns that into the header, "unknown" for a missing key.
# 3. /metrics of a tracker and an agent (one host-process board): benchfarm_build_info with the
#    --version's version and commit on both; a measured trial, a trial whose C source does not
#    compile and a cancelled one counted by error code in jobs_finished_total (a failure is not a
#    success); upper-case fixed label values on both; `promtool check metrics` clean on both.
set -euo pipefail

TEST_NAME=explain
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"
ws=$PWD
work="${TEST_TMPDIR:?}/explain"
rm -rf "$work" && mkdir -p "$work/bin"

# ---- 1. --help and --version ------------------------------------------------------------------
ln -s "$ws/tracker/tracker" "$work/bin/benchfarm-tracker"
ln -s "$ws/agent/agent" "$work/bin/benchfarm-agent"
ln -s "$ws/farmctl/farmctl" "$work/bin/farmctl"
versions=()
for pair in benchfarm-tracker:tracker/tracker_main.cc benchfarm-agent:agent/agent_main.cc \
  farmctl:farmctl/main.cc; do
  name="${pair%%:*}" main="${pair#*:}"
  "$work/bin/$name" --help >"$work/$name.help" 2>&1 || true  # absl: status 1 after help
  grep -q "SetProgramUsageMessage\|No flags matched" "$work/$name.help" &&
    { cat "$work/$name.help" >&2; fail "$name --help has no usage or no flags"; }
  flags=$(tr '\n' ' ' <"$main" | grep -oE 'ABSL_FLAG\( *[a-z:_0-9]+, *[a-z_0-9]+' | sed 's/.*, *//')
  [[ $(wc -w <<<"$flags") -ge 5 ]] || fail "found no flags in $main"
  for flag in $flags; do
    grep -q -- "--$flag " "$work/$name.help" || { cat "$work/$name.help" >&2; fail "$name --help: no --$flag"; }
  done
  "$work/bin/$name" --version >"$work/$name.version" 2>&1 || fail "$name --version: exit $?"
  grep -qE "^$name [0-9][0-9.]* \(commit ([0-9a-f]{12}(-dirty)?|unknown)\)$" "$work/$name.version" ||
    fail "$name --version: $(cat "$work/$name.version")"
  versions+=("$(sed "s/^$name //" "$work/$name.version")")
  say "$name: --help lists $(wc -w <<<"$flags") flags; --version: $(cat "$work/$name.version")"
done
[[ "${versions[0]}" == "${versions[1]}" && "${versions[1]}" == "${versions[2]}" ]] ||
  fail "the three binaries disagree on their build: ${versions[*]}"
build="${versions[0]}"  # "0.1.0 (commit abc...)"
version="${build%% *}"
commit="$(sed 's/.*(commit \(.*\))$/\1/' <<<"$build")"

# ---- 2. the stamp, in a fresh clone and outside git -------------------------------------------
status_sh="$ws/bazel/workspace_status.sh"
mkdir -p "$work/nogit" && echo 9.8.7 >"$work/nogit/VERSION"
(cd "$work/nogit" && GIT_CEILING_DIRECTORIES="$work" "$status_sh") >"$work/nogit.status"
grep -qx "STABLE_BENCHFARM_COMMIT unknown" "$work/nogit.status" && grep -qx "STABLE_BENCHFARM_VERSION 9.8.7" "$work/nogit.status" ||
  fail "outside git: $(cat "$work/nogit.status")"
if command -v git >/dev/null; then
  git init -q "$work/repo" && echo 1.2.3 >"$work/repo/VERSION"
  git -C "$work/repo" add VERSION
  git -C "$work/repo" -c user.name=t -c user.email=t@t commit -q -m v
  git clone -q "$work/repo" "$work/clone"
  want="$(git -C "$work/clone" rev-parse --short=12 HEAD)"
  (cd "$work/clone" && "$status_sh") >"$work/clone.status"
  grep -qx "STABLE_BENCHFARM_COMMIT $want" "$work/clone.status" || fail "fresh clone: $(cat "$work/clone.status")"
  echo 1.2.4 >"$work/clone/VERSION"
  (cd "$work/clone" && "$status_sh") | grep -qx "STABLE_BENCHFARM_COMMIT $want-dirty" || fail "a changed clone is not -dirty"
fi
printf 'STABLE_BENCHFARM_VERSION 1.2.3\n' >"$work/partial.status"
"$ws/bazel/build_stamp.sh" "$work/partial.status" "$work/stamp.h"
grep -q '#define BENCHFARM_BUILD_VERSION "1.2.3"' "$work/stamp.h" && grep -q '#define BENCHFARM_BUILD_COMMIT "unknown"' "$work/stamp.h" ||
  fail "build_stamp.sh: $(cat "$work/stamp.h")"
say "stamp: a fresh clone's commit, unknown outside git"

# ---- 3. /metrics ------------------------------------------------------------------------------
start_host_farm dana explain-agent

good=$(ctl submit --kind host-process --op add --number 2 --repeat 1) || fail "submit add"
printf 'int broken(void) { return }\n' >"$work/bad.c"
bad=$(ctl submit --kind host-process --c-source "$work/bad.c" --entry broken --no-check --shape 4,4) || fail "submit bad.c"
timeout 120 "$farm_root/farmctl/farmctl" --tracker "127.0.0.1:$tracker_port" watch "$good" "$bad" >"$work/watch.out" ||
  { cat "$work/watch.out" >&2; fail "watch"; }
ctl get "$bad" --json | grep -q '"COMPILE_DEVICE"' || fail "bad.c did not fail as COMPILE_DEVICE: $(ctl get "$bad" --json)"
# A job for a kind whose only board is taken out of service stays queued: cancel it.
BENCHFARM_TOKEN_FILE="$work/pki/admin.token" ctl quarantine hp0 --reason explain >/dev/null || fail "quarantine"
queued=$(ctl submit --kind host-process --op add) || fail "submit to cancel"
ctl cancel "$queued" >/dev/null || fail "cancel"

sample() {  # sample PORT SERIES: the value of one series on /metrics
  http_get "http://127.0.0.1:$1/metrics" | awk -v s="$2" '$1 == s { print $2 }'
}
finished() { sample "$tracker_metrics" "benchfarm_tracker_jobs_finished_total{board_kind=\"host-process\",error_code=\"$1\"}"; }
for _ in $(seq 50); do [[ "$(finished CANCELLED)" == 1 ]] && break; sleep 0.2; done
for code in NO_ERROR COMPILE_DEVICE CANCELLED; do
  [[ "$(finished "$code")" == 1 ]] || fail "jobs_finished_total{error_code=$code}: '$(finished "$code")', want 1"
done
info="benchfarm_build_info{commit=\"$commit\",version=\"$version\"}"
for port in "$tracker_metrics" "$agent_metrics"; do
  [[ "$(sample "$port" "$info")" == 1 ]] || { http_get "http://127.0.0.1:$port/metrics" | grep build_info >&2; fail "no $info on :$port"; }
done
[[ -n "$(sample "$agent_metrics" 'benchfarm_agent_boards{state="IDLE"}')" ]] || fail "agent board states are not upper case"
[[ "$(sample "$agent_metrics" 'benchfarm_agent_builds_total{result="FAILED"}')" == 1 ]] || fail "agent builds_total{result=FAILED}"
[[ -n "$(sample "$tracker_metrics" 'benchfarm_tracker_boards{state="QUARANTINED"}')" ]] || fail "tracker board states"
for target in "tracker:$tracker_metrics" "agent:$agent_metrics"; do
  name="${target%%:*}" port="${target##*:}"
  http_get "http://127.0.0.1:$port/metrics" >"$work/$name.metrics"
  if http_get "http://127.0.0.1:$port/metrics" | grep -E '^benchfarm_[a-z_]+\{[^}]*(state|result|reason|stage|error_code)="[^"]*[a-z]' ; then
    fail "$name: a fixed label value with lower case letters"
  fi
  promtool check metrics <"$work/$name.metrics" >"$work/$name.promtool" 2>&1 ||
    { cat "$work/$name.promtool" >&2; fail "promtool check metrics: $name"; }
done
say "metrics: build_info $build on both, finished by error code, promtool clean"
stop_daemons
say PASS
