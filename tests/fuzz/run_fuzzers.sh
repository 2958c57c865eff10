#!/bin/bash
# Runs every libFuzzer harness of a fuzz build for SECONDS seconds each, starting from its seed corpus (the files
# listed in BUILD/fuzz-seeds/NAME.txt, copied once into BUILD/fuzz-corpus/NAME, which then keeps what the fuzzer
# finds interesting). Crashes, leaks and timeouts land in BUILD/fuzz-findings; the script fails if any appeared.
# Usage: run_fuzzers.sh BUILD SECONDS
set -uo pipefail
build=${1:?build folder}
seconds=${2:-60}
findings=$build/fuzz-findings
mkdir -p "$findings"
status=0
for seeds in "$build"/fuzz-seeds/*.txt; do
    name=$(basename "$seeds" .txt)
    harness=$build/tests/fuzz/fuzz_$name
    [ -x "$harness" ] || continue
    corpus=$build/fuzz-corpus/$name
    if [ ! -d "$corpus" ]; then
        mkdir -p "$corpus"
        while read -r seed; do
            [ -z "$seed" ] && continue
            # Seeds of one kind share names (config.json): prefix each with its folder's name.
            if [ -d "$seed" ]; then cp -r "$seed"/. "$corpus"/
            elif [ -f "$seed" ]; then cp "$seed" "$corpus/$(basename "$(dirname "$seed")")-$(basename "$seed")"; fi
        done < "$seeds"
    fi
    echo "== fuzz_$name: $seconds s from $(ls "$corpus" | wc -l) corpus files"
    before=$(ls "$findings" | wc -l)
    # 4 GB per process: the harnesses run whole models; larger inputs than 64 KiB only slow the search down.
    "$harness" "$corpus" -max_total_time="$seconds" -rss_limit_mb=4096 -timeout=60 -max_len=65536 \
        -artifact_prefix="$findings/$name-" -print_final_stats=1 2>"$build/fuzz-$name.log" | tail -1
    tail -n 12 "$build/fuzz-$name.log" | grep -E "stat::number_of_executed_units|stat::new_units_added|ERROR|SUMMARY" || true
    after=$(ls "$findings" | wc -l)
    if [ "$after" -gt "$before" ]; then
        echo "   new findings in $findings (log: $build/fuzz-$name.log)"
        status=1
    fi
done
exit $status
