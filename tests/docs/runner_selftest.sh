#!/usr/bin/env bash
# The doc-block runner's own test: on tests/docs/runner_selftest.md it must
# pass two blocks, report the failing block by its line and the marker that
# no fence follows, and exit 1.
#   runner_selftest.sh PYTHON REPO BIN_DIR
set -uo pipefail
python=$1 repo=$2 bin_dir=$3
here=$(cd "$(dirname "$0")" && pwd)
out=$("$python" "$here/run_doc_blocks.py" --repo "$repo" --bin-dir "$bin_dir" \
  "$here/runner_selftest.md" 2>&1)
rc=$?
echo "$out"
fail() { echo "runner_selftest: $*"; exit 1; }
[ "$rc" -eq 1 ] || fail "the runner exited $rc, not 1"
grep -q '^FAIL tests/docs/runner_selftest.md:21 (exit 1' <<<"$out" || fail "no FAIL line for line 21"
grep -q 'runner_selftest.md:25: a runnable marker must precede' <<<"$out" ||
  fail "the marker without a fence was not reported"
grep -q '^2 passed, 2 failed$' <<<"$out" || fail "wrong totals"
echo "runner_selftest: ok"
