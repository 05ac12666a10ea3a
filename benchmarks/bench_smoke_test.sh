#!/usr/bin/env bash
# Smoke test for a Google Benchmark binary: it runs every benchmark briefly,
# exits 0, reports no benchmark error, and prints the expected row.
# Usage: bench_smoke_test.sh BINARY ROW_PREFIX   (e.g. link_bench BM_Memcpy/)
set -euo pipefail
bin="$1"
row="$2"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"

# Benchmark 1.7.1 takes --benchmark_min_time as seconds (a double, no unit).
if ! "$bin" --benchmark_min_time=0.01 --benchmark_filter=. >"$out" 2>&1; then
  cat "$out" >&2
  echo "FAIL: $bin exited non-zero" >&2
  exit 1
fi
cat "$out"
if grep -q "ERROR OCCURRED" "$out"; then
  echo "FAIL: a benchmark reported an error" >&2
  exit 1
fi
if ! grep -q "^$row" "$out"; then
  echo "FAIL: no '$row' row in the output" >&2
  exit 1
fi
echo "PASS: $(grep -c '^BM_' "$out") benchmark rows"
