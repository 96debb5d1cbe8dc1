#!/usr/bin/env bash
# Runs clang-tidy (config: .clang-tidy) on the project's C++ sources, using the
# compile commands of a build folder.
#
#   scripts/check_tidy.sh [--all [--record]] [--list] [BUILD_DIR]   (default: build)
#
# clang-tidy 14 matches its checks over every header a file pulls in (gRPC and
# protobuf included): a full run over the ~160 library files takes about 30
# minutes on two cores. So by default it checks only what can have changed since
# the last full run that passed. .ci/tidy_baseline lists the git blob id of every
# C++ source, header and .proto (and .clang-tidy) as they were at that run; a
# library file is checked when its own source, or any file it includes (from the
# build's dependency records, `ninja -t deps`; a generated message header stands
# for its .proto), differs from that list, committed or not. Blob ids, not a
# commit, so that a shallow clone needs no history. Everything is checked when
# the list is missing, when .clang-tidy changed, or when the build has no
# dependency records.
#
#   --list     print the files it would check, and stop
#   --all      check every file
#   --record   after a clean run, rewrite .ci/tidy_baseline from the checked
#              tree (commit it to make the next runs short). Also after an
#              incremental run: a file it did not check is unchanged, and so
#              are its includes, since the last full run that passed.
set -euo pipefail
cd "$(dirname "$0")/.."
all=0
list=0
record=0
while [ $# -gt 0 ]; do
  case "$1" in
    --all) all=1 ;;
    --list) list=1 ;;
    --record) record=1 ;;
    -*) echo "check_tidy: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
build=${1:-build}
baseline=.ci/tidy_baseline
patterns=('*.h' '*.cc' '*.proto' '*.cuh' '*.inc' '.clang-tidy')
files=$(git ls-files 'compiler/*.cc' 'server/*.cc' 'util/*.cc' 'cache/*.cc' 'tuner/*.cc' 'clients/*.cc')
nfiles=$(printf '%s\n' $files | wc -l)

if [ $record -eq 1 ]; then
  if [ $list -eq 1 ]; then
    echo "check_tidy: --record and --list exclude each other" >&2
    exit 2
  fi
  if ! git diff --quiet -- "${patterns[@]}" ||
     [ -n "$(git ls-files --others --exclude-standard -- "${patterns[@]}")" ]; then
    echo "check_tidy: --record needs the C++ files committed or staged (the list is of blob ids)" >&2
    exit 2
  fi
fi

# "<blob id> <path>" for each tracked file of the patterns, as staged.
blobs() { git ls-files -s -- "${patterns[@]}" | awk -F '\t' '{ split($1, a, " "); print a[2] " " $2 }'; }

reason=""
if [ $all -eq 1 ]; then
  reason="--all"
elif [ ! -s "$baseline" ]; then
  reason="no ${baseline}"
else
  # Files that differ from the list: changed or new in the index, edited in the
  # work tree, or untracked.
  changed=$( (blobs | grep -vxFf <(grep -v '^#' "$baseline") | cut -d' ' -f2-
              git diff --name-only
              git ls-files --others --exclude-standard) | sort -u)
  if grep -qxF '.clang-tidy' <<< "$changed"; then
    reason=".clang-tidy changed since the last full run"
  elif ! deps=$(ninja -C "$build" -t deps 2>/dev/null) || [ -z "$deps" ]; then
    reason="no dependency records in ${build} (build it first)"
  fi
fi

if [ -n "$reason" ]; then
  selected=$files
  echo "check_tidy: all ${nfiles} files (${reason})" >&2
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
  # A changed source the build has no record of (new since the last build) too.
  for f in $files; do
    if grep -qxF "$f" <<< "$changed"; then selected=$(printf '%s\n%s' "$selected" "$f"); fi
  done
  selected=$(printf '%s\n' "$selected" | grep -v '^$' | sort -u || true)
  echo "check_tidy: $(printf '%s\n' "$selected" | grep -c . || true) of ${nfiles} files" \
       "(changed since the last full run, or including a file that did)" >&2
fi

if [ $list -eq 1 ]; then
  [ -z "$selected" ] || printf '%s\n' $selected
  exit 0
fi
if [ -n "$selected" ]; then
  # shellcheck disable=SC2086
  printf '%s\n' $selected | xargs -P "${KILN_JOBS:-2}" -n 4 clang-tidy -p "$build" --quiet
fi
if [ $record -eq 1 ]; then
  { echo "# clang-tidy passed on every library file with these files (blob id, path):"
    echo "# scripts/check_tidy.sh $([ $all -eq 1 ] && echo '--all ')--record, $(date -u +%Y-%m-%d)," \
      "at $(git rev-parse --short HEAD)"
    blobs; } > "$baseline"
  echo "check_tidy: wrote ${baseline}" >&2
fi
