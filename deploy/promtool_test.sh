#!/usr/bin/env bash
# The monitoring files stay valid: Prometheus's own checks (promtool, from Debian's prometheus
# package) on the scrape config, the alerting rules and their unit tests; the Grafana dashboard
# parses; and every series the dashboard and rules use is one benchfarm exports
# (check_monitoring.py against prometheus/metrics.txt).
set -euo pipefail
deploy="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}/deploy"
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v promtool >/dev/null ||
  fail "promtool not found: install Debian's prometheus package (apt-get install prometheus)"

# promtool resolves rule_files relative to the file naming them; runfiles keep the layout.
promtool check config "$deploy/prometheus/prometheus.yml" || fail "promtool check config"
promtool check rules "$deploy/prometheus/alerts.yml" || fail "promtool check rules"
promtool test rules "$deploy/prometheus/alerts_test.yml" || fail "promtool test rules"

# The config scrapes the ports the example configs serve /metrics on.
grep -q '"localhost:9470"' "$deploy/prometheus/prometheus.yml" || fail "tracker target"
grep -q '"localhost:9471"' "$deploy/prometheus/prometheus.yml" || fail "agent target"
grep -q 'metrics_address: "127.0.0.1:9470"' "$deploy/examples/tracker.textproto" || fail "tracker metrics port"
grep -q 'metrics_address: "127.0.0.1:9471"' "$deploy/examples/agent-emulated.textproto" || fail "agent metrics port"

python3 -m json.tool "$deploy/grafana/benchfarm.json" >/dev/null || fail "benchfarm.json is not JSON"
python3 "$deploy/check_monitoring.py" "$deploy/prometheus/metrics.txt" "$deploy/grafana/benchfarm.json" \
  "$deploy/prometheus/alerts.yml" "$deploy/prometheus/alerts_test.yml" || fail "check_monitoring.py"

# The checker itself catches what it is for.
bad="$TEST_TMPDIR/bad_alerts.yml"
sed 's/state="QUARANTINED"/state="quarantined"/; s/benchfarm_tracker_requeues_total/benchfarm_tracker_requeue_total/' \
  "$deploy/prometheus/alerts.yml" >"$bad"
printf '%s\n' '- expr: rate(benchfarm_tracker_requeue_total[5m])' >>"$bad"
if python3 "$deploy/check_monitoring.py" "$deploy/prometheus/metrics.txt" "$deploy/grafana/benchfarm.json" \
  "$bad" 2>"$TEST_TMPDIR/err"; then
  fail "check_monitoring.py accepted unknown series and label values"
fi
grep -q 'benchfarm_tracker_requeue_total is not a series' "$TEST_TMPDIR/err" || fail "unknown series not named"
grep -q 'state="quarantined"} never exists' "$TEST_TMPDIR/err" || fail "bad label value not named"
echo PASS
