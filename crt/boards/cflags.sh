# Sourced by crt/boards/build.sh and agent/templates/host-process/build: the compile options of one
# source of an image, from the file SRC.cflags beside it (one option a line; the agent writes it
# for a candidate with compile options, agent/firmware.h). Each is checked once more — only -O, -f
# and -m options of letters, digits and _ . + : = - (no path, no plugin, no profile): the agent's
# allow-list is catalog/cflags.h — and the compile puts them after its own flags, so -O3 there
# overrides the template's -O2 or -Os.

# source_cflags SRC: sets the array `extra` to SRC's options (empty without SRC.cflags); exits 2
# naming the option it refuses.
source_cflags() {
  extra=()
  [[ -f "$1.cflags" ]] || return 0
  local flag
  while IFS= read -r flag || [[ -n "$flag" ]]; do
    [[ -n "$flag" ]] || continue
    [[ "$flag" =~ ^-[Ofm][A-Za-z0-9_.+:=-]*$ && "$flag" != -fplugin* && "$flag" != -fprofile* ]] || {
      echo "build: $(basename "$1").cflags: '$flag' is not a compile option benchfarm takes" >&2
      exit 2
    }
    extra+=("$flag")
  done <"$1.cflags"
}
