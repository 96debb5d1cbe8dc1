#!/usr/bin/env bash
# The README's first command, end to end, as a new user runs it (CI runs this
# from scripts/test.sh):
#   1. scripts/serve.sh itself: its dependency install, the Release build in
#      build-release/ (with KILN_WERROR=ON here, so a warning that only the
#      Release flags show fails CI instead of a user's build) and kilnd started
#      with the embedded defaults, on a free loopback port (0) and a fresh cache
#      folder (HOME points at a temporary folder, so ~/.cache/kiln is new);
#   2. the CLI that serve.sh built beside the daemon: `kiln health` answers
#      SERVING, one compile for the CPU target and one for CUDA (NVRTC) succeed
#      and a second one is a cache hit;
#   3. SIGTERM: kilnd drains and exits 0 within the limit;
#   4. the Dockerfile's extra build step (deploy/bundle.sh over build-release/),
#      and the bundled kilnd and kiln start from where the bundle lies.
# Exits non-zero with the log of whatever failed.
#   scripts/check_serve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

work=$(mktemp -d)
kilnd_pid=""
cleanup() {
  if [ -n "$kilnd_pid" ] && kill -0 "$kilnd_pid" 2>/dev/null; then kill -9 "$kilnd_pid" || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "check_serve: $*" >&2
  if [ -f "$work/kilnd.log" ]; then
    echo "---- kilnd log (last 40 lines)" >&2
    tail -n 40 "$work/kilnd.log" >&2
  fi
  exit 1
}

mkdir -p "$work/home"

# 1. The README's command. Its build is the slow part; it prints nothing but
# ninja's progress, which goes to the log.
echo "check_serve: scripts/serve.sh --listen 127.0.0.1:0 (build-release/, KILN_WERROR=ON)"
start=$SECONDS
HOME="$work/home" KILN_WERROR=ON scripts/serve.sh --listen 127.0.0.1:0 \
  > "$work/kilnd.log" 2>&1 &
kilnd_pid=$!

# serve.sh execs kilnd, so $kilnd_pid is the daemon once the build is done.
# Wait for the build (its log shows ninja) and the listening line.
deadline=$((SECONDS + 3600))
until grep -q "listening on" "$work/kilnd.log" 2>/dev/null; do
  kill -0 "$kilnd_pid" 2>/dev/null || fail "scripts/serve.sh exited before kilnd listened"
  [ $SECONDS -lt $deadline ] || fail "kilnd did not start within an hour"
  sleep 2
done
# Port 0: kilnd picked a free port and printed it.
server=$(sed -n 's/.* listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$work/kilnd.log" | head -n 1)
[ -n "$server" ] || fail "no address in kilnd's 'listening on' line"
echo "check_serve: built and listening on $server after $((SECONDS - start)) s"
for tool in kilnd kiln-worker kiln kiln-opt kiln-run; do
  [ -x "build-release/$tool" ] || fail "serve.sh did not build build-release/$tool"
done

# 2. The CLI built beside the daemon.
kiln=(build-release/kiln)
health=$("${kiln[@]}" health --server "$server" --timeout 10) || fail "kiln health failed: $health"
echo "$health" | grep -q SERVING || fail "kiln health did not say SERVING: $health"

compile() {
  "${kiln[@]}" compile --server "$server" examples/elementwise/add.py \
    --bind M=256 --bind N=256 --bind block_M=32 --bind block_N=32 "$@" --json
}
cd "$work"
out=$(cd "$repo" && compile --target cpu -o "$work/add.so") || fail "CPU compile failed: $out"
[ -s "$work/add.so" ] || fail "the CPU compile wrote no add.so"
out=$(cd "$repo" && compile --target cuda:sm_90 -o "$work/add.cubin") ||
  fail "CUDA compile failed: $out"
[ -s "$work/add.cubin" ] || fail "the CUDA compile wrote no add.cubin"
out=$(cd "$repo" && compile --target cuda:sm_90 -o "$work/add2.cubin") ||
  fail "second CUDA compile failed: $out"
echo "$out" | grep -q '"hit"' || fail "the second identical compile was not a cache hit: $out"
cmp -s "$work/add.cubin" "$work/add2.cubin" || fail "the cache hit returned other bytes"
cd "$repo"
echo "check_serve: kiln health SERVING, CPU and CUDA compiles, a cache hit"

# 3. SIGTERM: drained and exited 0.
kill -TERM "$kilnd_pid"
for _ in $(seq 1 60); do
  kill -0 "$kilnd_pid" 2>/dev/null || break
  sleep 0.5
done
if kill -0 "$kilnd_pid" 2>/dev/null; then fail "kilnd still runs 30 s after SIGTERM"; fi
rc=0
wait "$kilnd_pid" || rc=$?
kilnd_pid=""
[ "$rc" -eq 0 ] || fail "kilnd exited $rc after SIGTERM"
grep -q "SIGTERM" "$work/kilnd.log" || fail "kilnd's log does not mention SIGTERM"
echo "check_serve: SIGTERM -> exit 0"

# 4. The Dockerfile's build stage, after scripts/build.sh: the bundle.
deploy/bundle.sh --build-dir build-release --tree "$work/bundle" > "$work/bundle.log" 2>&1 ||
  fail "deploy/bundle.sh over build-release failed: $(tail -n 20 "$work/bundle.log")"
"$work/bundle/bin/kilnd" --version > /dev/null || fail "the bundled kilnd does not start"
"$work/bundle/bin/kiln" --help > /dev/null || fail "the bundled kiln does not start"
echo "check_serve: passed in $((SECONDS - start)) s"
