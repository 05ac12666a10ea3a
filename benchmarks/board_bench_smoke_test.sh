#!/usr/bin/env bash
# Smoke test for board_bench: one run of each stage on the emulated Cortex-M board and the
# host-process board; it exits 0 and prints a figure (not "-") in every row for both boards.
set -euo pipefail
source "$(dirname "$0")/smoke_lib.sh"
out="${TEST_TMPDIR:-$(mktemp -d)}/bench.txt"
run "$out" "$1" --runs 1
for row in "image build, cold" "image build, cache hit" "flash (start the image)" \
           "handshake + DeviceInfo" "empty call round trip" "CopyToRemote 64 KiB" "CopyFromRemote 64 KiB"; do
  line=$(grep -F "$row" "$out") || fail "no row '$row'"
  has_figure "$line" "$row"
done
