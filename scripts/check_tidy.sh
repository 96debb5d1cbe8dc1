#!/usr/bin/env bash
# Runs clang-tidy (config: .clang-tidy) on the project's C++ sources, using the
# compile commands of a build folder.
#
#   scripts/check_tidy.sh [--all] [BUILD_DIR]      (BUILD_DIR default: build)
#
# clang-tidy 14 matches its checks over every header a file pulls in (gRPC and
# protobuf included): a full run over the ~160 library files takes about 30
# minutes on two cores. So by default it checks only what can have changed since
# the commit named in .ci/tidy_baseline, at which a full run passed: every file
# whose own source, or any project header it includes (from the build's
# dependency records, `ninja -t deps`; a generated message header stands for its
# .proto), differs from that commit, committed or not. It falls back to
# checking everything when the baseline commit is not in this clone's history,
# when the build has no dependency records, or when .clang-tidy changed.
#
# --all checks every file; after a clean --all run, write `git rev-parse HEAD`
# into .ci/tidy_baseline (and commit it) to make the next runs short.
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
if [ "${1:-}" = "--all" ]; then
  all=1
  shift
fi
build=${1:-build}
files=$(git ls-files 'compiler/*.cc' 'server/*.cc' 'util/*.cc' 'cache/*.cc' 'tuner/*.cc' 'clients/*.cc')

reason=""
base=""
if [ $all -eq 1 ]; then
  reason="--all"
elif [ ! -s .ci/tidy_baseline ]; then
  reason="no .ci/tidy_baseline"
else
  base=$(tr -d '[:space:]' < .ci/tidy_baseline)
  if ! git cat-file -e "${base}^{commit}" 2>/dev/null; then
    reason="baseline ${base} is not in this clone's history"
  fi
fi

if [ -z "$reason" ]; then
  # Files that differ from the baseline: committed since, staged, or edited.
  changed=$( (git diff --name-only "$base" --; git ls-files --others --exclude-standard) | sort -u)
  if printf '%s\n' "$changed" | grep -qxE '\.clang-tidy'; then
    reason=".clang-tidy changed since ${base}"
  elif ! deps=$(ninja -C "$build" -t deps 2>/dev/null) || [ -z "$deps" ]; then
    reason="no dependency records in ${build} (build it first)"
  fi
fi

if [ -n "$reason" ]; then
  selected=$files
  echo "check_tidy: all $(printf '%s\n' $files | wc -l) files (${reason})"
else
  root=$(pwd)
  # For each object in the deps listing, its dependencies follow it, indented;
  # a source is selected when it or any project file it depends on changed.
  selected=$(printf '%s\n' "$deps" | awk -v root="$root/" -v changed="$changed" -v files="$files" '
    BEGIN {
      n = split(changed, c, "\n"); for (i = 1; i <= n; i++) if (c[i] != "") is_changed[c[i]] = 1
      n = split(files, f, "\n"); for (i = 1; i <= n; i++) if (f[i] != "") is_file[f[i]] = 1
    }
    /^[^ \t]/ { src = ""; hit = 0; next }
    {
      dep = $1
      if (index(dep, root) == 1) dep = substr(dep, length(root) + 1)
      if (src == "" && (dep in is_file)) src = dep
      if (dep in is_changed) hit = 1
      # Generated message headers stand for their .proto.
      if (match(dep, /gen\/kiln\/v1\/[a-z_]+\./)) {
        name = substr(dep, RSTART + 12, RLENGTH - 13)
        if (("proto/kiln/v1/" name ".proto") in is_changed) hit = 1
      }
      if (src != "" && hit && !(src in done)) { print src; done[src] = 1 }
    }')
  # A source the build has no record of (new since the last build) is checked too.
  for f in $files; do
    if printf '%s\n' "$changed" | grep -qxF "$f"; then selected=$(printf '%s\n%s' "$selected" "$f"); fi
  done
  selected=$(printf '%s\n' "$selected" | grep -v '^$' | sort -u || true)
  echo "check_tidy: $(printf '%s\n' "$selected" | grep -c . || true) of $(printf '%s\n' $files | wc -l)" \
       "files (changed since ${base:0:12}, or including a header that did)"
fi

if [ -z "$selected" ]; then exit 0; fi
# shellcheck disable=SC2086
printf '%s\n' $selected | xargs -P "${KILN_JOBS:-2}" -n 4 clang-tidy -p "$build" --quiet
