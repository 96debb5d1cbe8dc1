#!/usr/bin/env bash
# Configures and builds the Release binaries in build-release/ (no tests, no
# benchmarks), with at most KILN_JOBS (default 2) parallel jobs:
#   scripts/build.sh [TARGET...]
# The default targets are the daemon, its GPU/CPU worker and the tools the
# README's examples use: kilnd kiln-worker kiln kiln-opt kiln-run.
# scripts/serve.sh and deploy/docker/Dockerfile build with it. Expects
# scripts/install_deps.sh to have run. KILN_BUILD_DIR overrides the folder.
# Warnings are not errors here (a user's compiler may warn where ours does
# not); KILN_WERROR=ON makes them errors, as scripts/test.sh does in CI.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${KILN_JOBS:-2}
build_dir=${KILN_BUILD_DIR:-build-release}
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then targets=(kilnd kiln-worker kiln kiln-opt kiln-run); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DKILN_WERROR="${KILN_WERROR:-OFF}" -DKILN_BUILD_TESTS=OFF -DKILN_BUILD_BENCH=OFF > /dev/null
cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
