#!/usr/bin/env bash
# Runs the RUN: lines of one golden file, lit-style.
#   usage: run_golden.sh FILE KILN_OPT FILECHECK
# In RUN lines, %s is FILE, kiln-opt and FileCheck are the tools given.
# A RUN line may be continued with a trailing backslash. Each RUN line runs
# under `bash -o pipefail`; the test fails on the first failing line.
set -euo pipefail
file=$1 opt=$2 filecheck=$3
mapfile -t lines < <(grep -E '(#|//) *RUN:' "$file" | sed -E 's/^.*RUN: ?//')
if [ ${#lines[@]} -eq 0 ]; then
  echo "$file: no RUN: lines" >&2
  exit 1
fi
cmd=""
for line in "${lines[@]}"; do
  if [[ "$line" == *'\' ]]; then
    cmd+="${line%\\} "
    continue
  fi
  cmd+="$line"
  cmd=${cmd//%s/$file}
  cmd=$(printf '%s' "$cmd" | sed -E "s#(^|[ |])kiln-opt #\1$opt #g; s#(^|[ |])FileCheck #\1$filecheck #g; s#(^|[ |])not #\1! #g")
  echo "RUN: $cmd"
  if ! bash -o pipefail -c "$cmd"; then
    echo "FAILED: $file" >&2
    exit 1
  fi
  cmd=""
done
