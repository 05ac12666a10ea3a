#!/usr/bin/env bash
# Bazel's workspace status command (.bazelrc: --workspace_status_command): the version and source
# commit the binaries say they are (--version, benchfarm_build_info on /metrics), as STABLE_ keys,
# so a stamped action (//base:build_stamp) runs again when, and only when, one of them changes.
#
#   STABLE_BENCHFARM_VERSION  the VERSION file at the workspace root
#   STABLE_BENCHFARM_COMMIT   the checked-out commit (12 hex digits), "-dirty" when tracked files
#                             differ from it; "unknown" outside a git checkout or without git
# Bazel runs it in the workspace root; it never fails the build.
version="$(tr -d '[:space:]' <VERSION 2>/dev/null || true)"
commit="$(git rev-parse --short=12 HEAD 2>/dev/null || true)"
if [[ -n "$commit" ]] && ! git diff-index --quiet HEAD -- 2>/dev/null; then
  commit="$commit-dirty"
fi
echo "STABLE_BENCHFARM_VERSION ${version:-unknown}"
echo "STABLE_BENCHFARM_COMMIT ${commit:-unknown}"
