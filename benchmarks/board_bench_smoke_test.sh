#!/usr/bin/env bash
# Smoke test for board_bench: one run of each stage on the emulated Cortex-M board and the
# host-process board; it exits 0 and prints a figure (not "-") in every row for both boards.
set -euo pipefail
bin="$1"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"
if ! "$bin" --runs 1 >"$out" 2>&1; then
  cat "$out" >&2
  echo "FAIL: $bin exited non-zero" >&2
  exit 1
fi
cat "$out"
for row in "image build, cold" "image build, cache hit" "flash (start the image)" \
           "handshake + DeviceInfo" "empty call round trip" "CopyToRemote 64 KiB" "CopyFromRemote 64 KiB"; do
  line=$(grep -F "$row" "$out") || { echo "FAIL: no row '$row'" >&2; exit 1; }
  if [[ "$line" == *" - "* || "$line" == *" -" ]]; then
    echo "FAIL: row '$row' has no figure: $line" >&2
    exit 1
  fi
done
