#!/usr/bin/env bash
# Smoke test for fidelity_bench: one quick run (--quick: 1 run, 6 repeats, 8 configs, no hog) on
# every board kind; it exits 0 and prints a figure (not "-") in every expected row of its four
# tables for the host-process board, QEMU in host time, QEMU -icount and the cycle model.
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"
run "$out" "$1" --quick
# A row: the board key, then the row's other key columns, then its figures.
check_row() {
  local pattern="$1" line
  line=$(grep -E "^$pattern" "$out") || fail "no row matching '$pattern'"
  [[ $(printf '%s\n' "$line" | wc -l) -eq 1 ]] || fail "more than one row matching '$pattern'"
  has_figure "$line" "$pattern"
}
for board in host qemu icount cycles; do
  check_row "$board +~1 ms +idle "          # 1. repeatability
  check_row "$board +~50 us +idle "
  check_row "$board +idle +[0-9]"           # 2. calibration
  check_row "$board +[0-9]+ +[0-9]+ x [0-9]+ "  # 3. ranking
  check_row "$board +idle +old "            # 4. coverage, A/B
  check_row "$board +idle +new "
done
# Deterministic QEMU (-icount, the cycle model): identical costs within a run (the figures that
# do not depend on the machine), and the calibration kernel's clock matches the board's.
for board in icount cycles; do
  for kernel in "~1 ms" "~50 us"; do
    grep -E "^$board +$kernel +idle " "$out" | grep -qF "CV 0, spread 0: yes" ||
      fail "$board costs of the $kernel kernel differ within a run"
  done
  grep -E "^$board +idle +[0-9]" "$out" | grep -qF "+-2 %: yes" ||
    fail "$board calibration is off the board's clock"
  for mode in old new; do  # identical costs: every re-measurement lands on the first
    grep -E "^$board +idle +$mode " "$out" | grep -qF "100.00 %" ||
      fail "$board re-measurement ($mode) outside its interval"
  done
done
echo "PASS"
