#!/usr/bin/env bash
# Runs the RUN: lines of one golden file, lit-style.
#   usage: run_golden.sh FILE KILN_OPT FILECHECK
# In RUN lines, %s is FILE, %t a scratch path prefix (removed afterwards), kiln-opt and FileCheck are the tools given (split-file is
# FileCheck's sibling), and
# `not CMD` succeeds when CMD fails with an ordinary error (exit 1..127; a
# crash by signal still fails the test), like LLVM's `not`.
# A RUN line may be continued with a trailing backslash. Each RUN line runs
# under `bash -o pipefail`; the test fails on the first failing line.
set -euo pipefail
file=$1 opt=$2 filecheck=$3
splitfile="$(dirname "$filecheck")/split-file"
mapfile -t lines < <(grep -E '(#|//) *RUN:' "$file" | sed -E 's/^.*RUN: ?//')
if [ ${#lines[@]} -eq 0 ]; then
  echo "$file: no RUN: lines" >&2
  exit 1
fi
tmpdir=$(mktemp -d)
trap 'rm -rf "$tmpdir"' EXIT
cmd=""
for line in "${lines[@]}"; do
  if [[ "$line" == *'\' ]]; then
    cmd+="${line%\\} "
    continue
  fi
  cmd+="$line"
  cmd=${cmd//%s/$file}
  cmd=${cmd//%t/$tmpdir/t}
  cmd=$(printf '%s' "$cmd" | sed -E "s#(^|[ |])kiln-opt #\1$opt #g; s#(^|[ |])FileCheck #\1$filecheck #g; s#(^|[ |])split-file #\1$splitfile #g")
  echo "RUN: $cmd"
  prelude='not() { "$@"; local rc=$?; [ $rc -ge 1 ] && [ $rc -lt 128 ]; }; '
  if ! bash -o pipefail -c "$prelude$cmd"; then
    echo "FAILED: $file" >&2
    exit 1
  fi
  cmd=""
done
