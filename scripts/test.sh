#!/usr/bin/env bash
# Builds Kiln and runs the whole test suite:
#   1. format check (clang-format) and, after the build, clang-tidy;
#   2. the main build (warnings are errors) and every ctest label:
#      unit, golden, cpu, e2e, python (the Python client's pytest suite), fuzz
#      (seed corpus replay) and gpu (skipped here
#      without a GPU, reported as skipped);
#   3. the README's first command end to end (scripts/check_serve.sh: serve.sh's
#      Release build in build-release/ with warnings as errors, kilnd started,
#      kiln health, compiles, SIGTERM, and the Dockerfile's bundle step);
#   4. an ASan+UBSan build with clang running the libFuzzer targets for
#      KILN_FUZZ_SECONDS each (default 60) and the unit tests under sanitizers.
# Set KILN_TEST_QUICK=1 to skip step 4.
#
# build/ and build-fuzz/ exist only for testing, so they trade debug info for
# build time: -g1 (function names and line tables in backtraces, no variable
# info) in the main build and -gline-tables-only in the sanitizer build. The
# main build's test binaries build at -O0 (tests/CMakeLists.txt); the sanitizer
# build's at the libraries' -O1, because an inline function the tests and the
# libraries share (a deep IR copy, say) is linked from one of them, and at -O0
# under ASan its frames are large enough to overflow the stack on the deep
# expressions the IR tests build on purpose. CI runs this on
# two cores within a 90-minute limit; each stage prints its elapsed time.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
jobs=${KILN_JOBS:-2}

stage_start=$SECONDS
stage() {
  if [ -n "${stage_name:-}" ]; then
    echo "== ${stage_name}: $((SECONDS - stage_start)) s"
  fi
  stage_name=$1
  stage_start=$SECONDS
  [ -z "$1" ] || echo "== $1"
}

stage "format check"
scripts/check_format.sh

stage "build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" > /dev/null
cmake --build build -j "$jobs"

stage "clang-tidy"
scripts/check_tidy.sh build

stage "tests"
(cd build && ctest --output-on-failure -j "$jobs" --timeout 600)

stage "README's first command (scripts/check_serve.sh)"
scripts/check_serve.sh

if [ "${KILN_TEST_QUICK:-0}" != "1" ]; then
  stage "sanitizer build (clang, ASan+UBSan)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_WERROR=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DKILN_TEST_CXX_FLAGS= -DKILN_FUZZ=ON -DKILN_BUILD_SERVER=OFF -DKILN_BUILD_BENCH=OFF \
    -DKILN_FUZZ_SECONDS="${KILN_FUZZ_SECONDS:-60}" > /dev/null
  cmake --build build-fuzz -j "$jobs"
  stage "fuzzing + unit tests under sanitizers"
  (cd build-fuzz && ctest --output-on-failure -j "$jobs" -L 'unit|golden|fuzz' --timeout 900)
fi
stage ""
echo "== all tests passed in $((SECONDS / 60)) min $((SECONDS % 60)) s"
