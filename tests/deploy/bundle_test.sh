#!/usr/bin/env bash
# ctest deploy/bundle: deploy/bundle.sh makes the tarball from the build
# folder; it is unpacked elsewhere and its own kilnd is started with
# LD_LIBRARY_PATH unset; the bundled `kiln` then checks health, lists the
# devices and compiles examples/elementwise/add.py for the CPU target twice
# (a miss, then a hit) through it.
#   tests/deploy/bundle_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$2
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2> /dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  if [ -f "$tmp/kilnd.log" ]; then sed 's/^/  kilnd: /' "$tmp/kilnd.log" >&2; fi
  exit 1
}

(cd "$tmp" && "$src/deploy/bundle.sh" --build-dir "$build" -o kiln.tar.gz) > "$tmp/bundle.log" 2>&1 ||
  { cat "$tmp/bundle.log" >&2; fail "bundle.sh failed"; }
size=$(stat -c %s "$tmp/kiln.tar.gz")
[ "$size" -le $((64 << 20)) ] || fail "tarball is $size bytes, over 64 MiB"
echo "tarball: $size bytes"

mkdir "$tmp/unpacked"
tar -C "$tmp/unpacked" -xzf "$tmp/kiln.tar.gz"
rm "$tmp/kiln.tar.gz"
dirs=("$tmp"/unpacked/kiln-*)
[ ${#dirs[@]} -eq 1 ] && [ -d "${dirs[0]}" ] || fail "the tarball does not hold one kiln-VERSION/ folder"
b=${dirs[0]}
for f in bin/kilnd bin/kiln-worker bin/kiln share/kiln/kilnd.example.yaml BUNDLE_INFO; do
  [ -e "$b/$f" ] || fail "$f is missing from the bundle"
done
grep -q '^requires glibc >= 2\.[0-9]*, libstdc++ with GLIBCXX_3\.4\.[0-9]*$' "$b/BUNDLE_INFO" ||
  fail "BUNDLE_INFO names no glibc/libstdc++ requirement"
for f in "$b"/bin/*; do
  # Into variables, not piped to grep -q: under pipefail, readelf's SIGPIPE when
  # grep stops at its first match would fail the check.
  dyn=$(readelf -d "$f")
  sections=$(readelf -S "$f")
  grep -q 'RUNPATH.*\[\$ORIGIN/\.\./lib\]' <<< "$dyn" || fail "$f has no RUNPATH \$ORIGIN/../lib"
  if grep -Eq '\.(symtab|debug_info)' <<< "$sections"; then fail "$f is not stripped"; fi
done
# Nothing of the host's gRPC, protobuf or Abseil is used: each library
# outside the C/C++ runtime resolves into the bundle's lib/.
env -u LD_LIBRARY_PATH ldd "$b/bin/kilnd" > "$tmp/ldd.txt"
if grep 'not found' "$tmp/ldd.txt"; then fail "kilnd has unresolved libraries"; fi
outside=$(awk '$2 == "=>" {print $1, $3}' "$tmp/ldd.txt" | grep -vF " $b/" |
  grep -Ev '^(libc|libm|libgcc_s|libstdc\+\+)\.so' || true)
[ -z "$outside" ] || fail "kilnd resolves these outside the bundle: $outside"
awk -v b="$b/" '$1 ~ /^libgrpc\+\+\.so/ && index($3, b) == 1 {found = 1} END {exit !found}' \
  "$tmp/ldd.txt" || fail "libgrpc++ is not the bundle's"

# The bundle's kilnd, from the unpacked folder, on loopback ports.
cd "$tmp"
env -u LD_LIBRARY_PATH "$b/bin/kilnd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 \
  --cache-dir "$tmp/cache" --log-format text > "$tmp/kilnd.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q 'listening on' "$tmp/kilnd.log" && break
  kill -0 "$pid" 2> /dev/null || fail "kilnd exited at start-up"
  sleep 0.1
done
addr=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' "$tmp/kilnd.log" | head -1)
[ -n "$addr" ] || fail "kilnd printed no address"
kiln() { env -u LD_LIBRARY_PATH "$b/bin/kiln" "$@" --server "$addr"; }

[ "$(kiln health)" = SERVING ] || fail "kiln health did not answer SERVING"
kiln devices > "$tmp/devices.txt" || fail "kiln devices failed"
grep -q '^cpu ' "$tmp/devices.txt" || { cat "$tmp/devices.txt" >&2; fail "no cpu device listed"; }
binds=(--bind M=77 --bind N=130 --bind block_M=16 --bind block_N=64)
kiln compile "$src/examples/elementwise/add.py" "${binds[@]}" --target cpu --json -o "$tmp/add.so" \
  > "$tmp/first.json" || fail "compile failed: $(cat "$tmp/first.json")"
grep -q '"cache": "miss"' "$tmp/first.json" || fail "the first compile was not a miss: $(cat "$tmp/first.json")"
head -c 4 "$tmp/add.so" | grep -q 'ELF' || fail "the artifact is not a shared object"
kiln compile "$src/examples/elementwise/add.py" "${binds[@]}" --target cpu --json > "$tmp/second.json" ||
  fail "second compile failed"
grep -q '"cache": "hit"' "$tmp/second.json" || fail "the second compile was not a hit: $(cat "$tmp/second.json")"
kill -TERM "$pid"
wait "$pid" || fail "kilnd did not exit 0 on SIGTERM"
pid=""
echo "bundle: $b works from its unpacked folder (health, devices, cpu compile miss+hit)"
