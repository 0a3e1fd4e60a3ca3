#!/usr/bin/env bash
# Crash safety of the main job (docs/testing.md, "Soak and crash safety"). Trains the
# Fashion-MNIST example on a subset (2 epochs of 40 batches, a checkpoint every 10 steps) three
# times: uninterrupted; then SIGKILLed in epoch 2 as soon as a mid-epoch checkpoint of epoch 2 is
# on disk; then resumed from that checkpoint with --resume. Checks that the killed run left a
# mid-epoch checkpoint that loads (the resumed run loads it), that the resumed run reports the
# epoch, batch and step it resumed from, and that its final checkpoint is byte-identical to the
# uninterrupted run's: same tensors bit for bit (model, Adam moments and step counts) and same
# metadata. Training is bit-deterministic at a fixed thread count, so nothing looser is needed.
# The killed run's log must keep the lines it printed before the kill (line-buffered stdout).
# Extra arguments go to cmake's configure step. Exits non-zero with a message on failure.
set -euo pipefail
cd "$(dirname "$0")/.."

EPOCHS=2 LIMIT=40 EVERY=10 SEED=7
bash scripts/setup.sh
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "${JOBS:-2}" --target fashion_mnist
bin=$PWD/build/examples/fashion_mnist/fashion_mnist

start=$SECONDS
tmp=$(mktemp -d "${TMPDIR:-/tmp}/crash_resume.XXXXXX")
pid=
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "crash_resume: FAIL: $*" >&2
  for log in "$tmp"/*.log; do
    [[ -f $log ]] && { echo "--- $(basename "$log")" >&2; tr '\r' '\n' <"$log" | grep -v '^$' | tail -n 5 >&2; }
  done
  exit 1
}

flags=(--limit-batches $LIMIT --checkpoint-every $EVERY --seed $SEED --threads 2 --workers 1)
# The JSON header of a checkpoint (empty if there is none yet): the safetensors header follows an
# 8-byte length and begins with the "__metadata__" object; save() renames a complete file into
# place, so a read sees the old file or the new one, never a partial header.
header() { if [[ -f $1 ]]; then head -c 4096 "$1" | tail -c +9 | tr -d '\000'; fi; }
# field HEADER KEY: one metadata value, or nothing.
field() { grep -ao "\"$2\":\"[^\"]*\"" <<<"$1" | head -n 1 | cut -d'"' -f4 || true; }
meta() { field "$(header "$1")" "$2"; }

# 1. The uninterrupted run.
"$bin" "${flags[@]}" --epochs $EPOCHS --checkpoint "$tmp/ref.safetensors" >"$tmp/ref.log" 2>&1 ||
  fail "the uninterrupted run exited with status $?"

# 2. The same run, killed mid-epoch 2 once a mid-epoch checkpoint of epoch 2 is on disk. We poll
#    every 20 ms; the window is the rest of the epoch (~30 steps) and its test pass.
ck=$tmp/run.safetensors
"$bin" "${flags[@]}" --epochs $EPOCHS --checkpoint "$ck" >"$tmp/killed.log" 2>&1 &
pid=$!
deadline=$((SECONDS + 120))
while :; do
  h=$(header "$ck")
  [[ $(field "$h" epoch) == 1 && $(field "$h" batches_done) -gt 0 ]] && break
  kill -0 "$pid" 2>/dev/null || fail "the run ended before a mid-epoch checkpoint of epoch 2 appeared"
  ((SECONDS < deadline)) || fail "no mid-epoch checkpoint of epoch 2 within 120 s"
  sleep 0.02
done
kill -KILL "$pid" 2>/dev/null || true
status=0
wait "$pid" 2>/dev/null || status=$?  # (2>/dev/null: bash's "Killed" notice)
pid=
((status == 137)) || fail "the run was to die of SIGKILL (status 137) but exited with status $status"
h=$(header "$ck")
epochs_done=$(field "$h" epoch) batches_done=$(field "$h" batches_done) step=$(field "$h" step)
[[ $epochs_done == 1 && $batches_done -gt 0 && $batches_done -lt $LIMIT ]] ||
  fail "after the kill the checkpoint is not mid-epoch 2 (epoch $epochs_done, batches_done $batches_done)"
leftovers=$(find "$tmp" -name 'run.safetensors.tmp.*' | wc -l)
# The killed run's output went to a file: stdout is line-buffered, so every line it finished
# before the kill is there (a fully buffered stdout lost them all).
grep -q "^epoch 1: .*test accuracy" "$tmp/killed.log" || fail "the killed run's log lost its epoch 1 line"

# 3. Resume for the epochs left (the one in progress counts as the first).
"$bin" "${flags[@]}" --epochs $((EPOCHS - epochs_done)) --resume --checkpoint "$ck" >"$tmp/resumed.log" 2>&1 ||
  fail "the resumed run exited with status $? (did the killed run's checkpoint load?)"
want="resumed from $ck in epoch 2 after batch $batches_done/$LIMIT (step $step)"
grep -qF "$want" "$tmp/resumed.log" || fail "the resumed run did not report '$want'"

# 4. Bit-identical final checkpoints: every byte of tensors, names, shapes, dtypes and metadata.
if ! cmp -s "$tmp/ref.safetensors" "$ck"; then
  fail "final checkpoints differ in $(cmp -l "$tmp/ref.safetensors" "$ck" 2>/dev/null | wc -l) bytes" \
    "(test accuracy: uninterrupted $(meta "$tmp/ref.safetensors" test_accuracy), resumed $(meta "$ck" test_accuracy))"
fi
echo "crash_resume: OK: killed in epoch 2 at batch $batches_done/$LIMIT (step $step; $leftovers stale temp file(s))," \
  "resumed, final checkpoint bit-identical to the uninterrupted run's (test accuracy $(meta "$ck" test_accuracy))," \
  "$((SECONDS - start)) s"
