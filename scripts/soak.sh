#!/usr/bin/env bash
# Soak test (docs/testing.md, "Soak and crash safety"): builds benchmarks/soak_mlp and runs 10,000
# training steps of the MLP bench case, sampling resident memory (the median over 100 steps) after
# 1,000 warm-up steps and every 1,000 steps after; exits non-zero if the last sample is 2% or more
# above the first.
# Extra arguments go to soak_mlp: --steps N, --warmup N, --every N, --window N, --threshold PCT,
# --threads N, --leak-bytes N (a deliberate leak, to see the check fail).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${JOBS:-2}" --target soak_mlp
exec ./build/benchmarks/soak_mlp "$@"
