#!/usr/bin/env python3
"""Counts test cases in Bazel's test XML and prints "N passed, N failed".

usage: test_summary.py TESTLOGS_DIR //pkg:target ...

Each target's XML is read from TESTLOGS_DIR/<pkg>/<target>/test.xml. A target
without XML (it did not build, or never ran) counts as one failed case, so a
broken build can never look green. Exit status 1 when anything failed.
"""
import os
import sys
import xml.etree.ElementTree as ET


def count(xml_path):
    """Returns (passed, failed, skipped, failed_names) for one test.xml."""
    root = ET.parse(xml_path).getroot()
    passed = failed = skipped = 0
    names = []
    for case in root.iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            names.append(case.get("classname", "") + "." + case.get("name", ""))
        elif case.find("skipped") is not None or case.get("result") == "suppressed" or \
                case.get("status") == "notrun":
            skipped += 1
        else:
            passed += 1
    if passed + failed + skipped == 0:
        # A test binary that is not a GoogleTest (e.g. a shell test): Bazel writes one
        # testsuite with its own failure count.
        suites = list(root.iter("testsuite"))
        bad = sum(int(s.get("failures", "0")) + int(s.get("errors", "0")) for s in suites)
        if bad:
            failed = 1
        else:
            passed = 1
    return passed, failed, skipped, names


def main(argv):
    if len(argv) < 2 or not argv[1]:
        print("test_summary: no bazel-testlogs directory", file=sys.stderr)
        print("0 passed, 1 failed")
        return 1
    logs = argv[1]
    targets = argv[2:]
    passed = failed = skipped = 0
    for target in targets:
        rel = target.lstrip("/").replace(":", "/")
        xml_path = os.path.join(logs, rel, "test.xml")
        if not os.path.exists(xml_path):
            print("test_summary: %s has no test.xml (did not build or run)" % target,
                  file=sys.stderr)
            failed += 1
            continue
        try:
            p, f, s, names = count(xml_path)
        except ET.ParseError as err:
            print("test_summary: %s: unreadable test.xml: %s" % (target, err), file=sys.stderr)
            failed += 1
            continue
        for name in names:
            print("FAILED: %s %s" % (target, name), file=sys.stderr)
        passed, failed, skipped = passed + p, failed + f, skipped + s
    line = "%d passed, %d failed" % (passed, failed)
    if skipped:
        line += ", %d skipped" % skipped
    print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
