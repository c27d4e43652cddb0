#!/usr/bin/env bash
# Runs every test (GoogleTest units and the reference tests against numpy, jinja2 and the
# JavaScript tokenizer) through CTest on the build made by scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
