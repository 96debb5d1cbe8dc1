#!/usr/bin/env bash
# Runs the Python client's pytest suite against BUILD_DIR's kilnd (ctest's python and
# gpu tests call this). The interpreter is a venv of Debian's /usr/bin/python3 with
# its system packages (python3-grpcio, -protobuf, -numpy, -pytest: scripts/install_deps.sh)
# in BUILD_DIR/python-venv, into which clients/python is pip-installed (no network,
# no build isolation) from a temporary copy, so the checkout stays clean.
#
#   run_pytest.sh BUILD_DIR [--gpu] [PYTEST_ARGS...]
# --gpu runs test_gpu.py only, and exits 77 (ctest: skipped) with the reason when
# this machine has no NVIDIA GPU or the venv has no torch; without it test_gpu.py is
# left out. KILN_PYTHON overrides the base interpreter (default /usr/bin/python3).
set -euo pipefail
build_dir=$(cd "$1" && pwd)
shift
gpu=0
if [ "${1:-}" = "--gpu" ]; then gpu=1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
base_python=${KILN_PYTHON:-/usr/bin/python3}
venv="$build_dir/python-venv"

if [ "$gpu" = 1 ] && [ ! -e /dev/nvidiactl ]; then
  echo "SKIP: no NVIDIA GPU on this machine (/dev/nvidiactl is absent)"
  exit 77
fi

# One venv per build folder, made once; concurrent ctest runs wait for each other.
exec 9>"$build_dir/python-venv.lock"
flock 9
if [ ! -x "$venv/bin/python" ]; then
  "$base_python" -m venv --system-site-packages "$venv"
  # A base interpreter that is itself a venv (the GPU machine's python3, with
  # torch) lends its packages only through its own site-packages, which
  # --system-site-packages does not reach: a .pth file adds them.
  "$base_python" -c 'import site, sys; sys.prefix != sys.base_prefix and print("\n".join(site.getsitepackages()))' \
    >"$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/kiln_base_venv.pth"
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$repo/clients/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src/"*.egg-info
"$venv/bin/python" -m pip install --quiet --no-build-isolation --no-deps --no-index \
  --disable-pip-version-check "$tmp/src"
flock -u 9

if [ "$gpu" = 1 ] && ! "$venv/bin/python" -c "import torch" 2>/dev/null; then
  echo "SKIP: $base_python has no torch (test_gpu.py launches on torch tensors)"
  exit 77
fi

export KILN_BUILD_DIR="$build_dir" PYTHONDONTWRITEBYTECODE=1
cd "$here"
if [ "$gpu" = 1 ]; then
  exec "$venv/bin/python" -m pytest -p no:cacheprovider -rs test_gpu.py "$@"
fi
exec "$venv/bin/python" -m pytest -p no:cacheprovider -rs --ignore=test_gpu.py "$@"
