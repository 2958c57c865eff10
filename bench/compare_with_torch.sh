#!/usr/bin/env bash
# The speed comparisons with PyTorch (Debian's python3-torch, every product through oneDNN), both sides run in turn
# on the same shape and 2 threads, each round printing both rates and their ratio.
#   bench/compare_with_torch.sh scan  [ROUNDS] [TOKENS]   Transformer-XL corpus scan, WikiText-103 base shape
#                                                         (attnscope-bench scan) against torch_txl_bench.py with
#                                                         every layer's probabilities captured (default 3000 tokens)
#   bench/compare_with_torch.sh llama [ROUNDS] [TOKENS]   Llama-family forward with every head's probabilities,
#                                                         random SmolLM2-135M shape, one sequence (default 1024)
# BUILD (environment) names the build folder, default build.
set -euo pipefail
cd "$(dirname "$0")/.."
what=${1:-scan}; rounds=${2:-3}
bench=${BUILD:-build}/bench/attnscope-bench
shared=../shared/bench
[ -x /usr/bin/python3 ] && /usr/bin/python3 -c "import torch" 2>/dev/null ||
  { echo "compare_with_torch.sh: needs Debian's python3-torch (apt-get install python3-torch)" >&2; exit 2; }
case $what in
  scan)
    tokens=${3:-3000}
    ours() { "$bench" scan --tokens "$tokens" --threads 2 | sed -n 's/^corpus scan: \([0-9.]*\) tokens.*/\1/p'; }
    theirs() { /usr/bin/python3 "$shared/torch_txl_bench.py" --bench --linear mkldnn-all --capture probs --tokens "$tokens" \
                 --threads 2 | sed -n 's/.*-> \([0-9.]*\) tokens\/s (from empty memory).*/\1/p'; } ;;
  llama)
    tokens=${3:-1024}
    ours() { "$bench" llama --shape smollm2-135m --tokens "$tokens" --threads 2 | sed -n 's/^forward pass: \([0-9.]*\) tokens.*/\1/p'; }
    theirs() { /usr/bin/python3 "$shared/torch_llama_bench.py" --bench --shape smollm2-135m --tokens "$tokens" \
                 --linear mkldnn-all --threads 2 | sed -n 's/.*-> \([0-9.]*\) tokens\/s.*/\1/p'; } ;;
  *) echo "usage: $0 scan|llama [ROUNDS] [TOKENS]" >&2; exit 2 ;;
esac
ratios=()
for r in $(seq "$rounds"); do
  # The side that runs first alternates: a machine whose speed drifts favours neither.
  if (( r % 2 )); then a=$(ours); t=$(theirs); else t=$(theirs); a=$(ours); fi
  ratio=$(echo "scale=2; $a / $t" | bc)
  ratios+=("$ratio")
  echo "round $r: attnscope $a tokens/s, pytorch (mkldnn-all) $t tokens/s, ratio $ratio"
done
echo "median ratio ($what): $(printf '%s\n' "${ratios[@]}" | sort -n | sed -n "$(( (${#ratios[@]} + 1) / 2 ))p")"
