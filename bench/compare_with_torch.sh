#!/usr/bin/env bash
# Runs attnscope-bench and the PyTorch reference (oneDNN path) alternately, same shape and threads, and prints
# each run's tokens/s. Usage: bench/compare_with_torch.sh [ROUNDS] [TOKENS]   (needs python3-torch)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-3}"; tokens="${2:-3000}"
bench=build/bench/attnscope-bench
torch=../shared/bench/torch_txl_bench.py
for r in $(seq "$rounds"); do
  a=$("$bench" --tokens "$tokens" --threads 2 | sed -n 's/^forward with attention capture: \([0-9.]*\) tokens.*/\1/p')
  t=$(/usr/bin/python3 "$torch" --bench --linear mkldnn-all --tokens "$tokens" --threads 2 | sed -n 's/.*-> \([0-9.]*\) tokens\/s (from empty memory).*/\1/p')
  echo "round $r: attnscope $a tokens/s, pytorch (mkldnn-all) $t tokens/s, ratio $(echo "scale=2; $a / $t" | bc)"
done
