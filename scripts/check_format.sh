#!/usr/bin/env bash
# Fails if any project C++ file is not clang-format clean.
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files '*.cc' '*.h' | grep -v '^tests/fuzz/corpus/' || true)
if [ -z "$files" ]; then exit 0; fi
# shellcheck disable=SC2086
clang-format --dry-run --Werror $files
