#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz (docs/testing.md, "Fuzzing") in build-fuzz/ with
# clang-14, AddressSanitizer and UndefinedBehaviorSanitizer, then runs each one from a copy of
# its seed corpus (tests/fuzz/corpus/<target>; new inputs go to the copy, never the source tree):
#   FUZZ_SECONDS=60        seconds per target (the default)
#   FUZZ_RUNS=N            N executions per target instead
#   FUZZ_TARGETS="a b"     only these targets (default: all)
# Exits non-zero on any crash, leak, timeout, out-of-memory or sanitizer report, printing the
# reproducer's path and the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
TENSOR_WITH_FUZZ=1 bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
dir=build-fuzz
CC=clang-14 CXX=clang++-14 cmake -S . -B $dir -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTENSOR_USE_CUDA=OFF \
  -DTENSOR_BUILD_TESTS=OFF -DTENSOR_BUILD_BENCHMARKS=OFF -DTENSOR_BUILD_EXAMPLES=OFF -DTENSOR_BUILD_FUZZERS=ON >/dev/null
read -r -a targets <<<"${FUZZ_TARGETS:-fuzz_safetensors fuzz_idx fuzz_schema fuzz_pickle}"
cmake --build $dir -j "${JOBS:-2}" --target "${targets[@]}"

if [[ -n "${FUZZ_RUNS:-}" ]]; then
  limit=(-runs="$FUZZ_RUNS")
else
  limit=(-max_total_time="${FUZZ_SECONDS:-60}")
fi
# Inputs larger than any seed needs, small enough that mutations stay effective: two 28x28
# Fashion-MNIST images are 1.6 KB, the largest safetensors seed under 1 KB, the torch.save seeds
# (fuzz_pickle) under 10 KB.
declare -A max_len=([fuzz_safetensors]=16384 [fuzz_idx]=16384 [fuzz_schema]=4096 [fuzz_pickle]=16384)
export ASAN_OPTIONS=detect_leaks=1:check_initialization_order=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

failed=0
for t in "${targets[@]}"; do
  run=$PWD/$dir/fuzz-runs/$t
  rm -rf "$run"
  mkdir -p "$run/corpus" "$run/artifacts"
  cp tests/fuzz/corpus/"$t"/* "$run/corpus/"
  echo "== $t (${limit[*]}, corpus copy in $run/corpus)"
  set +e
  "$dir/tests/fuzz/$t" "$run/corpus" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$t]:-4096}" \
    -detect_leaks=1 -print_final_stats=1 -artifact_prefix="$run/artifacts/" >"$run/log" 2>&1
  rc=$?
  set -e
  # The last status line (executions, coverage, features, corpus, exec/s) and the totals.
  grep -E '^#[0-9]+' "$run/log" | tail -1 || true
  grep -E '^Done [0-9]+ runs|^stat::(number_of_executed_units|average_exec_per_sec|peak_rss_mb)' "$run/log" || true
  artifacts=("$run"/artifacts/*)
  if ((rc != 0)) || [[ -e "${artifacts[0]}" ]]; then
    failed=1
    # From the first report on (the stack, the input), else the end of the log.
    if grep -qE '^==[0-9]+==|runtime error:|^fuzz|ERROR: libFuzzer' "$run/log"; then
      sed -nE '/^==[0-9]+==|runtime error:|^fuzz|ERROR: libFuzzer/,$p' "$run/log" | head -n 80
    else
      tail -n 40 "$run/log"
    fi
    echo "FAILED: $t exited with $rc; full log: $run/log"
    for a in "${artifacts[@]}"; do
      [[ -e "$a" ]] && echo "  reproducer: $a  (replay: $dir/tests/fuzz/$t $a)"
    done
  fi
done
exit $failed
