#!/usr/bin/env bash
# Proof of the relocatable bundle on a GPU host without Kiln's build
# dependencies (the H200 machine: Ubuntu 24.04, CUDA 13, no gRPC/protobuf/
# SQLite C++ libraries). From a checkout of this repository (for examples/):
#
#   tar -xzf kiln-VERSION-linux-x86_64.tar.gz -C DIR
#   bash deploy/bundle_h200_check.sh DIR            (DIR or DIR/kiln-VERSION)
#
# It starts the bundle's kilnd (LD_LIBRARY_PATH unset, a temporary cache,
# loopback ports), checks `kiln health`, waits until `kiln devices` lists a
# CUDA GPU with its worker running, compiles examples/gemm/gemm.py at its
# `# kiln: bind` size for cuda:sm_90 (a miss, then a hit), runs `kiln bench`
# on the GPU, reads /metrics (the worker is up, the GPU was busy) and stops
# kilnd with SIGTERM. Prints each step; exits 0 only when all passed.
# KILN_CHECK_TARGET (default cuda:sm_90), KILN_CHECK_DEVICE (the device id's
# prefix, default cuda), KILN_CHECK_BINDS (which line of the example: bind,
# or test-bind for its small test size) and KILN_CHECK_TRIALS (default 50)
# override the defaults; ctest deploy/bundle_h200_check_on_cpu runs this
# script with target and device cpu at the test size.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
arg=${1:?usage: bash deploy/bundle_h200_check.sh EXTRACTED_DIR}
target=${KILN_CHECK_TARGET:-cuda:sm_90}
trials=${KILN_CHECK_TRIALS:-50}
device_prefix=${KILN_CHECK_DEVICE:-cuda}
bind_line=${KILN_CHECK_BINDS:-bind}

if [ -x "$arg/bin/kilnd" ]; then
  b=$(cd "$arg" && pwd)
else
  found=("$arg"/kiln-*/bin/kilnd)
  [ -x "${found[0]}" ] || { echo "FAIL: no bin/kilnd in $arg or $arg/kiln-*/" >&2; exit 1; }
  b=$(cd "$(dirname "${found[0]}")/.." && pwd)
fi
tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2> /dev/null; wait "$pid" 2> /dev/null; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
step() { echo; echo "== $*"; }
fail() {
  echo "FAIL: $*" >&2
  if [ -f "$tmp/kilnd.log" ]; then
    echo "-- kilnd log (last 40 lines):" >&2
    tail -40 "$tmp/kilnd.log" >&2
  fi
  exit 1
}
unset LD_LIBRARY_PATH

step "bundle $b"
cat "$b/BUNDLE_INFO" | sed -n '1,5p'
echo "host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2> /dev/null ||
  echo "(nvidia-smi not found)"
for f in "$b"/bin/*; do
  if ldd "$f" | grep 'not found'; then fail "$(basename "$f") has unresolved libraries"; fi
done
echo "every library resolves (host: $(ldd "$b/bin/kilnd" | grep -cvF "$b/") system, bundle: $(ldd "$b/bin/kilnd" | grep -cF "$b/"))"

step "start kilnd"
"$b/bin/kilnd" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --cache-dir "$tmp/cache" \
  --log-format text > "$tmp/kilnd.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
  grep -q 'listening on' "$tmp/kilnd.log" && break
  kill -0 "$pid" 2> /dev/null || fail "kilnd exited at start-up"
  sleep 0.1
done
head -1 "$tmp/kilnd.log"
addr=$(sed -n 's/.*listening on \([^ ]*\) .*/\1/p' "$tmp/kilnd.log" | head -1)
metrics=$(sed -n 's/.* metrics on \([^ ]*\) .*/\1/p' "$tmp/kilnd.log" | head -1)
[ -n "$addr" ] && [ -n "$metrics" ] || fail "kilnd printed no addresses"
kiln() { "$b/bin/kiln" "$@" --server "$addr"; }

step "kiln health"
health=$(kiln health) || fail "kiln health: $health"
echo "$health"
[ "$health" = SERVING ] || fail "not SERVING"

