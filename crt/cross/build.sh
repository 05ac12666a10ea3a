#!/usr/bin/env bash
# Cross-compiles every board-side crt source for a Cortex-M3 with Debian's
# arm-none-eabi-gcc and picolibc, warnings as errors, and prints the size of
# each object and the total (text/data/bss) — the first line of crt's code-size
# budget.
#
# usage: crt/cross/build.sh OUT_DIR [CRT_DIR]
# Board-side sources are crt/**.c except tests (*_test_c.c), test doubles
# (testing/), the host-process platform (host/) and the fuzz harnesses (fuzz/).
set -euo pipefail

out="${1:?usage: build.sh OUT_DIR [CRT_DIR]}"
crt="${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}"
mkdir -p "$out"

CC=arm-none-eabi-gcc
SIZE=arm-none-eabi-size
command -v "$CC" >/dev/null || { echo "crt-size: $CC not found (apt install gcc-arm-none-eabi)" >&2; exit 1; }

FLAGS=(-mcpu=cortex-m3 -mthumb -Os -std=c99 -pedantic -Wall -Wextra -Werror -Wshadow
       -Wstrict-prototypes -ffunction-sections -fdata-sections --specs=picolibc.specs)
includes=(-I "$crt/include")
for dir in "$crt"/*/include; do
  [[ -d "$dir" ]] && includes+=(-I "$dir")
done

mapfile -t sources < <(cd "$crt" && find . -name '*.c' \
  ! -name '*_test_c.c' ! -path './host/*' ! -path '*/testing/*' ! -path './cross/*' \
  ! -path './fuzz/*' | sort)
[[ ${#sources[@]} -gt 0 ]] || { echo "crt-size: no sources under $crt" >&2; exit 1; }

objects=()
for src in "${sources[@]}"; do
  obj="$out/$(echo "${src#./}" | tr '/' '_' | sed 's/\.c$/.o/')"
  "$CC" "${FLAGS[@]}" "${includes[@]}" -c "$crt/$src" -o "$obj"
  objects+=("$obj")
done

echo "crt for Cortex-M3 (arm-none-eabi-gcc $("$CC" -dumpversion), -Os), bytes:"
"$SIZE" -t "${objects[@]}" | sed "s|$out/||"
