#!/usr/bin/env bash
# Smoke test for cycles_bench: one quick run (--quick: 24 matmul configs on the emulated
# Cortex-M3, one round, and 24 of the user operator deploy/examples/ops/dwconv_s8_tiled through
# --op-dir, each checked) exits 0 and prints a figure in every row of its three tables: guest MIPS
# per timing mode, idle share per mode, and the spaces seen by -icount and by the cycle model with
# Kendall's tau between them. The figures themselves depend on the machine: not judged here.
# Then --table with --op-dir on a user operator of 4 configs, 2 of them wrong: the table holds
# every config, the wrong ones "inf" (named on stderr), and its header the command that
# regenerates it.
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
tmp="${TEST_TMPDIR:-$(mktemp -d)}"
out="$tmp/bench.txt"
run "$out" "$1" --quick --op-dir=deploy/examples/ops/dwconv_s8_tiled
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
row "^ +m3 +dwconv_s8_tiled +24 +instructions +[0-9.]+x "
row "^ +m3 +dwconv_s8_tiled +24 +cycles +[0-9.]+x "
row "^ +m3 +dwconv_s8_tiled +Kendall tau \(instructions vs cycles\) -?[0-9.]+; same best: (yes|no)"

# --table --op-dir: y = 3 x (int8 in, int32 out); wrong=1 gets element 0 wrong.
mkdir -p "$tmp/triple_s8"
cat >"$tmp/triple_s8/op.json" <<'JSON'
{"op": "triple_s8", "entry": "triple_s8", "reference_entry": "triple_s8_ref",
 "sources": ["triple_s8.c"], "dims": {"N": 64},
 "args": [{"name": "x", "role": "input", "dtype": "int8", "shape": ["N"]},
          {"name": "y", "role": "output", "dtype": "int32", "shape": ["N"]}],
 "knobs": [{"name": "unroll", "values": [1, 2], "default": 1},
           {"name": "wrong", "values": [0, 1], "default": 0}]}
JSON
cat >"$tmp/triple_s8/triple_s8.c" <<'C'
#include <benchfarm/ops/common.h>
#include <benchfarm/ops/knob.h>
#include <dlpack/dlpack.h>
#include <stdint.h>
#ifndef BF_KNOB_unroll
#define BF_KNOB_unroll 1
#endif
#ifndef BF_KNOB_wrong
#define BF_KNOB_wrong 0
#endif
static int triple(TVMValue* args, int unroll, int wrong) {
  const DLTensor* x = (const DLTensor*)args[0].v_handle;
  const DLTensor* y = (const DLTensor*)args[1].v_handle;
  const int8_t* a = (const int8_t*)x->data;
  int32_t* b = (int32_t*)y->data;
  int64_t i, n = x->shape[0];
  for (i = 0; i + unroll <= n; i += unroll) {
    b[i] = 3 * a[i];
    if (unroll == 2) b[i + 1] = 3 * a[i + 1];
  }
  for (; i < n; ++i) b[i] = 3 * a[i];
  b[0] += wrong;
  return 0;
}
BF_OPS_DECLARE_PACKED(triple_s8);
BF_OPS_DECLARE_PACKED(triple_s8) { return triple(args, BF_KNOB(unroll), BF_KNOB(wrong)); }
BF_OPS_DECLARE_PACKED(triple_s8_ref);
BF_OPS_DECLARE_PACKED(triple_s8_ref) { return triple(args, 1, 0); }
C
table="$tmp/triple_s8-m3.tsv"
run "$tmp/table.txt" "$1" --table="$table" --op-dir="$tmp/triple_s8/" --targets=m3
cat "$table"
grep -qx "# regenerate: ./farm bench cycles --table=benchmarks/data/triple_s8-m3.tsv --op-dir=$tmp/triple_s8 --targets=m3" \
  "$table" || fail "the table's header names the command that regenerates it"
grep -q "^# the user operator $tmp/triple_s8 (version [0-9a-f]*), .* (2 failed: inf)$" "$table" ||
  fail "the table's header names the operator and its failed configs"
grep -qx "# knob wrong 0 1" "$table" || fail "the table's knobs"
for i in 0 1; do grep -qE "^$i	[0-9.e-]+$" "$table" || fail "config $i measured"; done
for i in 2 3; do grep -qx "$i	inf" "$table" || fail "config $i (a wrong answer) is inf"; done
grep -q "failed: m3 triple_s8 bf_cand_triple_s8_1_1 (cycles): wrong answer: output element 0 is" \
  "$tmp/table.txt" || fail "the wrong config named on stderr"
echo "PASS"
