#!/usr/bin/env bash
# Builds Kiln and runs the whole test suite:
#   1. format check (clang-format) and, after the build, clang-tidy;
#   2. the main build (warnings are errors) and every ctest label:
#      unit, golden, cpu, e2e, python (the Python client's pytest suite), fuzz
#      (seed corpus replay) and gpu (skipped here
#      without a GPU, reported as skipped);
#   3. an ASan+UBSan build with clang running the libFuzzer targets for
#      KILN_FUZZ_SECONDS each (default 60) and the unit tests under sanitizers.
# Set KILN_TEST_QUICK=1 to skip step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=${KILN_JOBS:-2}

echo "== format check"
scripts/check_format.sh

echo "== build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build -j "$jobs"

echo "== clang-tidy"
scripts/check_tidy.sh build

echo "== tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)

if [ "${KILN_TEST_QUICK:-0}" != "1" ]; then
  echo "== sanitizers + fuzzing (clang, ASan+UBSan)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON -DKILN_BUILD_SERVER=OFF -DKILN_BUILD_BENCH=OFF \
    -DKILN_FUZZ_SECONDS="${KILN_FUZZ_SECONDS:-60}" > /dev/null
  cmake --build build-fuzz -j "$jobs"
  (cd build-fuzz && ctest --output-on-failure -j 1 -L 'unit|golden|fuzz' --timeout 900)
fi
echo "== all tests passed"
