#!/usr/bin/env bash
# Configures and builds the Release binaries in build-release/ (no tests, no
# benchmarks), with at most KILN_JOBS (default 2) parallel jobs:
#   scripts/build.sh [TARGET...]      (default target: kilnd)
# scripts/serve.sh builds kilnd with it; deploy/docker/Dockerfile builds
# kilnd, kiln-worker and kiln with it. Expects scripts/install_deps.sh to
# have run. KILN_BUILD_DIR overrides the folder.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KILN_JOBS:-2}
build_dir=${KILN_BUILD_DIR:-build-release}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(kilnd); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF > /dev/null
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
