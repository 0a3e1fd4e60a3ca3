#!/usr/bin/env bash
# The one command a lent GPU machine runs (docs/cuda.md "Running the GPU check"): unpacks the
# Debian packages of .gpu_bundle (scripts/gpu_bundle.sh) into a prefix under /tmp, configures
# against that prefix, builds the libraries, the CUDA tests and bench_ops, runs
# `ctest -L cuda`, the GPU benchmark cases and their PyTorch twin, and writes logs and
# summary.txt under $OUT (default ./gpu_check_out).
#
#   bash scripts/gpu_check.sh                 on the GPU machine (about 9 minutes at most)
#   bash scripts/gpu_check.sh --dry-run       here: the same steps; those needing a GPU skip
#   bash scripts/gpu_check.sh --dry-run --hide-host
#                                             also hides this machine's copies of the bundled
#                                             packages (a private mount namespace, root), so
#                                             the build can only succeed through the prefix
#
# Environment: OUT, GPU_CHECK_DRY_RUN=1 (as --dry-run), GPU_CHECK_HIDE_HOST=1 (as --hide-host),
# GPU_CHECK_BUNDLE (.gpu_bundle), GPU_CHECK_PREFIX (/tmp/gpu_check_prefix), GPU_CHECK_BUILD_DIR
# (build-gpu), GPU_CHECK_PYTHON (python3: the one with PyTorch), GPU_CHECK_JOBS (nproc), GPU_CHECK_CTEST_JOBS (8), GPU_CHECK_DEADLINE (seconds for the whole run: 530 on
# the device, 5400 in a dry run), GPU_CHECK_UNTIL (unpack, configure, build, ctest or bench:
# the last step to run; the twin runs only when all of them do).
#
# Never hangs: every step runs under `timeout`, bounded by what is left of the deadline; a
# failing step is reported in summary.txt and the steps that do not depend on it still run.
# Exit status: 0 when every step passed, 1 otherwise (the summary says which).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dry_run=${GPU_CHECK_DRY_RUN:-0}
hide_host=${GPU_CHECK_HIDE_HOST:-0}
for a in "$@"; do
  case $a in
    --dry-run) dry_run=1 ;;
    --hide-host) hide_host=1 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu_check: unknown argument '$a' (see --help)" >&2; exit 2 ;;
  esac
done
if [[ $hide_host == 1 && $dry_run != 1 ]]; then
  echo "gpu_check: --hide-host is for a dry run here (add --dry-run)" >&2
  exit 2
fi

