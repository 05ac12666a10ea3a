#!/usr/bin/env bash
# //tests:format_test: every C and C++ source of the repository is formatted as .clang-format
# says (Debian's clang-format-14; ./farm installs it) — the tree was formatted once and stays so.
# The sources: git's C/C++ files but third_party/ and crt/include/, crt/contrib/ (TVM's and
# dlpack's headers, kept as they are upstream); crt/ has its own .clang-format (its includes are
# never reordered). First it checks that the check fails on a misformatted file.
#
#   bash tests/format_test.sh --fix     (./farm format) formats them in place
set -euo pipefail
TEST_NAME=format_test
fail() { echo "$TEST_NAME: FAIL: $*" >&2; exit 1; }
command -v clang-format-14 >/dev/null ||
  fail "clang-format-14 is not installed (apt install clang-format-14; ./farm installs it)"
# The repository: under Bazel this script's runfile is a link to its source.
root="$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)"
[[ -f "$root/.clang-format" ]] || fail "no repository around $(readlink -f "${BASH_SOURCE[0]}")"
cd "$root"
if [[ -d .git ]] && command -v git >/dev/null; then
  mapfile -t files < <(git ls-files '*.cc' '*.h' '*.c')
else
  mapfile -t files < <(find . -path ./third_party -prune -o -path './bazel-*' -prune -o \
    \( -name '*.cc' -o -name '*.h' -o -name '*.c' \) -print | sed 's#^\./##')
fi
sources=()
for f in "${files[@]}"; do
  case "$f" in third_party/* | crt/include/* | crt/contrib/*) continue ;; esac
  sources+=("$f")
done
[[ ${#sources[@]} -gt 100 ]] || fail "found only ${#sources[@]} sources in $root"
if [[ "${1:-}" == "--fix" ]]; then
  clang-format-14 -i --style=file "${sources[@]}"
  echo "formatted ${#sources[@]} files" >&2
  exit 0
fi
# The check catches a misformatted file...
probe="$(mktemp -d "${TEST_TMPDIR:-/tmp}/format.XXXXXX")"
cp .clang-format "$probe/"
printf 'int  f( int x ){return x;}\n' >"$probe/bad.cc"
if clang-format-14 --dry-run --Werror --style=file "$probe/bad.cc" 2>/dev/null; then
  fail "clang-format-14 --dry-run --Werror accepted a misformatted file"
fi
rm -rf "$probe"
# ...and the tree has none.
if ! out="$(clang-format-14 --dry-run --Werror --style=file "${sources[@]}" 2>&1)"; then
  printf '%s\n' "$out" | head -40 >&2
  bad=$(printf '%s\n' "$out" | grep -oE '^[^: ]+\.(cc|h|c):' | sort -u | tr -d ':' | tr '\n' ' ')
  fail "not formatted as .clang-format says: $bad(./farm format fixes them)"
fi
echo "$TEST_NAME: ${#sources[@]} sources formatted as .clang-format says" >&2
