#!/usr/bin/env bash
# Downloads (never installs) the Debian 12 packages that scripts/gpu_check.sh unpacks on a lent
# GPU machine: that machine reaches no package registry and lacks these build dependencies.
# Run here before the device call; the call then carries the folder (docs/cuda.md).
#
#   scripts/gpu_bundle.sh [DIR]      (default: .gpu_bundle at the repository root)
#
# Idempotent: a package whose .deb is already in DIR is not fetched again.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:-$root/.gpu_bundle}

# What the build finds with find_package (cmake/Dependencies.cmake) and what those libraries
# load at run time. Checked with `apt-cache depends` on Debian 12; a machine without them
# (the GPU image is not Debian) gets them all from here.
pkgs=(
  # oneDNN 2.6 (Debian 12 ships libdnnl2, not libdnnl3). dnnl-config.cmake calls
  # find_package(OpenCL REQUIRED) and DNNL::dnnl links OpenCL::OpenCL, so the OpenCL ICD
  # loader and its C headers come too.
  libdnnl-dev libdnnl2 ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-c-headers
  libhwy-dev libhwy1
  # libtensor uses fmt header-only, but fmt's CMake targets check that libfmt.so exists.
  libfmt-dev libfmt9
  # Static libgtest.a / libgmock.a; the `googletest` source package is not needed.
  libgtest-dev libgmock-dev
  nlohmann-json3-dev
  # libgloo.so.0 loads hiredis and ibverbs (which loads libnl); its headers that libtensor
  # includes need neither, so their -dev packages stay out.
  libgloo-dev libgloo0 libhiredis0.14 libibverbs1 libnl-3-200 libnl-route-3-200
  # zlib1g-dev's libz.so points at /lib/.../libz.so.1.2.13, which zlib1g provides.
  zlib1g-dev zlib1g
  # ISA-L's CRC-32 for the checkpoint checksums (Note [Fast CRC-32]).
  libisal-dev libisal2
)

if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
  echo "gpu_bundle: needs apt-get and dpkg-deb (run it on the Debian 12 machine)" >&2
  exit 1
fi
mkdir -p "$dir"
cd "$dir"

missing=()
for p in "${pkgs[@]}"; do
  compgen -G "${p}_*.deb" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "gpu_bundle: downloading ${missing[*]}"
  apt-get download -qq -o APT::Sandbox::User=root "${missing[@]}" || { echo "gpu_bundle: apt-get download failed (try: apt-get update)" >&2; exit 1; }
fi
for p in "${pkgs[@]}"; do
  compgen -G "${p}_*.deb" >/dev/null || { echo "gpu_bundle: $p was not downloaded" >&2; exit 1; }
done

# package=version for each .deb, so a run's summary can say exactly what it built against.
for f in *.deb; do
  printf '%s=%s\n' "$(dpkg-deb -f "$f" Package)" "$(dpkg-deb -f "$f" Version)"
done | sort >MANIFEST

total=$(du -cb ./*.deb | tail -1 | cut -f1)
echo "gpu_bundle: $dir: $(ls ./*.deb | wc -l) packages (${#missing[@]} downloaded now), $(awk -v b="$total" 'BEGIN{printf "%.1f MB", b/1e6}')"
