#!/usr/bin/env bash
# Smoke test for data_bench: one run; it exits 0, prints a figure in every column of the four rows,
# and a candidate's check made on the board moves fewer bytes than on the host path.
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"
run "$out" "$1" --runs 1
for op in "matmul 32x32x32 float32" "dwconv_s8 64x64x4 int8"; do
  for data in "on board" "host"; do
    line=$(grep -F "$op" "$out" | grep -F " $data ") || fail "no row '$op' '$data'"
    has_figure "$line" "$op $data"
  done
  board=$(grep -F "$op" "$out" | grep -F " on board " | awk '{print $(NF-5)}')
  host=$(grep -F "$op" "$out" | grep -F " host " | awk '{print $(NF-5)}')
  [[ "$board" -lt "$host" ]] || fail "$op: a candidate's check on the board ($board B) not below the host path ($host B)"
done
