#!/usr/bin/env bash
# The README's main job: set up, build, run the example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/examples/basic/basic_example
