#!/usr/bin/env bash
# Makes a relocatable Kiln bundle for Linux hosts without Docker and without
# Kiln's build dependencies (gRPC, protobuf, Abseil, SQLite, yaml-cpp):
#
#   deploy/bundle.sh [--build-dir DIR] [-o FILE.tar.gz] [--with-nvrtc]
#   deploy/bundle.sh --tree DIR [--build-dir DIR] [--with-nvrtc]
#   deploy/bundle.sh --tree DIR --binary FILE...      (scripts/device_bundle.sh)
#
# Without --build-dir it installs the build dependencies and builds Release
# binaries in build-release/ (scripts/install_deps.sh, scripts/build.sh, the
# same steps as scripts/serve.sh and the Dockerfile); with it, it takes
# kilnd, kiln-worker and kiln from DIR. The tarball (default
# kiln-VERSION-linux-x86_64.tar.gz in the current folder) unpacks to
# kiln-VERSION/ with
#   bin/kilnd bin/kiln-worker bin/kiln   stripped, RUNPATH $ORIGIN/../lib
#   lib/*.so*                            their non-system shared libraries,
#                                        RUNPATH $ORIGIN
#   share/kiln/kilnd.example.yaml        the commented configuration
#   BUNDLE_INFO                          version, commit, required glibc and
#                                        libstdc++ versions, library list
# so `kiln-VERSION/bin/kilnd` runs from anywhere with LD_LIBRARY_PATH unset,
# and its children (the compiler, nvcc) never see Kiln's libraries.
#
# Left to the host: the C runtime (libc, libm, libpthread, libdl, librt, the
# dynamic loader), libgcc_s and libstdc++ (newer ones run binaries built
# against older ones; BUNDLE_INFO records the newest glibc and GLIBCXX
# symbol versions the files need: 2.34 and 3.4.30 for a Debian 12 build,
# which Ubuntu 24.04's 2.39 and GCC 14 runtime satisfy), the CUDA driver
# (libcuda, dlopen'ed by kiln-worker) and, unless --with-nvrtc, NVRTC
# (dlopen'ed by kilnd: KILN_NVRTC_LIBRARY, CUDA_HOME/lib64,
# /usr/local/cuda/lib64 or the loader's path). NVRTC is the host's by default
# because it is 110 MB and the cubins it makes must suit the host's driver;
# --with-nvrtc copies libnvrtc.so.N and its builtins library into lib/ for
# hosts with a driver but no toolkit (the tarball is then about 58 MiB).
#
# Fails when the tarball exceeds KILN_BUNDLE_MAX_BYTES (default 64 MiB) or
# when a bundled file needs a library that is neither bundled nor left to
# the host on purpose. Needs patchelf, binutils and tar.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)

usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

build_dir=""
output=""
tree=""
with_nvrtc=0
binaries=()
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=${2:?}; shift 2 ;;
    --build-dir=*) build_dir=${1#*=}; shift ;;
    -o | --output) output=${2:?}; shift 2 ;;
    --output=*) output=${1#*=}; shift ;;
    --tree) tree=${2:?}; shift 2 ;;
    --tree=*) tree=${1#*=}; shift ;;
    --with-nvrtc) with_nvrtc=1; shift ;;
    --binary) binaries+=("${2:?}"); shift 2 ;;
    --binary=*) binaries+=("${1#*=}"); shift ;;
    -h | --help) usage ;;
    *) echo "bundle.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
if [ -n "$output" ] && [ -n "$tree" ]; then
  echo "bundle.sh: --tree and -o exclude each other" >&2
  exit 2
fi
for tool in patchelf readelf objdump strip tar; do
  command -v "$tool" > /dev/null || { echo "bundle.sh: $tool is missing (scripts/install_deps.sh installs it)" >&2; exit 1; }
done

version=$(sed -n 's/^project(kiln VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
if [ ${#binaries[@]} -eq 0 ]; then
  if [ -z "$build_dir" ]; then
    "$root/scripts/install_deps.sh"
    KILN_BUILD_DIR="$root/build-release" "$root/scripts/build.sh" kilnd kiln-worker kiln
    build_dir="$root/build-release"
  fi
  for b in kilnd kiln-worker kiln; do
    [ -x "$build_dir/$b" ] || { echo "bundle.sh: $build_dir/$b is missing (build it first)" >&2; exit 1; }
    binaries+=("$build_dir/$b")
  done
fi

# Libraries the host provides (see above); everything else is bundled.
is_host_library() {
  case "$1" in
    linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
      librt.so.* | libutil.so.* | libresolv.so.* | libgcc_s.so.* | libstdc++.so.* | libcuda.so.*)
      return 0 ;;
    libnvrtc*) [ "$with_nvrtc" = 0 ] ;;
    *) return 1 ;;
  esac
}

