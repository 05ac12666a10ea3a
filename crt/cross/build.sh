#!/usr/bin/env bash
# Cross-compiles every board-side crt source for a Cortex-M3 with Debian's
# arm-none-eabi-gcc and picolibc, warnings as errors, and prints the size of
# each object and the total (text/data/bss) — the first line of crt's code-size
# budget.
#
# usage: crt/cross/build.sh OUT_DIR [CRT_DIR]
# Board-side sources are crt/**.c except tests (*_test_c.c), test doubles
# (testing/), the host-process platform (host/), the fuzz harnesses (fuzz/) and
# the board packages (boards/, which need a board.conf).
#
# Then, per board package (crt/boards/*/board.conf), the LINKED firmware with
# the sample operators (crt/boards/build.sh, -Os, --gc-sections): its flash
# (text + data) and RAM (data + bss, with crt's memory pool and the reserved
# stack), and the flash each part takes, attributed per object from the link
# map: "core" is runtime + link + MinRPC + time evaluator (crt/runtime,
# crt/memory, crt/link, crt/rpc), budget 16 KiB; then the board support
# (crt/boards: startup, faults, timer, UART, platform, message formatter), the
# operators, what libgcc (soft-float double math, 64-bit division) and
# picolibc (memcpy/memset) add, and "other" (crt/contrib: TVM's
# tvm.contrib.random.random_fill, which AutoTVM calls before measuring).
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
  ! -path './fuzz/*' ! -path './boards/*' | sort)
[[ ${#sources[@]} -gt 0 ]] || { echo "crt-size: no sources under $crt" >&2; exit 1; }

objects=()
for src in "${sources[@]}"; do
  obj="$out/$(echo "${src#./}" | tr '/' '_' | sed 's/\.c$/.o/')"
  "$CC" "${FLAGS[@]}" "${includes[@]}" -c "$crt/$src" -o "$obj"
  objects+=("$obj")
done

echo "crt for Cortex-M3 (arm-none-eabi-gcc $("$CC" -dumpversion), -Os), bytes:"
"$SIZE" -t "${objects[@]}" | sed "s|$out/||"

# ---- Linked firmware per board package.
boards="$crt/boards"
[[ -x "$boards/build.sh" ]] || exit 0

# Flash bytes per group from a GNU ld map: input sections of .text/.rodata/.vectors/.ARM.exidx
# and .data (its initial values live in flash), by the object (or archive member) they come from.
attribute() {
  awk '
    function hex(s,   i, c, v) {
      v = 0; s = tolower(substr(s, 3))
      for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)); v = v * 16 + c - 1 }
      return v
    }
    function group(file,   m) {
      if (file ~ /libgcc\.a\(/) return "libgcc"
      if (file ~ /libc\.a\(/) return "libc"
      m = file; sub(/.*\(/, "", m); sub(/\)$/, "", m); sub(/.*\//, "", m)
      if (m ~ /^(runtime|memory)_/) return "runtime"
      if (m ~ /^link_/) return "link"
      if (m ~ /^rpc_/) return "rpc"
      if (m ~ /^boards_cortex-m_format/) return "format"
      if (m ~ /^boards_/ || m ~ /^bf_firmware_id/) return "bsp"
      if (m ~ /^ops_/ || m ~ /^src[0-9]+-/) return "ops"
      return "other"
    }
    function add(sec, size, file) {
      if (sec ~ /^\.(text|rodata|bf_vectors|ARM\.exidx|data)/ && file !~ /^\*/) sum[group(file)] += hex(size)
    }
    /^Linker script and memory map/ { on = 1; next }
    !on { next }
    /^ \.[^ ]+$/ { pending = $1; next }
    /^ \.[^ ]+ +0x[0-9a-f]+ +0x[0-9a-f]+ / { add($1, $3, $4); pending = ""; next }
    pending != "" && /^ +0x[0-9a-f]+ +0x[0-9a-f]+ / { add(pending, $2, $3); pending = ""; next }
    { pending = "" }
    END {
      core = sum["runtime"] + sum["link"] + sum["rpc"]
      printf "%d %d %d %d %d %d %d %d %d %d\n", core, sum["runtime"], sum["link"], sum["rpc"],
        sum["bsp"] + sum["format"], sum["format"], sum["ops"], sum["libgcc"], sum["libc"], sum["other"]
    }' "$1"
}

echo
echo "linked firmware per board package (crt/boards/build.sh, sample operators), bytes:"
printf '%-13s %8s %8s | %6s %8s %5s %13s | %11s %6s %6s %5s %5s\n' package flash ram core \
  runtime link "MinRPC+timeev" "bsp(format)" ops libgcc libc other
for conf in "$boards"/*/board.conf; do
  pkg="$(basename "$(dirname "$conf")")"
  line="$("$boards/build.sh" --package "$pkg" --out "$out/firmware-$pkg.elf" --cache "$out/cache" --crt "$crt")"
  [[ "$line" =~ flash=([0-9]+)/[0-9]+\ ram=([0-9]+)/[0-9]+ ]] || { echo "crt-size: $line" >&2; exit 1; }
  flash=${BASH_REMATCH[1]} ram=${BASH_REMATCH[2]}
  read -r core runtime link rpc bsp format ops libgcc libc other < <(attribute "$out/firmware-$pkg.elf.map")
  printf '%-13s %8d %8d | %6d %8d %5d %13d | %5d(%4d) %6d %6d %5d %5d\n' "$pkg" "$flash" "$ram" \
    "$core" "$runtime" "$link" "$rpc" "$bsp" "$format" "$ops" "$libgcc" "$libc" "$other"
done
echo "core = runtime (crt/runtime, crt/memory) + link (crt/link) + MinRPC + time evaluator (crt/rpc);"
echo "other = crt/contrib (tvm.contrib.random.random_fill) and anything not attributed above;"
echo "budget 16384 bytes of flash. ram includes crt's memory pool (board.conf MEMORY_POOL_BYTES) and the stack."
