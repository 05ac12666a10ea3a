#!/usr/bin/env bash
# The probes of issue 14, replayed against a tracker and an agent started the secure (default)
# way: each is refused or contained.
#   - an unauthenticated call, a wrong token;
#   - credentials that say what is wrong (issue 38 §2): a plain-text client against the TLS tracker
#     and a client with another farm's CA are told which; an expired certificate and an expired
#     token are refused with their dates, a tokens-file expiry that does not parse with the line;
#     `farmctl whoami`; the refusals (the handshake's too) are logged and counted;
#   - a user acting on another's job (get, watch, cancel, results) or submitting as someone else;
#   - a user adding a version of another user's operator (names belong to their authors);
#   - a fake agent (no certificate; a user's token), an agent registering under another agent's
#     id, a board its certificate does not name, a kind or more slots than it binds, or a board
#     another agent holds (until an admin moves it); a second stream of a connected agent replaces
#     the first, which is told why;
#   - revoking a token or a certificate takes effect at once: a connected agent's stream ends
#     within seconds and what it held re-queues; a token file replaced keeping its size and
#     modification time counts;
#   - refusals are counted in /metrics; --insecure is refused on a non-loopback address.
set -euo pipefail
TEST_NAME=security
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"

work="${TEST_TMPDIR:?}/security"
rm -rf "$work" && mkdir -p "$work"
root=$PWD
pki="$work/pki"
tracker_port=$(free_port)
tracker_metrics=$(free_port)
addr="127.0.0.1:$tracker_port"
ctl() { "$root/farmctl/farmctl" --tracker "$addr" "$@"; }
# as USER ARGS...: farmctl with USER's token; stdout in $work/as.out, stderr in $work/as.err.
as() {
  local who=$1; shift
  rc=0
  BENCHFARM_CA="$pki/ca.pem" BENCHFARM_TOKEN_FILE="$pki/$who.token" ctl "$@" >"$work/as.out" 2>"$work/as.err" || rc=$?
}
refused() {  # refused CODE-TEXT: the last `as` failed saying this
  [[ $rc -ne 0 ]] || fail "accepted; expected a refusal '$1': $(cat "$work/as.out")"
  grep -qF -- "$1" "$work/as.err" || { cat "$work/as.err" >&2; fail "refusal does not say '$1'"; }
}

# --insecure is for loopback only.
if tracker/tracker --insecure --listen 0.0.0.0:0 --database "$work/x.db" --metrics off >"$work/insecure.out" 2>&1; then
  fail "--insecure on 0.0.0.0 was accepted"
fi
grep -q "plain text is allowed only on a loopback address" "$work/insecure.out" || { cat "$work/insecure.out" >&2; fail "--insecure refusal message"; }

tracker/tracker --listen "$addr" --database "$work/tracker.db" --state_dir "$pki" \
  --metrics "127.0.0.1:$tracker_metrics" >"$work/tracker.out" 2>"$work/tracker.err" &
pids+=($!)
wait_line "$work/tracker.out" "listening on" >/dev/null
grep -q "first start: made a CA" "$work/tracker.err" || fail "the tracker did not say it made its CA"
grep -q "BENCHFARM_TOKEN_FILE=$pki/admin.token" "$work/tracker.err" || fail "the tracker did not say how to use its admin token"
cp "$pki/admin.token" "$pki/admin-cli.token"
for user in alice bob; do pki_sh token "$pki" "$user" >"$pki/$user.token"; done

# ---- who are you ---------------------------------------------------------------------------------
rc=0; BENCHFARM_CA="$pki/ca.pem" ctl boards >"$work/as.out" 2>"$work/as.err" || rc=$?
refused "no credential"
echo "bf_not_a_token" >"$pki/mallory.token"
as mallory boards; refused "unknown or revoked token"
as alice boards; [[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "alice cannot list boards"; }

# ---- credentials that say what is wrong (issue 38 §2) ----------------------------------------------
# A plain-text client is told the tracker speaks TLS (farmctl probes the port), and the tracker
# counts the failed handshake.
rc=0; BENCHFARM_INSECURE=1 BENCHFARM_TOKEN_FILE="$pki/alice.token" ctl boards >"$work/as.out" 2>"$work/as.err" || rc=$?
refused "the tracker at $addr speaks TLS: give --ca"
# Another farm's CA: the tracker's certificate does not verify against it, and farmctl says so.
pki_sh init "$work/other-pki" 2>/dev/null
rc=0; BENCHFARM_CA="$work/other-pki/ca.pem" BENCHFARM_TOKEN_FILE="$pki/alice.token" ctl boards >"$work/as.out" 2>"$work/as.err" || rc=$?
refused "does not verify against the CA in $work/other-pki/ca.pem"
# A certificate of this farm's CA that expired (as if 825 days had passed): the tracker says when.
python3 - "$pki" <<'PY'
import datetime, sys
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
pki = sys.argv[1]
ca_key = serialization.load_pem_private_key(open(f"{pki}/ca.key", "rb").read(), None)
ca = x509.load_pem_x509_certificate(open(f"{pki}/ca.pem", "rb").read())
key = ec.generate_private_key(ec.SECP256R1())
name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "benchfarm"),
                  x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "user"),
                  x509.NameAttribute(NameOID.COMMON_NAME, "old")])
