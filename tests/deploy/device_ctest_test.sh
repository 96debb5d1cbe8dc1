#!/usr/bin/env bash
# ctest deploy/device_ctest: scripts/device_ctest.sh, which carries this build's
# `ctest -L gpu` to a GPU machine without Kiln's build dependencies. `pack` must
# hold the gpu tests' executables (bundled) and the build's test files; `run`,
# on "another machine" (a copy of the checkout, the packing build folder's path
# made to point at it), must recreate the build folder with links to the
# bundled executables and hand over to ctest, here only listing the tests (-N).
#   tests/deploy/device_ctest_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail
src=$1
build=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "device_ctest_test: $*" >&2; exit 1; }

# Light compression: this test checks what the pack holds, not its size.
export XZ_OPT=-0
bash "$src/scripts/device_ctest.sh" pack "$build" "$tmp/pack.tar.xz" > /dev/null
tar -tJf "$tmp/pack.tar.xz" > "$tmp/list"
for f in gpu_ctest/bundle/bin/kiln-run gpu_ctest/bundle/bin/gpu_gpu_presence_test \
  gpu_ctest/executables gpu_ctest/ctest_files.tar gpu_ctest/build_dir; do
  grep -qx "$f" "$tmp/list" || fail "the pack lacks $f"
done
mkdir "$tmp/unpacked"
tar -xJf "$tmp/pack.tar.xz" -C "$tmp/unpacked"
grep -qx 'tests/gpu_gpu_presence_test gpu_gpu_presence_test' "$tmp/unpacked/gpu_ctest/executables" ||
  fail "the pack does not say where gpu_gpu_presence_test lived"
# Listed to a file first: grep -q stops reading at the first match, and under
# pipefail tar's SIGPIPE would then fail the check.
tar -tf "$tmp/unpacked/gpu_ctest/ctest_files.tar" > "$tmp/ctest_files"
grep -qx './tests/CTestTestfile.cmake' "$tmp/ctest_files" ||
  fail "the pack lacks the build's tests/CTestTestfile.cmake"

# Another machine: the checkout is elsewhere, and the packing build folder's
# path does not exist there.
mkdir -p "$tmp/checkout/scripts"
cp "$src/scripts/device_ctest.sh" "$tmp/checkout/scripts/"
echo "$tmp/elsewhere/build" > "$tmp/unpacked/gpu_ctest/build_dir"
tar -C "$tmp/unpacked" -cJf "$tmp/moved.tar.xz" gpu_ctest
TMPDIR=$tmp bash "$tmp/checkout/scripts/device_ctest.sh" run "$tmp/moved.tar.xz" -N > "$tmp/run.log" 2>&1 ||
  { cat "$tmp/run.log"; fail "run failed"; }
[ "$(readlink "$tmp/elsewhere")" = "$tmp/checkout" ] || fail "the build folder's parent is not linked to the checkout"
[ -x "$tmp/checkout/build/tests/gpu_gpu_presence_test" ] || fail "no link to the bundled gpu_gpu_presence_test"
case "$(readlink "$tmp/checkout/build/kiln-run")" in
  */gpu_ctest/bundle/bin/kiln-run) ;;
  *) fail "build/kiln-run does not link to the bundled kiln-run" ;;
esac
grep -q 'gpu/examples/elementwise/add.py' "$tmp/run.log" || { cat "$tmp/run.log"; fail "ctest did not list the gpu tests"; }
grep -q 'Total Tests: [1-9]' "$tmp/run.log" || { cat "$tmp/run.log"; fail "ctest listed no test"; }

# A checkout where the packing build folder's parent is something else refuses.
mkdir -p "$tmp/taken"
echo "$tmp/taken/build" > "$tmp/unpacked/gpu_ctest/build_dir"
tar -C "$tmp/unpacked" -cJf "$tmp/taken.tar.xz" gpu_ctest
if TMPDIR=$tmp bash "$tmp/checkout/scripts/device_ctest.sh" run "$tmp/taken.tar.xz" -N > "$tmp/taken.log" 2>&1; then
  fail "run used a folder that is not this checkout"
fi
grep -q "exists here and is not this checkout" "$tmp/taken.log" || { cat "$tmp/taken.log"; fail "no clear refusal"; }
echo "device_ctest_test: pack and run work"
