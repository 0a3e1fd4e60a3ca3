#!/usr/bin/env bash
# Installs everything libtensor needs on a fresh Debian 12 machine (run as root).
# The CUDA toolkit is used when present (/usr/local/cuda); it is not installed here.
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache git pkg-config
      libdnnl-dev ocl-icd-opencl-dev libfmt-dev libgtest-dev libgmock-dev libhwy-dev nlohmann-json3-dev zlib1g-dev libgloo-dev
      python3
      dataset-fashion-mnist)
if [[ "${TENSOR_WITH_LIBTORCH:-0}" == 1 ]]; then
  # The CPU peer for the benchmarks (TARGETS.md): Debian's libtorch with a real BLAS.
  pkgs+=(libtorch-dev libopenblas0-openmp)
fi
if [[ "${TENSOR_WITH_FUZZ:-0}" == 1 ]]; then
  # scripts/fuzz.sh: clang with libFuzzer and the sanitizer runtimes, and clang's OpenMP.
  pkgs+=(clang-14 libclang-rt-14-dev libomp-14-dev)
fi
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
