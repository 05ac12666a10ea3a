#!/usr/bin/env bash
# Smoke test for a Google Benchmark binary: it runs every benchmark briefly,
# exits 0, reports no benchmark error, and prints the expected row.
# Usage: bench_smoke_test.sh BINARY ROW_PREFIX   (e.g. link_bench BM_Memcpy/)
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
bin="$1"
row="$2"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"

# Benchmark 1.7.1 takes --benchmark_min_time as seconds (a double, no unit).
run "$out" "$bin" --benchmark_min_time=0.01 --benchmark_filter=.
if grep -q "ERROR OCCURRED" "$out"; then fail "a benchmark reported an error"; fi
grep -q "^$row" "$out" || fail "no '$row' row in the output"
echo "PASS: $(grep -c '^BM_' "$out") benchmark rows"
