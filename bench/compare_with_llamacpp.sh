#!/bin/bash
# The big-model figures of docs/performance.md against llama.cpp on the same GGUF files, both on 2 threads, in turn
# (never at once), the order alternating from round to round, the machine's load average recorded before each pair:
#   prompt: llama.cpp's prompt processing of 512 tokens (llama-bench -p 512 -n 0) beside attnscope's forward of 512
#           tokens with every head's attention kept (attnscope-bench llama --model F --tokens 512, warm);
#   generation: llama.cpp's token generation (llama-bench -p 0 -n 64) beside attnscope's 64 greedy tokens after a
#           one-token prompt (attnscope-bench llama --model F --generate 64), tokens per second.
# Peak resident memory of each whole process by GNU time. llama.cpp is not part of this project: build it yourself from
# its public repository and give its build folder (the one holding bin/llama-bench).
#   bench/compare_with_llamacpp.sh LLAMA_CPP_BUILD [--rounds N] [--only prompt|generation] [FILE.gguf ...]
# Default files: the Llama 3.2 1B shape as BF16, F16, Q8_0 and Q4_K_M written by attnscope-bench (bench/big_models.sh,
# or `attnscope-bench llama --shape llama-3.2-1b --format bf16-gguf|f16|q8_0|q4_k_m`). BUILD (environment) names
# attnscope's build folder, default build.
set -euo pipefail
llama=${1:?usage: $0 LLAMA_CPP_BUILD [--rounds N] [--only prompt|generation] [FILE.gguf ...]}
shift
rounds=3 only=""
while [ $# -gt 0 ]; do
    case "$1" in
        --rounds) rounds=$2; shift 2 ;;
        --only) only=$2; shift 2 ;;
        *) break ;;
    esac
done
cd "$(dirname "$0")/.."
bench=${BUILD:-build}/bench/attnscope-bench
root=${ATTNSCOPE_BENCH_MODELS:-${TMPDIR:-/tmp}/attnscope-bench-models}
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$root/llama-3.2-1b-bf16.gguf" "$root/llama-3.2-1b-f16.gguf" "$root/llama-3.2-1b-q8_0.gguf"
                                 "$root/llama-3.2-1b-q4_k_m.gguf")
[ -x "$llama/bin/llama-bench" ] || { echo "no $llama/bin/llama-bench: build llama.cpp's llama-bench first" >&2; exit 2; }
echo "llama.cpp: $llama; attnscope: $bench"
peak() { awk '/^PEAK/ {printf "%.2f GiB", $2 / 1048576}'; }
load() { cut -d' ' -f1 /proc/loadavg; }

# One measurement: prints "RATE PEAK".
llamacpp() { # FILE prompt|generation
    local args=(-p 512 -n 0) pattern='"512","0"'
    [ "$2" = generation ] && args=(-p 0 -n 64) && pattern='"0","64"'
    local out
    out=$( { /usr/bin/time -f 'PEAK %M' "$llama/bin/llama-bench" -m "$1" "${args[@]}" -t 2 -r 3 -o csv; } 2>&1)
    local rate
    rate=$(echo "$out" | awk -F, -v p="$pattern" '/^"/ && index($0, p) {gsub(/"/, ""); print $(NF-1)}' | tail -1)
    # A run that stopped (a crash, an instruction the machine lacks) prints no row: say so rather than shift columns.
    printf '%s %s\n' "${rate:-failed}" "$(echo "$out" | peak | tr ' ' '_')"
}
attnscope() { # FILE prompt|generation
    local out rate
    if [ "$2" = generation ]; then
        out=$( { /usr/bin/time -f 'PEAK %M' "$bench" llama --model "$1" --generate 64 --rounds 3 --threads 2; } 2>&1)
        rate=$(echo "$out" | sed -n 's/^generation: \([0-9.]*\) tokens.*/\1/p')
    else
        out=$( { /usr/bin/time -f 'PEAK %M' "$bench" llama --model "$1" --tokens 512 --threads 2; } 2>&1)
        rate=$(echo "$out" | sed -n 's/^forward pass: \([0-9.]*\) tokens.*/\1/p')
    fi
    printf '%s %s\n' "${rate:-failed}" "$(echo "$out" | peak | tr ' ' '_')"
}

for what in prompt generation; do
    [ -z "$only" ] || [ "$only" = "$what" ] || continue
    echo
    echo "## $what (tokens/s, 2 threads; per round: load average before it, llama.cpp, attnscope)"
    printf '| file | round | load | first | llama.cpp | attnscope | attnscope / llama.cpp | peak llama.cpp / attnscope |\n'
    printf '| --- | --- | --- | --- | --- | --- | --- | --- |\n'
    for f in "${files[@]}"; do
        [ -f "$f" ] || { echo "missing $f (attnscope-bench llama --shape ... --format ... writes it)" >&2; exit 2; }
        for ((r = 1; r <= rounds; r++)); do
            l=$(load)
            if ((r % 2)); then
                first=llama.cpp; a=$(llamacpp "$f" $what); b=$(attnscope "$f" $what)
            else
                first=attnscope; b=$(attnscope "$f" $what); a=$(llamacpp "$f" $what)
            fi
            read -r arate apeak <<<"$a"
            read -r brate bpeak <<<"$b"
            ratio=$(awk -v x="$brate" -v y="$arate" 'BEGIN { if (x + 0 > 0 && y + 0 > 0) printf "%.2f", x / y; else print "-" }')
            printf '| %s | %d | %s | %s | %s | %s | %s | %s / %s |\n' "$(basename "$f")" "$r" "$l" "$first" "$arate" "$brate" \
                "$ratio" "${apeak//_/ }" "${bpeak//_/ }"
        done
    done
done
