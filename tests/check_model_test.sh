#!/usr/bin/env bash
# `farmctl board check-model`: the microbenchmark suite (one loop per timing rule) on an emulated
# board under the cycle model and on a second board standing in for the real one (here another
# emulated board: this machine has no Cortex-M). Against itself (a second cycle-model board) every
# rule agrees exactly; against -icount (instructions, not cycles) the table still has a row per
# rule with the measured figures; JSON for scripts; a missing --against board is refused.
set -euo pipefail
ws="$TEST_SRCDIR/${TEST_WORKSPACE:-benchfarm}"
TEST_NAME=check_model_test
source "$(dirname "${BASH_SOURCE[0]}")/test_lib.sh"
work="${TEST_TMPDIR:?}/check-model"
mkdir -p "$work"
cp "$ws/tests/firmware/qemu-mps2-an385.elf" "$ws/tests/firmware/qemu-mps2-an385.elf.hash" \
  "$ws/tests/firmware/qemu-mps2-an385.elf.timing" "$work/"
fw="$work/qemu-mps2-an385.elf"
farmctl="$ws/farmctl/farmctl"

"$farmctl" board check-model --qemu mps2-an385 --image "$fw" --against-qemu mps2-an385 \
  --against-image "$fw" --against-timing cycles --iterations 100 >"$work/self.txt" 2>&1 ||
  { cat "$work/self.txt" >&2; fail "check-model against a second cycle-model board"; }
cat "$work/self.txt" >&2
rows=$(grep -cE "^  [a-z_0-9]+ +[0-9.]+ +[0-9.]+ +-?0\.0%$" "$work/self.txt" || true)
[[ "$rows" -ge 26 ]] || fail "want every one of the Cortex-M3's 26 rules at 0.0 %, got $rows"
grep -qE "^  mla +19\.0 +19\.0 +0\.0%$" "$work/self.txt" || fail "mla: the M3's 2-cycle MLA"
grep -q "largest error: .* +0.0 %" "$work/self.txt" || fail "largest error against itself"

"$farmctl" board check-model --qemu mps2-an385 --image "$fw" --against-qemu mps2-an385 \
  --against-image "$fw" --against-timing instructions --iterations 100 --json >"$work/icount.json" 2>&1 ||
  { cat "$work/icount.json" >&2; fail "check-model against -icount"; }
python3 - "$work/icount.json" <<'PY' || fail "check-model --json"
import json, sys
d = json.load(open(sys.argv[1]))
rules = {r["rule"]: r for r in d["rules"]}
assert len(rules) == 26, sorted(rules)
assert rules["alu"]["model_cycles"] == 11, rules["alu"]
assert rules["alu"]["measured_cycles"] > 0, rules["alu"]
assert "(cycles)" in d["model_board"] and "(instructions)" in d["measured_board"], d
PY

if "$farmctl" board check-model --qemu mps2-an385 --image "$fw" >"$work/none.txt" 2>&1; then
  fail "check-model without the real board succeeded"
fi
grep -q "name the real board" "$work/none.txt" || fail "no reason given: $(cat "$work/none.txt")"
say "PASS"