cert = (x509.CertificateBuilder().subject_name(name).issuer_name(ca.subject)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(datetime.datetime(2020, 1, 1)).not_valid_after(datetime.datetime(2021, 1, 1))
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
        .sign(ca_key, hashes.SHA256()))
open(f"{pki}/old.pem", "wb").write(cert.public_bytes(serialization.Encoding.PEM))
open(f"{pki}/old.key", "wb").write(key.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
PY
rc=0; BENCHFARM_CA="$pki/ca.pem" ctl --cert "$pki/old.pem" --key "$pki/old.key" whoami >"$work/as.out" 2>"$work/as.err" || rc=$?
refused "UNAUTHENTICATED: your certificate (O = benchfarm, OU = user, CN = old) expired on 2021-01-01 00:00:00 UTC"
wait_line "$work/tracker.err" "refused WhoAmI from ipv4:127.0.0.1:[0-9]+ \(CERT_EXPIRED\): your certificate" >/dev/null
# Tokens expire: pki.sh token --days N writes the expiry; whoami shows it. Once past (the line
# rewritten as if the days had passed), the token is refused with its date.
pki_sh token "$pki" erin --days 7 >"$pki/erin.token"
as erin whoami
grep -qE "^erin: user, by token, expires $(date -u -d '+7 days' +%Y-%m-%d) " "$work/as.out" || { cat "$work/as.out" "$work/as.err" >&2; fail "whoami does not show erin's expiry"; }
as admin-cli whoami; grep -qx "admin: admin, by token, never expires" "$work/as.out" || { cat "$work/as.out" >&2; fail "whoami of the admin token"; }
sed -i -E 's/ user erin [^ ]+$/ user erin 2021-01-01T00:00:00Z/' "$pki/tokens"
as erin whoami; refused "UNAUTHENTICATED: the token of erin expired on 2021-01-01 00:00:00 UTC"
# A tokens-file line whose expiry does not parse refuses that token, saying so; nobody else's.
pki_sh token "$pki" frank >"$pki/frank.token"
sed -i -E 's/ user frank [^ ]+$/ user frank next-week/' "$pki/tokens"
as frank boards; refused "the token of frank has an expiry that does not parse (\"next-week\", line"
grep -q "tokens file $pki/tokens line [0-9]*: the expiry \"next-week\" of frank's token" "$work/tracker.err" || fail "the tracker did not log the bad expiry"
as alice whoami; grep -qE "^alice: user, by token, expires 20" "$work/as.out" || { cat "$work/as.out" "$work/as.err" >&2; fail "alice's whoami"; }
http_get "http://127.0.0.1:$tracker_metrics/metrics" >"$work/metrics.txt"
for series in 'method="Handshake",reason="PLAINTEXT_CLIENT"' 'method="WhoAmI",reason="CERT_EXPIRED"' \
    'method="WhoAmI",reason="TOKEN_EXPIRED"' 'method="ListBoards",reason="TOKEN_BAD_EXPIRY"'; do
  grep -qE "^benchfarm_tracker_auth_refusals_total\{$series\} [1-9]" "$work/metrics.txt" \
    || { grep auth_refusals "$work/metrics.txt" >&2; fail "not counted: $series"; }
done
# The front door (tracker/front_door.h) names the plain-text client's address and what it sent.
grep -qE "refused a TLS handshake from ipv4:127\.0\.0\.1:[0-9]+ \(PLAINTEXT_CLIENT\): it spoke plain text \(\"PRI \* HTTP/2\.0" "$work/tracker.err" \
  || { grep "TLS handshake" "$work/tracker.err" >&2; fail "the tracker did not log the plain-text handshake with its address"; }
# Hostile connections do not hold the door: one that never sends, one that closes at once and
# one that sends garbage are open or gone while a TLS client is served; the garbage is logged
# with its address.
python3 - "$tracker_port" >"$work/silent.out" <<'PY' &
import socket, sys, time
port = int(sys.argv[1])
silent = socket.create_connection(("127.0.0.1", port))
socket.create_connection(("127.0.0.1", port)).close()
junk = socket.create_connection(("127.0.0.1", port))
junk.sendall(b"GET / HTTP/1.1\r\n\r\n")
print(junk.getsockname()[1], flush=True)
time.sleep(30)
PY
silent_pid=$!
pids+=($silent_pid)
junk_port=$(wait_line "$work/silent.out" "^[0-9]+$" "$silent_pid")
as alice whoami; [[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "a TLS client is not served while a silent connection is open"; }
wait_line "$work/tracker.err" "refused a TLS handshake from ipv4:127\.0\.0\.1:$junk_port \(PLAINTEXT_CLIENT\): it spoke plain text \(\"GET / HTTP/1\.1" >/dev/null
kill "$silent_pid"; wait "$silent_pid" 2>/dev/null || true
unset 'pids[-1]'  # it, gone: stop_daemons waits for the daemons only

# ---- agents: certificates only, their own id, their own boards -----------------------------------
agent_config() {  # agent_config FILE AGENT_ID BOARD CREDENTIALS-BLOCK
  cat >"$1" <<CONFIG
agent_id: "$2"
tracker_address: "$addr"
scratch_dir: "$work/$2-$3/scratch"
cache_dir: "$work/$2-$3/cache"
spool_dir: "$work/$2-$3/spool"
$4
boards { id: "$3" kind: "host-process" host_process {} build_template: "agent/templates/host-process" }
CONFIG
}
# start_agent NAME CONFIG PATTERN: an agent expected to serve; waits until `boards` shows PATTERN.
# Its pid in $agent_pid.
start_agent() {
  agent/agent --config "$2" >"$work/$1.out" 2>"$work/$1.err" &
  agent_pid=$!
  pids+=($agent_pid)
  wait_line "$work/$1.out" "serving 1 boards" "$agent_pid" >/dev/null
  for _ in $(seq 100); do as alice boards; grep -q "$3" "$work/as.out" && break; sleep 0.1; done
  grep -q "$3" "$work/as.out" || { cat "$work/as.out" "$work/$1.err" >&2; fail "$1: boards show no '$3'"; }
}
creds="$(agent_credentials "$pki" real-agent 'hp-*=host-process')"
agent_config "$work/real.textproto" real-agent hp-0 "$creds"
start_agent real "$work/real.textproto" "^hp-0 .*IDLE"
real=$agent_pid

start_probe() {  # start_probe NAME CONFIG: an agent expected to be refused; waits for the refusal
  agent/agent --config "$2" >"$work/$1.out" 2>"$work/$1.err" &
  local pid=$!
  for _ in $(seq 100); do grep -q "$3" "$work/$1.err" && break; sleep 0.1; done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  grep -q "$3" "$work/$1.err" || { cat "$work/$1.err" >&2; fail "$1: no '$3' in its log"; }
}
# No certificate at all (only the CA): the stream is refused.
agent_config "$work/fake.textproto" fake-agent hp-9 "credentials { ca_cert: \"$pki/ca.pem\" }"
start_probe fake "$work/fake.textproto" "no credential"
# A certificate of its own, but it registers as the real agent.
other="$(agent_credentials "$pki" other-agent 'hp-*=host-process')"
agent_config "$work/impostor.textproto" real-agent hp-1 "$other"
start_probe impostor "$work/impostor.textproto" "may not register as"
# Its own id, a board its certificate does not name.
narrow="$(agent_credentials "$pki" narrow-agent 'm3-*=qemu-mps2-an385')"
agent_config "$work/narrow.textproto" narrow-agent hp-7 "$narrow"
start_probe narrow "$work/narrow.textproto" "does not let it serve board"
# Its own id and a board its glob names, but as another kind than the certificate binds (issue 34:
# a certificate for m3-* registered m3-evil as a host-process board and took other users' jobs).
agent_config "$work/evil.textproto" narrow-agent m3-evil "$narrow"
start_probe evil "$work/evil.textproto" "lets it serve board \"m3-evil\" only as kind qemu-mps2-an385, not \"host-process\""
# More slots than the certificate allows (the agent asks for 2 x batch_size = 32).
capped="$(agent_credentials "$pki" capped-agent 'hp-c*=host-process:4')"
agent_config "$work/capped.textproto" capped-agent hp-c0 "$capped"
start_probe capped "$work/capped.textproto" "with at most 4 slots, not 32"
as alice boards
! grep -qE "^(hp-9|hp-1|hp-7|m3-evil|hp-c0) " "$work/as.out" || { cat "$work/as.out" >&2; fail "a refused agent's board was registered"; }
grep -q "hp-0 .*real-agent" "$work/as.out" || fail "the real agent lost its board"

# ---- users: their own jobs only; the client id is the credential's --------------------------------
as alice submit --kind host-process --op add --shape 64,64,64
[[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "alice cannot submit"; }
job=$(head -1 "$work/as.out")
as alice watch "$job"; [[ $rc -eq 0 ]] || fail "alice cannot watch her job"
# Another user's job is answered as a job that does not exist: its id cannot be probed (issue 34).
as bob get "$job"; refused "no job $job"
as bob watch "$job"; refused "no job $job"
as bob cancel "$job"; refused "no job $job"
as bob get "${job}0"; refused "no job ${job}0"
as bob results --client alice; refused "you may list only your own jobs"
as bob results --json; [[ $rc -eq 0 ]] && ! grep -q "$job" "$work/as.out" || fail "bob's results show alice's job"
as alice results --json; grep -q "\"client_id\": \"alice\"" "$work/as.out" || fail "alice's job is not hers"
as bob submit --kind host-process --op add --client alice; refused "may not submit as \"alice\""
as admin-cli results --client alice --json; grep -q "$job" "$work/as.out" || fail "the admin cannot see alice's job"

# ---- operators belong to their authors -------------------------------------------------------------
# Bob's same-named gemv must not become the version alice's tunes measure (issue 34).
as alice op add "$root/deploy/examples/ops/gemv"; [[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "alice cannot add gemv"; }
cp -rL "$root/deploy/examples/ops/gemv" "$work/bob-gemv"
echo "/* bob's */" >>"$work/bob-gemv/gemv.c"
as bob op add "$work/bob-gemv"; refused "operator gemv belongs to alice"
as bob ops --op gemv --all-versions
[[ $(grep -c "^gemv " "$work/as.out") -eq 1 ]] || { cat "$work/as.out" >&2; fail "bob's refused gemv is in the catalog"; }
grep -qE "^gemv +[0-9a-f]{16} \(latest\) +user +alice +alice +20[0-9-]+ " "$work/as.out" ||
  { cat "$work/as.out" >&2; fail "ops does not show gemv's owner and who added it when"; }
as bob op show gemv
grep -q "^owner:     alice$" "$work/as.out" && grep -qE "^added:     20.* by alice$" "$work/as.out" ||
  { cat "$work/as.out" >&2; fail "op show does not show the owner"; }
as alice op chown gemv bob; refused "SetOperatorOwner: not allowed to user alice"
as admin-cli op chown gemv bob; grep -q "^gemv: owner bob$" "$work/as.out" || { cat "$work/as.out" "$work/as.err" >&2; fail "admin op chown"; }
as bob op add "$work/bob-gemv"; [[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "gemv's new owner cannot add a version"; }
as alice op add "$root/deploy/examples/ops/gemv"; refused "operator gemv belongs to bob"

# ---- a second stream of the same agent identity replaces the first, which is told why -------------
agent_config "$work/twin.textproto" real-agent hp-0 "$creds"
sed -i "s#$work/real-agent-hp-0/#$work/twin/#g" "$work/twin.textproto"
agent/agent --config "$work/twin.textproto" >"$work/twin.out" 2>"$work/twin.err" &
twin=$!
wait_line "$work/twin.out" "serving 1 boards" "$twin" >/dev/null
for _ in $(seq 100); do grep -q "registered again on a newer stream" "$work/real.err" && break; sleep 0.1; done
grep -q "registered again on a newer stream" "$work/real.err" || { cat "$work/real.err" >&2; fail "the replaced stream was not told why"; }
kill -TERM "$twin"; wait "$twin" || true

# ---- admins take boards out of service; users may not ------------------------------------------
as alice quarantine hp-0 --reason test; refused "SetBoardQuarantine: not allowed to user alice"
# Strings a request names are capped, and an oversized one is not echoed back (issue 34).
long_reason="$(head -c 5000 /dev/zero | tr '\0' r)"
as admin-cli quarantine hp-0 --reason "$long_reason"; refused "reason: longer than 512 bytes"
! grep -q rrrrrrrrrrrrrrrrrrrr "$work/as.err" || fail "the oversized reason was echoed"
long_id="$(head -c 100000 /dev/zero | tr '\0' j)"
as alice get "$long_id"; refused "job_id: longer than 128 bytes"
# (farmctl names the id it asked for once; the tracker's answer does not repeat it)
[[ $(tr -cd j <"$work/as.err" | wc -c) -lt 101000 ]] || fail "the oversized job id was echoed"
as admin-cli quarantine hp-0 --reason "fan noise"
grep -q "hp-0 QUARANTINED (held: fan noise)" "$work/as.out" || { cat "$work/as.out" "$work/as.err" >&2; fail "admin quarantine"; }
as alice boards; grep -q "hp-0 .*QUARANTINED (held)" "$work/as.out" || { cat "$work/as.out" >&2; fail "boards do not show the held board"; }
as admin-cli release hp-0
# Back in service: IDLE, or OFFLINE while its agent (just replaced by the twin above) reconnects.
grep -qE "^hp-0 (IDLE|BUSY|OFFLINE)$" "$work/as.out" || { cat "$work/as.out" "$work/as.err" >&2; fail "admin release"; }

# ---- revocation takes effect at once ------------------------------------------------------------
pki_sh revoke-token "$pki" bob
as bob boards; refused "unknown or revoked token"
as alice boards; [[ $rc -eq 0 ]] || fail "revoking bob's token locked alice out"
pki_sh user "$pki" carol >/dev/null
rc=0; BENCHFARM_CA="$pki/ca.pem" ctl --cert "$pki/users/carol.pem" --key "$pki/users/carol.key" boards >"$work/as.out" 2>"$work/as.err" || rc=$?
[[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "carol's certificate is not accepted"; }
pki_sh revoke-cert "$pki" "$pki/users/carol.pem"
rc=0; BENCHFARM_CA="$pki/ca.pem" ctl --cert "$pki/users/carol.pem" --key "$pki/users/carol.key" boards >"$work/as.out" 2>"$work/as.err" || rc=$?
refused "this certificate has been revoked"

# ---- a board is its agent's: another agent, even one whose glob matches, waits for an admin ----
# (issue 34: with its owner offline, an overlapping glob took hp-0 and then kept its owner out.)
kill -TERM "$real"; wait "$real" || true
kept=(); for p in "${pids[@]}"; do [[ $p == "$real" ]] || kept+=("$p"); done; pids=("${kept[@]}")
for _ in $(seq 100); do as alice boards; grep -q "^hp-0 .*OFFLINE" "$work/as.out" && break; sleep 0.1; done
agent_config "$work/other.textproto" other-agent hp-0 "$other"
start_probe other "$work/other.textproto" "board hp-0 is held by agent real-agent"
as alice board move hp-0 other-agent; refused "MoveBoard: not allowed to user alice"
as admin-cli board move hp-0 other-agent
grep -q "^hp-0 OFFLINE, held by agent other-agent$" "$work/as.out" || { cat "$work/as.out" "$work/as.err" >&2; fail "admin board move"; }
start_agent other-moved "$work/other.textproto" "^hp-0 .*other-agent"
moved=$agent_pid

# ---- revoking a connected agent's certificate ends its stream and re-queues what it holds -------
# (issue 34: a revoked agent kept taking and reporting jobs for 48 minutes.) A trial that runs a
# few seconds, revoked while it runs.
cat >"$work/slow.c" <<'C'
#include <benchfarm/ops/common.h>
#include <dlpack/dlpack.h>
#include <time.h>
static int copy(TVMValue* args) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  DLTensor* y = (DLTensor*)args[1].v_handle;
  int64_t i;
  for (i = 0; i < x->shape[0]; ++i) ((float*)y->data)[i] = ((const float*)x->data)[i];
  return 0;
}
BF_OPS_DECLARE_PACKED(slow_copy);
BF_OPS_DECLARE_PACKED(slow_copy) {
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do clock_gettime(CLOCK_MONOTONIC, &now);
  while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 3000000000L);
  return copy(args);
}
BF_OPS_DECLARE_PACKED(slow_copy_ref);
BF_OPS_DECLARE_PACKED(slow_copy_ref) { return copy(args); }
C
as alice submit --kind host-process --c-source "$work/slow.c" --entry slow_copy --reference slow_copy_ref \
  --shape 16,16 --number 1 --repeat 1 --timeout-ms 60000
[[ $rc -eq 0 ]] || { cat "$work/as.err" >&2; fail "the slow trial was not accepted"; }
slow=$(head -1 "$work/as.out")
for _ in $(seq 100); do as alice get "$slow" --json; grep -q '"state": "RUNNING"' "$work/as.out" && break; sleep 0.1; done
grep -q '"state": "RUNNING"' "$work/as.out" || { cat "$work/as.out" >&2; fail "the slow trial never ran"; }
pki_sh revoke-cert "$pki" "$pki/agents/other-agent.pem"
revoked_at=$(date +%s%N)
for _ in $(seq 50); do grep -q "certificate was revoked" "$work/other-moved.err" && break; sleep 0.1; done
grep -q "certificate was revoked" "$work/other-moved.err" || { tail "$work/other-moved.err" >&2; fail "the revoked agent's stream was not closed within 5 s"; }
say "revoked agent's stream closed $(( ($(date +%s%N) - revoked_at) / 1000000 )) ms after revoke-cert"
as alice get "$slow" --json
python3 - "$work/as.out" <<'PY' || { cat "$work/as.out" >&2; fail "the revoked agent's job did not re-queue"; }
import json, sys
job = json.load(open(sys.argv[1]))
job = job.get("jobs", [job])[0] if isinstance(job, dict) and "jobs" in job else job
assert job["state"] == "QUEUED", job["state"]
assert "certificate was revoked" in job["attempts"][0]["message"], job["attempts"]
assert "result" not in job or not job["result"].get("costs_s"), job.get("result")
PY
as alice boards; grep -q "^hp-0 .*OFFLINE" "$work/as.out" || { cat "$work/as.out" >&2; fail "the revoked agent's board is not OFFLINE"; }
as alice cancel "$slow"

# ---- a token file replaced in place, same size and modification time, takes effect ----------------
pki_sh token "$pki" dave >"$pki/dave.token"
as dave boards; [[ $rc -eq 0 ]] || fail "dave's new token is refused"
dave_hash=$(printf '%s' "$(cat "$pki/dave.token")" | sha256sum | cut -d' ' -f1)
stamp=$(stat -c %y "$pki/tokens")
inode=$(stat -c %i "$pki/tokens")
python3 - "$pki/tokens" "$dave_hash" <<'PY'
import sys
path, old = sys.argv[1], sys.argv[2].encode()
with open(path, "r+b") as f:
    text = f.read()
    assert old in text
    f.seek(0)
    f.write(text.replace(old, b"0" * len(old)))
PY
touch -d "$stamp" "$pki/tokens"
[[ $(stat -c %y "$pki/tokens") == "$stamp" && $(stat -c %i "$pki/tokens") == "$inode" ]] || fail "the token file's stat changed"
for _ in $(seq 30); do as dave boards; [[ $rc -ne 0 ]] && break; sleep 0.1; done
refused "unknown or revoked token"

# ---- refusals are counted -----------------------------------------------------------------------
http_get "http://127.0.0.1:$tracker_metrics/metrics" >"$work/metrics.txt"
grep -qE '^benchfarm_tracker_auth_refusals_total\{method="ListBoards",reason="UNAUTHENTICATED"\} [1-9]' "$work/metrics.txt" \
  || { grep auth_refusals "$work/metrics.txt" >&2; fail "unauthenticated calls are not counted"; }
grep -qE '^benchfarm_tracker_auth_refusals_total\{method="GetJob",reason="PERMISSION_DENIED"\} [1-9]' "$work/metrics.txt" \
  || { grep auth_refusals "$work/metrics.txt" >&2; fail "refused job reads are not counted"; }
for reason in NOT_GRANTED BOARD_HELD; do
  grep -qE "^benchfarm_tracker_auth_refusals_total\{method=\"Register\",reason=\"$reason\"\} [1-9]" "$work/metrics.txt" \
    || { grep auth_refusals "$work/metrics.txt" >&2; fail "registrations refused ($reason) are not counted"; }
done

stop_daemons
say "PASS"
