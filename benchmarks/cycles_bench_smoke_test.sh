#!/usr/bin/env bash
# Smoke test for cycles_bench: one quick run (--quick: 24 matmul configs on the emulated
# Cortex-M3, one round) exits 0 and prints a figure in every row of its three tables: guest MIPS
# per timing mode, idle share per mode, and the space seen by -icount and by the cycle model with
# Kendall's tau between them. The figures themselves depend on the machine: not judged here.
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"
run "$out" "$1" --quick
row() {
  grep -qE "$1" "$out" || fail "no row matching '$1'"
}
for mode in host instructions cycles; do
  row "^ +m3 +$mode +[0-9]+ +[0-9.]+ +[0-9.]+x$"   # 1. speed
done
row "^ +m3 +[0-9.]+% +[0-9.]+% +[0-9.]+%$"          # 2. idle
row "^ +m3 +matmul +24 +instructions +[0-9.]+x "     # 3. the space, each mode
row "^ +m3 +matmul +24 +cycles +[0-9.]+x "
row "^ +m3 +matmul +Kendall tau \(instructions vs cycles\) -?[0-9.]+; same best: (yes|no)"
echo "PASS"
