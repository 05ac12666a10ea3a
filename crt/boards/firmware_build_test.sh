#!/usr/bin/env bash
# crt/boards/build.sh, for every package with a board.conf:
#   - builds the firmware with the sample operators: IMAGE, IMAGE.bin/.hex/.hash exist, the one
#     summary line has the package, kind, sizes within the part and the firmware id, which is 16
#     hex digits, equals IMAGE.hash and is embedded in the image;
#   - the id is reproducible (a second build into another cache: same id, same .bin) and covers
#     the kind (another --kind: another id);
#   - the agent's interface: --sources DIR with a system library of its own, a source's own
#     compile options beside it (X.c.cflags: in the id; a plugin refused), the debug information
#     in IMAGE.debug and not in IMAGE;
#   - the image boots under the package's QEMU machine and sends
#     the boot signature FE FF FD 03 00 00 00 00 00 02 66 77 on its UART.
# And: an image past flash (a referenced 8 MiB constant) and one past RAM fail the link with the
# linker's "region `FLASH' overflowed" / "region `RAM' overflowed".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
crt="$(cd "$here/.." && pwd)"
tmp="${TEST_TMPDIR:-$(mktemp -d)}/firmware"
rm -rf "$tmp"
mkdir -p "$tmp/cache"
fail() { echo "FAIL: $*" >&2; exit 1; }

