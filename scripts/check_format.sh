#!/usr/bin/env bash
# Fails if any project C++ file is not clang-format clean, or if a tracked
# symbolic link points to an absolute path or out of the repository (a link
# to the build machine's own checkout breaks every other clone).
set -euo pipefail
cd "$(dirname "$0")/.."
bad_links=""
while IFS= read -r link; do
  [ -n "$link" ] || continue
  target=$(git cat-file -p ":$link")
  resolved=$(realpath -m "$(dirname "$link")/$target")
  case "$target" in
  /*) bad_links+="  $link -> $target (absolute)"$'\n' ;;
  *) case "$resolved" in
     "$PWD"/*) ;;
     *) bad_links+="  $link -> $target (outside the repository)"$'\n' ;;
     esac ;;
  esac
done < <(git ls-files -s | awk '$1 == "120000" { print $4 }')
if [ -n "$bad_links" ]; then
  echo "check_format: tracked symbolic links that only work on one machine:" >&2
  printf '%s' "$bad_links" >&2
  exit 1
fi
files=$(git ls-files '*.cc' '*.h' | grep -v '^tests/fuzz/corpus/' || true)
if [ -z "$files" ]; then exit 0; fi
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
