# Sourced by the benchmarks' smoke tests: `source "$(dirname "$0")/smoke_lib.sh"`.

# fail MESSAGE...: says FAIL and ends the test.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# run OUT BIN ARGS...: runs the bench, its output shown and kept in OUT; it must exit 0.
run() {
  local out="$1"
  shift
  "$@" 2>&1 | tee "$out" || fail "$* exited non-zero"
}

# has_figure LINE NAME: the table row LINE holds a figure in every column ("-" is a figure not
# taken).
has_figure() {
  if [[ "$1" == *" - "* || "$1" == *" -" ]]; then
    fail "row '$2' has no figure: $1"
  fi
}
