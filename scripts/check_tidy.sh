#!/usr/bin/env bash
# Runs clang-tidy (config: .clang-tidy) on the project's C++ sources, using the
# compile commands of the build folder given as $1 (default build/).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
files=$(git ls-files 'compiler/*.cc' 'server/*.cc' 'util/*.cc' 'cache/*.cc' 'tuner/*.cc' 'clients/*.cc')
# shellcheck disable=SC2086
printf '%s\n' $files | xargs -P "${KILN_JOBS:-2}" -n 4 clang-tidy -p "$build" --quiet
