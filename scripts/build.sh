#!/usr/bin/env bash
# Configures and builds libtensor into build/ (Release, Ninja, ccache). Extra args go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# Let ccache reuse objects across clones in different folders (CI builds a fresh clone).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build build -j "${JOBS:-2}"
