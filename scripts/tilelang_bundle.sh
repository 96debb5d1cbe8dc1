#!/usr/bin/env bash
# Packs TileLang 0.1.15 and the wheels it needs beyond what the GPU test
# machine already has into one xz tarball small enough to travel with the
# repository's ignored folders (the device "carry" limit is 64 MiB for all
# carried paths together, and the Kiln binaries take 15-25 MiB of it), so the
# issue-28 benchmark can compare Kiln against TileLang there. That machine has
# no package registry; it has Python 3.12 (Ubuntu 24.04, glibc 2.39, x86_64)
# with torch, numpy, cloudpickle, ml-dtypes, psutil, tqdm and
# typing-extensions installed, which are TileLang's other requirements.
#
#   scripts/tilelang_bundle.sh [OUT_TARBALL]   (default tilelang_bundle/tilelang.tar.xz)
#
# Environment: TL_PYTHON_VERSION (default 3.12) picks the wheels' Python.
# Exits non-zero if pip cannot fetch a wheel or the tarball exceeds 45 MiB.
#
# What is removed (none of it is read at import or while compiling kernels):
# TVM's and TileLang's C++ compiler sources (tilelang/3rdparty/tvm/src,
# tilelang/src/**/*.cc), CUTLASS's tools/, tvm_ffi's bundled libbacktrace
# sources, the z3 command-line binary (*.data/), caches and pip's stray
# top-level build_backend.py. Kept: tilelang/src/tl_templates and the other
# headers, tilelang/3rdparty/cutlass/include and tvm/include (TileLang hands
# them to nvcc/NVRTC as include paths for the CUDA it generates), every
# shared library in tilelang/lib (libstub_ascendcl.so is loaded at import),
# and the Python packages. z3/lib ships libz3.so twice; libz3.so.4.15 becomes
# a symbolic link to libz3.so (TileLang loads libz3.so by path, libtvm_compiler
# needs the soname libz3.so.4.15).
#
# On the device (the tarball travels in `carry`):
#   mkdir -p /tmp/tl && tar -xJf tilelang_bundle/tilelang.tar.xz -C /tmp/tl &&
#   PYTHONPATH=/tmp/tl python3 -c "import tilelang; print(tilelang.__version__)"
# Set TILELANG_DISABLE_CACHE=1 there so every compile is a cold one.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/tilelang_bundle/tilelang.tar.xz}
pyver=${TL_PYTHON_VERSION:-3.12}
max_bytes=$((45 * 1024 * 1024))

# Exact versions inside the ranges TileLang 0.1.15 declares
# (apache-tvm-ffi<0.1.13, z3-solver<4.15.5), so the bundle is reproducible.
packages=(
  tilelang==0.1.15
  apache-tvm-ffi==0.1.12
  torch-c-dlpack-ext==0.1.5
  z3-solver==4.15.4.0
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

platforms=()
for n in 39 35 34 31 28 27 24 17; do
  platforms+=(--platform "manylinux_2_${n}_x86_64")
done
platforms+=(--platform manylinux2014_x86_64 --platform manylinux1_x86_64)

python3 -m pip download --quiet --no-deps --only-binary=:all: \
  --python-version "$pyver" --implementation cp "${platforms[@]}" \
  -d "$work/wheels" "${packages[@]}"

site=$work/site
mkdir -p "$site"
for wheel in "$work"/wheels/*.whl; do
  unzip -q -o "$wheel" -d "$site"
done

rm -rf "$site"/tilelang/3rdparty/tvm/src \
  "$site"/tilelang/3rdparty/cutlass/tools \
  "$site"/tvm_ffi/3rdparty/libbacktrace \
  "$site"/*.data \
  "$site"/build_backend.py
find "$site/tilelang/src" -type f -name '*.cc' -delete
find "$site" -depth -type d -name __pycache__ -exec rm -rf {} +
if cmp -s "$site/z3/lib/libz3.so" "$site/z3/lib/libz3.so.4.15"; then
  ln -sf libz3.so "$site/z3/lib/libz3.so.4.15"
fi

for needed in tilelang/lib/libstub_ascendcl.so tilelang/lib/libtilelang.so \
  tilelang/src/tl_templates/cuda/common.h tilelang/3rdparty/cutlass/include/cute \
  tilelang/3rdparty/tvm/python/tvm z3/lib/libz3.so tvm_ffi/lib/libtvm_ffi.so; do
  if [[ ! -e $site/$needed ]]; then
    echo "tilelang_bundle: $needed is missing from the unpacked wheels" >&2
    exit 1
  fi
done

mkdir -p "$(dirname "$out")"
XZ_OPT=-9 tar --sort=name --owner=0 --group=0 --numeric-owner \
  --mtime=@0 -cJf "$out.tmp" -C "$site" .
mv "$out.tmp" "$out"

bytes=$(stat -c %s "$out")
echo "tilelang_bundle: $out: $bytes bytes ($((bytes / 1024 / 1024)) MiB);" \
  "unpacked $(du -sm "$site" | cut -f1) MiB"
echo "tilelang_bundle: top level: $(cd "$site" && ls -A | tr '\n' ' ')"
if ((bytes > max_bytes)); then
  echo "tilelang_bundle: $out is over the 45 MiB limit" >&2
  exit 1
fi
