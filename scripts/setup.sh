#!/usr/bin/env bash
# Sets up logitscope on a fresh Debian 12 machine: installs the build and test dependencies
# (apt-get), the JavaScript oracles and the page's tools (npm ci), then builds everything into
# build/ (the page included).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
packages=(
  build-essential cmake pkg-config git
  nlohmann-json3-dev libcpp-httplib-dev libhwy-dev libutf8proc-dev libcli11-dev libfmt-dev
  libcurl4-openssl-dev libssl-dev
  googletest libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-jinja2 python3-jsonschema python3-torch
  chromium fonts-noto-cjk librsvg2-bin
  clang-14 libclang-rt-14-dev  # scripts/sanitize.sh and scripts/fuzz.sh
)
command -v node > /dev/null || packages+=(nodejs npm)
$SUDO apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"

# The tokenizer and OpenAI-client oracles and playwright-core (it drives Debian's chromium; it
# never downloads a browser), then the page's build tools (Vite, TypeScript, Vitest, Preact):
# the CMake build runs Vite and embeds the page.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
npm ci --prefix tests/oracle --no-audit --no-fund
npm ci --prefix web --no-audit --no-fund

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DLS_WERROR=ON
cmake --build build -j"$(nproc)"
