#!/usr/bin/env bash
# Builds benchfarm firmware for a Cortex-M board package (crt/boards/<package>/) with Debian's
# arm-none-eabi-gcc and picolibc.
#
#   crt/boards/build.sh --package PKG --out IMAGE [--kind KIND] [--sources DIR] [--cache DIR]
#                       [--crt CRT_DIR]
#   crt/boards/build.sh --package PKG --runtime-only --cache DIR [--crt CRT_DIR]
#
#   --package  a directory of crt/boards with a board.conf (mps2-an385, stm32f4, ...)
#   --out      the ELF image to write, without its debug information; IMAGE.debug (the same ELF
#              with it: every file is compiled with -g, which changes no code, so the flashed
#              bytes and the id are those of a build without), IMAGE.bin, IMAGE.hex, IMAGE.hash
#              (the firmware id: 16 lowercase hex digits, no newline), IMAGE.map (the link map)
#              and IMAGE.timing (what an emulated board's cycle model needs: the core and the
#              flash's wait states, one line of QEMU plugin arguments, e.g. "core=cortex-m4f
#              region=0x08000000:0x00080000:5:art") are written beside it
#   --kind     the board_kind the firmware reports in benchfarm.DeviceInfo (default: PKG)
#   --sources  every DIR/*.c is compiled into the image; one of them defines
#              TVMSystemLibEntryPoint (the agent's system library and candidates). Default:
#              crt/ops/sample_system_lib.c (add, matmul, conv2d and their references). A source
#              X.c with a file X.c.cflags beside it is compiled with those options too (one a
#              line, after the package's own flags: -O3 there overrides -Os; only -O, -f and -m
#              options, the agent's allow-list in catalog/cflags.h); they are part of the id
#   --cache    where the compiled runtime archive is kept between builds (default: a temporary
#              directory, removed at exit)
#   --crt      the crt tree (default: the one this script is in)
#   --runtime-only  only make sure the runtime archive is in the cache (compiling it if not), no
#              image: the agent runs this, with no user code in reach, before it builds images in a
#              sandbox where the cache is read-only. A read-only cache without the archive gets
#              the runtime compiled for that one image.
#
# The runtime archive — crt's board-side sources (the same selection as crt/cross/build.sh, minus
# the sample system library), crt/boards/cortex-m/ and the package's SOURCES — is compiled once
# per (flags, sources, headers, board.conf) and stored in the cache by an atomic rename. An image
# build is then the --sources compiles, the generated firmware-id source and one link.
#
# On success prints one line on stdout:
#   firmware: IMAGE package=PKG kind=KIND flash=<used>/<size> ram=<used>/<size> hash=<id>
# (flash = text + data, ram = data + bss including the reserved stack). On failure exits non-zero
# with the compiler's or linker's output (an image too large for the part fails the link with
# "region `FLASH' overflowed by N bytes", or `RAM').
set -euo pipefail

usage() {
  echo "usage: build.sh --package PKG --out IMAGE [--kind KIND] [--sources DIR] [--cache DIR] [--crt CRT_DIR]" >&2
  echo "       build.sh --package PKG --runtime-only --cache DIR [--crt CRT_DIR]" >&2
  exit 2
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
package="" out="" kind="" sources_dir="" cache="" crt="" runtime_only=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --package) package="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --kind) kind="${2:?}"; shift 2 ;;
    --sources) sources_dir="${2:?}"; shift 2 ;;
    --cache) cache="${2:?}"; shift 2 ;;
    --crt) crt="${2:?}"; shift 2 ;;
    --runtime-only) runtime_only=1; shift ;;
    -h | --help) usage ;;
    *) echo "build.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[[ -n "$package" && ( -n "$out" || -n "$runtime_only" ) ]] || usage
[[ -z "$runtime_only" || -n "$cache" ]] || { echo "build.sh: --runtime-only needs --cache" >&2; exit 2; }
crt="$(cd "${crt:-$here/..}" && pwd)"
boards="$crt/boards"
kind="${kind:-$package}"
[[ "$kind" =~ ^[A-Za-z0-9._+-]+$ ]] || { echo "build.sh: bad --kind '$kind' (letters, digits, . _ + -)" >&2; exit 2; }
[[ "$package" =~ ^[A-Za-z0-9._-]+$ && -f "$boards/$package/board.conf" ]] || {
  echo "build.sh: no package '$package' (no $boards/$package/board.conf)" >&2; exit 2; }

