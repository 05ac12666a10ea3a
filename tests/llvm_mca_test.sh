#!/usr/bin/env bash
# The cycle model beside LLVM's Cortex-M4 scheduling model: the inner loops of the sample
# operators (add, matmul, conv2d) in the STM32F4 firmware, each iteration's path costed by the
# model (static_cycles, without flash wait states: llvm-mca has none) and by
# `llvm-mca-14 -mcpu=cortex-m4`. The model, without its taken-branch refills (llvm-mca charges
# none), must be within 40 % of llvm-mca on every loop; README.md "Emulated boards" explains the
# differences (the TRM's VLDM/VSTM 1+N, store-then-load and FP result-use stalls, the
# address-generation stall, none of which LLVM's model has, so the model is the higher).
set -euo pipefail
ws="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}"
TEST_NAME=llvm_mca_test
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"
command -v llvm-mca-14 >/dev/null || fail "llvm-mca-14 is not installed (apt install llvm-14; ./farm installs it)"
out="${TEST_TMPDIR:?}/compare.txt"
rc=0
python3 "$ws/cyclemodel/llvm_mca_compare.py" --elf "$ws/tests/firmware/qemu-netduinoplus2.elf" \
  --static-cycles "$ws/cyclemodel/static_cycles" --llvm-mca llvm-mca-14 --tolerance 0.40 \
  bf_ops_add bf_ops_matmul bf_ops_conv2d >"$out" 2>&1 || rc=$?
cat "$out" >&2
[[ $rc -eq 0 ]] || fail "the model and llvm-mca differ by more than the tolerance (or the comparison failed)"
# Every operator's inner loops were found and compared.
for op in bf_ops_add bf_ops_matmul bf_ops_conv2d; do
  grep -q "^$op " "$out" || fail "no inner loop of $op was compared"
done
say "PASS"