OUT=${OUT:-$root/gpu_check_out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
bundle=${GPU_CHECK_BUNDLE:-$root/.gpu_bundle}
prefix=${GPU_CHECK_PREFIX:-/tmp/gpu_check_prefix}
build=${GPU_CHECK_BUILD_DIR:-$root/build-gpu}
twin_build=$build/torch_cuda_twin
jobs=${GPU_CHECK_JOBS:-$(nproc)}
py=${GPU_CHECK_PYTHON:-python3}
cxx=${CXX:-$(command -v c++ || command -v g++ || echo c++)}
# Step limits are sized for 16 cores; a dry run here (2 cores) gets 12 times each, still
# within its deadline.
if [[ $dry_run == 1 ]]; then deadline=${GPU_CHECK_DEADLINE:-5400} scale=12; else deadline=${GPU_CHECK_DEADLINE:-530} scale=1; fi
mode=$([[ $dry_run == 1 ]] && echo "dry run (no GPU steps expected to run)" || echo "device")

# --hide-host: rerun this script in a private mount namespace in which every file of the
# bundled packages that this machine has is masked (bind-mounted /dev/null), and Debian's
# libtorch headers too (the device has none), as on a machine that lacks them. zlib1g stays:
# the compiler and linker load libz.so.1 themselves.
if [[ $hide_host == 1 && -z ${GPU_CHECK_IN_NAMESPACE:-} ]]; then
  command -v unshare >/dev/null || { echo "gpu_check: --hide-host needs unshare" >&2; exit 2; }
  exec unshare --mount --propagation private env GPU_CHECK_IN_NAMESPACE=1 OUT="$OUT" \
    GPU_CHECK_DRY_RUN=1 GPU_CHECK_HIDE_HOST=1 bash "$0"
fi

start=$SECONDS
steps_tsv=$OUT/steps.tsv
: >"$steps_tsv"
failed=0
echo "gpu_check: $mode; logs in $OUT; deadline ${deadline}s; $jobs jobs"

# step NAME LIMIT_S CMD...: runs CMD (a command or an exported function) under timeout, its
# output in $OUT/NAME.log; records status and seconds in steps.tsv; never fails the script.
step() {
  local name=$1 limit=$(($2 * scale))
  shift 2
  local left=$((deadline - (SECONDS - start) - 20))  # 20 s kept for the summary
  ((limit > left)) && limit=$left
  if ((limit < 5)); then
    printf '%s\tSKIPPED (deadline)\t0\n' "$name" >>"$steps_tsv"
    echo "gpu_check: $name skipped: the deadline is near"
    failed=1
    return 1
  fi
  echo "gpu_check: $name (at most ${limit}s) ..."
  local t0=$SECONDS rc=0
  timeout --kill-after=10 "$limit" "$@" >"$OUT/$name.log" 2>&1 </dev/null || rc=$?
  local status=ok
  if ((rc == 124 || rc == 137)); then status="TIMEOUT (${limit}s)"; elif ((rc)); then status="FAILED (rc=$rc)"; fi
  printf '%s\t%s\t%d\n' "$name" "$status" $((SECONDS - t0)) >>"$steps_tsv"
  echo "gpu_check: $name: $status in $((SECONDS - t0))s"
  ((rc == 0)) || failed=1
  return "$rc"
}
# The steps below are functions run by `timeout bash -c`, so they and their inputs are exported.
export root OUT bundle prefix build twin_build jobs dry_run hide_host py cxx

# ---- the steps ----

env_info() {
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(uname -srm), $(nproc) cores, $(free -g 2>/dev/null | awk '/^Mem:/{print $2 " GiB"}') memory"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
  if [[ -r /etc/os-release ]]; then echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"; fi
  echo "glibc: $(ldd --version 2>&1 | head -1)"
  echo "c++: $("$cxx" --version 2>&1 | head -1)"
  local stdcxx
  stdcxx=$("$cxx" -print-file-name=libstdc++.so.6 2>/dev/null || true)
  if [[ -f $stdcxx ]]; then
    echo "libstdc++: newest $(grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$stdcxx" | sort -uV | tail -1)"
  fi
  echo "cmake: $(cmake --version | head -1)"
  echo "ninja: $(ninja --version 2>/dev/null || echo absent)"
  echo "nvcc: $( (command -v nvcc >/dev/null && nvcc --version | tail -2 | head -1) || echo absent)"
  if command -v nvidia-smi >/dev/null; then
    echo "nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -4 | paste -sd';')"
  else
    echo "nvidia-smi: absent"
  fi
  echo "python: $("$py" --version 2>&1)"
  echo "torch: $("$py" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "available" if torch.cuda.is_available() else "no device")' 2>&1 | tail -1)"
}

