#!/usr/bin/env bash
# Copies Kiln binaries and their non-system shared libraries into a folder
# that a machine without gRPC/protobuf/Abseil (the GPU test machine) can run
# from: `DIR/bin/kiln-opt ...` (each file's RUNPATH finds DIR/lib, so
# LD_LIBRARY_PATH=DIR/lib is no longer needed, and harmless). libc, libm,
# libgcc_s, libstdc++ and the dynamic loader are left to the host (newer
# glibc and libstdc++ run binaries built against older ones); the CUDA
# libraries are loaded at run time with dlopen and come from the host too.
#   scripts/device_bundle.sh OUT_DIR BINARY...
# The work is deploy/bundle.sh's (--tree OUT_DIR --binary BINARY...), which
# also makes the release tarball of kilnd, kiln-worker and kiln.
set -euo pipefail
out=$1
shift
args=()
for bin in "$@"; do args+=(--binary "$bin"); done
exec "$(dirname "$0")/../deploy/bundle.sh" --tree "$out" "${args[@]}"