work=""
cleanup() { if [ -n "$work" ]; then rm -rf "$work"; fi; }
trap cleanup EXIT
if [ -n "$tree" ]; then
  dest=$tree
  rm -rf "$dest"
else
  work=$(mktemp -d)
  dest="$work/kiln-$version"
fi
mkdir -p "$dest/bin" "$dest/lib" "$dest/share/kiln"

for bin in "${binaries[@]}"; do
  name=$(basename "$bin")
  cp "$bin" "$dest/bin/$name"
  chmod u+w "$dest/bin/$name"
  # Debug info is most of a RelWithDebInfo binary; the symbol table goes too.
  strip --strip-unneeded "$dest/bin/$name"
  # ldd lists the whole closure; the left-hand name is the soname to keep.
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r soname path; do
    is_host_library "$soname" && continue
    [ -e "$dest/lib/$soname" ] || cp -L "$path" "$dest/lib/$soname"
  done
done

if [ "$with_nvrtc" = 1 ]; then
  nvrtc=${KILN_NVRTC_LIBRARY:-}
  if [ -z "$nvrtc" ]; then
    for dir in ${CUDA_HOME:+"$CUDA_HOME/lib64"} /usr/local/cuda/lib64; do
      for n in libnvrtc.so.13 libnvrtc.so.12; do
        if [ -z "$nvrtc" ] && [ -e "$dir/$n" ]; then nvrtc="$dir/$n"; fi
      done
    done
  fi
  [ -n "$nvrtc" ] || { echo "bundle.sh: --with-nvrtc: no libnvrtc.so.13/12 found (set KILN_NVRTC_LIBRARY or CUDA_HOME)" >&2; exit 1; }
  cp -L "$nvrtc" "$dest/lib/$(basename "$nvrtc")"
  # NVRTC loads its builtins library by soname at run time.
  for builtins in "$(dirname "$nvrtc")"/libnvrtc-builtins.so.*; do
    case "$builtins" in *.alt.*) continue ;; esac
    [ -e "$builtins" ] && cp -L "$builtins" "$dest/lib/$(basename "$builtins")"
  done
fi

chmod -R u+w "$dest/lib"
for f in "$dest"/bin/*; do patchelf --set-rpath '$ORIGIN/../lib' "$f"; done
for f in "$dest"/lib/*; do patchelf --set-rpath '$ORIGIN' "$f"; done

# Every DT_NEEDED entry must be bundled or left to the host on purpose.
missing=0
for f in "$dest"/bin/* "$dest"/lib/*; do
  for needed in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    if [ ! -e "$dest/lib/$needed" ] && ! is_host_library "$needed"; then
      echo "bundle.sh: $(basename "$f") needs $needed, which is neither bundled nor a host library" >&2
      missing=1
    fi
  done
done
[ "$missing" = 0 ] || exit 1

# The newest symbol versions the files need from the host's C and C++ runtimes.
newest() {
  objdump -T "$dest"/bin/* "$dest"/lib/* 2>/dev/null | grep -o "$1_[0-9][0-9.]*" |
    sed "s/^$1_//" | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1
}
cp "$root/docs/kilnd.example.yaml" "$dest/share/kiln/kilnd.example.yaml"
{
  echo "kiln $version"
  echo "commit ${KILN_COMMIT:-$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)}"
  echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME") $(uname -m)"
  echo "requires glibc >= $(newest GLIBC), libstdc++ with GLIBCXX_$(newest GLIBCXX)"
  echo "nvrtc $([ "$with_nvrtc" = 1 ] && echo bundled || echo "from the host (KILN_NVRTC_LIBRARY, CUDA_HOME/lib64, /usr/local/cuda/lib64)")"
  echo "libraries:"
  (cd "$dest/lib" && ls -1 | sed 's/^/  /')
} > "$dest/BUNDLE_INFO"

if [ -n "$tree" ]; then
  du -sh "$dest"
  exit 0
fi
output=${output:-kiln-$version-linux-x86_64.tar.gz}
case "$output" in /*) ;; *) output="$PWD/$output" ;; esac
tar -C "$work" --owner=0 --group=0 -czf "$output" "kiln-$version"
size=$(stat -c %s "$output")
limit=${KILN_BUNDLE_MAX_BYTES:-$((64 << 20))}
echo "bundle.sh: $output: $size bytes (limit $limit)"
if [ "$size" -gt "$limit" ]; then
  echo "bundle.sh: the tarball is larger than $limit bytes" >&2
  exit 1
fi
