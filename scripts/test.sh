#!/usr/bin/env bash
# The README's test command: set up, build, run every test (ctest prints the summary).
# Pass a ctest label to run a subset, e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j 2 --timeout 600 "$@"
