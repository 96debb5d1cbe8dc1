#!/usr/bin/env bash
# The fuzz campaign of docs/fuzzing.md: every fuzz target for RUNS executions
# (default 10^6), one target at a time, at low priority (nice), each with the
# same limits as CI's short run: -timeout=10 (an input that runs longer is a
# hang), -rss_limit_mb=2048, leak detection on (libFuzzer's default under
# ASan). The libFuzzer targets run from BUILD_FUZZ (a KILN_FUZZ build, made as
# scripts/test.sh makes build-fuzz/); the RPC fuzzer (tests/fuzz/rpc_fuzz.py,
# a mutating client) runs against the kilnd of BUILD (the main build).
#
#   bench/fuzz_campaign.sh [--runs N] [--build-fuzz DIR] [--build DIR]
#                          [--work DIR] [--targets "a b ..."] [--max-seconds S]
#                          [--rpc-jobs J] [--rpc-concurrency C]
# --max-seconds bounds each target's time (libFuzzer -max_total_time and
# rpc_fuzz --seconds): a target stopped by it reports the executions reached.
# The RPC fuzzer runs J client processes (default 1) of C calls in flight
# each (default 8) against one kilnd, whose measurements are bounded by
# --worker-request-timeout 2s (a fuzzed Tune may ask for 2**31 warmup runs:
# with the default 5 min it held the only CPU device, and every Benchmark
# and Tune queued behind it, for the 10 s of the client's deadline); its row
# counts the executions of all J processes (docs/fuzzing.md, "The campaign").
# Each target's corpus grows in WORK/<target>/corpus (seeded from
# tests/fuzz/corpus/<target> and the project files its ctest uses); crashes,
# hangs (timeout-*), leaks and OOMs land in WORK/<target>/artifacts. The
# summary is one Markdown table row per target on stdout and in
# WORK/summary.md, for docs/fuzzing.md; the logs stay in WORK/<target>/log.
# Exit status: 0 when no target found anything, 1 otherwise.
set -uo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
runs=1000000
build_fuzz="$here/build-fuzz"
build="$here/build"
work="$here/build-fuzz/campaign"
targets="frontend_structured_fuzzer frontend_fuzzer ir_text_fuzzer proto_fuzzer rpc_fuzz"
max_seconds=0
# Niceness of the targets (KILN_FUZZ_NICE, default 19). On a machine busy with
# builds, 19 starves them: inputs that take 0.3 s alone then pass the 10 s
# hang limit (a false hang, seen 2026-12-06); run with 0 there.
niceness=${KILN_FUZZ_NICE:-19}
rpc_jobs=1
rpc_concurrency=8
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --build-fuzz) build_fuzz=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --targets) targets=$2; shift 2 ;;
    --max-seconds) max_seconds=$2; shift 2 ;;
    --rpc-jobs) rpc_jobs=$2; shift 2 ;;
    --rpc-concurrency) rpc_concurrency=$2; shift 2 ;;
    *) echo "usage: $0 [--runs N] [--build-fuzz DIR] [--build DIR] [--work DIR] [--targets LIST] [--max-seconds S]" \
            "[--rpc-jobs J] [--rpc-concurrency C]" >&2
       exit 2 ;;
  esac
done
mkdir -p "$work"
summary="$work/summary.md"
{
  echo "| target | executions | seconds | exec/s | corpus (files / KiB) | crashes | hangs | leaks | OOMs |"
  echo "|---|---|---|---|---|---|---|---|---|"
} > "$summary"
found=0

seeds_of() {
  local t=$1
  echo "$here/tests/fuzz/corpus/$t"
  case "$t" in
    frontend_fuzzer) echo "$here/examples $here/tests/bad_programs" ;;
    ir_text_fuzzer) echo "$here/tests/golden" ;;
  esac
}

for t in $targets; do
  dir="$work/$t"
  mkdir -p "$dir/corpus" "$dir/artifacts"
  start=$SECONDS
  if [ "$t" = rpc_fuzz ]; then
    secs=()
    [ "$max_seconds" != 0 ] && secs=(--seconds "$max_seconds")
    nice -n "$niceness" /usr/bin/python3 "$here/tests/fuzz/rpc_fuzz.py" --kilnd "$build/kilnd" --runs "$runs" \
      "${secs[@]}" --jobs "$rpc_jobs" --concurrency "$rpc_concurrency" --deadline 10 \
      --findings "$dir/artifacts" --json "$dir/summary.json" -- --worker-request-timeout 2s > "$dir/log" 2>&1
    rc=$?
    read -r execs rate findings < <(/usr/bin/python3 -c "
import json, sys
s = json.load(open(sys.argv[1]))
print(s['executions'], s['exec_per_s'], s['findings'])" "$dir/summary.json" 2>/dev/null || echo "0 0 1")
    crashes=$(grep -c 'FINDING.*crash:' "$dir/log")
    hangs=$(grep -c 'FINDING.*hang:' "$dir/log")
    [ "$rc" != 0 ] && [ "${findings:-0}" = 0 ] && findings=1 # e.g. a client error (exit 2)
    corpus="— (generated per call)"
    leaks=0
    ooms=0
  else
    bin="$build_fuzz/tests/$t"
    if [ ! -x "$bin" ]; then
      echo "fuzz_campaign: no $bin (build it: cmake --build $build_fuzz --target $t)" >&2
      exit 2
    fi
    # shellcheck disable=SC2046
    nice -n "$niceness" "$bin" -runs="$runs" -max_total_time="$max_seconds" -timeout=10 -rss_limit_mb=2048 \
      -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
      "$dir/corpus" $(seeds_of "$t") > "$dir/log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$dir/log" | tail -1)
    crashes=$(find "$dir/artifacts" -name 'crash-*' | wc -l)
    hangs=$(find "$dir/artifacts" -name 'timeout-*' | wc -l)
    leaks=$(find "$dir/artifacts" -name 'leak-*' | wc -l)
    ooms=$(find "$dir/artifacts" -name 'oom-*' | wc -l)
    files=$(find "$dir/corpus" -type f | wc -l)
    kib=$(du -sk "$dir/corpus" | cut -f1)
    corpus="$files / $kib"
    findings=$((crashes + hangs + leaks + ooms))
    [ "$rc" != 0 ] && [ "$findings" = 0 ] && findings=1 # a failure without an artifact
  fi
  secs_taken=$((SECONDS - start))
  echo "| $t | ${execs:-0} | $secs_taken | ${rate:-0} | $corpus | $crashes | $hangs | $leaks | $ooms |" >> "$summary"
  echo "fuzz_campaign: $t: ${execs:-0} executions in $secs_taken s, findings: $findings (exit $rc; log $dir/log)" >&2
  [ "${findings:-0}" != 0 ] && found=1
done
echo
cat "$summary"
exit $found