step "kiln devices (waiting up to 90 s for a $device_prefix device's worker)"
gpu=""
for _ in $(seq 90); do
  kiln devices --json > "$tmp/devices.json" || fail "kiln devices failed"
  gpu=$(python3 - "$tmp/devices.json" "$device_prefix" << 'EOF'
import json, sys
devices = json.load(open(sys.argv[1])).get("devices", [])
ready = [d["id"] for d in devices if d.get("id", "").startswith(sys.argv[2]) and d.get("worker_state") == "running"]
print(ready[0] if ready else "")
EOF
  )
  [ -n "$gpu" ] && break
  sleep 1
done
kiln devices
[ -n "$gpu" ] || fail "no $device_prefix device with a running worker"
echo "measuring on $gpu"

step "kiln compile examples/gemm/gemm.py for $target"
gemm="$root/examples/gemm/gemm.py"
[ -f "$gemm" ] || fail "$gemm not found (run from a checkout of the repository)"
binds=()
for kv in $(sed -n "s/^# kiln: $bind_line //p" "$gemm" | head -1); do binds+=(--bind "$kv"); done
[ ${#binds[@]} -gt 0 ] || fail "no '# kiln: $bind_line' line in $gemm"
echo "binds: ${binds[*]}"
kiln compile "$gemm" "${binds[@]}" --target "$target" --json -o "$tmp/gemm.cubin" > "$tmp/c1.json" ||
  fail "compile failed: $(cat "$tmp/c1.json")"
grep -o '"cache": "[a-z]*", "compile_ms": [0-9.]*' "$tmp/c1.json"
grep -q '"cache": "miss"' "$tmp/c1.json" || fail "the first compile was not a miss"
head -c 4 "$tmp/gemm.cubin" | grep -q ELF || fail "the artifact is not an ELF file (cubin)"
kiln compile "$gemm" "${binds[@]}" --target "$target" --json > "$tmp/c2.json" || fail "second compile failed"
grep -o '"cache": "[a-z]*", "compile_ms": [0-9.]*, "server_ms": [0-9.]*' "$tmp/c2.json"
grep -q '"cache": "hit"' "$tmp/c2.json" || fail "the second compile was not a hit"

step "kiln bench on $gpu ($trials trials)"
kiln bench "$gemm" "${binds[@]}" --target "$target" --device "$gpu" --trials "$trials" --flush-l2 \
  > "$tmp/bench.txt" 2>&1 || { cat "$tmp/bench.txt"; fail "kiln bench failed"; }
cat "$tmp/bench.txt"
kiln bench "$gemm" "${binds[@]}" --target "$target" --device "$gpu" --trials "$trials" --json \
  > "$tmp/bench.json" 2>&1 || { cat "$tmp/bench.json"; fail "kiln bench --json failed"; }
python3 - "$tmp/bench.json" "${binds[@]}" << 'EOF' || fail "bench result does not add up"
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[-1])
b = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
m, n, k = int(b["M"]), int(b["N"]), int(b["K"])
us = float(r["median_us"])
assert us > 0, r
print(f"{r['device']} ({r['device_model']}): median {us:.1f} us = {2 * m * n * k / us / 1e3:.1f} GFLOP/s")
EOF

step "metrics"
python3 - "http://$metrics/metrics" "$gpu" << 'EOF' || fail "metrics do not show the GPU's worker"
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
gpu = sys.argv[2]
def value(name):
    for line in text.splitlines():
        if line.startswith(name + "{") and f'device="{gpu}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None
up, busy = value("kiln_worker_up"), value("kiln_gpu_busy_seconds_total")
print(f"kiln_worker_up{{device=\"{gpu}\"}} {up}, kiln_gpu_busy_seconds_total {busy}")
assert up == 1 and busy is not None and busy > 0
EOF

step "stop kilnd"
kill -TERM "$pid"
wait "$pid"
status=$?
pid=""
tail -2 "$tmp/kilnd.log"
[ "$status" = 0 ] || fail "kilnd exited $status on SIGTERM"
echo
echo "bundle_h200_check: PASS ($gpu, $target)"