CC=arm-none-eabi-gcc
OBJCOPY=arm-none-eabi-objcopy
SIZE=arm-none-eabi-size
for tool in "$CC" "$OBJCOPY" "$SIZE"; do
  command -v "$tool" >/dev/null || {
    echo "build.sh: $tool not found (apt install gcc-arm-none-eabi binutils-arm-none-eabi picolibc-arm-none-eabi)" >&2
    exit 1; }
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/bf-firmware.XXXXXX")"
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT
if [[ -z "$cache" ]]; then
  cache="$tmp/cache"
fi
[[ -d "$cache" ]] || mkdir -p "$cache"
[[ -z "$out" ]] || mkdir -p "$(dirname "$out")"

# ---- board.conf: KEY=VALUE lines (optionally "quoted"), comments on their own lines or after
# unquoted values. Read as data, never executed.
declare -A conf=()
while IFS= read -r line || [[ -n "$line" ]]; do
  [[ "$line" =~ ^[[:space:]]*(#.*)?$ ]] && continue
  if [[ "$line" =~ ^([A-Z][A-Z0-9_]*)=\"([^\"]*)\"[[:space:]]*(#.*)?$ ]]; then
    conf[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}"
  elif [[ "$line" =~ ^([A-Z][A-Z0-9_]*)=([^[:space:]\"#]*)[[:space:]]*(#.*)?$ ]]; then
    conf[${BASH_REMATCH[1]}]="${BASH_REMATCH[2]}"
  else
    echo "build.sh: $boards/$package/board.conf: not KEY=VALUE: $line" >&2
    exit 2
  fi
done < "$boards/$package/board.conf"
for key in CPU_FLAGS FLASH_ORIGIN FLASH_LENGTH RAM_ORIGIN RAM_LENGTH STACK_BYTES MEMORY_POOL_BYTES \
           PAGE_BYTES CPU_HZ NUM_IRQS UART_IRQ; do
  [[ -n "${conf[$key]:-}" ]] || { echo "build.sh: $package/board.conf: $key is missing" >&2; exit 2; }
done

# The cycle model's data (README.md): the core's timing table and the flash's wait states.
case "${conf[CYCLE_MODEL_CORE]:-}" in
  cortex-m3 | cortex-m4 | cortex-m4f | cortex-m55) ;;
  *) echo "build.sh: $package/board.conf: CYCLE_MODEL_CORE must be cortex-m3, cortex-m4, cortex-m4f or cortex-m55, not '${conf[CYCLE_MODEL_CORE]:-}'" >&2
     exit 2 ;;
esac
if [[ -n "${conf[FLASH_WAIT_STATES]:-}" && ! "${conf[FLASH_WAIT_STATES]}" =~ ^([0-9]|1[0-5])$ ]]; then
  echo "build.sh: $package/board.conf: FLASH_WAIT_STATES must be 0 to 15, not '${conf[FLASH_WAIT_STATES]}'" >&2
  exit 2
fi
case "${conf[FLASH_ACCELERATOR]:-}" in
  "" | art) ;;
  *) echo "build.sh: $package/board.conf: FLASH_ACCELERATOR must be art or empty, not '${conf[FLASH_ACCELERATOR]}'" >&2
     exit 2 ;;
esac

# Keys that must be numbers when present.
if [[ -n "${conf[CALIBRATION_CYCLES_PER_ITERATION]:-}" &&
      ! "${conf[CALIBRATION_CYCLES_PER_ITERATION]}" =~ ^[0-9]+(\.[0-9]+)?$ ]]; then
  echo "build.sh: $package/board.conf: CALIBRATION_CYCLES_PER_ITERATION must be a number (e.g. 3 or 2.5), not '${conf[CALIBRATION_CYCLES_PER_ITERATION]}'" >&2
  exit 2
fi

# Numbers (decimal, with or without a fraction, or 0x hex) become -DBF_CONF_<KEY>=<value>; pins
# written PA9 become (port << 4) | pin with port A = 0.
defines=()
for key in $(printf '%s\n' "${!conf[@]}" | sort); do
  value="${conf[$key]}"
  if [[ "$value" =~ ^(0x[0-9A-Fa-f]+|[0-9]+|[0-9]+\.[0-9]+)$ ]]; then
    defines+=("-DBF_CONF_$key=$value")
  elif [[ "$value" =~ ^P([A-K])([0-9]|1[0-5])$ ]]; then
    port=$(( $(printf '%d' "'${BASH_REMATCH[1]}") - 65 ))
    defines+=("-DBF_CONF_$key=$(( port * 16 + BASH_REMATCH[2] ))")
  fi
done
# A microcontroller's flash is small: the 32-byte nibble CRC table instead of the 512-byte one.
defines+=("-DTVM_CRT_MEMORY_POOL_SIZE_BYTES=${conf[MEMORY_POOL_BYTES]}"
          "-DTVM_CRT_PAGE_BYTES=${conf[PAGE_BYTES]}" "-DTVM_CRT_CRC16_TABLE_ENTRIES=16")

read -r -a cpu_flags <<< "${conf[CPU_FLAGS]}"
COMMON=("${cpu_flags[@]}" -Os -ffunction-sections -fdata-sections --specs=picolibc.specs)
# Debug information: it changes no code (GCC's -g never does), so it is left out of the ids.
DEBUG=(-g)
STRICT=(-std=c99 -pedantic -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes)
# The agent's generated sources: the warnings, not -Werror (as the host-process template).
LENIENT=(-std=c99 -Wall -Wextra -Wno-unused-parameter)
includes=(-I "$crt/include")
for dir in "$crt"/*/include; do
  [[ -d "$dir" ]] && includes+=(-I "$dir")
done
includes+=(-I "$boards/cortex-m")

# ---- The runtime archive.
# (No process substitution: it needs /dev/fd, hence /proc, which the agent's build sandbox may lack.)
mapfile -t crt_sources <<< "$(cd "$crt" && find . -name '*.c' \
  ! -name '*_test_c.c' ! -path './host/*' ! -path '*/testing/*' ! -path './cross/*' \
  ! -path './fuzz/*' ! -path './boards/*' ! -name 'sample_system_lib.c' | sort)"
runtime_sources=("${crt_sources[@]}")
for src in "$boards"/cortex-m/*.c; do runtime_sources+=("./boards/cortex-m/$(basename "$src")"); done
for src in ${conf[SOURCES]:-}; do
  [[ -f "$boards/$src" ]] || { echo "build.sh: $package/board.conf: SOURCES: no $boards/$src" >&2; exit 2; }
  runtime_sources+=("./boards/$src")
done
cc_version="$("$CC" --version | head -1)"
runtime_key=$( (echo "runtime-v1 $cc_version"; echo "${COMMON[*]} ${STRICT[*]} ${defines[*]}"
                cd "$crt" && for f in "${runtime_sources[@]}"; do echo "== $f"; cat "$f"; done
                find . -name '*.h' ! -path './fuzz/*' | sort | while read -r h; do echo "== $h"; cat "$h"; done
                echo "== board.conf"; cat "boards/$package/board.conf") | sha256sum | cut -c1-16)
runtime="$cache/crt-$package-$runtime_key-g.a"
if [[ ! -f "$runtime" ]]; then
  mkdir -p "$tmp/runtime"
  objects=()
  for src in "${runtime_sources[@]}"; do
    obj="$tmp/runtime/$(echo "${src#./}" | tr '/' '_' | sed 's/\.c$/.o/')"
    "$CC" "${COMMON[@]}" "${DEBUG[@]}" "${STRICT[@]}" "${defines[@]}" "${includes[@]}" -c "$crt/$src" -o "$obj"
    objects+=("$obj")
  done
  arm-none-eabi-ar rcs "$tmp/runtime/runtime.a" "${objects[@]}"
  if [[ -w "$cache" ]]; then
    staged="$(mktemp "$cache/.crt-$package.XXXXXX")"
    cp "$tmp/runtime/runtime.a" "$staged"
    chmod 644 "$staged"
    mv -f "$staged" "$runtime"  # atomic: a concurrent build sees it whole or not at all
  else
    runtime="$tmp/runtime/runtime.a"  # a read-only cache: for this image alone
  fi
fi
[[ -z "$runtime_only" ]] || exit 0

# ---- The image's own sources.
image_sources=()
if [[ -n "$sources_dir" ]]; then
  [[ -d "$sources_dir" ]] || { echo "build.sh: --sources $sources_dir: not a directory" >&2; exit 2; }
  while IFS= read -r src; do
    [[ -n "$src" ]] && image_sources+=("$src")
  done <<< "$(find "$sources_dir" -maxdepth 1 -name '*.c' | sort)"
  [[ ${#image_sources[@]} -gt 0 ]] || { echo "build.sh: --sources $sources_dir: no *.c files" >&2; exit 2; }
else
  image_sources=("$crt/ops/sample_system_lib.c")
fi

# The linker script, from the shared template and board.conf.
guard="${conf[NULL_GUARD_BYTES]:-1024}"
sed -e "s/@FLASH_ORIGIN@/${conf[FLASH_ORIGIN]}/" -e "s/@FLASH_LENGTH@/${conf[FLASH_LENGTH]}/" \
    -e "s/@RAM_ORIGIN@/${conf[RAM_ORIGIN]}/" -e "s/@RAM_LENGTH@/${conf[RAM_LENGTH]}/" \
    -e "s/@STACK_BYTES@/${conf[STACK_BYTES]}/" -e "s/@NULL_GUARD_BYTES@/$guard/" \
    "$boards/cortex-m/link.ld.in" > "$tmp/link.ld"
LINK=("${cpu_flags[@]}" -Os --specs=picolibc.specs -nostartfiles
      -Wl,--gc-sections -Wl,--undefined=bf_bsp_vectors -Wl,--no-warn-rwx-segments)

# A source's own compile options (SRC.cflags): source_cflags SRC sets `extra`.
source "$boards/cflags.sh"

# The firmware id: everything that makes the image (no temporary paths, so it is reproducible).
firmware_id=$( (echo "firmware-v1 runtime=$runtime_key package=$package kind=$kind"
                echo "${COMMON[*]} ${LENIENT[*]} ${LINK[*]}"; cat "$tmp/link.ld"
                for src in "${image_sources[@]}"; do
                  echo "== $(basename "$src")"; cat "$src"
                  if [[ -f "$src.cflags" ]]; then echo "== cflags"; cat "$src.cflags"; fi
                done) |
               sha256sum | cut -c1-16)
cat > "$tmp/bf_firmware_id.c" <<EOF
/* Generated by crt/boards/build.sh: what benchfarm.DeviceInfo reports as this image. */
const char bf_bsp_firmware_hash[] = "$firmware_id";
const char bf_bsp_board_kind[] = BF_BOARD_KIND;
EOF

objects=()
i=0
for src in "${image_sources[@]}"; do
  obj="$tmp/src$i-$(basename "${src%.c}").o"
  source_cflags "$src"
  "$CC" "${COMMON[@]}" "${DEBUG[@]}" "${LENIENT[@]}" "${defines[@]}" "${includes[@]}" "${extra[@]}" \
    -c "$src" -o "$obj"
  objects+=("$obj")
  i=$((i + 1))
done
"$CC" "${COMMON[@]}" "${DEBUG[@]}" "${STRICT[@]}" "-DBF_BOARD_KIND=\"$kind\"" -c "$tmp/bf_firmware_id.c" -o "$tmp/bf_firmware_id.o"
objects+=("$tmp/bf_firmware_id.o")

"$CC" "${LINK[@]}" -T "$tmp/link.ld" -Wl,-Map="$tmp/image.map" "${objects[@]}" "$runtime" -o "$tmp/image.debug"
"$OBJCOPY" --strip-debug "$tmp/image.debug" "$tmp/image.elf"
"$OBJCOPY" -O binary "$tmp/image.elf" "$tmp/image.bin"
"$OBJCOPY" -O ihex "$tmp/image.elf" "$tmp/image.hex"
printf '%s' "$firmware_id" > "$tmp/image.hash"
timing="core=${conf[CYCLE_MODEL_CORE]}"
if [[ "${conf[FLASH_WAIT_STATES]:-0}" -gt 0 ]]; then
  timing+=" region=$(printf '0x%08x:0x%08x' $((conf[FLASH_ORIGIN])) $((conf[FLASH_LENGTH]))):${conf[FLASH_WAIT_STATES]}"
  [[ -z "${conf[FLASH_ACCELERATOR]:-}" ]] || timing+=":${conf[FLASH_ACCELERATOR]}"
fi
printf '%s\n' "$timing" > "$tmp/image.timing"
for ext in debug bin hex hash map timing; do mv -f "$tmp/image.$ext" "$out.$ext"; done
mv -f "$tmp/image.elf" "$out"

read -r text data bss _ <<< "$("$SIZE" -B "$out" | tail -1)"
printf 'firmware: %s package=%s kind=%s flash=%d/%d ram=%d/%d hash=%s\n' "$out" "$package" "$kind" \
  $((text + data)) $((conf[FLASH_LENGTH])) $((data + bss)) $((conf[RAM_LENGTH])) "$firmware_id"
