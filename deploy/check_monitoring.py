#!/usr/bin/env python3
"""Checks benchfarm's monitoring files against the series its daemons export.

    check_monitoring.py METRICS_TXT DASHBOARD_JSON RULES_OR_TEST_FILE...

- METRICS_TXT (deploy/prometheus/metrics.txt) lists every exported series and its labels.
- DASHBOARD_JSON (a Grafana dashboard) must be valid JSON with a Prometheus datasource variable;
  every panel has a unique id and a place on the grid that overlaps no other panel, and every
  query names its datasource through that variable and has an expression.
- Every benchfarm_* name in the dashboard and the other files must be a listed series (or a
  histogram's _bucket/_sum/_count), every label="value" matcher on one must name a listed label
  and, where values are listed, one of them; the dashboard must show every listed series.

Prints each problem and exits 1 if there is any. Needs only the Python standard library (the
YAML files are read as text: rule expressions and test series are single lines or block scalars
of PromQL, which the regular expressions below read the same either way).
"""
import json
import re
import sys

NAME = re.compile(r"\bbenchfarm_[a-z0-9_]+\b")
SELECTOR = re.compile(r"\b(benchfarm_[a-z0-9_]+)\s*\{([^}]*)\}")
MATCHER = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"([^"]*)"')


def load_metrics(path):
    metrics = {}  # name -> (is_histogram, {label: set of values or None})
    for line in open(path):
        line = line.split("#", 1)[0].split()
        if not line:
            continue
        name, rest = line[0], line[1:]
        histogram = "histogram" in rest
        labels = {}
        for item in rest:
            if item == "histogram":
                continue
            label, _, values = item.partition("=")
            labels[label] = set(values.split("|")) if values else None
        metrics[name] = (histogram, labels)
    return metrics


def base_name(name, metrics):
    if name in metrics:
        return name
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and metrics.get(name[: -len(suffix)], (False,))[0]:
            return name[: -len(suffix)]
    return None


def check_text(where, text, metrics, problems, used):
    for name in NAME.findall(text):
        base = base_name(name, metrics)
        if base is None:
            problems.append(f"{where}: {name} is not a series benchfarm exports")
        else:
            used.add(base)
    for name, matchers in SELECTOR.findall(text):
        base = base_name(name, metrics)
        if base is None:
            continue
        labels = dict(metrics[base][1], le=None, job=None, instance=None)
        for label, op, value in MATCHER.findall(matchers):
            if label not in labels:
                problems.append(f"{where}: {name} has no label {label}")
            elif op == "=" and labels[label] is not None and value not in labels[label]:
                problems.append(f"{where}: {name}{{{label}=\"{value}\"}} never exists "
                                f"({label} is one of {', '.join(sorted(labels[label]))})")


def check_dashboard(path, metrics, problems, used):
    try:
        dash = json.load(open(path))
    except ValueError as e:
        problems.append(f"{path}: not JSON: {e}")
        return
    if dash.get("schemaVersion", 0) < 30:
        problems.append(f"{path}: schemaVersion {dash.get('schemaVersion')} is older than 30")
    variables = {v.get("name"): v for v in dash.get("templating", {}).get("list", [])}
    ds = variables.get("datasource")
    if not ds or ds.get("type") != "datasource" or ds.get("query") != "prometheus":
        problems.append(f"{path}: no Prometheus datasource variable named datasource")
    for name, v in variables.items():
        if v.get("type") == "query":
            query = v.get("query")
            query = query.get("query", "") if isinstance(query, dict) else str(query)
            check_text(f"{path}: variable {name}", query, metrics, problems, used)
    ids = set()
    cells = {}
    for panel in dash.get("panels", []):
        title = panel.get("title", "?")
        pid = panel.get("id")
        if pid in ids:
            problems.append(f"{path}: panel id {pid} used twice")
        ids.add(pid)
        pos = panel.get("gridPos", {})
        if not all(k in pos for k in ("x", "y", "w", "h")) or pos["x"] + pos["w"] > 24:
            problems.append(f"{path}: panel {title!r}: bad gridPos {pos}")
            continue
        for x in range(pos["x"], pos["x"] + pos["w"]):
            for y in range(pos["y"], pos["y"] + pos["h"]):
                if (x, y) in cells:
                    problems.append(f"{path}: panel {title!r} overlaps {cells[(x, y)]!r}")
                    break
                cells[(x, y)] = title
            else:
                continue
            break
        if panel.get("type") == "row":
            continue
        targets = panel.get("targets", [])
        if not targets:
            problems.append(f"{path}: panel {title!r} has no queries")
        for t in [panel] + targets:
            uid = (t.get("datasource") or {}).get("uid")
            if uid != "${datasource}":
                problems.append(f"{path}: panel {title!r}: datasource is {uid!r}, not ${{datasource}}")
        for t in targets:
            if not t.get("expr", "").strip():
                problems.append(f"{path}: panel {title!r} query {t.get('refId')} has no expr")
            check_text(f"{path}: panel {title!r}", t.get("expr", ""), metrics, problems, used)


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    metrics = load_metrics(argv[1])
    problems = []
    shown = set()
    check_dashboard(argv[2], metrics, problems, shown)
    for name in sorted(set(metrics) - shown):
        problems.append(f"{argv[2]}: no panel shows {name}")
    for path in argv[3:]:
        check_text(path, open(path).read(), metrics, problems, set())
    for p in problems:
        print(p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
