#!/usr/bin/env bash
# Smoke test for fidelity_bench: one quick run (--quick: 1 run, 6 repeats, 8 configs, no hog) on
# every board kind; it exits 0 and prints a figure (not "-") in every expected row of its three
# tables for the host-process board, QEMU in host time and QEMU -icount.
set -euo pipefail
bin="$1"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"
if ! "$bin" --quick >"$out" 2>&1; then
  cat "$out" >&2
  echo "FAIL: $bin exited non-zero" >&2
  exit 1
fi
cat "$out"
# A row: the board key, then the row's other key columns, then its figures.
check_row() {
  local pattern="$1" line
  line=$(grep -E "^$pattern" "$out") || { echo "FAIL: no row matching '$pattern'" >&2; exit 1; }
  if [[ $(printf '%s\n' "$line" | wc -l) -ne 1 ]]; then
    echo "FAIL: more than one row matching '$pattern'" >&2
    exit 1
  fi
  if [[ "$line" == *" - "* || "$line" == *" -" ]]; then
    echo "FAIL: row '$pattern' has no figure: $line" >&2
    exit 1
  fi
}
for board in host qemu icount; do
  check_row "$board +~1 ms +idle "          # 1. repeatability
  check_row "$board +~50 us +idle "
  check_row "$board +idle +[0-9]"           # 2. calibration
  check_row "$board +[0-9]+ +[0-9]+ x [0-9]+ "  # 3. ranking
done
# Deterministic QEMU: identical costs within a run (the one figure that does not depend on the
# machine).
for kernel in "~1 ms" "~50 us"; do
  grep -E "^icount +$kernel +idle " "$out" | grep -qF "CV 0, spread 0: yes" ||
    { echo "FAIL: QEMU -icount costs of the $kernel kernel differ within a run" >&2; exit 1; }
done
echo "PASS"
