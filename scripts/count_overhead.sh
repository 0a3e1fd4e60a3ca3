#!/bin/bash
# Instructions per call of the overhead cases (benchmarks/overhead_counts.cpp), counted by
# valgrind's callgrind: the count over 1200 iterations minus the count over 200, over 1000, so
# start-up cancels. Deterministic, unlike timings on a loaded machine; compare two builds with
#   bash scripts/count_overhead.sh build/benchmarks/overhead_counts other/overhead_counts
set -euo pipefail
command -v valgrind >/dev/null || { echo "count_overhead: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
[ $# -ge 1 ] || set -- build/benchmarks/overhead_counts
ir() { valgrind --tool=callgrind --callgrind-out-file=/dev/null "$1" "$2" "$3" 2>&1 | grep -oP "Collected : \K[0-9]+"; }
printf "%-10s" case; for bin in "$@"; do printf "%14s" "$(basename "$(dirname "$bin")")"; done; echo
for c in add autograd view clone zeros mlp; do
  printf "%-10s" "$c"
  for bin in "$@"; do
    a=$(OMP_NUM_THREADS=1 ir "$bin" "$c" 200); b=$(OMP_NUM_THREADS=1 ir "$bin" "$c" 1200)
    printf "%14d" $(( (b - a) / 1000 ))
  done
  echo
done
