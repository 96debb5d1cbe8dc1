#!/usr/bin/env bash
# ctest deploy/bundle_h200_check_on_cpu: runs deploy/bundle_h200_check.sh,
# the script the GPU host runs, against a bundle tree made from the build
# folder, with the CPU as its device and the example's test size, so that
# the script itself is exercised on every CI run.
#   tests/deploy/h200_check_on_cpu.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$src/deploy/bundle.sh" --build-dir "$build" --tree "$tmp/kiln-bundle" > /dev/null
KILN_CHECK_TARGET=cpu KILN_CHECK_DEVICE=cpu KILN_CHECK_BINDS=test-bind KILN_CHECK_TRIALS=3 \
  bash "$src/deploy/bundle_h200_check.sh" "$tmp/kiln-bundle"
