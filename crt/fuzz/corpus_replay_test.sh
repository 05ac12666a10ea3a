#!/usr/bin/env bash
# The short version of ./farm fuzz in ./farm test: every fuzz target built without libFuzzer by gcc
# with AddressSanitizer and UndefinedBehaviorSanitizer (build.sh REPLAY=1) and run once on each
# input of its seed corpus (corpus/<target>/), checking the contracts the harnesses check. Fails
# if a target no longer builds (a crt source it needs is missing from build.sh) or an input aborts.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${TEST_TMPDIR:-$(mktemp -d)}/replay"
REPLAY=1 bash "$here/build.sh" "$out" >"$out.log" 2>&1 || { cat "$out.log" >&2; echo "FAIL: build" >&2; exit 1; }
for target in unframer_fuzz session_fuzz rpc_server_fuzz; do
  corpus="$here/corpus/$target"
  want=$(find -L "$corpus" -type f | wc -l)
  got=$("$out/$target" "$corpus" | sed -nE 's/^replayed ([0-9]+) inputs$/\1/p') ||
    { echo "FAIL: $target aborted on its corpus" >&2; exit 1; }
  [[ "$got" == "$want" && "$want" -gt 0 ]] || { echo "FAIL: $target replayed '$got' of $want inputs" >&2; exit 1; }
  echo "$target: $got inputs replayed"
done
echo PASS
