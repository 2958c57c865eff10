#!/bin/bash
# The big-model figures of docs/performance.md against llama.cpp on the same GGUF files: llama.cpp's prompt
# processing of 512 tokens (llama-bench -p 512 -n 0, its own mean over its repetitions) and its peak resident memory,
# beside attnscope's forward of 512 tokens with every head's attention kept (attnscope-bench llama --model, warm) and
# its peak. Both on 2 threads, in turn, never at once. llama.cpp is not part of this project: build it yourself from
# its public repository and give its build folder (the one holding bin/llama-bench).
#   bench/compare_with_llamacpp.sh LLAMA_CPP_BUILD [FILE.gguf ...]
# Default files: the Llama 3.2 1B shape as F16, Q8_0 and Q4_K_M written by bench/big_models.sh. BUILD (environment)
# names attnscope's build folder, default build.
set -euo pipefail
llama=${1:?usage: $0 LLAMA_CPP_BUILD [FILE.gguf ...]}
shift
cd "$(dirname "$0")/.."
bench=${BUILD:-build}/bench/attnscope-bench
root=${ATTNSCOPE_BENCH_MODELS:-${TMPDIR:-/tmp}/attnscope-bench-models}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$root/llama-3.2-1b-f16.gguf" "$root/llama-3.2-1b-q8_0.gguf" "$root/llama-3.2-1b-q4_k_m.gguf")
[ -x "$llama/bin/llama-bench" ] || { echo "no $llama/bin/llama-bench: build llama.cpp's llama-bench first" >&2; exit 2; }
peak() { awk '/^PEAK/ {printf "%.2f GiB", $2 / 1048576}'; }
printf '| file | llama.cpp pp512 | llama.cpp peak | attnscope forward, 512 tokens | attnscope peak |\n| --- | --- | --- | --- | --- |\n'
for f in "${files[@]}"; do
    [ -f "$f" ] || { echo "missing $f (bench/big_models.sh writes it)" >&2; exit 2; }
    l=$( { /usr/bin/time -f 'PEAK %M' "$llama/bin/llama-bench" -m "$f" -p 512 -n 0 -t 2 -r 3 -o csv; } 2>&1)
    lrate=$(echo "$l" | awk -F, '/^"/ && $0 ~ /"512","0"/ {gsub(/"/, ""); print $(NF-1)}' | tail -1)
    a=$( { /usr/bin/time -f 'PEAK %M' "$bench" llama --model "$f" --tokens 512 --threads 2; } 2>&1)
    arate=$(echo "$a" | sed -n 's/^forward pass: \([0-9.]*\) tokens.*/\1/p')
    printf '| %s | %.1f tokens/s | %s | %s tokens/s | %s |\n' "$(basename "$f")" "$lrate" "$(echo "$l" | peak)" \
        "$arate" "$(echo "$a" | peak)"
done
