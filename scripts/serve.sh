#!/usr/bin/env bash
# Builds kilnd, kiln-worker and the kiln, kiln-opt and kiln-run tools
# (Release, in build-release/) and starts kilnd with the embedded defaults: listening
# on 127.0.0.1:7070, local cache in ~/.cache/kiln, CPU-only without a GPU.
# Extra arguments go to kilnd, as --flag value or --flag=value, e.g.
#   scripts/serve.sh --listen 0.0.0.0:7070 --cache-dir /var/cache/kiln \
#     --metrics-listen 0.0.0.0:9090 --config docs/kilnd.example.yaml
# (build-release/kilnd --help lists every flag; docs/operations.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
KILN_BUILD_DIR=build-release scripts/build.sh
exec build-release/kilnd "$@"
