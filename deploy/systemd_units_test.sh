#!/usr/bin/env bash
# The systemd units start the installed daemons with the installed configs, restart them on
# failure, run them as the benchfarm user (the agent also in dialout, for serial ports) with
# state under /var/lib/benchfarm; and systemd-analyze accepts them where it is installed.
set -euo pipefail
dir="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}/deploy/systemd"
fail() { echo "FAIL: $*" >&2; exit 1; }
has() { grep -qxF -- "$2" "$dir/$1" || fail "$1 lacks the line: $2"; }

for unit in benchfarm-tracker benchfarm-tracker-standby benchfarm-agent; do
  f="$unit.service"
  has "$f" "[Unit]"
  has "$f" "[Service]"
  has "$f" "[Install]"
  grep -qx "Restart=on-failure\|Restart=always" "$dir/$f" || fail "$f is not restarted"
  has "$f" "User=benchfarm"
  has "$f" "WantedBy=multi-user.target"
done
has benchfarm-tracker.service "ExecStart=/usr/local/bin/benchfarm-tracker --config /etc/benchfarm/tracker.textproto"
has benchfarm-tracker.service "StateDirectory=benchfarm"
# Active/standby: the standby serves the same database on other ports.
has benchfarm-tracker-standby.service "ExecStart=/usr/local/bin/benchfarm-tracker --config /etc/benchfarm/tracker-standby.textproto"
has benchfarm-tracker-standby.service "StateDirectory=benchfarm"
has benchfarm-agent.service "ExecStart=/usr/local/bin/benchfarm-agent --config /etc/benchfarm/agent.textproto"
has benchfarm-agent.service "StateDirectory=benchfarm/agent"
grep -q '^SupplementaryGroups=.*\bdialout\b' "$dir/benchfarm-agent.service" || fail "agent not in dialout"
# Boards die with the agent (issue 16): the whole control group is killed when it stops or dies.
has benchfarm-agent.service "KillMode=control-group"
has benchfarm-agent.service "KillSignal=SIGTERM"
has benchfarm-agent.service "SendSIGKILL=yes"

# State directories match the example configs' paths.
examples="$dir/../examples"
for f in tracker tracker-standby; do
  grep -q 'database_path: "/var/lib/benchfarm/tracker.db"' "$examples/$f.textproto" || fail "$f db path"
done
[[ "$(grep '^listen_address' "$examples/tracker.textproto")" != "$(grep '^listen_address' "$examples/tracker-standby.textproto")" ]] \
  || fail "the standby listens where the leader does"
for f in "$examples"/agent-*.textproto; do
  for d in scratch_dir cache_dir spool_dir; do
    grep -q "^$d: \"/var/lib/benchfarm/agent/" "$f" || fail "$(basename "$f"): $d not under /var/lib/benchfarm/agent"
  done
done

if command -v systemd-analyze >/dev/null; then
  # The binaries are not installed here: verify copies that run /bin/true instead.
  for unit in benchfarm-tracker benchfarm-tracker-standby benchfarm-agent; do
    sed 's#^ExecStart=[^ ]*#ExecStart=/bin/true#; s#^WorkingDirectory=.*#WorkingDirectory=/#' \
      "$dir/$unit.service" >"$TEST_TMPDIR/$unit.service"
  done
  (cd "$TEST_TMPDIR" && systemd-analyze verify --man=no benchfarm-tracker.service benchfarm-tracker-standby.service benchfarm-agent.service) \
    || fail "systemd-analyze verify"
else
  echo "systemd-analyze not installed: skipped systemd's own check"
fi
echo PASS
