#!/usr/bin/env bash
# Installs everything libtensor needs on a fresh Debian 12 machine (run as root).
# The CUDA toolkit is used when present (/usr/local/cuda); it is not installed here.
set -euo pipefail
pkgs=(build-essential cmake ninja-build ccache git pkg-config lld
      libdnnl-dev ocl-icd-opencl-dev libfmt-dev libgtest-dev libgmock-dev libhwy-dev nlohmann-json3-dev zlib1g-dev libisal-dev libgloo-dev
      python3
      dataset-fashion-mnist)
if [[ "${TENSOR_WITH_LIBTORCH:-0}" == 1 ]]; then
  # The CPU peer for the benchmarks (TARGETS.md): Debian's libtorch with a real BLAS.
  pkgs+=(libtorch-dev libopenblas0-openmp)
fi
if [[ "${TENSOR_WITH_TORCH_WHEEL:-0}" == 1 ]] && ! python3 -m pip --version >/dev/null 2>&1; then
  pkgs+=(python3-pip)  # pip download: the torch wheel below
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

if [[ "${TENSOR_WITH_TORCH_WHEEL:-0}" == 1 ]]; then
  # The second CPU peer for the benchmarks (TARGETS.md): the current torch release's libtorch,
  # from its PyPI wheel, built into bench_torch_peer (Note [Two libtorch peers] in
  # benchmarks/peer.h). Only torch/lib and torch/include are kept, in a git-ignored folder that
  # CMake looks in by default (TENSOR_TORCH_WHEEL_DIR points elsewhere). pip keeps what it
  # downloads in its cache (pip cache dir), so a second run fetches nothing;
  # TENSOR_TORCH_WHEEL_FILE=path.whl unpacks a wheel already at hand instead.
  version="${TENSOR_TORCH_WHEEL_VERSION:-2.15.0}"
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  dest="${TENSOR_TORCH_WHEEL_DIR:-$root/third_party/torch-${version%.*}}"
  if [[ -f "$dest/lib/libtorch_cpu.so" && -f "$dest/include/torch/csrc/api/include/torch/torch.h" ]]; then
    echo "setup.sh: torch $version already unpacked in $dest"
  else
    wheel="${TENSOR_TORCH_WHEEL_FILE:-}"
    if [[ -z "$wheel" ]]; then
      dl="$(mktemp -d)"
      trap 'rm -rf "$dl"' EXIT
      # The wheel for this machine's Python if there is one, else the cp311 one: every one of
      # them holds the same libtorch.
      python3 -m pip download --no-deps "torch==$version" -d "$dl" ||
        python3 -m pip download --no-deps "torch==$version" -d "$dl" --only-binary=:all: \
          --python-version 3.11 --implementation cp --platform manylinux_2_28_x86_64
      wheel="$(ls "$dl"/torch-"$version"-*.whl)"
    fi
    rm -rf "$dest.part" && mkdir -p "$dest.part"
    # Python's zipfile: unzip is not among the packages above.
    python3 - "$wheel" "$dest.part" <<'PY'
import os, sys, zipfile
wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(("torch/lib/", "torch/include/")) and not name.endswith("/"):
            target = os.path.join(dest, name[len("torch/"):])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with z.open(name) as src, open(target, "wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
PY
    rm -rf "$dest" && mv "$dest.part" "$dest"
    echo "setup.sh: torch $version's lib/ and include/ unpacked in $dest"
  fi
  # Its libtorch_cpu.so loads the CUDA 13 runtime; without it bench_ops runs without this peer.
  if ldd "$dest/lib/libtorch_cpu.so" | grep -q "not found"; then
    echo "setup.sh: $dest/lib/libtorch_cpu.so cannot find these; bench_ops will skip the torch $version twins:"
    ldd "$dest/lib/libtorch_cpu.so" | grep "not found" || true
  fi
fi
