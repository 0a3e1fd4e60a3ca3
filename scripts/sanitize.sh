#!/usr/bin/env bash
# Sanitizer runs (docs/testing.md), each in its own build folder:
#   scripts/sanitize.sh address   AddressSanitizer + UndefinedBehaviorSanitizer (with leak
#                                 checks): the library and the whole ctest suite (build-asan/)
#   scripts/sanitize.sh thread    ThreadSanitizer: the concurrency tests, i.e. concurrent backward
#                                 passes, DataLoader workers, allocator thread caches (build-tsan/)
# Extra arguments go to ctest. Exits non-zero on any sanitizer report (a report fails its test).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address|thread [ctest args]}
shift
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
# CUDA, benchmarks and examples other than the tested ones are left out: nothing here runs
# them, and each would add minutes of instrumented compiling.
# -O1 -g1 (line tables): the stack traces sanitizers print, at about half the compile time of
# -O2 -g on the Highway kernels, which dominate the build.
common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
        -DTENSOR_USE_CUDA=OFF -DTENSOR_BUILD_BENCHMARKS=OFF)
case "$kind" in
  address)
    dir=build-asan
    cmake -S . -B $dir "${common[@]}" -DTENSOR_SANITIZE=address,undefined >/dev/null
    cmake --build $dir -j "${JOBS:-2}"
    # allocator_may_return_null: a malloc too large for the machine returns null, as glibc's does,
    # and the allocator raises its out-of-memory Error (tests check it) instead of ASan aborting.
    export ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:allocator_may_return_null=1
    export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
    cd $dir
    # package.find_package builds an uninstrumented program against the instrumented library,
    # which ASan refuses to start (its runtime must be loaded first): it is the one test left out.
    ctest --output-on-failure -j 2 --timeout 1200 -E '^package\.find_package$' "$@"
    ;;
  thread)
    dir=build-tsan
    cmake -S . -B $dir "${common[@]}" -DTENSOR_BUILD_EXAMPLES=OFF -DTENSOR_SANITIZE=thread >/dev/null
    cmake --build $dir -j "${JOBS:-2}" --target test_threads test_data test_port_data test_autograd
    export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp"
    # Debian's libgomp is not built with ThreadSanitizer, which therefore cannot see its barriers
    # and reports the stack of a thread that led a parallel region, reused after it, as raced by
    # the region's workers. One OpenMP thread keeps these runs to what TSan can judge: the
    # library's own threads (backward passes, DataLoader workers, allocator caches).
    export OMP_NUM_THREADS=1
    cd $dir
    ctest --output-on-failure -j 2 --timeout 1200 -R '^(Threads|DataLoader|PortData|Autograd)\.' "$@"
    ;;
  *) echo "unknown sanitizer '$kind': use address or thread" >&2; exit 2 ;;
esac
