#!/usr/bin/env bash
# The H200 proof of the C++ client and of `kiln regress`. Run from the
# repository root on the GPU machine, with the binaries carried in
# device_bundle/ (bin/ and lib/), made on the build machine by
#   scripts/device_bundle.sh device_bundle build/kilnd build/kiln build/kiln-worker \
#       build/kiln-gemm-launch
# Then:  clients/cpp/examples/run_h200.sh        (KILN_BIN_DIR overrides device_bundle/bin)
#
# 1. starts kilnd (loopback, a fresh cache), which spawns a kiln-worker per GPU;
# 2. kiln-gemm-launch fetches the GEMM cubin through libkiln_client and
#    launches it with the CUDA driver API, checked against a host reference,
#    twice (the second run is served from the client's local cache);
# 3. kiln regress: bench/regress/gemm_h200.yaml twice on the same code
#    (labels h200-a, h200-b) must pass (exit 0), then gemm_h200_slow.yaml
#    (the same kernel name, a worse tile config; label h200-c) must be
#    flagged (exit 1); kiln regress history prints the trend.
# Reports (JUnit, Markdown, SVG) go to $OUT if set, else a temporary folder.
# Exits nonzero on the first step that does not behave as described.
set -uo pipefail
root=$(pwd)
bin=${KILN_BIN_DIR:-$root/device_bundle/bin}
export LD_LIBRARY_PATH="$bin/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
out=${OUT:-$(mktemp -d)}
work=$(mktemp -d)
mkdir -p "$out"
for b in kilnd kiln kiln-worker kiln-gemm-launch; do
  [ -x "$bin/$b" ] || { echo "run_h200: no $bin/$b (see the header of this script)"; exit 2; }
done
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true

"$bin/kilnd" --listen 127.0.0.1:0 --cache-dir "$work/cache" > "$work/kilnd.log" 2>&1 &
kilnd_pid=$!
trap 'kill "$kilnd_pid" 2>/dev/null; wait "$kilnd_pid" 2>/dev/null; cp "$work/kilnd.log" "$out/" 2>/dev/null' EXIT
addr=""
for _ in $(seq 1 100); do
  addr=$(grep -o 'listening on [0-9.:]*' "$work/kilnd.log" | head -1 | awk '{print $3}')
  [ -n "$addr" ] && break
  kill -0 "$kilnd_pid" 2>/dev/null || break
  sleep 0.2
done
if [ -z "$addr" ]; then echo "run_h200: kilnd did not start:"; cat "$work/kilnd.log"; exit 1; fi
echo "run_h200: kilnd on $addr"
"$bin/kiln" devices --server "$addr" || exit 1

fail() { echo "run_h200: FAIL: $*"; exit 1; }

echo "== 1. kiln-gemm-launch (libkiln_client + CUDA driver API)"
for cfg in "--block-m 128 --block-n 128 --block-k 32 --stages 3 --threads 128" \
           "--block-m 128 --block-n 256 --block-k 64 --stages 4 --threads 256"; do
  for run in first repeat; do
    # shellcheck disable=SC2086
    "$bin/kiln-gemm-launch" --file examples/gemm/gemm.py --server "$addr" --m 1024 --n 1024 \
      --k 1024 $cfg --arch sm_90 --cache-dir "$work/node" || fail "gemm launch ($cfg, $run)"
  done
done

echo "== 2. kiln regress: the same code twice passes"
regress() { "$bin/kiln" regress run "$@" --server "$addr" --timeout 1200; }
regress bench/regress/gemm_h200.yaml --label h200-a --junit "$out/a.xml" --markdown "$out/a.md"
[ $? -eq 0 ] || fail "first run (no baseline) did not exit 0"
regress bench/regress/gemm_h200.yaml --label h200-b --baseline auto --junit "$out/b.xml" \
  --markdown "$out/b.md" --plot-dir "$out/plots_b"
rc=$?
cat "$out/b.md"
[ $rc -eq 0 ] || fail "the same code against its own baseline exited $rc, not 0"

echo "== 3. kiln regress: a worse config is a regression"
regress bench/regress/gemm_h200_slow.yaml --label h200-c --junit "$out/c.xml" \
  --markdown "$out/c.md" --plot-dir "$out/plots_c"
rc=$?
cat "$out/c.md"
[ $rc -eq 1 ] || fail "the slowed variant exited $rc, not 1"
grep -q '<failure type="regression"' "$out/c.xml" || fail "no JUnit failure for the regression"
"$bin/kiln" regress history gemm-4096 --server "$addr" || fail "history"
echo "run_h200: PASS (reports in $out)"
