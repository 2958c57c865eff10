#!/bin/bash
# Models of the sizes analysts use, per stored format: the time and memory to open one (attnscope-cli info), the
# forward pass of 512 tokens with every head's attention (tokens/s, share of the sgemm peak of the same run, peak
# resident memory), and the whole headless app to the first grid of a 512-token text (layer 1, drawn when that layer is
# done, as the window shows it first) and to the last layer's grid (the whole forward); for GGUF files also the
# generation rate (tokens/s, as llama-bench -n 64). The random models are written
# once by attnscope-bench under $ATTNSCOPE_BENCH_MODELS (default: the system temp folder; about 64 GB for all of
# them; the mixtures of experts qwen3-30b-a3b, olmoe-1b-7b, granite-3b-a800m and gpt-oss-20b (format mxfp4) as GGUF
# only). Usage: big_models.sh BUILD_DIR [SHAPE:FORMAT ...]
set -euo pipefail
build=${1:-build}
shift || true
cd "$(dirname "$0")/.."
root=${ATTNSCOPE_BENCH_MODELS:-${TMPDIR:-/tmp}/attnscope-bench-models}
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(llama-3.2-1b:bf16 llama-3.2-1b:bf16-gguf llama-3.2-1b:f16 llama-3.2-1b:q8_0 llama-3.2-1b:q4_k_m
                              llama-3.2-3b:bf16 llama-3.1-8b:bf16 llama-3.1-8b:q4_k_m qwen3-30b-a3b:q4_k_m olmoe-1b-7b:q4_k_m
                              granite-3b-a800m:q4_k_m
                              gpt-oss-20b:mxfp4)
text=$(mktemp)
trap 'rm -f "$text"' EXIT
# 512 Llama 3 tokens (BOS included) of WikiText-2 validation text.
head -c 2000 ../shared/data/wikitext-2/valid.txt > "$text"
# Whole-process wall seconds and peak resident memory (GNU time's own accounting) of a command.
measure() {
    local out
    out=$( { /usr/bin/time -f 'TIME %e %M' "$@" >/dev/null 2>/dev/null; } 2>&1 | grep '^TIME' || true)
    [ -n "$out" ] || out=$( { /usr/bin/time -f 'TIME %e %M' "$@" 2>&1 >/dev/null; } | grep '^TIME')
    echo "$out" | awk '{printf "%.2f s, %.0f MiB", $2, $3 / 1024}'
}
for c in "${cases[@]}"; do
    shape=${c%%:*} format=${c##*:}
    echo "== $shape $format"
    "$build/bench/attnscope-bench" llama --shape "$shape" --format "$format" --model-dir "$root" --tokens 512 \
        | grep -E '^(open|first forward|forward pass|matrix-product|peak resident)'
    case "$format" in
        bf16) model="$root/$shape-bf16" ;;
        bf16-gguf) model="$root/$shape-bf16.gguf" ;;
        *) model="$root/$shape-$format.gguf" ;;
    esac
    if [[ "$model" == *.gguf ]]; then # a generated token: 64 greedy tokens after a one-token prompt (as llama-bench -n 64)
        "$build/bench/attnscope-bench" llama --model "$model" --generate 64 --rounds 3 --threads 2 | grep -E '^generation:'
    fi
    echo "attnscope-cli info: $(measure "$build/app/cli/attnscope-cli" info --model "$model")"
    if [ -x "$build/app/attnscope" ]; then
        png=$(mktemp --suffix=.png)
        layers=$("$build/app/cli/attnscope-cli" info --model "$model" | sed -n 's/^ *"layers": \([0-9]*\),/\1/p')
        for layer in 1 "$layers"; do
            echo "headless app, grid of layer $layer of a 512-token text: $(measure env QT_QPA_PLATFORM=offscreen \
                "$build/app/attnscope" --model "$model" --text-file "$text" --layer "$layer" --head 1 --export "$png")"
        done
        rm -f "$png"
    fi
done
