#!/usr/bin/env bash
# Installs Kiln's build and test dependencies from Debian 12's archive.
# Idempotent: installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang libclang-rt-14-dev llvm-14-tools clang-format clang-tidy
  lld  # links the ~150 test and tool executables several times faster than GNU ld
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libsqlite3-dev libssl-dev libyaml-cpp-dev libhiredis-dev
  libzstd-dev libxxhash-dev nlohmann-json3-dev  # cache: blob compression, checksums, manifests
  libgtest-dev libgmock-dev libbenchmark-dev
  openssl  # the TLS end-to-end test makes its certificates with it
  python3-numpy  # kiln-run --check and the .npy tests run NumPy reference programs
  python3-prometheus-client  # the metrics test parses a /metrics scrape with it
  patchelf  # deploy/bundle.sh: RUNPATHs of the relocatable bundle
  yamllint python3-yaml  # deploy tests: lint and validate deploy/ (k8s, Helm, compose)
  # The Python client's tests (tests/python/run_pytest.sh): a venv of this python3 with
  # its grpcio, protobuf, numpy and pytest, the package installed without network.
  python3-grpcio python3-protobuf python3-pytest python3-setuptools python3-wheel python3-venv
  libexpat1-dev  # the kiln regress tests parse their JUnit XML and SVG output back
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
