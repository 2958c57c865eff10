#!/bin/bash
# Runs the benchmarks, prints what they measure and replaces the measured block of docs/performance.md with it
# (between the "measured" markers; the rest of that file is written by hand). Usage: run_benchmarks.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."
log=$(mktemp)
trap 'rm -f "$log"' EXIT
{
    echo "Measured $(date -u +%Y-%m-%d) on $(nproc) core(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')."
    echo
    echo "Long text: peak memory of a 4,096-token capture"
    "$build/bench/attnscope-bench" long-text --tokens 4096 --threads 2
    echo
    echo "Live typing: an edit at the end of a 1,000-token text"
    "$build/bench/attnscope-bench" edit --model smollm2 --tokens 1000 --threads 2
    "$build/bench/attnscope-bench" edit --model resources/models/txl-wikitext2 --tokens 1000 --threads 2
    echo
    echo "Teaching: one generated token, the logit lens; query-key space embeddings"
    "$build/bench/attnscope-bench" generate --model resources/models/llama-wikitext2 --tokens 200 --threads 2
    "$build/bench/attnscope-bench" generate --model smollm2 --tokens 1000 --threads 2
    "$build/bench/attnscope-bench" lens --model smollm2 --tokens 1000 --threads 2
    "$build/bench/attnscope-bench" qk --model resources/models/llama-wikitext2 --tokens 1000 --points 5000 --threads 2
    echo
    echo "Encoder-decoder: translate 30 tokens into 30, every site kept (a first run writes the random models)"
    for shape in marian t5-small; do
        "$build/bench/attnscope-bench" seq2seq --shape $shape --rounds 1 >/dev/null
        "$build/bench/attnscope-bench" seq2seq --shape $shape --rounds 5
    done
    echo
    echo "Speech: 30 s of audio, the encoder and a 50-token transcription, every site kept (a first run writes the models)"
    for shape in whisper-base whisper-small; do
        "$build/bench/attnscope-bench" speech --shape $shape --rounds 1 >/dev/null
        "$build/bench/attnscope-bench" speech --shape $shape --rounds 3
    done
    echo
    echo "Vision: a picture captured with every head kept, a click's row, rollout (a first run writes the random models)"
    for shape in dinov2-small vit-base; do
        "$build/bench/attnscope-bench" vision --shape $shape --rounds 1 >/dev/null
        "$build/bench/attnscope-bench" vision --shape $shape --rounds 5
    done
    echo
    echo "Big grids: drawing 4,096 x 4,096 tokens after a zoom"
    QT_QPA_PLATFORM=offscreen "$build/bench/attnscope-bench-draw" 4096 2>/dev/null
    echo
    echo "Throughput: Transformer-XL corpus scan and Llama-family forward, per stage"
    "$build/bench/attnscope-bench" scan --tokens 3000 --threads 2 --breakdown
    "$build/bench/attnscope-bench" llama --shape smollm2-135m --tokens 1024 --threads 2 --breakdown
    echo
    echo "Python against the CLI: the same run and layer as whole processes"
    bash bench/python_vs_cli.sh "$build" 5
    echo
    echo "Big models: Llama 3.2 1B / 3B and Llama 3.1 8B shapes as stored (BF16 folders, GGUF F16 / Q8_0 / Q4_K_M)"
    bash bench/big_models.sh "$build"
    echo
    if /usr/bin/python3 -c "import torch" 2>/dev/null; then
        echo "Against PyTorch (oneDNN), in turn:"
        BUILD=$build bash bench/compare_with_torch.sh scan 3
        BUILD=$build bash bench/compare_with_torch.sh llama 3
    else
        echo "(PyTorch comparison skipped: python3-torch is not installed)"
    fi
} | tee "$log"

doc=docs/performance.md
tmp=$(mktemp "$doc.XXXXXX")
trap 'rm -f "$log" "$tmp"' EXIT # an interrupted run leaves no half-written copy beside the document
awk -v src="$log" '
    /<!-- measured: begin -->/ { print; print "```"; while ((getline line < src) > 0) print line; print "```"; skip = 1; next }
    /<!-- measured: end -->/ { skip = 0 }
    !skip { print }
' "$doc" > "$tmp"
mv "$tmp" "$doc" # atomic: the document is never half written
echo "wrote $doc"
