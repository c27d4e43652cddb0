#!/usr/bin/env bash
# Sets up logitscope on a fresh Debian 12 machine: installs the build and test dependencies
# (apt-get), the JavaScript tokenizer oracle (npm ci), then builds everything into build/.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
packages=(
  build-essential cmake pkg-config git
  nlohmann-json3-dev libcpp-httplib-dev libhwy-dev libutf8proc-dev libcli11-dev libfmt-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-jinja2 python3-torch
)
command -v node > /dev/null || packages+=(nodejs npm)
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"

npm ci --prefix tests/oracle --no-audit --no-fund

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLS_WERROR=ON
cmake --build build -j"$(nproc)"
