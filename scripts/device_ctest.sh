#!/usr/bin/env bash
# Runs this build's `ctest -L gpu` on a GPU machine that has no Kiln build
# dependencies (no gRPC, protobuf, Abseil or SQLite), from a packed tree.
#
#   scripts/device_ctest.sh pack [BUILD_DIR] [PACK]     here, after a build
#   scripts/device_ctest.sh run  [PACK] [CTEST ARGS...] on the GPU machine
#
# pack: every executable that a gpu-labelled test runs (read from
# `ctest --show-only=json-v1`), plus kilnd, kiln-worker, kiln, kiln-opt, kiln-run and kiln-gemm-launch,
# goes through scripts/device_bundle.sh (stripped, RUNPATH $ORIGIN/../lib,
# non-system libraries beside them); the build's CTestTestfile.cmake files go
# with them, and gtest_discover_tests' lists of each binary's tests. PACK defaults to build-pack/gpu_ctest.tar.xz.
# run: unpacks PACK next to the checkout, recreates the build folder's paths
# (the test files name absolute paths under the build folder of the machine
# that packed them, so that folder is made to exist here as a link to this
# checkout when it does not) with links to the bundled executables, and runs
# `ctest -L gpu` there (with TileLang's examples, packed from beside the
# packing checkout, and an interpreter with numpy). Exit status: ctest's.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: device_ctest.sh pack|run ...}
shift

if [ "$mode" = pack ]; then
  build=$(cd "${1:-$root/build}" && pwd)
  pack=${2:-$root/build-pack/gpu_ctest.tar.xz}
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  # The executables the gpu tests name, by their absolute paths in the build.
  mapfile -t bins < <(cd "$build" && ctest -L gpu --show-only=json-v1 |
    python3 -c '
import json, os, re, sys
build = sys.argv[1]
seen = set()
for test in json.load(sys.stdin)["tests"]:
    for word in test.get("command", []):
        for path in re.findall(re.escape(build) + r"/[\w/.+-]+", word):
            if os.path.isfile(path) and os.access(path, os.X_OK) and path not in seen:
                seen.add(path)
                print(path)
' "$build")
  for extra in kilnd kiln-worker kiln kiln-opt kiln-run kiln-gemm-launch; do
    [ -x "$build/$extra" ] && bins+=("$build/$extra")
  done
  mapfile -t bins < <(printf '%s\n' "${bins[@]}" | sort -u)
  "$root/scripts/device_bundle.sh" "$stage/gpu_ctest/bundle" "${bins[@]}" >/dev/null
  # Where each executable lived in the build, so `run` can link it back.
  for bin in "${bins[@]}"; do
    echo "${bin#"$build"/} $(basename "$bin")"
  done >"$stage/gpu_ctest/executables"
  echo "$build" >"$stage/gpu_ctest/build_dir"
  # TileLang's examples, which some gpu tests compile, sit beside the checkout.
  examples=$(sed -n 's/^KILN_TILELANG_EXAMPLES:PATH=//p' "$build/CMakeCache.txt")
  if [ -n "$examples" ] && [ -d "$examples" ]; then
    echo "$examples" >"$stage/gpu_ctest/examples_dir"
    tar -C "$examples" -cf "$stage/gpu_ctest/examples.tar" .
  fi
  # gtest_discover_tests adds each binary's <name>[1]_include.cmake and
  # <name>[1]_tests.cmake beside the CTestTestfile.cmake that includes them.
  (cd "$build" && find . \( -name CTestTestfile.cmake -o -name '*\[1\]_include.cmake' \
    -o -name '*\[1\]_tests.cmake' \) -print0 |
    tar --null -T - -cf "$stage/gpu_ctest/ctest_files.tar")
  mkdir -p "$(dirname "$pack")"
  tar -C "$stage" -cJf "$pack" gpu_ctest
  echo "packed ${#bins[@]} executables and the test files of $build into $pack" \
    "($(du -h "$pack" | cut -f1))"
  exit 0
fi

if [ "$mode" != run ]; then
  echo "device_ctest.sh: unknown mode '$mode' (pack or run)" >&2
  exit 2
fi
pack=${1:-$root/build-pack/gpu_ctest.tar.xz}
[ $# -gt 0 ] && shift
work=$(mktemp -d)
tar -C "$work" -xJf "$pack"
build=$(cat "$work/gpu_ctest/build_dir")
source_dir=$(dirname "$build")
# The packed test files name the packing machine's checkout; make that path
# this checkout when it is free.
if [ "$source_dir" != "$root" ]; then
  if [ -e "$source_dir" ] && [ ! -L "$source_dir" ]; then
    echo "device_ctest.sh: $source_dir exists here and is not this checkout" >&2
    exit 2
  fi
  mkdir -p "$(dirname "$source_dir")"
  ln -sfn "$root" "$source_dir"
fi
mkdir -p "$build"
tar -C "$build" -xf "$work/gpu_ctest/ctest_files.tar"
# The test files name the packing machine's interpreter, Debian's
# /usr/bin/python3 with numpy; where this machine's lacks numpy, the python3
# on PATH that has it (and torch, for gpu/python: KILN_PYTHON) runs them.
edits=()
if ! /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  python=$(command -v python3)
  if "$python" -c 'import numpy' 2>/dev/null; then
    edits+=(-e "s#/usr/bin/python3#$python#g")
    export KILN_PYTHON="$python"
  fi
fi
if [ -f "$work/gpu_ctest/examples_dir" ]; then
  mkdir -p "$work/examples"
  tar -C "$work/examples" -xf "$work/gpu_ctest/examples.tar"
  edits+=(-e "s#$(cat "$work/gpu_ctest/examples_dir")#$work/examples#g")
fi
if [ ${#edits[@]} -gt 0 ]; then
  find "$build" -name CTestTestfile.cmake -exec sed -i "${edits[@]}" {} +
fi
while read -r rel name; do
  mkdir -p "$(dirname "$build/$rel")"
  ln -sfn "$work/gpu_ctest/bundle/bin/$name" "$build/$rel"
done <"$work/gpu_ctest/executables"
mkdir -p "$build/tests/python"
cd "$build"
exec ctest -L gpu --output-on-failure "$@"
