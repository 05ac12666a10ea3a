#!/usr/bin/env bash
# Smoke test for tuner_bench: a short replay (3 seeds, budgets 16 and 32) of every strategy and
# of the image-round scheme on every committed table exits 0 and prints a figure in every row
# (checked on the M3's matmul, the int8 space dwconv_s8_tiled on the F4 and the synthetic space);
# --write-synthetic writes a table the bench reads back.
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
out="$tmp/bench.txt"
run "$out" "$1" --seeds=3 --budgets=16,32
row() {
  grep -qE "$1" "$out" || fail "no row matching '$1'"
}
for space in matmul-m3 dwconv_s8_tiled-f4 synthetic; do
  for strategy in random additive gbt; do
    for budget in 16 32; do
      row "^$space +[0-9]+ +$strategy +$budget +[0-9.]+ +[0-9.]+ +[0-9]+% +[0-9]+ +[0-9.]+s$"
    done
    row "^$space +$strategy +[0-9a-z]+, [0-9a-z]+ \([0-9]+/3\) +[0-9a-z]+, [0-9a-z]+ \([0-9]+/3\)$"
  done
  # The image-round scheme: the learned model in 3 rounds, 3 flashes per board at every budget.
  for budget in 16 32; do
    row "^$space +[0-9]+ +gbt 3 rounds +$budget +[0-9.]+ +[0-9.]+ +[0-9]+% +3 +[0-9.]+s$"
  done
done
# Transfer: matmul on the M3 pre-trained from a run on the F4 (the same space).
for budget in 16 32; do
  row "^matmul-m3 +[0-9]+ +gbt\+transfer +$budget +[0-9.]+ +[0-9.]+ +[0-9]+% +[0-9]+ +[0-9.]+s$"
done
row "^matmul-m3 +gbt\+transfer +[0-9a-z]+, [0-9a-z]+ \([0-9]+/3\)"
mkdir -p "$tmp/data"
"$1" --write-synthetic="$tmp/data/synthetic.tsv" || fail "--write-synthetic failed"
run "$tmp/synthetic.txt" "$1" --data="$tmp/data" --seeds=2 --budgets=8 --strategies=gbt
grep -qE "^synthetic +432 +gbt +8 " "$tmp/synthetic.txt" || fail "the written table was not read"
echo "PASS"
