#!/usr/bin/env bash
# The README's main job: set up, build, train the Fashion-MNIST CNN for one epoch (extra args go
# to the example: --epochs, --batch-size, --lr, --threads, --workers, --seed, --data,
# --checkpoint, --resume, --checkpoint-every, --limit-batches).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/examples/fashion_mnist/fashion_mnist --checkpoint build/fashion_mnist.safetensors "$@"
