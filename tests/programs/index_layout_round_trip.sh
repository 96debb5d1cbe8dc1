#!/bin/sh
# Round trip through a T.Layout (on the CPU target unless TARGET is given,
# e.g. cuda:0): index_layout_atomic.py
# writes 3 * X into dQ in the layout's physical order, index_layout_read.py
# reads that dQ back through the same layout (a separate kernel, as the
# attention backward's postprocess does); the result must be 3 * X, and dQ
# itself must not be in logical order.
#   usage: index_layout_round_trip.sh KILN_RUN [TARGET]
set -eu
run=$1
target=${2:-cpu}
dir=$(dirname "$0")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$run" "$dir/index_layout_atomic.py" --test-bind --target "$target" --quiet \
    --save X="$tmp/x.npy" --save dQ="$tmp/dq.npy"
"$run" "$dir/index_layout_read.py" --test-bind --target "$target" --quiet \
    --input dQ="$tmp/dq.npy" --save out="$tmp/out.npy"
# The interpreter kiln-run's --check would use: one that imports NumPy.
py=${KILN_PYTHON:-}
if [ -z "$py" ]; then
  for py in python3 /usr/bin/python3; do
    "$py" -c "import numpy" 2>/dev/null && break
  done
fi
"$py" - "$tmp" <<'PY'
import sys
import numpy as np
t = sys.argv[1]
x, dq, out = (np.load(f"{t}/{n}.npy") for n in ("x", "dq", "out"))
assert not np.array_equal(dq, 3 * x), "dQ is in logical order: the layout was not applied"
want = (3 * x).astype(np.float16)
bad = np.argwhere(out != want)
assert bad.size == 0, f"{len(bad)} elements differ, first at {tuple(bad[0])}"
print("index layout round trip: PASS")
PY
