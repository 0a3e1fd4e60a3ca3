#!/usr/bin/env bash
# Builds libtensor as a static library and runs a few test programs against it: ops and
# autograd tables are registered explicitly, so static linking must work as well as shared.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build-static -G Ninja -DCMAKE_BUILD_TYPE=Release -DTENSOR_BUILD_SHARED=OFF \
  -DTENSOR_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build build-static -j "${JOBS:-2}" --target basic_example test_core test_autograd test_custom_op
for t in test_core test_autograd test_custom_op; do
  ./build-static/tests/$t --gtest_brief=1
done
./build-static/examples/basic/basic_example >/dev/null
echo "static library: OK"