# Unpacks every .deb into a fresh prefix, points what names /usr into it, and gathers the
# shared libraries into one folder for LD_LIBRARY_PATH.
unpack_bundle() {
  set -euo pipefail
  compgen -G "$bundle/*.deb" >/dev/null || { echo "no .deb files in $bundle: run scripts/gpu_bundle.sh here and carry .gpu_bundle"; return 1; }
  rm -rf "$prefix"
  mkdir -p "$prefix"
  local f
  for f in "$bundle"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$f" "$prefix"
    else
      # No dpkg here (not Debian): a .deb is an ar archive holding data.tar.xz.
      python3 - "$f" "$prefix" <<'PY'
import io, sys, tarfile
deb, dest = sys.argv[1], sys.argv[2]
blob = open(deb, "rb").read()
assert blob.startswith(b"!<arch>\n"), deb + ": not an ar archive"
pos = 8
while pos + 60 <= len(blob):
    name, size = blob[pos:pos + 16].decode().strip().rstrip("/"), int(blob[pos + 48:pos + 58])
    if name.startswith("data.tar"):
        with tarfile.open(fileobj=io.BytesIO(blob[pos + 60:pos + 60 + size])) as t:
            # Debian's own archive: keep its absolute symlinks (fixed below), which the
            # "data" filter (the default from Python 3.14) would refuse.
            trusted = {"filter": "fully_trusted"} if hasattr(tarfile, "fully_trusted_filter") else {}
            t.extractall(dest, **trusted)
        break
    pos += 60 + size + (size & 1)
else:
    sys.exit(deb + ": no data.tar member")
PY
    fi
  done
  echo "unpacked $(ls "$bundle"/*.deb | wc -l) packages into $prefix ($(du -sh "$prefix" | cut -f1))"

  # Absolute symlinks (zlib1g-dev's libz.so -> /lib/...) point at the host: point them into
  # the prefix.
  local link target
  while IFS= read -r link; do
    target=$(readlink "$link")
    if [[ $target == /* ]]; then
      if [[ -e $prefix$target ]]; then
        ln -sfn "$prefix$target" "$link"
        echo "relinked ${link#"$prefix"} -> $prefix$target"
      else
        echo "warning: ${link#"$prefix"} -> $target has no copy in the prefix"
      fi
    fi
  done < <(find "$prefix" -type l)

  # CMake package files: Gloo's per-configuration file names /usr/lib/libgloo.so.0.5.0; the
  # others derive their prefix from their own location. Only the _realOrig lines may keep
  # /usr (they compare against the original install path and stay false in the prefix).
  local cm
  while IFS= read -r cm; do
    if awk '/_realOrig/ { next } /"\/(usr|lib)\// { found = 1 } END { exit !found }' "$cm"; then
      sed -i -E "/_realOrig/! s#\"/(usr|lib)/#\"$prefix/\\1/#g" "$cm"
      echo "rewrote absolute paths in ${cm#"$prefix"}"
    fi
  done < <(find "$prefix" -name '*.cmake' -path '*cmake*')
  local left
  left=$(grep -rnE '"/(usr|lib)/' --include='*.cmake' "$prefix" | grep -v '_realOrig' || true)
  if [[ -n $left ]]; then
    sed 's/^/error: still names \/usr: /' <<<"$left"
    return 1
  fi

  # One folder with every bundled shared library, for LD_LIBRARY_PATH (the linker also reads
  # it for libgloo's own dependencies). zlib stays out where the host has libz.so.1: every
  # process would load it, and the host's may be newer.
  mkdir -p "$prefix/runtime"
  local host_zlib=0
  local cache
  cache=$( (ldconfig -p || /sbin/ldconfig -p) 2>/dev/null || true)
  [[ $cache == *"libz.so.1 "* ]] && host_zlib=1
  for f in $(find "$prefix/usr/lib" "$prefix/lib" -name '*.so.*' \( -type f -o -type l \) 2>/dev/null); do
    if [[ $host_zlib == 1 && $(basename "$f") == libz.so* ]]; then continue; fi
    ln -sfn "$f" "$prefix/runtime/$(basename "$f")"
  done
  # Does every bundled library load here (a non-Debian glibc or libstdc++ may be too old)?
  local bad=0 so missing
  for so in "$prefix"/runtime/*.so.*; do
    missing=$(LD_LIBRARY_PATH="$prefix/runtime" ldd "$so" 2>&1 | grep -E 'not found|No such' || true)
    if [[ -n $missing ]]; then echo "does not load: $(basename "$so"): $missing"; bad=1; fi
  done
  ((bad == 0)) && echo "every bundled shared library resolves its dependencies here"
  return $bad
}

# The CMake package of each find_package() in cmake/Dependencies.cmake and tests/, as
# -D<Package>_DIR=<its folder in the prefix>, so that find_package() takes the prefix's copy
# before any other; zlib, ISA-L and OpenCL (found by modules or find_library) by their files.
prefix_cmake_args() {
  local name cfg
  for name in dnnl hwy fmt GTest nlohmann_json Gloo; do
    cfg=$(find "$prefix" \( -name "${name}Config.cmake" -o -name "${name}-config.cmake" \) | head -1)
    [[ -n $cfg ]] || { echo "no CMake package for $name in $prefix" >&2; return 1; }
    printf '%s\n' "-D${name}_DIR=$(dirname "$cfg")"
  done
  local lib=$prefix/usr/lib/x86_64-linux-gnu
  printf '%s\n' "-DZLIB_INCLUDE_DIR=$prefix/usr/include" "-DZLIB_LIBRARY=$lib/libz.so" \
    "-DOpenCL_INCLUDE_DIR=$prefix/usr/include" "-DOpenCL_LIBRARY=$lib/libOpenCL.so" \
    "-DTENSOR_ISAL=$lib/libisal.so" "-DTENSOR_ISAL_INCLUDE=$prefix/usr/include" \
    "-DCMAKE_PREFIX_PATH=$prefix/usr"
}

configure() {
  set -euo pipefail
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  local dep_args
  dep_args=$(prefix_cmake_args)
  mapfile -t dep_args <<<"$dep_args"
  printf 'prefix arguments:\n%s\n' "${dep_args[*]}"
  # An earlier configure with other dependency paths would keep them in its cache.
  rm -f "$build/CMakeCache.txt"
  cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DTENSOR_BUILD_TESTS=ON -DTENSOR_BUILD_BENCHMARKS=ON -DTENSOR_BUILD_EXAMPLES=OFF "${dep_args[@]}"
  # Where each dependency came from: every one must be in the prefix.
  echo "--- dependencies found"
  local bad=0 key val
  for key in dnnl_DIR hwy_DIR fmt_DIR GTest_DIR nlohmann_json_DIR Gloo_DIR ZLIB_INCLUDE_DIR ZLIB_LIBRARY TENSOR_LIBDEFLATE TENSOR_LIBDEFLATE_INCLUDE OpenCL_INCLUDE_DIR OpenCL_LIBRARY; do
    val=$(grep -E "^$key(:[A-Z]+)?=" "$build/CMakeCache.txt" | head -1 | cut -d= -f2-)
    if [[ $val == "$prefix"/* ]]; then echo "prefix  $key=$val"; else echo "OUTSIDE $key=$val"; bad=1; fi
  done
  grep -E 'libtensor: CUDA backend|NCCL backend|libtorch twins|libtorch not found' "$OUT/configure.log" 2>/dev/null || true
  return $bad
}

# The library targets (tensor, and tensor_cuda once it exists), the CUDA test executables
# (tests/test_*cuda*.cpp, so new ones are picked up) and bench_ops, all in one build so that
# tests compile while the libraries link; -k 0 keeps independent targets going after a failure.
build_targets() {
  set -euo pipefail
  local targets=() t
  # `--target help` lists "tensor: phony" (Ninja) or "... tensor" (Makefiles).
  for t in $(cmake --build "$build" --target help 2>/dev/null | grep -oE '^(\.\.\. )?tensor[A-Za-z0-9_]*(:|$)' | sed 's/^\.\.\. //; s/:$//' | sort -u); do
    [[ $t == tensorrun ]] || targets+=("$t")
  done
  for t in "$root"/tests/test_*cuda*.cpp; do targets+=("$(basename "$t" .cpp)"); done
  targets+=(bench_ops)
  echo "targets: ${targets[*]}"
  local keep_going=(-k 0)
  [[ -f $build/build.ninja ]] || keep_going=(-k)
  cmake --build "$build" -j "$jobs" --target "${targets[@]}" -- "${keep_going[@]}"
}

# Each test is its own process (gtest_discover_tests), and each spends ~0.4 s creating its CUDA
# context: 524 of them serially took more than the step's 180 s on the H200 (2026-11-28), so
# they run 8 at a time (the device is shared; each context takes ~0.5 GB of its memory).
run_ctest() {
  ctest --test-dir "$build" -L cuda -j "${GPU_CHECK_CTEST_JOBS:-8}" --output-on-failure --timeout 120 \
    --output-junit "$OUT/ctest.xml"
}

run_bench() {
  "$build/benchmarks/bench_ops" --json "$OUT/bench_cuda.json" cuda_
}

# PyTorch twin: built with find_package(Torch) against the PyTorch of this machine's python3;
# where that CMake configuration fails, compiled directly against torch's folders; where that
# fails too, the Python twin (twin.py) runs instead. Writes which in $OUT/twin_kind.
build_twin() {
  set -uo pipefail
  local src=$root/benchmarks/torch_cuda_twin tp
  rm -f "$OUT/twin_kind"
  if ! tp=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null); then
    echo "absent: $py has no torch" | tee "$OUT/twin_kind"
    return 1
  fi
  echo "torch cmake prefix: $tp"
  local gen=()
  command -v ninja >/dev/null && gen=(-G Ninja)
  rm -rf "$twin_build"
  if cmake -S "$src" -B "$twin_build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$tp" -DCMAKE_CXX_COMPILER="$cxx" &&
     cmake --build "$twin_build" -j 4; then
    echo "cpp" >"$OUT/twin_kind"
    return 0
  fi
  echo "--- find_package(Torch) build failed; compiling directly against torch's folders"
  local tdir abi
  tdir=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
  mkdir -p "$twin_build"
  if "$cxx" -std=c++20 -O2 -w -D_GLIBCXX_USE_CXX11_ABI="$abi" "$src/torch_cuda_twin.cpp" \
       -I"$tdir/include" -I"$tdir/include/torch/csrc/api/include" -L"$tdir/lib" -Wl,-rpath,"$tdir/lib" \
       -Wl,--no-as-needed -ltorch_cuda -lc10_cuda -Wl,--as-needed -ltorch -ltorch_cpu -lc10 \
       -o "$twin_build/torch_cuda_twin"; then
    echo "cpp (direct)" >"$OUT/twin_kind"
    return 0
  fi
  echo "--- the C++ twin did not build; the Python twin runs instead"
  echo "python" >"$OUT/twin_kind"
  return 1
}

run_twin() {
  case $(cat "$OUT/twin_kind" 2>/dev/null) in
    cpp*) "$twin_build/torch_cuda_twin" ;;
    python) "$py" "$root/benchmarks/torch_cuda_twin/twin.py" ;;
    *) echo "no twin: $(cat "$OUT/twin_kind" 2>/dev/null || echo 'not built')"; return 1 ;;
  esac
}
export -f env_info unpack_bundle prefix_cmake_args configure build_targets run_ctest run_bench build_twin run_twin

# ---- the run ----

if [[ $hide_host == 1 ]]; then
  # Inside the namespace (see above): mask every host file that a bundled package provides.
  masked=0
  for f in "$bundle"/*.deb; do
    [[ $(dpkg-deb -f "$f" Package) == zlib1g ]] && continue
    while IFS= read -r p; do
      p=${p#.}
      if [[ -f $p && ! -L $p ]]; then mount --bind /dev/null "$p" && masked=$((masked + 1)); fi
    done < <(dpkg-deb --fsys-tarfile "$f" | tar -t | grep -E '^\./(usr/(include|lib|share/cmake)|lib)/')
  done
  if [[ -d /usr/include/torch ]]; then mount -t tmpfs none /usr/include/torch; fi
  echo "gpu_check: hid $masked host files of the bundled packages (and Debian's libtorch headers)" | tee "$OUT/hide_host.log"
fi

export LD_LIBRARY_PATH="$prefix/runtime${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then export PATH=/usr/local/cuda/bin:$PATH; fi

until_step=${GPU_CHECK_UNTIL:-all}
case $until_step in unpack | configure | build | ctest | bench | all) ;;
  *) echo "gpu_check: GPU_CHECK_UNTIL=$until_step is not a step" >&2; exit 2 ;;
esac
[[ $until_step == all ]] || mode+=", steps up to $until_step only"
# wanted STEP: whether STEP comes no later than GPU_CHECK_UNTIL.
wanted() {
  local order=" unpack configure build ctest bench all "
  local head=${order%%" $until_step "*}
  [[ $until_step == all || $head == *" $1"* || $1 == "$until_step" ]]
}

step env 30 bash -c env_info || true
have_prefix=0
step unpack 120 bash -c unpack_bundle && have_prefix=1
# The twin builds in the background while libtensor configures and builds (it needs neither).
twin_pid=
if [[ $until_step == all ]]; then
  rm -f "$OUT/twin_build.rc"
  (
    t0=$SECONDS rc=0
    timeout --kill-after=10 300 bash -c build_twin >"$OUT/twin_build.log" 2>&1 </dev/null || rc=$?
    echo "$rc $((SECONDS - t0))" >"$OUT/twin_build.rc"
  ) &
  twin_pid=$!
fi

have_build=0
if ((have_prefix)) && wanted configure; then
  step configure 180 bash -c configure && have_build=1
  # A configure whose only complaint is a dependency outside the prefix still builds.
  [[ -f $build/CMakeCache.txt && ( -f $build/build.ninja || -f $build/Makefile ) ]] && have_build=1
fi
if ((have_build)) && wanted build; then
  step build 420 bash -c build_targets || true
  if wanted ctest; then step ctest 180 bash -c run_ctest || true; fi
  if wanted bench; then
    if [[ -x $build/benchmarks/bench_ops ]]; then step bench 120 bash -c run_bench || true
    else printf 'bench\tSKIPPED (bench_ops not built)\t0\n' >>"$steps_tsv"; fi
  fi
fi

if [[ -n $twin_pid ]]; then
  wait "$twin_pid" || true
  read -r twin_rc twin_sec <"$OUT/twin_build.rc" || { twin_rc=1 twin_sec=0; }
  status=ok
  if grep -qs '^absent' "$OUT/twin_kind"; then status="SKIPPED (no PyTorch)"
  elif ((twin_rc == 124 || twin_rc == 137)); then status="TIMEOUT (300s)"
  elif ((twin_rc)); then status="FAILED (rc=$twin_rc)"; fi
  printf '%s\t%s\t%d\n' twin_build "$status" "$twin_sec" >>"$steps_tsv"
  # No PyTorch here is expected in a dry run; on the device it is a failure.
  [[ $dry_run == 1 ]] || ((twin_rc == 0)) || failed=1
  if [[ -s $OUT/twin_kind ]] && ! grep -qs '^absent' "$OUT/twin_kind"; then
    step twin 120 bash -c run_twin || true
  fi
fi

# ---- summary.txt ----
python3 - "$OUT" "$mode" "$((SECONDS - start))" "$bundle" <<'PY' || { echo "gpu_check: writing the summary failed" >&2; failed=1; }
import json, os, sys, xml.etree.ElementTree as ET
out, mode, total, bundle = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def read(name):
    try:
        return open(os.path.join(out, name), encoding="utf-8", errors="replace").read()
    except OSError:
        return ""
L = [f"gpu_check: {mode}; {total} s in all"]
env = read("env.log")
for key in ("date", "nvidia-smi", "nvcc", "c++", "glibc", "libstdc++", "torch", "host", "cpu"):
    for line in env.splitlines():
        if line.startswith(key + ":"):
            L.append(line)
manifest = os.path.join(bundle, "MANIFEST")
if os.path.exists(manifest):
    L.append(f"bundle: {len(open(manifest).read().split())} packages ({bundle}/MANIFEST)")
L += ["", "steps:"]
for row in read("steps.tsv").splitlines():
    name, status, sec = row.split("\t")
    L.append(f"  {name:<12} {status:<30} {sec:>5} s")
for line in read("unpack.log").splitlines():
    if line.startswith(("does not load", "error", "warning")):
        L.append("  unpack: " + line)
outside = [l for l in read("configure.log").splitlines() if l.startswith("OUTSIDE")]
if read("configure.log"):
    L.append("  dependencies: " + ("all from the prefix" if not outside else "NOT from the prefix: " + ", ".join(outside)))
failed_builds = [l.split(" ", 1)[1] for l in read("build.log").splitlines() if l.startswith("FAILED: ")]
if failed_builds:
    L.append("  build failures: " + "; ".join(f[:160] for f in failed_builds[:10]))

L += ["", "ctest -L cuda:"]
try:
    root = ET.parse(os.path.join(out, "ctest.xml")).getroot()
    passed, failed, skipped = [], [], []
    for tc in root.iter("testcase"):
        name = tc.get("name")
        if tc.find("failure") is not None or tc.get("status") == "fail":
            failed.append(name)
        elif tc.find("skipped") is not None or tc.get("status") in ("disabled", "notrun"):
            skipped.append(name)
        else:
            passed.append(name)
    L.append(f"  {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped, {len(passed) + len(failed) + len(skipped)} in all")
    for n in failed:
        L.append(f"  FAILED: {n}")
except (OSError, ET.ParseError):
    L.append("  no results (see ctest.log)")

L += ["", "GPU benchmarks (GB/s, the cuda_mm/cuda_linear cases TFLOP/s; share of the same-run device copy;",
      "torch = PyTorch on the same GPU; ratio = libtensor time / torch time, below 1 means libtensor is faster):"]
try:
    doc = json.load(open(os.path.join(out, "bench_cuda.json")))
    cases = doc["cases"]
    copy = doc.get("hardware", {}).get("device_copy_gbytes_per_s")
    if copy:
        L.append(f"  device copy bandwidth (cuda_copy_256M): {copy:.0f} GB/s")
except (OSError, ValueError, KeyError):
    cases = []
kind = read("twin_kind").strip() or "not built"
torch = {}
for line in read("twin.log").splitlines():
    f = line.split("\t")
    if len(f) == 3 and not line.startswith("#"):
        torch[f[0]] = f[1:]
L.append(f"  PyTorch twin: {kind}" + ("" if torch else " (no figures)"))
if cases:
    L.append(f"  {'case':<24}{'libtensor':>12}{'of copy':>9}{'torch':>12}{'ratio':>8}  goal")
for c in cases:
    t = torch.get(c["name"])
    tgb = f"{float(t[1]):.1f}" if t and t[0] != "error" else ("error" if t else "-")
    if c.get("ours"):
        ours = f"{c['ours']['value']:.1f}"
        share = f"{100 * c['share_of_limit']:.0f}%" if c.get("share_of_limit") is not None else "-"
        ratio = f"{c['ours']['seconds'] / float(t[0]):.2f}x" if t and t[0] != "error" else "-"
    else:
        ours, share, ratio = ("no GPU" if c.get("skipped") else "error"), "-", "-"
    L.append(f"  {c['name']:<24}{ours:>12}{share:>9}{tgb:>12}{ratio:>8}  {c.get('goal', '')}")
    if c.get("error"):
        L.append(f"      error: {c['error'].splitlines()[0][:150]}")
    if t and t[0] == "error":
        L.append(f"      torch error: {t[1][:150]}")
if not cases:
    L.append("  no libtensor figures (see bench.log)")
open(os.path.join(out, "summary.txt"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
exit "$failed"
