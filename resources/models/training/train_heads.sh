#!/usr/bin/env bash
# Trains the eight one-layer teaching models heads-1 .. heads-8: same data, width and time budget, only the
# number of heads differs (d_head 16 each, so more heads also means a wider attention block).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
minutes="${MINUTES:-4}"
for h in 1 2 3 4 5 6 7 8; do
  /usr/bin/python3 "$here/train_txl.py" --name "heads-$h" --layers 1 --heads "$h" --d-model 64 --d-head 16 \
    --d-inner 256 --mem-len 64 --tgt-len 32 --batch 16 --lr 2e-3 --warmup 100 --minutes "$minutes" --out "$here/../heads-$h"
done
