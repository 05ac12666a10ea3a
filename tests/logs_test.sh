#!/usr/bin/env bash
# Per-job logs (issue 38 §1, README "Per-job logs") with farmctl against a secure farm of one
# host-process board:
#   - a failed compile's log shows the build's command line and the compiler's error;
#   - a crash's log shows the board's fault line, the reset after it and the result;
#   - a build that prints 30 MB of binary (a C source including an executable): the job's log is
#     cut, says so, stays within the cap and is valid UTF-8 in the tracker's database itself;
#   - another user's job is refused as a job that does not exist (NOT_FOUND, as GetJob answers it:
#     no one learns which job ids exist), an admin reads it; a job id that does not exist and an
#     attempt without a log are NOT_FOUND naming them;
#   - the agent's own log names builds, flashes and crashes at info with the board and job ids.
set -euo pipefail

TEST_NAME=logs
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/logs"
rm -rf "$work" && mkdir -p "$work"
start_host_farm erin logs-agent

# expect_refusal WANT COMMAND...: the command fails and says WANT.
expect_refusal() {
  local want=$1
  shift
  if "$@" >"$work/refused.out" 2>&1; then fail "$* was not refused"; fi
  grep -qF -- "$want" "$work/refused.out" || { cat "$work/refused.out" >&2; fail "$*: not '$want'"; }
}

# ---- a failed compile, a crash, 30 MB of binary compiler output ------------------------------------
printf 'int broken(void) { return undeclared_name; }\n' >"$work/broken.c"
null_write_c crash >"$work/crash.c"
printf '#include "/usr/bin/true"\n' >"$work/binary.c"
broken=$(ctl submit --kind host-process --c-source "$work/broken.c" --entry broken --no-check --shape 4,4)
crash=$(ctl submit --kind host-process --c-source "$work/crash.c" --entry crash --no-check --shape 4,4)
binary=$(ctl submit --kind host-process --c-source "$work/binary.c" --entry nothing --no-check --shape 4,4)
timeout 300 "$farm_root/farmctl/farmctl" --tracker "127.0.0.1:$tracker_port" watch "$broken" "$crash" "$binary" \
  >"$work/watch.out" || { cat "$work/watch.out" >&2; fail "watch"; }

ctl logs "$broken" >"$work/broken.log"
cat "$work/broken.log" >&2
grep -qx -- "--- job $broken attempt 1 on board hp0 ---" "$work/broken.log" || fail "no heading naming the attempt and board"
grep -qF '$ /bf/template/build /bf/work /bf/work/image /bf/crt /bf/cache' "$work/broken.log" || fail "no build command line"
grep -qE "error: .undeclared_name. undeclared" "$work/broken.log" || fail "the compiler's error is not in the log"
grep -qE "^[0-9:.]+ result: COMPILE_DEVICE" "$work/broken.log" || fail "no result line"

ctl logs "$crash" --attempt 1 >"$work/crash.log"
cat "$work/crash.log" >&2
grep -qE "flash: image [0-9a-f]{16} put on host-process" "$work/crash.log" || fail "no flash in the crash's log"
grep -qE "the call failed: RUNTIME_DEVICE: .*fault: SIGSEGV \(address not mapped\) pc=0x[0-9a-f]+ in crash \(trial\.c:7\)" "$work/crash.log" \
  || fail "the crash's fault line is not in its log"
grep -q "reset: the board is restarted" "$work/crash.log" || fail "no reset in the crash's log"

ctl logs "$binary" >"$work/binary.log"
head -c 1500 "$work/binary.log" >&2 && echo >&2 && grep -a "cut here\|not kept\|result:" "$work/binary.log" >&2
grep -q "COMPILE_DEVICE" "$work/binary.log" || fail "the binary include did not fail to compile"
grep -qE "\[\.\.\. [0-9]+ bytes cut here: this text keeps at most 65536 bytes \.\.\.\]" "$work/binary.log" ||
  grep -qE "the first [0-9]+ of [0-9]+ bytes of output were not kept" "$work/binary.log" || fail "the huge output's log does not say it was cut"
# In the store: at most 64 KiB, valid UTF-8, no NUL.
python3 - "$work/tracker.db" "$binary" <<'PY' || fail "the stored log is not bounded valid UTF-8"
import sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
db.text_factory = bytes
rows = db.execute("SELECT attempt, text FROM attempt_logs WHERE job_id = ?", (sys.argv[2],)).fetchall()
assert len(rows) == 1, rows
text = rows[0][1]
assert 0 < len(text) <= 65536, len(text)
text.decode("utf-8")  # raises on invalid UTF-8
assert b"\0" not in text
PY
ctl get "$binary" --json | python3 -c 'import json, sys; json.load(sys.stdin)' || fail "the binary output's message"
say "a compile error, a fault line and 30 MB of binary output in the logs"

# ---- who may read a log -----------------------------------------------------------------------------
expect_refusal "GetJobLog j-no-such-job: no job j-no-such-job" ctl logs j-no-such-job
expect_refusal "job $broken has no log of attempt 2 (it has 1 attempt(s); logs of attempt 1)" ctl logs "$broken" --attempt 2
pki_sh token "$work/pki" mallory >"$work/pki/mallory.token"
expect_refusal "GetJobLog $broken: no job $broken" \
  env BENCHFARM_TOKEN_FILE="$work/pki/mallory.token" "$farm_root/farmctl/farmctl" --tracker "127.0.0.1:$tracker_port" logs "$broken"
BENCHFARM_TOKEN_FILE="$work/pki/admin.token" ctl logs "$broken" | grep -qE "error: .undeclared_name. undeclared" \
  || fail "an admin cannot read the log"
say "another user's job refused, an admin's read, unknown ids named"

# ---- the agent's own log: builds, flashes, crashes at info, with the board and job ------------------
grep -qE " I [^:]+: board hp0: job\(s\) .*$broken.*: build of 1 trial\(s\): failed" "$work/agent.out" "$work/agent.err" ||
  fail "the agent did not log the failed build"
grep -qE " I [^:]+: board hp0: job $crash: flash: image " "$work/agent.out" "$work/agent.err" || fail "the agent did not log the flash"
grep -qE " I [^:]+: board hp0: job $crash: the call failed: RUNTIME_DEVICE" "$work/agent.out" "$work/agent.err" ||
  fail "the agent did not log the crash"
grep -qE " I [^:]+: board hp0: job $crash: reset: " "$work/agent.out" "$work/agent.err" || fail "the agent did not log the reset"

stop_daemons
say "PASS"