packages=()
for conf in "$here"/*/board.conf; do packages+=("$(basename "$(dirname "$conf")")"); done
[[ ${#packages[@]} -ge 2 ]] || fail "expected at least two packages, found ${packages[*]:-none}"

# A system library of the test's own: the sample ops' first entry and a function reading a
# constant, so the constant is linked (the firmware uses --gc-sections).
make_lib() { # DIR DECLARATION
  mkdir -p "$1"
  cat > "$1/lib.c" <<EOF
#include <benchfarm/ops/sample_ops.h>
#include <tvm/runtime/c_backend_api.h>
#include <tvm/runtime/crt/func_registry.h>
#include <tvm/runtime/crt/module.h>
$2
static int Touch(TVMValue* args, int* codes, int n, TVMValue* ret, int* ret_code, void* h) {
  (void)args; (void)codes; (void)n; (void)h;
  ret->v_int64 = bf_blob[1];
  *ret_code = kDLInt;
  return 0;
}
static const TVMBackendPackedCFunc kFuncs[] = {bf_ops_add, Touch};
static const TVMFuncRegistry kRegistry = {"\\x02\\x00" "add\\0" "touch\\0", kFuncs};
static const TVMModule kModule = {&kRegistry};
const TVMModule* TVMSystemLibEntryPoint(void) { return &kModule; }
EOF
}

for pkg in "${packages[@]}"; do
  conf="$here/$pkg/board.conf"
  flash_len=$(( $(sed -n 's/^FLASH_LENGTH=//p' "$conf") ))
  ram_len=$(( $(sed -n 's/^RAM_LENGTH=//p' "$conf") ))
  machine="$(sed -n 's/^QEMU_MACHINE=//p' "$conf")"
  serial_index="$(sed -n 's/^QEMU_SERIAL_INDEX=//p' "$conf")"
  img="$tmp/$pkg/firmware.elf"
  line="$("$here/build.sh" --package "$pkg" --out "$img" --cache "$tmp/cache" --crt "$crt")" ||
    fail "$pkg: build failed"
  echo "$line"
  [[ "$(printf '%s\n' "$line" | wc -l)" -eq 1 ]] || fail "$pkg: expected one summary line"
  re="^firmware: $img package=$pkg kind=$pkg flash=([0-9]+)/([0-9]+) ram=([0-9]+)/([0-9]+) hash=([0-9a-f]{16})$"
  [[ "$line" =~ $re ]] || fail "$pkg: summary line does not match: $line"
  flash_used=${BASH_REMATCH[1]} flash_size=${BASH_REMATCH[2]}
  ram_used=${BASH_REMATCH[3]} ram_size=${BASH_REMATCH[4]} id=${BASH_REMATCH[5]}
  [[ "$flash_size" -eq "$flash_len" && "$ram_size" -eq "$ram_len" ]] || fail "$pkg: sizes not the part's"
  [[ "$flash_used" -gt 4096 && "$flash_used" -le "$flash_size" ]] || fail "$pkg: flash used $flash_used"
  [[ "$ram_used" -gt 4096 && "$ram_used" -le "$ram_size" ]] || fail "$pkg: ram used $ram_used"
  for ext in bin hex hash; do [[ -s "$img.$ext" ]] || fail "$pkg: no $img.$ext"; done
  [[ "$(cat "$img.hash")" == "$id" ]] || fail "$pkg: $img.hash is not $id"
  grep -q ':00000001FF' "$img.hex" || fail "$pkg: $img.hex has no Intel HEX end record"
  grep -qa "$id" "$img.bin" || fail "$pkg: the firmware id is not in the image"
  arm-none-eabi-readelf -h "$img" | grep -q 'Machine:.*ARM' || fail "$pkg: $img is not an ARM ELF"

  # Reproducible, and the kind is part of the id.
  again="$("$here/build.sh" --package "$pkg" --out "$tmp/$pkg/again.elf" --cache "$tmp/cache2-$pkg")"
  [[ "$again" == *"hash=$id" ]] || fail "$pkg: a second build has another id: $again"
  cmp -s "$img.bin" "$tmp/$pkg/again.elf.bin" || fail "$pkg: a second build has other bytes"
  other="$("$here/build.sh" --package "$pkg" --kind "qemu-test-$pkg" --out "$tmp/$pkg/kind.elf" --cache "$tmp/cache")"
  [[ "$other" == *" kind=qemu-test-$pkg "* && "$other" != *"hash=$id" ]] || fail "$pkg: --kind: $other"

  # The agent's interface: its own system library from --sources.
  make_lib "$tmp/$pkg/lib" 'static const volatile unsigned char bf_blob[4] = {1, 2, 3, 4};'
  lib_line="$("$here/build.sh" --package "$pkg" --sources "$tmp/$pkg/lib" --out "$tmp/$pkg/lib.elf" \
    --cache "$tmp/cache")" || fail "$pkg: --sources build failed"

  # Debug information beside the image, not in it; the flashed bytes are those of a build without.
  arm-none-eabi-readelf -S "$tmp/$pkg/lib.elf.debug" | grep -q '\.debug_line' || fail "$pkg: IMAGE.debug has no line table"
  if arm-none-eabi-readelf -S "$tmp/$pkg/lib.elf" | grep -q '\.debug_'; then fail "$pkg: the image keeps debug sections"; fi
  # A source's own options (lib.c.cflags): part of the id, given to its compile; one outside the
  # allow-list refused.
  cp -r "$tmp/$pkg/lib" "$tmp/$pkg/opt" && printf -- '-O3\n-funroll-loops\n' > "$tmp/$pkg/opt/lib.c.cflags"
  opt_line="$("$here/build.sh" --package "$pkg" --sources "$tmp/$pkg/opt" --out "$tmp/$pkg/opt.elf" \
    --cache "$tmp/cache")" || fail "$pkg: a build with lib.c.cflags failed"
  [[ "${opt_line##*hash=}" != "${lib_line##*hash=}" ]] || fail "$pkg: lib.c.cflags did not change the id"
  printf -- '-O2\n-fplugin=evil.so\n' > "$tmp/$pkg/opt/lib.c.cflags"
  if out="$("$here/build.sh" --package "$pkg" --sources "$tmp/$pkg/opt" --out "$tmp/$pkg/bad.elf" \
              --cache "$tmp/cache" 2>&1)"; then
    fail "$pkg: a plugin in lib.c.cflags was taken"
  fi
  [[ "$out" == *"lib.c.cflags: '-fplugin=evil.so' is not a compile option benchfarm takes"* ]] || fail "$pkg: $out"

  # Too big for flash, too big for RAM: the linker says so, the build fails.
  make_lib "$tmp/$pkg/big" 'static const volatile unsigned char bf_blob[8 * 1024 * 1024] = {1};'
  if out="$("$here/build.sh" --package "$pkg" --sources "$tmp/$pkg/big" --out "$tmp/$pkg/big.elf" \
              --cache "$tmp/cache" 2>&1)"; then
    fail "$pkg: an 8 MiB constant linked"
  fi
  [[ "$out" == *"region \`FLASH' overflowed"* ]] || fail "$pkg: no flash overflow message: $out"
  [[ ! -e "$tmp/$pkg/big.elf" ]] || fail "$pkg: a failed build left an image"
  make_lib "$tmp/$pkg/ram" 'static volatile unsigned char bf_blob[8 * 1024 * 1024];'
  if out="$("$here/build.sh" --package "$pkg" --sources "$tmp/$pkg/ram" --out "$tmp/$pkg/ram.elf" \
              --cache "$tmp/cache" 2>&1)"; then
    fail "$pkg: an 8 MiB array linked"
  fi
  [[ "$out" == *"region \`RAM' overflowed"* ]] || fail "$pkg: no RAM overflow message: $out"

  # Boot under QEMU: the boot signature on the first serial port. ./farm installs qemu-system-arm;
  # its absence is a failure, not a skip.
  command -v qemu-system-arm >/dev/null || fail "qemu-system-arm is not installed (./farm install)"
  if [[ -n "$machine" ]]; then
    serial="$tmp/$pkg/serial.out"
    ports=()
    for ((i = 0; i < ${serial_index:-0}; i++)); do ports+=(-serial null); done
    timeout 2 qemu-system-arm -M "$machine" -display none -monitor none -nodefaults \
      "${ports[@]}" -serial "file:$serial" -kernel "$img" >/dev/null 2>&1 || true
    boot="$(head -c 12 "$serial" | od -An -tx1 | tr -d ' \n')"
    [[ "$boot" == "fefffd030000000000026677" ]] || fail "$pkg: QEMU $machine: boot bytes '$boot'"
    echo "  boots under qemu-system-arm -M $machine: fe ff fd 03 00 00 00 00 00 02 66 77"
  else
    echo "  (no QEMU machine for $pkg: boot not checked)"
  fi
done

# Bad arguments are refused.
if "$here/build.sh" --package no-such-board --out "$tmp/x.elf" 2>/dev/null; then fail "unknown package built"; fi
if "$here/build.sh" --package "${packages[0]}" --kind 'bad kind' --out "$tmp/x.elf" 2>/dev/null; then
  fail "a kind with a space was accepted"
fi
echo "PASS: ${#packages[@]} packages (${packages[*]})"
