#!/bin/bash
# Runs every libFuzzer harness of a fuzz build for SECONDS seconds each, starting from its seed corpus (the files
# listed in BUILD/fuzz-seeds/NAME.txt, copied once into BUILD/fuzz-corpus/NAME, which then keeps what the fuzzer
# finds interesting), JOBS harnesses at a time (default: one per core). Crashes, leaks and timeouts land in
# BUILD/fuzz-findings; the script fails if any appeared.
# Usage: run_fuzzers.sh BUILD SECONDS [JOBS]
set -uo pipefail
build=${1:?build folder}
seconds=${2:-60}
jobs=${3:-$(nproc)}
findings=$build/fuzz-findings
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$findings"

run_one() { # harness name: prints one summary line
    local name=$1 harness=$build/tests/fuzz/fuzz_$1 corpus=$build/fuzz-corpus/$1
    if [ ! -d "$corpus" ]; then
        mkdir -p "$corpus"
        while read -r seed; do
            [ -z "$seed" ] && continue
            # Seeds of one kind share names (config.json): prefix each with its folder's name.
            if [ -d "$seed" ]; then cp -r "$seed"/. "$corpus"/
            elif [ -f "$seed" ]; then cp "$seed" "$corpus/$(basename "$(dirname "$seed")")-$(basename "$seed")"; fi
        done < "$build/fuzz-seeds/$name.txt"
    fi
    local files
    files=$(ls "$corpus" | wc -l)
    # 4 GB per process: the harnesses run whole models. The JSON readers get inputs up to 1 MiB and a dictionary of
    # JSON structure (deep nesting and long values only show up in large inputs); the regex harness its metacharacters.
    local maxlen=65536 dict=()
    case $name in
        config|dump_input|tokenizer_json|scan_result|session) maxlen=1048576; dict=(-dict="$here/dicts/json.dict") ;;
        regex|encode) dict=(-dict="$here/dicts/regex.dict") ;;
        gguf|model_gguf|model_safetensors|sentencepiece|pytorch) maxlen=2097152 ;; # whole reference models as seeds
    esac
    "$harness" "$corpus" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=60 -max_len=$maxlen "${dict[@]}" \
        -artifact_prefix="$findings/$name-" -print_final_stats=1 >/dev/null 2>"$build/fuzz-$name.log"
    local runs new
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/fuzz-$name.log")
    new=$(sed -n 's/^stat::new_units_added: *//p' "$build/fuzz-$name.log")
    if ls "$findings/$name-"* >/dev/null 2>&1; then
        echo "fuzz_$name: FINDINGS in $findings/$name-* after ${runs:-?} runs (log: $build/fuzz-$name.log)"
        grep -m3 -E "ERROR|SUMMARY" "$build/fuzz-$name.log"
    fi
    echo "fuzz_$name: $seconds s from $files corpus files, ${runs:-?} runs, ${new:-0} new corpus entries, no findings"
}

before=$(ls "$findings" | wc -l)
for seeds in "$build"/fuzz-seeds/*.txt; do
    name=$(basename "$seeds" .txt)
    [ -x "$build/tests/fuzz/fuzz_$name" ] || continue
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run_one "$name" &
done
wait
after=$(ls "$findings" | wc -l)
[ "$after" -eq "$before" ] # new findings fail the run
