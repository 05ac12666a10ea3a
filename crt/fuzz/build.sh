#!/usr/bin/env bash
# Builds crt/'s libFuzzer targets with Debian's clang-14, AddressSanitizer and
# UndefinedBehaviorSanitizer (every finding aborts), outside Bazel: Bazel
# 4.2.3's default toolchain is gcc, which has no libFuzzer.
#
# usage: [TARGETS="unframer_fuzz ..."] [REPLAY=1] crt/fuzz/build.sh OUT_DIR
# Writes OUT_DIR/{unframer_fuzz,session_fuzz,rpc_server_fuzz} (or the TARGETS
# named; objects in OUT_DIR/obj). CC overrides the compiler (default clang-14).
# REPLAY=1 builds them without libFuzzer (default CC gcc), each linked with
# replay_main.c: it runs the inputs it is given once, under the sanitizers (the
# seed corpus replayed in ./farm test: corpus_replay_test.sh).
#
# crt sources are built with the fuzzer's coverage instrumentation and the
# same crt_config.h overrides for every object:
#   - the host platform's pool as the brief of this harness says: 4 MiB of
#     256-byte pages (the host-process board has 32 MiB; the fuzzer needs less);
#   - a time evaluator capped at 4 repeats and number 8, and sample operators
#     capped at 1024 elements per tensor, so the legitimately slow paths (an
#     evaluator asked for 1024 repeats of 2^31 calls, a conv2d over the whole
#     pool) stay far below the fuzzer's per-input timeout.
set -euo pipefail

out="${1:?usage: build.sh OUT_DIR}"
fuzz="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
crt="$(dirname "$fuzz")"
REPLAY="${REPLAY:-}"
if [[ -n "$REPLAY" ]]; then
  CC="${CC:-gcc}"
  INSTRUMENT=()
  DRIVER=("$fuzz/replay_main.c")
else
  CC="${CC:-clang-14}"
  INSTRUMENT=(-fsanitize=fuzzer-no-link)
  DRIVER=(-fsanitize=fuzzer)
fi

command -v "$CC" >/dev/null || { echo "fuzz: $CC not found (apt install clang-14)" >&2; exit 1; }
if [[ -z "$REPLAY" ]]; then
  resource_dir="$("$CC" -print-resource-dir)"
  if ! ls "$resource_dir"/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
    echo "fuzz: no libFuzzer runtime in $resource_dir (apt install libclang-rt-14-dev)" >&2
    exit 1
  fi
fi

mkdir -p "$out/obj"

SANITIZERS=("-fsanitize=address,undefined" -fno-sanitize-recover=all)
COMMON=(-g -O1 -fno-omit-frame-pointer "${SANITIZERS[@]}" -Wall -Wextra -Werror
        -std=c99 -D_GNU_SOURCE)
CONFIG=(
  "-DTVM_CRT_MEMORY_POOL_SIZE_BYTES=(4*1024*1024)"
  -DTVM_CRT_PAGE_BYTES=256
  -DCRT_TIME_EVALUATOR_MAX_REPEAT=4
  "-DCRT_TIME_EVALUATOR_MAX_NUMBER=((int64_t)8)"
  -DBF_OPS_MAX_TENSOR_ELEMENTS=1024
)
includes=(-I "$crt/include")
for dir in "$crt"/*/include; do
  [[ -d "$dir" ]] && includes+=(-I "$dir")
done

# Every crt source a target needs: the link, the MinRPC server, time
# evaluator, the data on the board (board_data, crt/data) and wire encodings
# (the harnesses use wire.h too), the runtime, random_fill, the pool, the
# sample operators with their system library, and the host platform.
sources=(
  link/crc16.c link/framing.c link/session.c
  rpc/rpc_server.c rpc/time_evaluator.c rpc/board_data.c rpc/wire.c
  data/data.c
  runtime/crt_runtime_api.c runtime/func_registry.c
  contrib/random_fill.c
  memory/page_allocator.c
  ops/op_args.c ops/reference.c ops/sample_ops.c ops/sample_system_lib.c
  host/platform.c
)

# rpc_server_fuzz wraps four host platform functions (see its opening comment):
# a fixed random byte and a fake timer, so inputs replay and never wait, and
# allocate/free, to poison pool memory outside live blocks.
declare -A LINK_EXTRA=(
  [unframer_fuzz]=""
  [session_fuzz]=""
  [rpc_server_fuzz]="-Wl,--wrap=TVMPlatformGenerateRandom,--wrap=TVMPlatformTimerStop,--wrap=TVMPlatformMemoryAllocate,--wrap=TVMPlatformMemoryFree"
)

read -r -a targets <<<"${TARGETS:-unframer_fuzz session_fuzz rpc_server_fuzz}"
for target in "${targets[@]}"; do
  [[ -n "${LINK_EXTRA[$target]+set}" ]] || { echo "fuzz: unknown target $target" >&2; exit 1; }
done

objects=()
for src in "${sources[@]}"; do
  obj="$out/obj/crt_$(echo "${src%.c}" | tr '/' '_').o"
  "$CC" "${COMMON[@]}" -pedantic "${INSTRUMENT[@]}" "${CONFIG[@]}" "${includes[@]}" \
    -c "$crt/$src" -o "$obj"
  objects+=("$obj")
done
rm -f "$out/obj/libcrt_fuzz.a"
ar rcs "$out/obj/libcrt_fuzz.a" "${objects[@]}"

for target in "${targets[@]}"; do
  # shellcheck disable=SC2086  # LINK_EXTRA holds zero or one word
  "$CC" "${COMMON[@]}" "${DRIVER[@]}" "${CONFIG[@]}" "${includes[@]}" \
    "$fuzz/$target.c" "$out/obj/libcrt_fuzz.a" ${LINK_EXTRA[$target]} -lm -o "$out/$target"
  echo "built $out/$target"
done
