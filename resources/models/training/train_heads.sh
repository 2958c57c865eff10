#!/usr/bin/env bash
# Trains the eight one-layer teaching models heads-1 .. heads-8: same data, width, steps and schedule; only the
# number of heads differs (d_head 16 each). JOBS=2 trains two at a time on a 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../../.."   # repository root, so model cards record relative paths
steps="${STEPS:-1500}"   # the shipped models: 1,500 steps each
jobs="${JOBS:-1}"
train() {
  /usr/bin/python3 resources/models/training/train_txl.py --name "heads-$1" --layers 1 --heads "$1" --d-model 64 \
    --d-head 16 --d-inner 256 --mem-len 64 --tgt-len 32 --batch 16 --lr 2e-3 --warmup 100 --steps "$steps" \
    --out "resources/models/heads-$1"
}
for h in 1 2 3 4 5 6 7 8; do
  train "$h" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
done
wait
