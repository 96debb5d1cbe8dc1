#!/usr/bin/env bash
# Copies Kiln binaries and their non-system shared libraries into a folder
# that a machine without gRPC/protobuf/Abseil (the GPU test machine) can run
# from: `LD_LIBRARY_PATH=DIR/lib DIR/bin/kiln-opt ...`. libc, libm, libgcc_s,
# libstdc++ and the dynamic loader are left to the host (newer glibc and
# libstdc++ run binaries built against older ones); the CUDA libraries are
# loaded at run time with dlopen and come from the host too.
#   scripts/device_bundle.sh OUT_DIR BINARY...
set -euo pipefail
out=$1
shift
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for bin in "$@"; do
  cp "$bin" "$out/bin/"
  # Debug info is most of a RelWithDebInfo binary and the transfer is size-limited.
  strip --strip-debug "$out/bin/$(basename "$bin")"
  ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
    case "$(basename "$lib")" in
      libc.so.* | libm.so.* | libgcc_s.so.* | libstdc++.so.* | ld-linux* | libdl.so.* | \
        libpthread.so.* | librt.so.* | libcuda.so.* | libnvrtc*) ;;
      *) cp -n "$lib" "$out/lib/" ;;
    esac
  done
done
du -sh "$out"
