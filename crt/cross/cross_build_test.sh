#!/usr/bin/env bash
# Every board-side crt source cross-compiles for Cortex-M3 with -Werror, and
# the size table covers each of them with a non-zero text total.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
crt="$(cd "$here/.." && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}/cross"
"$here/build.sh" "$out" "$crt" | tee "$out.txt"

expected=$(cd "$crt" && find . -name '*.c' ! -name '*_test_c.c' ! -path './host/*' \
  ! -path '*/testing/*' ! -path './cross/*' ! -path './fuzz/*' ! -path './boards/*' | wc -l)
objects=$(grep -c '\.o$' "$out.txt" || true)
if [[ "$expected" -lt 1 || "$objects" -ne "$expected" ]]; then
  echo "FAIL: expected $expected objects in the size table, saw $objects" >&2
  exit 1
fi
text=$(awk '/\(TOTALS\)/ {print $1}' "$out.txt")
if [[ -z "$text" || "$text" -le 0 ]]; then
  echo "FAIL: no text total in the size table" >&2
  exit 1
fi
echo "PASS: $objects objects, $text bytes of text"
